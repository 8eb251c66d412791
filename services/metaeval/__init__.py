"""Meta-evaluation of a batch: how well the evaluator agrees with human judgments (DCR paper, section 4).

* Summary level (Tables 1-3): Pearson, Spearman and Kendall (tau-b) between each item's score and its human
  score, with bootstrap 95% intervals; AUROC against the binary human label; confusion, balanced accuracy,
  precision, recall and F1 at a threshold.
* Sentence level: the model's round-0 verdicts against the human majority of each sentence.
* Figure 3: DCE + AMC against DCE without AMC (the model's own `is_consistent`) and a paragraph-level batch.
* Baselines computed locally on the same items (ROUGE-2, ROUGE-L, MiniLM embedding similarity), side by side.
* RAI (Table 4, Figure 4): inconsistent items, corrected items, improvement rate; share consistent per round.
* Human agreement: Krippendorff's alpha among the workers, and between the model and the human majority.
* A reproducibility bundle: configuration, model, prompt ids and hashes, seeds, dataset hash.

The binary view follows the paper: an item is *consistent* when its score is 1 (every sentence judged
consistent) and *consistent* is the positive class of precision, recall and F1 (Fig. 3: "higher recall and
lower precision implies that more candidates are incorrectly marked as consistent"). Hence
DEFAULT_THRESHOLD = 1.0: a score below 1, i.e. any inconsistent sentence, flags the item. It is the threshold
of Table 4 and Figure 3, needs no tuning on the data being evaluated, and agrees with human labels built the
same way (QAGS: every sentence has a majority "yes"; SummEval: every expert gave 5). A lower threshold trades
recall for precision; the page's slider shows that, while AUROC summarises every threshold at once. Everything
here is plain Python (pandas, numpy and services.stats); the page caches the results.

The modules: loading (BatchData from the database), summary (correlations, AUROC), classification (the binary
view, sentence level, Figure 3), baseline_metrics, rai (Table 4, Figure 4), agreement (alpha), reproducibility
(the bundle), reporting (the whole report) and methods (paper 003's comparison of methods over one dataset).
"""

from services.metaeval import binary
from services.metaeval.agreement import HumanAgreement, alpha_frame, human_agreement
from services.metaeval.baseline_metrics import (
    BASELINE_METRICS,
    EMBEDDING_METRIC,
    EVIDENCE_METRIC,
    ROUGE_METRICS,
    TABLE_COLUMNS,
    baseline_stamp,
    baseline_table,
    baselines,
    cached_baselines,
    compute_baselines,
    missing_baselines,
    wanted_metrics,
)
from services.metaeval.classification import (
    Figure3,
    SentenceLevel,
    at_threshold,
    classification_frame,
    confusion_frame,
    figure3,
    sentence_level,
)
from services.metaeval.common import CONSISTENT_AT, DEFAULT_BOOT, DEFAULT_SEED, DEFAULT_THRESHOLD, POSITIVE
from services.metaeval.loading import (
    BatchData,
    RunningBatches,
    StampThrottle,
    add_sentences,
    batch_frame,
    batch_stamp,
    load_batch,
)
from services.metaeval.methods import ERROR_TYPE_KEYS, LENGTH_BUCKETS, MethodComparison, compare_method_batches
from services.metaeval.rai import RoundsResult, rai_table, rounds_of, rounds_table
from services.metaeval.reporting import (
    PARTS,
    Estimates,
    Report,
    bootstrap_seconds,
    build_report,
    estimates,
    estimates_from_db,
    jsonable,
    model_label,
    report,
    report_dict,
    report_json,
)
from services.metaeval.reproducibility import app_version, bundle, prompt_record, public_params
from services.metaeval.selective import Selective, selective
from services.metaeval.summary import Correlations, SummaryLevel, correlations, summary_level

__all__ = [
    "binary",
    "CONSISTENT_AT",
    "DEFAULT_BOOT",
    "DEFAULT_SEED",
    "DEFAULT_THRESHOLD",
    "POSITIVE",
    "BatchData",
    "RunningBatches",
    "StampThrottle",
    "add_sentences",
    "batch_frame",
    "batch_stamp",
    "load_batch",
    "Correlations",
    "SummaryLevel",
    "correlations",
    "summary_level",
    "Figure3",
    "SentenceLevel",
    "at_threshold",
    "classification_frame",
    "confusion_frame",
    "figure3",
    "sentence_level",
    "BASELINE_METRICS",
    "EMBEDDING_METRIC",
    "EVIDENCE_METRIC",
    "ROUGE_METRICS",
    "TABLE_COLUMNS",
    "baseline_stamp",
    "baseline_table",
    "baselines",
    "cached_baselines",
    "compute_baselines",
    "missing_baselines",
    "wanted_metrics",
    "RoundsResult",
    "rai_table",
    "rounds_of",
    "rounds_table",
    "HumanAgreement",
    "alpha_frame",
    "human_agreement",
    "app_version",
    "bundle",
    "prompt_record",
    "public_params",
    "PARTS",
    "Estimates",
    "Report",
    "bootstrap_seconds",
    "build_report",
    "estimates",
    "estimates_from_db",
    "jsonable",
    "model_label",
    "report",
    "report_dict",
    "report_json",
    "ERROR_TYPE_KEYS",
    "LENGTH_BUCKETS",
    "MethodComparison",
    "compare_method_batches",
    "Selective",
    "selective",
]
