"""ConsEval: how consistent is an LLM evaluator? Self-consistency, inter-consistency and accuracy.

The study of the ConsEval paper: each model rates query/response pairs under a criterion (with no, a short or
a long definition) on the scales of Table 2, with the Table 1 prompt (or Table 6's few-shot prompt for
distilled in-context learning); the plain reply after "Answer:" is read (structured output is an option).
From the ratings:

- Self-consistency (SC): Krippendorff's alpha across the n samples (temperature 1.0) of each item, at the
  level of the scale (interval for numeric scales, ordinal for the Likert scale, nominal for binary).
- Inter-consistency (IC): alpha between the scores the same model gives on different scales (the four cases
  of Table 4), every scale mapped onto [0, 1] (see `Scale.to_unit`), at the interval level, apart for the
  greedy answers, the sampled ones and SCE (Figure 3). GS, greedy against sampled on one scale, is an extra.
- SCE: the mean of the n samples as the score. dICL: k examples from the oracles (endpoints, pooled; human
  ratings; or scores imported with the items), random or scale-matched, in the Table 6 template, drawn from
  the 80% of an 8:2 split of the instances (section 7.1) while results are reported on the 20%.
- Accuracy: Pearson r between the model's score and each oracle's, both mapped onto [0, 1]; Table 3 reports
  it on the 5-P scale.

A score outside the scale or that cannot be read is stored as missing with the raw answer, never coerced.

The modules: scales (Table 2 and reading an answer), study (options, config, planned calls), items (bundled or
imported items with their oracle scores), store (studies, items and answers saved), raters (human raters and
their scores), run (asking the models; the job kind), analysis (the alphas and correlations), tables (Table 5,
the matrix and the radar of the results).
"""

from __future__ import annotations

from db.conseval import RaterInfo
from db.models import ConsevalStudyPublic
from services.conseval.analysis import analyse, compute_rows, missing_summary, refresh_results, score_table
from services.conseval.items import ItemIn, limit_items, load_sample_items, read_items, sample_items
from services.conseval.raters import (
    add_rater,
    human_ratings_frame,
    list_raters,
    rater_by_token,
    revoke_rater,
    save_human_rating,
)
from services.conseval.run import recover, run_study
from services.conseval.scales import (
    IC_CASES,
    IC_LABELS,
    LIKERT,
    SCALES,
    SCORE_SCHEMA,
    ParsedScore,
    Scale,
    answer_of,
    parse_score,
    scale,
)
from services.conseval.store import (
    create_study,
    delete_study,
    forget_without_examples,
    get_study,
    items_frame,
    list_studies,
    n_without_examples,
    ratings_frame,
    reopen,
    request_cancel,
)
from services.conseval.study import (
    ANSWER_FORMATS,
    CRITERIA,
    DECODINGS,
    GRANULARITIES,
    GREEDY,
    IMPORTED,
    METHODS,
    NO_EXAMPLE,
    ORACLE_RATER,
    ORACLES,
    PAPER_ACCURACY_SCALE,
    SAMPLE_TEMPERATURE,
    SPLITS,
    TEST_SHARE,
    Call,
    ModelSpec,
    StudyConfig,
    endpoint_lines,
    plan_calls,
    plan_for_items,
    study_spent,
    test_instances,
)
from services.conseval.tables import (
    PAPER_KINDS,
    accuracy_scale,
    model_method_matrix,
    radar_frame,
    results_frame,
    variant_label,
)

__all__ = [
    "study_spent",
    "ANSWER_FORMATS",
    "CRITERIA",
    "DECODINGS",
    "GRANULARITIES",
    "GREEDY",
    "IC_CASES",
    "IC_LABELS",
    "IMPORTED",
    "LIKERT",
    "METHODS",
    "NO_EXAMPLE",
    "ORACLES",
    "ORACLE_RATER",
    "PAPER_ACCURACY_SCALE",
    "PAPER_KINDS",
    "SAMPLE_TEMPERATURE",
    "SCALES",
    "SCORE_SCHEMA",
    "SPLITS",
    "TEST_SHARE",
    "Call",
    "ConsevalStudyPublic",
    "ItemIn",
    "ModelSpec",
    "ParsedScore",
    "RaterInfo",
    "Scale",
    "StudyConfig",
    "accuracy_scale",
    "add_rater",
    "analyse",
    "answer_of",
    "compute_rows",
    "create_study",
    "delete_study",
    "endpoint_lines",
    "forget_without_examples",
    "get_study",
    "human_ratings_frame",
    "items_frame",
    "limit_items",
    "list_raters",
    "list_studies",
    "load_sample_items",
    "missing_summary",
    "model_method_matrix",
    "n_without_examples",
    "parse_score",
    "plan_calls",
    "plan_for_items",
    "radar_frame",
    "rater_by_token",
    "ratings_frame",
    "read_items",
    "recover",
    "refresh_results",
    "reopen",
    "request_cancel",
    "results_frame",
    "revoke_rater",
    "run_study",
    "sample_items",
    "save_human_rating",
    "scale",
    "score_table",
    "test_instances",
    "variant_label",
]
