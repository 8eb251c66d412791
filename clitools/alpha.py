"""`cli.py alpha`: Krippendorff's alpha of a ratings CSV (unit,rater,value) with a bootstrap interval.

    python cli.py alpha --input RATINGS.csv --level nominal|ordinal|interval|ratio [--boot N] [--seed S]

Exit 0 with the figures (or the reason alpha is undefined), 2 when the input cannot be used.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clitools import LEVELS

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ("unit", "rater", "value")


def read_ratings(path: Path, level: str) -> pd.DataFrame:
    """The rows of a ratings CSV with a header naming unit, rater and value."""
    import pandas as pd

    from services import tables
    from services.errors import InputError

    df = tables.read_frame(path, fmt="csv")
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        found = ", ".join(df.columns) or "none"
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}; the header must name unit,rater,value (found: {found})"
        )
    df = df[list(COLUMNS)].apply(lambda col: col.str.strip())
    df = df[df["value"] != ""]  # an empty value is a unit the rater did not rate
    if df.empty:
        raise InputError(f"{path}: no ratings")
    if level in ("interval", "ratio", "ordinal"):
        numeric = pd.to_numeric(df["value"], errors="coerce")
        bad = df.loc[numeric.isna()]
        if not bad.empty:
            first = bad.iloc[0]
            line = int(bad.index[0])  # the frame is indexed by the line each row starts on
            raise InputError(
                f"{path}:{line}: value {first['value']!r} is not a number; the {level} level needs numeric values "
                "(use --level nominal for category labels)"
            )
        df = df.assign(value=numeric)
    return df


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `alpha` on cli.py's subparsers."""
    p = subparsers.add_parser(
        "alpha",
        help="Krippendorff's alpha of a ratings CSV (unit,rater,value)",
        description="Inter-rater agreement (Krippendorff's alpha) with a bootstrap interval over units.",
    )
    p.add_argument("--input", required=True, type=Path, help="CSV with a header: unit,rater,value")
    p.add_argument("--level", required=True, choices=LEVELS, help="level of measurement of the values")
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples for the 95%% interval (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print alpha, level, counts and the 95% interval; 2 when the input cannot be used."""
    from services import stats

    if args.boot < 0:
        print("error: --boot must be 0 or more", file=sys.stderr)
        return 2
    try:
        ratings = read_ratings(Path(args.input), args.level)
        res = stats.alpha_from_long(ratings, args.level, n_boot=args.boot, seed=args.seed)
    except ValueError as exc:  # InputError or a statistic that cannot be computed
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"alpha: {res.alpha:.4f}" if res.alpha is not None else "alpha: undefined")
    print(f"level: {res.level}")
    print(f"units: {res.n_units} ({res.n_pairable} rated by two or more raters)")
    print(f"raters: {res.n_raters}")
    if res.alpha is None:
        print(f"why: {res.note}")
    elif res.ci_low is not None:
        how = f"{args.boot} resamples over units, seed {args.seed}"
        print(f"95% bootstrap interval: [{res.ci_low:.4f}, {res.ci_high:.4f}] ({how})")
        if res.note:
            print(f"note: {res.note}")
    else:
        print("95% bootstrap interval: not computed" + (" (--boot 0)" if args.boot == 0 else f" ({res.note})"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="alpha")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `alpha ...` on its own, e.g. main(["alpha", "--input", "r.csv", "--level", "nominal"])."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
