"""Where each label came from (issue 32, item 3): every label records how its item was chosen, and the card's
rate intervals rest on the random ones, counting the others as the known values of their items."""

from __future__ import annotations

import numpy as np
import pytest

from services import annotations, judges
from services.annotations import Target
from services.judges.estimate import Estimate, with_known_values
from tests.support.judges import add_judge, labelled_dataset, truth_of


def _informative(truth: np.ndarray) -> list[float]:
    rng = np.random.default_rng(1)
    return [float(x) for x in np.clip(0.1 + 0.8 * truth + rng.normal(0, 0.1, truth.size), 0, 1)]


def _label(engine, annotator_id: int, items: list[int], truth: dict[int, int]) -> None:
    for item in items:
        annotations.label_sentence(
            engine, annotator_id=annotator_id, target=Target.item(item), sentence_idx=0, label=truth[item]
        )


@pytest.fixture
def labelled(engine):
    """200 unlabelled items; 40 labelled at random, 10 where the judge is unsure, 5 by hand without a queue."""
    ds = labelled_dataset(engine, 200, n_labelled=0)
    truth_arr = truth_of(engine, ds)
    bid = add_judge(engine, ds, _informative(truth_arr))
    human = judges.human_frame(engine, ds)
    truth = dict(zip(human["item_id"].astype(int), truth_arr.astype(int), strict=True))
    frame = judges.judge_frame(engine, judges.data.batches(engine, [bid])[0])
    ann = annotations.create_annotator(engine, "ana")
    rand = judges.propose(human, [frame], k=40, strategy="random", seed=3).item_ids
    judges.send(engine, ds, rand, [ann.id], origin="random")
    unsure = judges.propose(human, [frame], k=10, strategy="uncertain", exclude=rand).item_ids
    judges.send(engine, ds, unsure, [ann.id], origin="uncertain")
    by_hand = [i for i in truth if i not in set(rand) | set(unsure)][:5]
    _label(engine, ann.id, rand + unsure + by_hand, truth)
    return ds, bid, truth, rand, unsure, by_hand


def test_every_label_records_how_its_item_was_chosen(engine, labelled):
    ds, _, _, rand, unsure, by_hand = labelled
    human = judges.human_frame(engine, ds).set_index("item_id")
    assert set(human.loc[rand, "origin"]) == {"random"}
    assert set(human.loc[unsure, "origin"]) == {"uncertain"}
    assert set(human.loc[by_hand, "origin"]) == {"manual"}
    assert set(human.loc[human["label"].isna(), "origin"]) == {""}


def test_the_card_counts_chosen_labels_as_known_values_and_says_so(engine, labelled):
    ds, bid, truth, rand, unsure, by_hand = labelled
    (card,) = judges.build_cards(engine, [bid], n_boot=50)
    assert card.label_origins == {"random": 40, "uncertain": 10, "manual": 5}
    assert card.n_labelled == 55 and card.n_not_random == 15
    c = card.rates.classical
    known = [truth[i] for i in unsure + by_hand]
    rest = np.mean([truth[i] for i in rand])
    assert c.n == 40
    assert c.estimate == pytest.approx((sum(known) + 185 * rest) / 200)
    assert card.rates.ppi.n == 40 and card.rates.ppi.n_unlabelled == 145
    note = next(n for n in card.notes if "not a random draw" in n)
    assert "15 of the 55 labels" in note and "10 chosen where the judges are unsure" in note
    assert "5 picked by hand" in note and "rest on the 40 random ones" in note
    d = card.as_dict()
    assert d["label_origins"]["uncertain"] == 10 and d["n_not_random"] == 15


def test_imported_labels_on_some_items_are_assumed_random_and_the_card_says_it(engine):
    ds = labelled_dataset(engine, 60, n_labelled=30)
    bid = add_judge(engine, ds, _informative(truth_of(engine, ds)))
    (card,) = judges.build_cards(engine, [bid], n_boot=50)
    assert card.label_origins == {"imported": 30} and card.n_not_random == 0
    assert any("assume they are a random draw" in n for n in card.notes)
    (kept,) = judges.build_cards(engine, [bid], budget=20, n_boot=50)
    assert kept.label_origins == {"random": 20}


def test_known_values_map_the_interval_of_the_rest():
    """A take-all stratum: 20 known items (5 consistent) and an estimate 0.5 [0.4, 0.6] of the other 80."""
    e = with_known_values(Estimate(0.5, 0.4, 0.6, 30), np.r_[np.ones(5), np.zeros(15)], 100)
    assert (e.estimate, e.ci_low, e.ci_high, e.n) == pytest.approx((0.45, 0.37, 0.53, 30))
    census = with_known_values(Estimate(None, None, None, 0), np.r_[np.ones(3), np.zeros(1)], 4)
    assert census.estimate == 0.75 and census.method == "census"


def test_an_unknown_origin_is_refused(engine):
    ds = labelled_dataset(engine, 5, n_labelled=0)
    ann = annotations.create_annotator(engine, "bo")
    with pytest.raises(judges.data.InputError, match="Unknown origin"):
        judges.send(engine, ds, [1], [ann.id], origin="imported")
