"""Judge cards from batches: agreement, rates, cost; Label next feeding an annotator's queue; the card
updating as annotators label; saved comparisons and their report."""

from __future__ import annotations

import numpy as np
import pytest

from services import annotations, judges, reports
from services.annotations import Target
from services.judges import tables
from tests.support.judges import add_judge, labelled_dataset, truth_of


def _informative(truth: np.ndarray, seed: int = 1) -> list[float]:
    """Scores near the truth; most consistent items reach 1 (the verdict "consistent")."""
    rng = np.random.default_rng(seed)
    return [float(x) for x in np.clip(0.1 + 0.95 * truth + rng.normal(0, 0.1, truth.size), 0, 1)]


def test_card_of_an_informative_judge(engine):
    ds = labelled_dataset(engine, 300, n_labelled=60)
    truth = truth_of(engine, ds)
    scores = _informative(truth)
    scores[5] = None  # one failure
    bid = add_judge(engine, ds, scores)
    (card,) = judges.build_cards(engine, [bid], n_boot=200)
    assert (card.n, card.n_labelled, card.n_done) == (300, 60, 299)
    assert card.failure_rate.value == pytest.approx(1 / 300) and card.failure_rate.ci_high > card.failure_rate.value
    p, c = card.rates.ppi, card.rates.classical
    assert p.ci_low <= truth.mean() <= p.ci_high
    assert p.width < c.width
    assert card.agreement.auroc.value > 0.9 and card.agreement.auroc.n == 59
    assert card.agreement.kappa.ci_low is not None and card.agreement.pearson.ci_low is not None
    assert any("neutral prediction" in n for n in card.notes)
    per = card.cost.per_1000()
    assert per["calls"] == pytest.approx(2000) and per["usd"] is None


def test_prices_give_money_per_1000_documents(engine):
    ds = labelled_dataset(engine, 20)
    bid = add_judge(engine, ds, [0.5] * 20)
    (card,) = judges.build_cards(engine, [bid], prices={str(bid): (2.0, 10.0)}, n_boot=50)
    # 300 input and 50 output tokens per document: 0.3 M and 0.05 M per 1,000
    assert card.cost.per_1000()["usd"] == pytest.approx(0.3 * 2.0 + 0.05 * 10.0)
    assert judges.prices_of(object()) == (None, None)


def test_judges_over_different_datasets_are_refused(engine):
    a, b = labelled_dataset(engine, 10, seed=1), labelled_dataset(engine, 10, seed=2)
    ja, jb = add_judge(engine, a, [0.5] * 10), add_judge(engine, b, [0.5] * 10)
    with pytest.raises(judges.data.InputError, match="same dataset"):
        judges.build_cards(engine, [ja, jb])


def test_best_values_are_marked(engine):
    ds = labelled_dataset(engine, 120)
    truth = truth_of(engine, ds)
    good = add_judge(engine, ds, _informative(truth))
    noise = add_judge(engine, ds, [float(x) for x in np.random.default_rng(5).random(120)])
    cards = judges.build_cards(engine, [good, noise], n_boot=100)
    best = tables.best_cells(cards)
    assert best["AUROC"] == {0} and best["Balanced accuracy of the verdicts"] == {0}
    row = tables.measures_frame(cards).set_index("measure").loc["AUROC"]
    assert row.iloc[0].startswith("★") and not row.iloc[1].startswith("★")


def _label_item(engine, annotator_id: int, item_id: int, label: int) -> None:
    annotations.label_sentence(
        engine, annotator_id=annotator_id, target=Target.item(item_id), sentence_idx=0, label=label
    )


def test_label_next_feeds_the_queue_and_the_card_updates(engine):
    ds = labelled_dataset(engine, 80, n_labelled=0)
    truth = truth_of(engine, ds)
    bid = add_judge(engine, ds, _informative(truth))
    ann = annotations.create_annotator(engine, "rita")
    human = judges.human_frame(engine, ds)
    (before,) = judges.build_cards(engine, [bid], n_boot=50)
    assert before.n_labelled == 0 and before.rates.ppi.estimate is None

    prop = judges.propose(human, [judges.judge_frame(engine, judges.data.batches(engine, [bid])[0])], k=12)
    assert len(prop.item_ids) == 12 and prop.n_unlabelled == 80
    sent = judges.send(engine, ds, prop.item_ids, [ann.id], origin="random")
    assert sent == {"rita": 12}
    queue = annotations.queue(engine, ds, ann.id)
    assert sorted(e.item_id for e in queue) == sorted(prop.item_ids)
    assert judges.queued_items(engine, ds) == sorted(prop.item_ids)
    again = judges.propose(judges.human_frame(engine, ds), [], k=80, exclude=judges.queued_items(engine, ds))
    assert not set(again.item_ids) & set(prop.item_ids), "items in a queue are not proposed twice"

    stamp = judges.stamp(engine, ds, [bid])
    ids = {it: k for k, it in enumerate(judges.human_frame(engine, ds)["item_id"])}
    for item in prop.item_ids:
        _label_item(engine, ann.id, item, int(truth[ids[item]]))
    assert judges.stamp(engine, ds, [bid]) != stamp
    (after,) = judges.build_cards(engine, [bid], n_boot=50)
    assert after.n_labelled == 12
    assert after.rates.classical.estimate == pytest.approx(np.mean([truth[ids[i]] for i in prop.item_ids]))
    assert after.rates.ppi.ci_low is not None
    assert annotations.progress(engine, ds, ann.id).done == 12


def test_uncertain_strategy_picks_the_judges_least_sure_items(engine):
    ds = labelled_dataset(engine, 10, n_labelled=0)
    scores = [0.0, 1.0, 0.5, 0.9, 0.45, 0.1, 1.0, 0.0, 0.6, 1.0]
    bid = add_judge(engine, ds, scores)
    human = judges.human_frame(engine, ds)
    frame = judges.judge_frame(engine, judges.data.batches(engine, [bid])[0])
    prop = judges.propose(human, [frame], k=3, strategy="uncertain")
    picked = [int(human.set_index("item_id").loc[i, "idx"]) for i in prop.item_ids]
    assert picked == [2, 4, 8]


def test_annotator_labels_count_once_every_sentence_is_labelled_and_ties_have_no_label(engine):
    ds = labelled_dataset(engine, 3, n_labelled=0)
    a, b = (annotations.create_annotator(engine, n) for n in ("ann", "bob"))
    items = list(judges.human_frame(engine, ds)["item_id"])
    _label_item(engine, a.id, items[0], 1)
    _label_item(engine, a.id, items[1], 1)
    _label_item(engine, b.id, items[1], 0)
    got = judges.annotator_truth(engine, ds).set_index("item_id")
    assert got.loc[items[0], "label"] == 1.0 and np.isnan(got.loc[items[1], "label"])
    human = judges.human_frame(engine, ds, source="annotators")
    assert list(human["source"]) == ["annotators", "annotators", ""]


def test_a_label_budget_hides_the_rest_of_the_imported_labels(engine):
    ds = labelled_dataset(engine, 100)
    h = judges.human_frame(engine, ds, budget=30, seed=4)
    assert int(h["label"].notna().sum()) == 30
    assert judges.human_frame(engine, ds, budget=30, seed=4)["label"].equals(h["label"])


def test_a_saved_comparison_builds_a_report(engine):
    ds = labelled_dataset(engine, 60, n_labelled=30)
    truth = truth_of(engine, ds)
    ids = [add_judge(engine, ds, _informative(truth)), add_judge(engine, ds, [0.7] * 60, model="other")]
    pid = judges.save_panel(engine, ds, ids, {"source": "all", "alpha": 0.1})
    assert judges.save_panel(engine, ds, ids, {"source": "all", "alpha": 0.1}) == pid
    rep = reports.build(engine, "judges", pid)
    assert rep.kind == "judges" and len(rep.headlines) == 2 and rep.headlines[0].n == 30
    assert "90%" in rep.notes[0]
    # The reading is named: the brackets are fixed-sample, each headline's note adds the live interval around them.
    assert "fixed-sample (valid only if read once at a number of labels fixed in advance)" in rep.interval_note
    for h in rep.headlines:
        lo, hi = (float(x) for x in h.note.split("live (valid at every look): [")[1].rstrip("]").split(", "))
        assert lo <= h.ci_low and h.ci_high <= hi and hi - lo > h.ci_high - h.ci_low
    budgeted = judges.save_panel(engine, ds, ids, {"source": "all", "alpha": 0.1, "budget": 20})
    assert "planned (read once at 20 labels)" in reports.build(engine, "judges", budgeted).interval_note
    assert rep.title == f"Judges compared on labelled-0 (dataset #{ds})" and "labelled-0" in rep.summary
    html = reports.to_html(rep)
    assert "PPI" in html and "★" in html
    share = reports.new_share(engine, "judges", pid)
    assert reports.find_share(engine, share.token).kind == "judges"


def test_agreement_numbers_match_independent_implementations():
    """Kappa as scikit-learn computes it, balanced accuracy and AUROC as scikit-learn does; intervals hold them."""
    from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, roc_auc_score

    rng = np.random.default_rng(2)
    labels = (rng.random(80) < 0.5).astype(float)
    scores = np.clip(0.3 * labels + rng.random(80) * 0.8, 0, 1)
    verdicts = (scores > 0.5).astype(float)
    a = judges.agreement(scores, verdicts, labels, n_boot=300)
    assert a.kappa.value == pytest.approx(cohen_kappa_score(labels, verdicts))
    assert a.balanced_accuracy.value == pytest.approx(balanced_accuracy_score(labels, verdicts))
    assert a.auroc.value == pytest.approx(roc_auc_score(labels, scores))
    for m in (a.kappa, a.balanced_accuracy, a.auroc, a.pearson):
        assert m.ci_low < m.value < m.ci_high and m.n == 80
    wider = judges.agreement(scores, verdicts, labels, n_boot=300, ci=0.99).kappa
    assert wider.ci_low < a.kappa.ci_low and wider.ci_high > a.kappa.ci_high


def test_the_judges_report_says_what_its_brackets_are(engine):
    ds = labelled_dataset(engine, 40, n_labelled=20)
    pid = judges.save_panel(engine, ds, [add_judge(engine, ds, [0.6] * 40)], {"alpha": 0.1})
    html = reports.to_html(reports.build(engine, "judges", pid))
    assert "90% interval of the prediction-powered estimate" in html and "bootstrap interval" not in html


def test_the_rate_figure_draws_each_judges_three_estimates(engine):
    from services.figures.judges import make_judges_rate_figure

    ds = labelled_dataset(engine, 60, n_labelled=30)
    truth = truth_of(engine, ds)
    cards = judges.build_cards(engine, [add_judge(engine, ds, _informative(truth))], n_boot=50)
    fig = make_judges_rate_figure(tables.intervals_frame(cards))
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"judge's raw rate", "classical", "PPI"}
    p = cards[0].rates.ppi
    assert by_name["PPI"].x[0] == pytest.approx(p.estimate)
    assert by_name["PPI"].error_x.array[0] == pytest.approx(p.ci_high - p.estimate)
    assert by_name["judge's raw rate"].error_x.array is None


def test_an_imported_score_column_is_a_judge_beside_a_batch(engine):
    ds = labelled_dataset(engine, 80, n_labelled=60)  # PPI needs 15 labels of each class
    truth = truth_of(engine, ds)
    bid = add_judge(engine, ds, [0.5] * 80)
    rows = "".join(f'{{"id": "x{i}", "p": {0.9 if t else 0.1}}}\n' for i, t in enumerate(truth) if i != 3)
    got = judges.import_column(
        engine,
        ds,
        name="other tool",
        data=(rows + '{"id": "nope", "p": 1}\n').encode(),
        filename="s.jsonl",
        score_column="p",
    )
    assert (got.name, got.n_matched, got.n_unmatched) == ("column:other tool", 79, 1)
    assert judges.list_columns(engine, ds) == ["column:other tool"]
    cards = judges.build_cards(engine, [bid, got.name], dataset_id=ds, n_boot=100)
    col = cards[1]
    assert col.judge == "other tool (score column)" and col.batch_id is None and col.method == "column"
    assert col.agreement.balanced_accuracy.value == 1.0
    assert col.failure_rate.value == pytest.approx(1 / 80)
    assert col.cost.per_1000()["calls"] == 0
    assert col.rates.ppi.width < cards[0].rates.ppi.width
    pid = judges.save_panel(engine, ds, [bid, got.name], {"alpha": 0.05})
    assert len(reports.build(engine, "judges", pid).headlines) == 2
    # importing the column again replaces its values
    judges.import_column(engine, ds, name="other tool", data=b"id,p\nx0,0.3\n", filename="s.csv", score_column="p")
    frame = judges.column_frame(engine, ds, got.name)
    assert int(frame["prediction"].notna().sum()) == 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"id,p\nx0,1.7\n", r"outside \[0, 1\]"),
        (b"id,p\nx0,high\n", "not a number"),
        (b"id,q\nx0,0.5\n", "needs the columns"),
        (b"id,p\nzz,0.5\n", "No row"),
    ],
)
def test_a_bad_score_column_gives_a_message(engine, data, message):
    ds = labelled_dataset(engine, 3)
    with pytest.raises(judges.data.InputError, match=message):
        judges.import_column(engine, ds, name="c", data=data, filename="s.csv", score_column="p")


def _frame_with_rounds(engine, bid: int, rounds: list[dict]):
    """The judge frame of batch `bid` after its items (in id order) are given these last-round results."""
    from sqlmodel import Session, select

    from db.models import Batch, BatchItem, BatchPublic
    from services.judges.data import judge_frame

    with Session(engine) as session:
        rows = session.exec(select(BatchItem).where(BatchItem.batch_id == bid).order_by(BatchItem.id)).all()
        for row, r in zip(rows, rounds, strict=True):
            row.result = {"rounds": [{**r, "sentences": []}]}
            session.add(row)
        session.commit()
    with Session(engine) as session:
        batch = BatchPublic.model_validate(session.get(Batch, bid))
    return judge_frame(engine, batch)


def test_an_evidence_judges_verdict_is_its_eq3_score_not_its_calibrated_probability(engine):
    """The evidence checker stores its calibrated probability as the item score (below 1 even when every
    sentence is supported): the verdict comes from the round's Eq. 3 score, unknown when a sentence was."""
    ds = labelled_dataset(engine, 3)
    bid = add_judge(engine, ds, [0.62, 0.31, 0.55], method="evidence")
    eq3 = [1.0, 0.0, None]
    df = _frame_with_rounds(
        engine, bid, [{"score": s, "checker_score": p} for s, p in zip(eq3, [0.62, 0.31, 0.55], strict=True)]
    )
    assert df["verdict"].tolist()[:2] == [1.0, 0.0] and np.isnan(df["verdict"].iloc[2])
    assert df["prediction"].tolist() == pytest.approx([0.62, 0.31, 0.55])
    (card,) = judges.build_cards(engine, [bid], n_boot=50)
    assert card.rates.judge_rate == pytest.approx(0.5)


def test_an_evidence_judges_verdict_is_its_own_summary_verdict_when_it_has_one(engine):
    """The checker can decide a summary with an undecided sentence (no Eq. 3 score) and leave undecided one whose
    sentences all pass: the card counts its own summary verdict, as the Meta-evaluation page does."""
    ds = labelled_dataset(engine, 3)
    bid = add_judge(engine, ds, [0.81, 0.2, 0.45], method="evidence")
    rounds = [(None, True), (None, False), (1.0, None)]  # (Eq. 3 score, model_is_consistent)
    df = _frame_with_rounds(engine, bid, [{"score": s, "model_is_consistent": flag} for s, flag in rounds])
    assert df["verdict"].tolist()[:2] == [1.0, 0.0] and np.isnan(df["verdict"].iloc[2])


@pytest.mark.parametrize(
    ("value", "amount", "shown"),
    [
        (20.16, True, "20.2"),  # seconds per 1,000 docs: no false precision
        (0.01234, True, "0.0123"),  # USD per 1,000 docs keeps its digits
        (133.4, True, "133"),
        (12345.0, True, "12,345"),
        (0.8123, False, "0.812"),  # a rate or agreement measure: 3 decimals
    ],
)
def test_costs_read_to_three_significant_digits_and_measures_to_three_decimals(value, amount, shown):
    assert tables._text(value, None, None, None, amount=amount) == shown


def test_one_choice_is_saved_once_even_with_prices_and_old_repeats_are_listed_once(engine):
    """Prices come as (input, output) tuples; the JSON column gives lists back, and each rerun of the page
    used to find no match and write another row (its share button's key changed, the click was lost)."""
    from db.engine import get_session
    from db.models import JudgePanel

    ds = labelled_dataset(engine, 20, n_labelled=10)
    ids = [add_judge(engine, ds, [0.6] * 20)]
    opts = {"source": "all", "alpha": 0.05, "budget": None, "prices": {str(ids[0]): (0.5, 1.5)}}
    pid = judges.save_panel(engine, ds, ids, opts)
    assert judges.save_panel(engine, ds, ids, opts) == pid
    other = judges.save_panel(engine, ds, ids, opts | {"alpha": 0.1})
    assert other != pid
    with get_session(engine) as s:  # repeats of one choice, as older versions wrote them
        for _ in range(3):
            s.add(JudgePanel(dataset_id=ds, batch_ids=list(ids), options=json_like(opts)))
    listed = [p.id for p in judges.list_panels(engine)]
    assert listed == [other, pid]


def json_like(opts):
    import json

    return json.loads(json.dumps(opts))


def test_each_items_sentence_count_is_the_length_of_its_stored_list(engine):
    """The database counts the sentences (json_array_length) instead of Python decoding every item's list:
    the counts are the lists' lengths, an item with none counting as one (a whole-summary judgment)."""
    from sqlmodel import Session, select

    from db import judges as db_judges
    from db.models import DatasetItem

    ds = labelled_dataset(engine, 4)
    sizes = [0, 1, 3, 12]
    with Session(engine) as session:
        items = session.exec(select(DatasetItem).where(DatasetItem.dataset_id == ds).order_by(DatasetItem.idx)).all()
        for item, k in zip(items, sizes, strict=True):
            item.sentences = [f'Sentence {j}, with a comma and "quotes".' for j in range(k)]
            session.add(item)
        session.commit()
        stored = [len(i.sentences) for i in session.exec(select(DatasetItem).order_by(DatasetItem.idx)).all()]
        rows = db_judges.human_rows(session=session, dataset_id=ds)
    assert stored == sizes
    assert [r.n_sentences for r in rows] == [max(1, len_) for len_ in stored] == [1, 1, 3, 12]
