"""Report builders of the studies that plug in beside DCR: each gives a Report that writes as one HTML file."""

from __future__ import annotations

import pytest

from components.report_builders import BUILDERS, build
from services import conseval as ce
from services import reports
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
        b = Batch(dataset_id=ds_id, method=method, status="done", model="teacher", n_items=len(item_ids),
                  params={"window": 1, "api_key": "sk-never-shown"})  # fmt: skip
        s.add(b)
        s.flush()
        for item_id, lab in zip(item_ids, labels, strict=True):
            score = None if lab is None else float(lab == "consistent")
            rec = {"method": method, "label": lab, "summary": {"label": lab, "reasoning": f"why {lab} {item_id}"}}
            s.add(BatchItem(batch_id=b.id, item_id=item_id, status="done" if lab else "failed", score=score,
                            final_score=score, n_rounds=1, calls=2, result=rec))  # fmt: skip
        s.commit()
        return b.id


def test_nli_comparison_puts_the_methods_side_by_side_on_common_items(engine):
    from tests.support.distill import Row, make_dataset

    ds_id, ids = make_dataset(engine, [Row(i, i % 2) for i in range(6)])  # gold: 0 1 0 1 0 1
    C, X = "consistent", "inconsistent"
    summ = nli_batch(engine, ds_id, ids, [X, C, C, C, X, C], "summ-nli")  # 5 of 6 right
    sent = nli_batch(engine, ds_id, ids, [X, C, X, C, X, None], "sent-nli")  # item 6 failed
    rep = build(engine, "nli", summ, n_boot=200)
    table = next(t for t in rep.tables if t.title == "Methods side by side")
    rows = {r[0]: dict(zip(table.columns, r, strict=True)) for r in table.rows}
    assert set(rows) == {f"Summ-NLI #{summ}", f"Sent-NLI (w=1) #{sent}"}
    assert all(r["n"] == 5 for r in rows.values())  # the items both finished
    # Summ-NLI on items 1-5: gold 0 1 0 1 0, said X C C C X: recall(inconsistent) 2/3, recall(consistent) 1
    heads = {h.label: h for h in rep.headlines}
    assert heads[f"Balanced accuracy · Summ-NLI #{summ}"].value == pytest.approx((2 / 3 + 1) / 2)
    assert heads[f"Balanced accuracy · Sent-NLI (w=1) #{sent}"].value == pytest.approx(1.0)
    assert "Compared on the 5 labelled items" in " ".join(rep.notes)
    (ex, *_) = rep.examples
    assert any("why inconsistent" in v for k, v in ex.fields if k.startswith("Summ-NLI"))
    html = reports.to_html(rep, secrets=[])
    assert "sk-never-shown" not in html and html.count("Plotly.newPlot(") == 2


def test_survey_report_has_the_expert_alpha_and_the_weights(engine):
    from tests.support.survey import cast, new_survey

    sid, ids = new_survey(engine, task="story", experts=4)
    for i, e in enumerate(ids):
        cast(engine, e, "grammar", "Fluency" if i < 3 else "Coherence")
        cast(engine, e, "typo", "Fluency")
    rep = build(engine, "survey", sid, n_boot=100)
    heads = {h.label: h for h in rep.headlines}
    assert heads["Experts who voted"].value == 4 and heads["Questions with a vote"].value == 2
    assert heads["Krippendorff's α among experts"].n == 2
    weights = next(t for t in rep.tables if t.title == "Weights per question")
    grammar = {r[2]: r[4] for r in weights.rows if r[0] == "grammar"}
    assert grammar["Fluency"] == pytest.approx(0.75) and grammar["Coherence"] == pytest.approx(0.25)
    assert [f.title for f in rep.figures] == ["Expert weights"]
    assert "still open" in " ".join(rep.notes)
    assert "Plotly.newPlot(" in reports.to_html(rep, secrets=[])
    with pytest.raises(InputError, match="does not exist"):
        build(engine, "survey", 999)


def test_dhp_run_report_has_discernment_tests_and_highlighted_perturbations(tmp_path, fake, backend):
    from db.engine import get_session, make_engine
    from services import dhp
    from services.perturb import TASKS
    from tests.support.dhp import council_items, judge_fluency_only

    eng = make_engine(f"sqlite:///{tmp_path / 'dhp.db'}")
    items = council_items(6)
    fake.responder = judge_fluency_only({it.text for it in items})
    with get_session(eng) as s:
        sid = dhp.create_set(TASKS["summarization"], items, name="t", seed=1, session=s, only=["typo:minor"])
    with get_session(eng) as s:
        rid = dhp.create_run(sid, backend, repeats=1, seed=0, session=s)
    assert dhp.process_run(eng, rid) == "done"
    rep = build(eng, "dhp", rid)
    heads = {h.label: h for h in rep.headlines}
    with get_session(eng) as s:
        res = dhp.run_result(rid, session=s)
    assert heads["D_min"].value == pytest.approx(res.d_min) and res.d_min > 0  # typos are seen
    assert heads["D_paper min"].value == pytest.approx(res.d_paper_min) and res.d_paper_min > res.d_min
    # one level of Table 1 only: D_avg is left empty and the report says why
    assert heads["D_avg (level-weighted)"].value is None and "not comparable" in " ".join(rep.notes)
    assert [f.title for f in rep.figures] == ["Discernment per perturbation", "D_avg, D_min, D_paper, D_EW"]
    assert any(t.title.startswith("Wilcoxon") and t.rows for t in rep.tables)
    (ex,) = rep.examples
    html = reports.to_html(rep, secrets=[])
    assert "cs-ins" in html and ex.rounds[0].rewrites[0].before != ex.rounds[0].rewrites[0].after
    assert "No closed expert survey" in " ".join(rep.notes)
    eng.dispose()
    with pytest.raises(InputError, match="does not exist"):
        build(make_engine("sqlite://"), "dhp", 1)


def test_an_nli_run_report_shows_the_verdict_and_its_reasoning(engine, fake, backend):
    from services import runs
    from tests.app.helpers import CAND, REF

    fake.responder = lambda body: {"reasoning": "The tower was completed in 1889, not 1999.",
                                   "judgement": "Inconsistent"}  # fmt: skip
    rid = runs.start_method_run(engine, backend, REF, CAND, "summ-nli")
    rep = build(engine, "run", rid)
    heads = {h.label: h for h in rep.headlines}
    assert heads["Share of units judged consistent"].value == 0.0 and heads["Units judged"].value == 1
    fields = dict(rep.examples[0].fields)
    assert fields["Summ-NLI verdict and reasoning"].startswith("inconsistent\n")
    assert "completed in 1889, not 1999" in fields["Summ-NLI verdict and reasoning"]
    assert {p["id"] for p in rep.configuration["prompts"]} and "completed in 1889" in reports.to_html(rep, secrets=[])
