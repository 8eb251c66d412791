"""One definition of each binary measure per batch, read back from every surface: the Judges card, `cli.py report`
(its JSON, its text and --html), the HTML report (what a share link shows) and the methods compared, for a batch of
each method. The expected values are computed here from the definition, on what was written."""

from __future__ import annotations

import json

import numpy as np
import pytest

import cli
from services import judges, metaeval, reports
from services.database import get_engine
from services.judges import tables
from services.judges.agreement import VERDICTS_NAME
from tests.support.methods import METHODS, balanced_accuracy, seed_method


@pytest.fixture(autouse=True)
def _db(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'binary.db'}")


def test_each_method_has_its_own_threshold():
    """A probability reads as consistent at even odds; a share of consistent units when every unit is."""
    assert metaeval.binary.default_threshold("evidence") == 0.5
    for method in ("dce-amc", "paragraph", "summ-nli", "sent-nli", "qg-qa"):
        assert metaeval.binary.default_threshold(method) == 1.0


@pytest.mark.parametrize("method", METHODS)
def test_every_surface_shows_one_value_under_one_name(method, tmp_path, capsys):
    engine = get_engine()
    s = seed_method(engine, method)
    t = 0.5 if method == "evidence" else 1.0
    want_score = balanced_accuracy((s.scores >= t).astype(float), s.labels)
    want_verdicts = balanced_accuracy(s.verdicts, s.labels)
    score_name = f"Balanced accuracy of the score at {t:g}"
    if method != "evidence":  # the verdict is "every unit consistent": the score at 1.0
        assert want_score == want_verdicts
    else:  # a probability: at 1.0 every summary would read inconsistent (0.5), which no surface may show
        assert want_score != 0.5 and np.isnan(s.verdicts).sum() == 10

    # cli.py report: the JSON, and the text on stderr
    out = tmp_path / "r.json"
    assert cli.main(["report", "--run", str(s.batch_id), "--output", str(out), "--boot", "0"]) == 0
    rep = json.loads(out.read_text(encoding="utf-8"))
    score, verdicts = rep["binary"]["score"], rep["binary"]["verdicts"]
    assert (score["name"], score["threshold"]) == (score_name, t)
    assert score["balanced_accuracy"] == pytest.approx(want_score)
    assert rep["summary_level"]["classification"]["balanced_accuracy"] == pytest.approx(want_score)
    assert rep["settings"]["threshold"] == t and rep["bundle"]["meta_evaluation"]["threshold"] == t
    assert verdicts["name"] == VERDICTS_NAME and verdicts["value"] == pytest.approx(want_verdicts)
    assert verdicts["undecided"] == int(np.isnan(s.verdicts).sum())
    what = {"evidence": "probability", "summ-nli": "judgement of the whole summary"}.get(method, "share of")
    assert what in score["rests_on"]
    err = capsys.readouterr().err
    assert f"{score_name}: {want_score:.3f}" in err and f"{VERDICTS_NAME}: {want_verdicts:.3f}" in err

    # the HTML report (`report --html`, the Reports page and its share link render this one Report)
    rep_html = reports.build(engine, "batch", s.batch_id)
    heads = {h.label: h for h in rep_html.headlines}
    assert heads[score_name].value == pytest.approx(want_score)
    assert heads[VERDICTS_NAME].value == pytest.approx(want_verdicts)
    assert not any(label.startswith("Balanced accuracy at") for label in heads)
    html_file = tmp_path / "r.html"
    assert cli.main(["report", "--run", str(s.batch_id), "--html", str(html_file), "--boot", "0"]) == 0
    html = html_file.read_text(encoding="utf-8")
    assert score_name in html and VERDICTS_NAME in html and f"{want_score:.3f}" in html
    assert f"{score_name}: {want_score:.3f}" in capsys.readouterr().err

    # the Judges card (and the judges report's table): the verdicts' balanced accuracy, under the same name
    (card,) = judges.build_cards(engine, [s.batch_id], source="dataset", with_links=False)
    assert card.agreement.balanced_accuracy.value == pytest.approx(want_verdicts)
    table = tables.measures_frame([card]).set_index("measure")
    assert table.loc[VERDICTS_NAME].iloc[0].startswith(f"{want_verdicts:.3f}")

    # methods compared over the dataset: each batch at its method's own threshold
    row = metaeval.compare_method_batches(engine, [s.batch_id]).table.iloc[0]
    assert row["threshold"] == t and row["balanced_accuracy"] == pytest.approx(want_score)


def test_an_explicit_threshold_is_named_in_the_measure(tmp_path):
    s = seed_method(get_engine(), "evidence")
    out = tmp_path / "r.json"
    assert cli.main(["report", "--run", str(s.batch_id), "--output", str(out), "--boot", "0", "--threshold", "1"]) == 0
    score = json.loads(out.read_text(encoding="utf-8"))["binary"]["score"]
    assert score["name"] == "Balanced accuracy of the score at 1" and score["balanced_accuracy"] == 0.5
