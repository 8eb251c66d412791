"""`alpha` subcommand: Krippendorff's alpha of a ratings CSV."""

from __future__ import annotations

import argparse
import csv
import math

import pytest

from clitools import alpha

NAN = math.nan
# Krippendorff (2011), the krippendorff package's documented example: raters x units, NaN = not rated.
KRIPPENDORFF_2011 = [
    [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
    [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
    [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
]


@pytest.fixture
def ratings_csv(tmp_path):
    path = tmp_path / "ratings.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["unit", "rater", "value"])
        for i, row in enumerate(KRIPPENDORFF_2011):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    w.writerow([f"u{j + 1}", f"coder{i + 1}", int(v)])
    return path


def run(argv: list[str]) -> int:
    """Through argparse, as cli.py will: add_parser on a subparsers object, then args.func(args)."""
    parser = argparse.ArgumentParser(prog="cli.py")
    alpha.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    assert args.func is alpha.run
    return args.func(args)


@pytest.mark.parametrize(("level", "shown"), [("nominal", "0.6914"), ("interval", "0.8108")])
def test_alpha_prints_the_figures(ratings_csv, capsys, level, shown) -> None:
    code = run(["alpha", "--input", str(ratings_csv), "--level", level, "--boot", "200", "--seed", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert f"alpha: {shown}" in out
    assert f"level: {level}" in out
    assert "units: 13 (12 rated by two or more raters)" in out
    assert "raters: 3" in out
    assert "95% bootstrap interval: [" in out and "200 resamples" in out and "seed 1" in out


def test_alpha_interval_depends_on_the_seed_only(ratings_csv, capsys) -> None:
    def interval(seed: str) -> str:
        assert run(["alpha", "--input", str(ratings_csv), "--level", "nominal", "--boot", "100", "--seed", seed]) == 0
        return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("95%"))

    assert interval("3") == interval("3")


def test_alpha_main_runs_on_its_own(ratings_csv, capsys) -> None:
    assert alpha.main(["alpha", "--input", str(ratings_csv), "--level", "ordinal", "--boot", "0"]) == 0
    out = capsys.readouterr().out
    assert "alpha: 0.8067" in out and "not computed (--boot 0)" in out


def test_alpha_explains_an_undefined_value(tmp_path, capsys) -> None:
    path = tmp_path / "same.csv"
    path.write_text("unit,rater,value\n1,a,yes\n1,b,yes\n2,a,yes\n2,b,yes\n")
    assert run(["alpha", "--input", str(path), "--level", "nominal"]) == 0
    out = capsys.readouterr().out
    assert "alpha: undefined" in out and "why:" in out and "same value" in out


def test_missing_file_exits_2(tmp_path, capsys) -> None:
    assert run(["alpha", "--input", str(tmp_path / "nope.csv"), "--level", "nominal"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_missing_columns_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("item,coder,value\n1,a,1\n")
    assert run(["alpha", "--input", str(path), "--level", "nominal"]) == 2
    err = capsys.readouterr().err
    assert "missing column(s) unit, rater" in err and "unit,rater,value" in err


@pytest.mark.parametrize("level", ["interval", "ratio"])
def test_non_numeric_values_exit_2_for_interval_and_ratio(tmp_path, capsys, level) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("unit,rater,value\n1,a,2\n1,b,high\n")
    assert run(["alpha", "--input", str(path), "--level", level]) == 2
    err = capsys.readouterr().err
    assert ":3:" in err and "'high' is not a number" in err and level in err


def test_nominal_accepts_labels(tmp_path, capsys) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("unit,rater,value\n1,a,yes\n1,b,yes\n2,a,no\n2,b,no\n3,a,yes\n3,b,no\n")
    assert run(["alpha", "--input", str(path), "--level", "nominal", "--boot", "50"]) == 0
    assert "alpha: " in capsys.readouterr().out


def test_bad_level_is_refused_by_argparse(ratings_csv) -> None:
    with pytest.raises(SystemExit) as exc:
        run(["alpha", "--input", str(ratings_csv), "--level", "fuzzy"])
    assert exc.value.code == 2
