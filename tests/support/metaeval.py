"""Hand-checkable meta-evaluation batches (the expected figures are worked out in the comments)."""

from __future__ import annotations

from tests.metaeval_seed import Item

C, X, U = "consistent", "inconsistent", "unknown"  # X: inconsistent

# Eight items: score (Eq. 3 of the verdicts), human score and label. At threshold 1 ("any inconsistent
# sentence"), items 2, 3, 5, 7, 8 are flagged; humans call 2, 3, 4, 7, 8 inconsistent.
HAND = [
    Item([[C, C]], human_score=1.0, human_label=1, flag=True),  # 1.0
    Item([[C, X]], human_score=0.5, human_label=0, flag=False),  # 0.5
    Item([[X, X]], human_score=0.0, human_label=0, flag=False),  # 0.0
    Item([[C, C, C]], human_score=2 / 3, human_label=0, flag=True),  # 1.0: a miss
    Item([[C, X, C]], human_score=1.0, human_label=1, flag=True),  # 2/3: a false alarm
    Item([[C, C]], human_score=1.0, human_label=1, flag=True),  # 1.0
    Item([[X]], human_score=0.0, human_label=0, flag=True),  # 0.0
    Item([[C, C, X, C]], human_score=0.75, human_label=0, flag=False),  # 0.75
]


ROUNDS = [
    Item([[C, C]]),  # consistent at round 0
    Item([[C, X], [C, C]]),  # corrected in round 1
    Item([[X, X], [C, X], [C, C]]),  # corrected in round 2
    Item([[X], [X]]),  # not corrected (the improver changed nothing more)
    Item([[C, X], [C, X], [C, X]]),  # not corrected after 2 rounds
]


LABELLED = [
    Item([[C, X, C]], sentence_labels=[{"w1": 1, "w2": 1, "w3": 1}, {"w1": 0, "w2": 0, "w3": 1}, {"w1": 1, "w4": 0}]),
    Item([[X, C]], sentence_labels=[{"w2": 0, "w3": 0, "w4": 0}, {"w1": 1, "w2": 0, "w4": 0}]),
    Item([[U, C, X]], sentence_labels=[{"w1": 1, "w2": 1}, {"w3": 1, "w4": 1, "w2": 1}, {"w1": 1, "w3": 1, "w4": 0}]),
]
