"""Meta-evaluation page: no batches, a finished batch in every tab, missing human judgments, deep links."""

from __future__ import annotations

import pytest
import streamlit as st
from sqlalchemy import update
from sqlmodel import Session

import services.baselines
import services.database
from components import background
from components import metaeval_views as mv
from db.models import BatchItem
from services import metaeval
from tests.app.helpers import texts
from tests.metaeval_seed import Item, seed
from tests.support.metaeval import HAND, LABELLED, ROUNDS
from tests.support.waiting import HEALTHY_TIMEOUT, WAIT_LIMIT

META = "pages/6_Meta-evaluation.py"
C, X = "consistent", "inconsistent"
TABS = ["Summary level", "Figure 3", "Methods", "Sentence level", "Baselines", "RAI", "Human agreement", "Export"]


@pytest.fixture(autouse=True)
def _fresh_caches():
    """Cached frames and background tasks are per process: no test may see another's."""
    st.cache_data.clear()
    background._registry.clear()
    mv._throttle.clear()
    yield
    st.cache_data.clear()
    background._registry.clear()
    mv._throttle.clear()


@pytest.fixture
def no_embeddings(monkeypatch):
    monkeypatch.setattr(services.baselines, "embeddings_available", lambda: (False, "Install it with make."))


def open_tab(open_page, batch_id: int, tab: str = "Summary level", **query):
    at = open_page(META, query={"batch": str(batch_id), "me_tab": tab, **query})
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def header(at) -> str:
    return " ".join(texts(at.markdown))


def downloads(at) -> list[str]:
    return [b.proto.label for b in at.get("download_button")]


def test_no_batches_says_what_to_do(open_page):
    at = open_page(META)
    assert not at.exception
    assert any("No batch yet" in i for i in texts(at.info))
    assert not at.dataframe


def test_a_finished_batch_shows_every_table(open_page, no_embeddings):
    _, bid = seed(services.database.get_engine(), LABELLED + HAND)
    at = open_tab(open_page, bid)
    assert at.selectbox[0].value == bid
    corr = at.dataframe[0].value
    assert corr["statistic"].tolist() == ["Pearson r", "Spearman ρ", "Kendall τ (b)", "AUROC"]
    assert (corr["n"] == 8).all() and corr["value [95% CI]"].str.contains(r"\[").all()
    m = metrics(at)
    assert "**11** of 11 items scored" in header(at) and m["AUROC"] != "—" and m["Precision"] == "0.667"
    assert "CSV" in downloads(at) and any("PNG" in c for c in texts(at.caption))

    at = open_tab(open_page, bid, "Figure 3")
    assert at.dataframe[0].value["evaluator"].str.contains("without AMC").any()

    at = open_tab(open_page, bid, "Sentence level")
    assert metrics(at)["Sentences compared"] == "6"
    assert any("tied human votes" in c for c in texts(at.caption))

    at = open_tab(open_page, bid, "Baselines")
    table = at.dataframe[0].value
    assert table["metric"].tolist()[1:] == list(metaeval.BASELINE_METRICS.values())
    assert any("Embedding similarity unavailable" in w for w in texts(at.warning))
    assert [b.label for b in at.button if b.label == "Compute baselines"]

    at = open_tab(open_page, bid, "RAI")
    assert at.dataframe[0].value[["inconsistent", "corrected"]].iloc[0].tolist() == [8, 0]

    at = open_tab(open_page, bid, "Human agreement")
    m = metrics(at)
    assert m["Sentences"] == "8" and m["Workers"] == "4" and m["Krippendorff's α (humans)"] != "—"

    at = open_tab(open_page, bid, "Export")
    assert "Download reproducibility bundle (JSON)" in downloads(at)
    assert "Download every table (JSON)" in downloads(at)
    assert any(f"report --run {bid}" in c.value for c in at.code)


def test_compute_baselines_fills_the_table(open_page, no_embeddings):
    _, bid = seed(services.database.get_engine(), HAND)
    at = open_tab(open_page, bid, "Baselines")
    assert at.dataframe[0].value["n"].tolist() == [8, 0, 0, 0, 0]
    at = [b for b in at.button if b.label == "Compute baselines"][0].click().run()
    assert not at.exception
    task = background.get(f"me-bl:{bid}")
    if task is not None:
        task.future.result(timeout=WAIT_LIMIT)  # the background job, however long it takes here
    at = open_tab(open_page, bid, "Baselines")
    table = at.dataframe[0].value
    assert table["n"].tolist() == [8, 8, 8, 8, 0]  # ROUGE-2, ROUGE-L, evidence checker; no embeddings here
    assert not [b for b in at.button if b.label == "Compute baselines"]


def test_a_dataset_without_human_judgments_explains_what_is_missing(open_page, no_embeddings):
    _, bid = seed(services.database.get_engine(), [Item([[C, X]]), Item([[C, C]]), Item([[X]])])
    at = open_tab(open_page, bid)
    captions = " ".join(texts(at.caption))
    assert "no human scores" in captions and "No binary human labels" in captions
    assert not at.dataframe  # no table of undefined numbers
    at = open_tab(open_page, bid, "Figure 3")
    assert any("no binary human labels" in i for i in texts(at.info))
    at = open_tab(open_page, bid, "Sentence level")
    assert any("No per-sentence human labels" in c for c in texts(at.caption))
    at = open_tab(open_page, bid, "Human agreement")
    assert any("no per-sentence human labels" in c for c in texts(at.caption))
    assert not at.metric or "Sentences" not in metrics(at)
    at = open_tab(open_page, bid, "Baselines")
    assert any("no human scores or labels" in i for i in texts(at.info)) and not at.dataframe


def test_a_running_batch_shows_partial_results_with_a_note(open_page, no_embeddings):
    items = [*HAND[:4], Item([[C, C]], status="pending"), Item([[C]], status="pending")]
    _, bid = seed(services.database.get_engine(), items, status="running")
    at = open_tab(open_page, bid)
    assert any("still running" in i and "4 of 6" in i for i in texts(at.info))
    assert "**4** of 6 items scored" in header(at)


def test_a_running_batch_is_recomputed_at_most_every_refresh_period_and_says_as_of_when(open_page, no_embeddings):
    engine = services.database.get_engine()
    items = [*HAND[:4], Item([[C, C]], status="pending"), Item([[C]], status="pending")]
    _, bid = seed(engine, items, status="running")
    at = open_tab(open_page, bid)
    as_of = [c for c in texts(at.caption) if c.startswith(":material/schedule: As of")]
    assert len(as_of) == 1 and "UTC, 4 items done" in as_of[0] and "every 30 s" in as_of[0]
    with Session(engine) as s:
        s.exec(update(BatchItem).where(BatchItem.batch_id == bid).values(status="done", score=1.0))
        s.commit()
    at = open_tab(open_page, bid)  # a new session within the period: the same figures, nothing read again
    assert "**4** of 6 items scored" in header(at)
    mv._throttle.clear()  # the period is over
    at = open_tab(open_page, bid)
    assert "**6** of 6 items scored" in header(at)


def test_the_summary_level_reads_no_sentences_and_computes_no_alpha(open_page, no_embeddings, monkeypatch):
    import services.metaeval.reporting

    _, bid = seed(services.database.get_engine(), LABELLED + HAND)

    def not_on_this_tab(*a, **k):
        raise AssertionError("not shown on the Summary level tab")

    monkeypatch.setattr(metaeval, "add_sentences", not_on_this_tab)
    monkeypatch.setattr(services.metaeval.reporting, "human_agreement", not_on_this_tab)
    monkeypatch.setattr(services.metaeval.reporting, "baseline_table", not_on_this_tab)
    at = open_tab(open_page, bid)  # open_tab asserts no exception
    corr = at.dataframe[0].value
    assert corr["value [95% CI]"].str.contains(r"\[").all()  # the intervals are there all the same


def test_a_finished_batch_says_no_as_of(open_page, no_embeddings):
    _, bid = seed(services.database.get_engine(), HAND)
    at = open_tab(open_page, bid)
    assert not [c for c in texts(at.caption) if "As of" in c]


def test_a_batch_with_nothing_finished_says_so(open_page):
    _, bid = seed(services.database.get_engine(), [Item([[C]], status="pending")], status="queued")
    at = open_tab(open_page, bid)
    assert any("No item of this batch has a score yet" in i for i in texts(at.info))


def test_too_few_items_get_the_notes_of_the_statistics(open_page, no_embeddings):
    _, bid = seed(services.database.get_engine(), HAND[:2])
    at = open_tab(open_page, bid)
    notes = at.dataframe[0].value["note"].tolist()
    assert all("at least 3 pairs" in n for n in notes[:3])


def test_rounds_and_a_second_batch_for_figure3(open_page, no_embeddings):
    from tests.metaeval_seed import add_batch

    ds, bid = seed(
        services.database.get_engine(),
        [Item(r.rounds, human_score=1.0, human_label=i % 2) for i, r in enumerate(ROUNDS)],
    )
    para = add_batch(
        services.database.get_engine(),
        ds,
        [Item([[X]]), Item([[C]]), Item([[X]]), Item([[C]]), Item([[X]])],
        method="paragraph",
    )
    at = open_tab(open_page, bid, "RAI")
    # Table 4 is one RAI round (1 corrected); after m = 2 rounds, 2 are
    assert at.dataframe[0].value[["inconsistent", "corrected", "corrected_after_m"]].iloc[0].tolist() == [4, 1, 2]
    assert len(at.get("plotly_chart")) == 2
    at = open_tab(open_page, bid, "Figure 3")
    assert at.selectbox[1].options == [
        "— none —",
        f"#{para} · hand batch · done · 5 items · Paragraph-level baseline (Tables 11, 12)",
    ]
    at = at.selectbox[1].set_value(para).run()
    assert not at.exception
    rows = at.dataframe[0].value
    assert rows["batch"].tolist()[-1] == para and rows["evaluator"].iloc[-1].startswith("Paragraph level")


def test_deep_link_picks_the_batch_and_an_unknown_one_warns(open_page, no_embeddings):
    engine = services.database.get_engine()
    _, first = seed(engine, HAND, name="first")
    _, second = seed(engine, HAND[:5], name="second")
    at = open_tab(open_page, first)
    assert at.selectbox[0].value == first and "**8** of 8 items scored" in header(at)
    at = open_page(META, query={"batch": "999"})
    assert not at.exception
    assert any("Batch 999 does not exist" in w for w in texts(at.warning))
    assert at.selectbox[0].value == second  # the newest


def test_human_agreement_shows_the_app_annotators_alpha(open_page, no_embeddings):
    from sqlmodel import Session, select

    from db.models import DatasetItem
    from services import annotations
    from services.annotations import Target

    eng = services.database.get_engine()
    ds, bid = seed(eng, LABELLED + HAND)
    at = open_tab(open_page, bid, "Human agreement")
    assert any("Nobody has labelled" in c for c in texts(at.caption))

    with Session(eng) as s:
        items = s.exec(select(DatasetItem).where(DatasetItem.dataset_id == ds).order_by(DatasetItem.idx)).all()
    a, b = (annotations.get_or_create_annotator(eng, n) for n in ("Ada", "Bo"))
    for it in items[:4]:
        for who, label in ((a, 1), (b, 1 if it.idx % 2 else 0)):
            annotations.label_sentence(eng, annotator_id=who.id, target=Target.item(it.id), sentence_idx=0, label=label)
    at = open_tab(open_page, bid, "Human agreement")
    assert any("labelled by 2 annotator(s)" in c for c in texts(at.caption))
    assert len(at.dataframe) >= 2


def test_a_finished_batch_without_any_score_says_why(open_page):
    # Every sentence unknown (e.g. a model that only echoed the prompt): done, but nothing scored.
    _, bid = seed(services.database.get_engine(), [Item([["unknown", "unknown"]]), Item([["unknown"]])], status="done")
    at = open_tab(open_page, bid)
    assert any("No item of this batch got a score" in i for i in texts(at.info))


def test_methods_tab_compares_batches_over_the_dataset_with_repeats_lengths_and_error_types(open_page, fake):
    from services import dcr
    from services.config import BackendConfig
    from services.jobs import batches
    from tests.nli_fakes import nli_judge
    from tests.support.metaeval_methods import BAD
    from tests.support.metaeval_methods import seed as seed_growing

    fake.responder = nli_judge(bad=BAD)
    eng = services.database.get_engine()
    ds = seed_growing(eng)
    backend = BackendConfig(
        kind="openai", base_url=fake.base_url, model="fake-model", max_retries=1, timeout=HEALTHY_TIMEOUT
    )
    ids = [batches.create_batch(eng, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="sent-nli"))]
    ids += batches.create_repeats(eng, repeats=2, dataset_id=ds, backend=backend, cfg=dcr.DCRConfig(method="summ-nli"))
    for b in ids:
        batches.process_batch(eng, b)
    at = open_tab(open_page, ids[0], "Methods")
    table = at.dataframe[0].value
    assert list(table["method"]) == ["Sent-NLI (w=1)", "Summ-NLI · run 1", "Summ-NLI · run 2"]
    assert list(table["balanced_accuracy"]) == ["1.000"] * 3
    assert list(table["calls_per_doc"])[1:] == ["1.0", "1.0"]
    repeats = at.dataframe[1].value
    assert repeats.iloc[0].tolist()[:3] == ["Summ-NLI", 2, "1.000 ± 0.000"]
    types = at.dataframe[2].value
    assert list(types["error_type"]) == ["None", "entity", "number"]  # Table 5's None: the consistent summaries
    assert "None: the consistent summaries" in " ".join(c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 2  # methods and Figure 2


def test_an_evidence_checker_batch_offers_no_rounds_and_no_row_without_amc(open_page, no_embeddings):
    from tests.metaeval_seed import add_batch

    ds, _ = seed(services.database.get_engine(), HAND)
    eid = add_batch(
        services.database.get_engine(),
        ds,
        [Item([[X if i % 2 else C]], flag=not i % 2) for i in range(8)],
        method="evidence",
    )
    at = open_tab(open_page, eid, "RAI")
    assert "evidence checker" in header(at) and "converter" not in header(at), "it has no converter"
    notes = texts(at.caption)
    assert any("gives verdicts, not rewrites" in c for c in notes), notes
    assert not any("rounds ≥ 1" in c for c in notes), "no advice to run rounds the evaluator cannot do"
    at = open_tab(open_page, eid, "Figure 3")
    assert not at.dataframe[0].value["evaluator"].str.contains("without AMC").any()


def test_the_summary_level_shows_risk_coverage_and_reliability_with_their_numbers(open_page, no_embeddings):
    _, bid = seed(services.database.get_engine(), LABELLED + HAND)
    at = open_tab(open_page, bid)
    assert any("risk-coverage and reliability" in h.value for h in at.subheader)
    assert {"Curve (CSV)", "Bins (CSV)"} <= set(downloads(at))
    notes = texts(at.caption)
    assert any(c.startswith("n = ") and "area under the risk-coverage curve" in c for c in notes), notes
    assert any("ECE" in c and "bins" in c for c in notes), notes


def test_the_binary_metrics_say_their_n_and_intervals(open_page, no_embeddings):
    """Precision and recall are proportions of a few items: the page gives each its n and Wilson interval."""
    _, bid = seed(services.database.get_engine(), LABELLED + HAND)
    at = open_tab(open_page, bid)
    (line,) = [c for c in texts(at.caption) if "labelled items · precision" in c]
    assert line.startswith("n = 8 labelled items") and "precision 0.667 [" in line and "recall " in line
    assert "marked consistent)" in line and "consistent by humans)" in line


def test_the_batch_choice_has_a_row_of_its_own(open_page, no_embeddings):
    """A batch's label (name, status, size) is long: it is not squeezed into a third of the page."""
    _, bid = seed(services.database.get_engine(), LABELLED + HAND)
    at = open_tab(open_page, bid)
    assert "Batch" not in [sb.label for col in at.columns for sb in col.selectbox]
    assert at.selectbox(key="me_batch").value == bid


@pytest.mark.parametrize("method", ["evidence", "dce-amc"])
def test_the_page_the_card_and_the_shared_report_show_one_balanced_accuracy_each(open_page, no_embeddings, method):
    """The evidence checker's score is a probability (its own threshold, 0.5) and its verdicts are withheld on
    some items: two balanced accuracies that differ by design, each under its own name, with the same value on
    the Meta-evaluation page, the Judges card and a report's share link; a DCE batch's two agree at 1.0."""
    from services import reports
    from services.judges.agreement import VERDICTS_NAME
    from tests.support.methods import balanced_accuracy, seed_method

    eng = services.database.get_engine()
    s = seed_method(eng, method)
    t = metaeval.binary.default_threshold(method)
    want_score = f"{balanced_accuracy((s.scores >= t).astype(float), s.labels):.3f}"
    want_verdicts = f"{balanced_accuracy(s.verdicts, s.labels):.3f}"
    score_name = f"Balanced accuracy of the score at {t:g}"

    at = open_tab(open_page, s.batch_id)
    assert at.slider(key=f"me_threshold_{method}").value == t
    m = metrics(at)
    assert (m[score_name], m[VERDICTS_NAME]) == (want_score, want_verdicts), m
    assert any(c.startswith(f"{score_name}: consistent when") and VERDICTS_NAME in c for c in texts(at.caption))

    judges_page = open_page("pages/13_Judges.py")
    assert not judges_page.exception, judges_page.exception
    (grid,) = [d.value for d in judges_page.dataframe if list(d.value.columns[:2]) == ["judge", "labelled"]]
    assert f"{grid['bal. acc. (verdicts)'].iloc[0]:.3f}" == want_verdicts

    share = reports.new_share(eng, "batch", s.batch_id)
    viewer = open_page("pages/12_Reports.py", query={"share": share.token})
    assert not viewer.exception, viewer.exception
    shared = metrics(viewer)
    assert (shared[score_name], shared[VERDICTS_NAME]) == (want_score, want_verdicts), shared
    assert not any(label.startswith("Balanced accuracy at") for label in shared)
