"""Judges: how far to trust a judge, from a few human labels.

data (a batch as a judge's predictions and costs; the dataset's human labels, imported and from annotators),
columns (score columns computed elsewhere, as judges), estimate (the consistency rate: the judge's raw rate,
classical and prediction-powered, with ppi-python), coverage (how often those intervals cover, simulated on
arrays for bench/ and the tests), agreement (balanced accuracy, AUROC, kappa, Pearson with
intervals), card (the judge card), links (ConsEval and DHP results of the same model), label_next (which items
to label next, sent to annotators' queues), panels (saved comparisons, for reports and share links), tables
(the cards side by side), compare (systems compared: each one's rate and every pair's difference) and
systems (a dataset's systems, compared by one judge, and the saved comparison behind a report).
"""

from services.judges import compare, systems
from services.judges.agreement import Agreement, Metric, agreement
from services.judges.card import (
    Cost,
    JudgeCard,
    JudgeInfo,
    build_cards,
    card_from_frames,
    judge_name,
    most_judged,
    prices_of,
)
from services.judges.columns import ImportedColumn, column_frame, import_column, list_columns
from services.judges.data import LABEL_SOURCES, LabelSource, annotator_truth, human_frame, judge_frame
from services.judges.estimate import Estimate, RateEstimates, classical, ppi, rates
from services.judges.label_next import STRATEGIES, Proposal, propose, queued_items, send
from services.judges.links import Linked, linked_results
from services.judges.panels import candidate_batches, get_panel, list_panels, save_panel, stamp

__all__ = [
    "LABEL_SOURCES",
    "STRATEGIES",
    "Agreement",
    "Cost",
    "Estimate",
    "ImportedColumn",
    "JudgeCard",
    "JudgeInfo",
    "LabelSource",
    "Linked",
    "Metric",
    "Proposal",
    "RateEstimates",
    "agreement",
    "annotator_truth",
    "build_cards",
    "candidate_batches",
    "card_from_frames",
    "classical",
    "compare",
    "column_frame",
    "get_panel",
    "human_frame",
    "import_column",
    "judge_frame",
    "judge_name",
    "linked_results",
    "list_columns",
    "list_panels",
    "most_judged",
    "ppi",
    "prices_of",
    "propose",
    "queued_items",
    "rates",
    "save_panel",
    "send",
    "stamp",
    "systems",
]
