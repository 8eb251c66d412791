"""Figure 3 and the sentence level: the evidence checker's own verdicts, a score at the consistency cut, and
the notes users read, word for word."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from services.metaeval import classification as mc
from services.metaeval.common import CONSISTENT_AT
from services.metaeval.loading import BatchData
from tests.services.test_metaeval_classification_mutants import _batch


def test_the_evidence_checker_is_scored_by_its_own_verdict_not_its_probability():
    """Its score is a probability; its verdict (True, False, or none when it abstains) is the prediction."""
    items = pd.DataFrame(
        {"score": [0.99, 0.2, 0.7], "model_is_consistent": pd.array([False, True, None], dtype="boolean")}
    )
    got = mc._scored_prediction(SimpleNamespace(method="evidence"), items)
    assert got.iloc[:2].tolist() == [0.0, 1.0] and np.isnan(got.iloc[2])


def test_a_score_at_the_consistency_cut_counts_as_consistent():
    """Eq. 3 gives 1.0 for a summary with every sentence consistent; the cut (1 - 1e-9) is inclusive."""
    items = pd.DataFrame({"score": [CONSISTENT_AT, 0.999, 1.0]})
    assert mc._scored_prediction(SimpleNamespace(method="dce-amc"), items).tolist() == [1.0, 0.0, 1.0]


def test_the_sentence_level_notes_read_in_full():
    plain = _batch()
    plain.sentences["n_votes"] = 0
    assert mc.sentence_level(data=plain).notes == (
        "No per-sentence human labels for these items (QAGS worker votes, or a sentence_labels column): "
        "nothing to compare the sentence verdicts with.",
    )
    mis = _batch()
    mis = BatchData(mis.batch, None, mis.items, mis.sentences, mis.votes, 3, 3, 2)
    assert mc.sentence_level(data=mis).notes[0] == (
        "2 item(s) were judged on a different number of sentences than their labels cover; they are left out."
    )
