"""Report builders of the studies that plug in beside DCR: each gives a Report that writes as one HTML file."""

from __future__ import annotations

import subprocess
import sys

import pytest

from services import conseval as ce
from services import metaeval, reports
from services.reports import BUILDERS, build
from services.text import InputError
from tests.support.conseval import config, items, scorer


def test_conseval_study_report_has_alphas_with_intervals_figures_and_ratings(engine, fake, backend):
    fake.responder = scorer(noisy=True)
    cfg = config(backend)
    sid = ce.create_study(engine, cfg, items(4))
    assert ce.run_study(engine, sid, backends={"judge": backend}).status == "done"
    rep = build(engine, "conseval", sid)
    assert rep.kind == "conseval" and rep.ref_id == sid
    sc = next(h for h in rep.headlines if h.label == "Best Self-consistency α")
    assert sc.value is not None and sc.n == 4
    titles = {f.title for f in rep.figures}
    assert {"Self-consistency (Figure 2)", "Inter-consistency (Figure 3)", "Figure 4"} <= titles
    assert any(t.title == "Every α and accuracy" and t.rows for t in rep.tables)
    assert len(rep.examples) == 3 and "question 0" in dict(rep.examples[0].fields)["Query"]
    assert rep.configuration["models"][0]["model"] == "fake-model"
    html = reports.to_html(rep, secrets=[])
    assert html.count("Plotly.newPlot(") == len(rep.figures)
    with pytest.raises(InputError, match="does not exist"):
        build(engine, "conseval", 999)


def test_every_kind_the_app_offers_has_a_builder():
    assert {"run", "batch", "conseval"} <= set(BUILDERS)


def nli_batch(engine, ds_id: int, item_ids: list[int], labels: list[str | None], method: str) -> int:
    """A finished batch whose items carry an NLI record (score 1 when consistent, 0 when not)."""
    from sqlmodel import Session

    from db.models import Batch, BatchItem

    with Session(engine) as s:
        b = Batch(
            dataset_id=ds_id,
            method=method,
            status="done",
            model="teacher",
            n_items=len(item_ids),
            params={"window": 1, "api_key": "sk-never-shown"},
        )
        s.add(b)
        s.flush()
        for item_id, lab in zip(item_ids, labels, strict=True):
            score = None if lab is None else float(lab == "consistent")
            rec = {"method": method, "label": lab, "summary": {"label": lab, "reasoning": f"why {lab} {item_id}"}}
            s.add(
                BatchItem(
                    batch_id=b.id,
                    item_id=item_id,
                    status="done" if lab else "failed",
                    score=score,
                    final_score=score,
                    n_rounds=1,
                    calls=2,
                    result=rec,
                )
            )
        s.commit()
        return b.id


def test_nli_comparison_puts_the_methods_side_by_side(engine):
    from tests.support.distill import Row, make_dataset

    ds_id, ids = make_dataset(engine, [Row(i, i % 2) for i in range(6)])  # gold: 0 1 0 1 0 1
    C, X = "consistent", "inconsistent"
    summ = nli_batch(engine, ds_id, ids, [X, C, C, C, X, C], "summ-nli")  # 5 of 6 right
    sent = nli_batch(engine, ds_id, ids, [X, C, X, C, X, None], "sent-nli")  # item 6 failed
    rep = build(engine, "nli", summ, n_boot=200)
    table = next(t for t in rep.tables if t.title == "Methods side by side")
    rows = {r[0]: dict(zip(table.columns, r, strict=True)) for r in table.rows}
    assert set(rows) == {f"Summ-NLI #{summ}", f"Sent-NLI (w=1) #{sent}"}
    assert rows[f"Summ-NLI #{summ}"]["n"] == 6 and rows[f"Sent-NLI (w=1) #{sent}"]["n"] == 5  # the items each finished
    # Summ-NLI: gold 0 1 0 1 0 1, said X C C C X C: recall(inconsistent) 2/3, recall(consistent) 1
    heads = {h.label: h for h in rep.headlines}
    summ_ba = heads[f"Balanced accuracy · Summ-NLI #{summ}"]
    assert summ_ba.value == pytest.approx((2 / 3 + 1) / 2)
    assert summ_ba.ci_low is not None and summ_ba.ci_low <= summ_ba.value <= summ_ba.ci_high
    assert heads[f"Balanced accuracy · Sent-NLI (w=1) #{sent}"].value == pytest.approx(1.0)
    (ex, *_) = rep.examples  # examples: the labelled items both finished
    assert any("why inconsistent" in v for k, v in ex.fields if k.startswith("Summ-NLI"))
    html = reports.to_html(rep, secrets=[])
    assert "sk-never-shown" not in html and html.count("Plotly.newPlot(") == 2


def test_nli_comparison_is_the_meta_evaluation_method_comparison(engine):
    """The report's numbers are metaeval.compare_method_batches' on the same batches (one computation)."""
    from tests.support.distill import Row, make_dataset

    ds_id, ids = make_dataset(engine, [Row(i, i % 2) for i in range(8)])
    C, X = "consistent", "inconsistent"
    a = nli_batch(engine, ds_id, ids, [X, C, C, C, X, C, None, X], "summ-nli")
    b = nli_batch(engine, ds_id, ids, [C, C, X, X, X, C, X, None], "sent-nli")
    c = nli_batch(engine, ds_id, ids, [X, X, X, C, None, C, X, C], "qg-qa")
    rep = build(engine, "nli", b, n_boot=0)
    cmp = metaeval.compare_method_batches(engine, [b, a, c]).table.set_index("batch")
    table = next(t for t in rep.tables if t.title == "Methods side by side")
    assert len(table.rows) == len(cmp) == 3
    for h in rep.headlines:
        batch = int(h.label.rsplit("#", 1)[1])
        assert h.value == pytest.approx(cmp.loc[batch, "balanced_accuracy"])
        assert h.n == cmp.loc[batch, "n"]
    for r in table.rows:
        row = dict(zip(table.columns, r, strict=True))
        batch = int(row["method"].rsplit("#", 1)[1])
        assert row["recall"] == pytest.approx(cmp.loc[batch, "recall"])
        assert row["method"].startswith(cmp.loc[batch, "method"])


def test_report_services_do_not_import_streamlit():
    code = (
        "import sys, services.reports as r\nfor m in r.BUILDERS.values(): __import__(m)\n"
        "print('streamlit' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_survey_report_has_expert_agreement_weights_and_the_votes(engine):
    from tests.support.survey import cast, new_survey

    sid, ids = new_survey(engine, task="story", experts=3)
    for e, metric in zip(ids, ["Coherence", "Coherence", "Fluency"], strict=True):
        cast(engine, e, "grammar", metric)
    rep = build(engine, "survey", sid, n_boot=100)
    heads = {h.label: h for h in rep.headlines}
    assert heads["Experts who voted"].value == 3 and heads["Questions with a vote"].value == 1
    weights = next(t for t in rep.tables if t.title == "Weights per question")
    assert weights.rows and [f.title for f in rep.figures] == ["Expert weights"]
    assert len(rep.examples) == 3 and "open" in " ".join(rep.notes)
    assert reports.to_html(rep, secrets=[]).count("Plotly.newPlot(") == 1
    with pytest.raises(InputError, match="does not exist"):
        build(engine, "survey", 999)


def test_dhp_report_has_discernment_tests_and_the_perturbed_pairs(tmp_path, fake, backend):
    from db.engine import get_session, make_engine
    from services import dhp
    from services.dhp.catalogue import TASKS
    from services.dhp.perturb import Item
    from tests.support.dhp import judge_fluency_only

    items = [
        Item(
            f"s{i}",
            f"The council met on day {i} in Leeds. It approved {40 + i} million pounds. Work starts soon.",
            f"a {i}",
        )
        for i in range(6)
    ]
    engine = make_engine(f"sqlite:///{tmp_path / 'dhp.db'}")  # the run scores in threads: a file database
    fake.responder = judge_fluency_only({it.text for it in items})
    with get_session(engine) as s:
        set_id = dhp.create_set(
            TASKS["summarization"], items, name="t", seed=1, session=s, only=["typo:minor", "reorder:major"]
        )
        rid = dhp.create_run(set_id, backend, repeats=1, seed=0, session=s)
    dhp.process_run(engine, rid)
    rep = build(engine, "dhp", rid)
    heads = {h.label: h for h in rep.headlines}
    assert heads["D_min"].value is not None and "D_avg (level-weighted)" in heads
    assert {"Discernment per perturbation", "D_avg, D_min, D_EW, D_wilson"} <= {f.title for f in rep.figures}
    assert any(t.title == "Wilcoxon tests per perturbation and metric" and t.rows for t in rep.tables)
    ex, _ = rep.examples  # one pair per perturbation kind, its change highlighted
    assert ex.rounds[0].rewrites[0].before in {it.text for it in items}
    assert "No closed expert survey" in " ".join(rep.notes)
    assert rep.configuration["model"]["model"] == "fake-model"
    html = reports.to_html(rep, secrets=[])
    assert html.count("Plotly.newPlot(") == len(rep.figures) and 'class="cs-del"' in html
    with pytest.raises(InputError, match="does not exist"):
        build(engine, "dhp", 999)
