"""Mutation testing of the code that implements the papers' formulas and procedures (`make mutation`).

mutmut 3 (configured in pyproject.toml, [tool.mutmut]) copies the project to mutants/, changes one thing at a
time in the functions named in SCOPE and runs the fast conformance and unit tests that reach each changed
function. A mutant is killed when a test fails (a timeout counts as killed: the change made the code loop).
The score of a module is killed / (mutants - known equivalent ones); EQUIVALENT lists those, each with why.

    python tools/mutation.py            run the mutants of SCOPE, then print the score per module
    python tools/mutation.py --report   print the scores of the last run only
    python tools/mutation.py --sample 80   a quicker estimate: 80 mutants drawn per module (seeded), the score with
                                           its 95% interval (needs the mutants/ of an earlier run, even a partial one)
    python tools/mutation.py --module dcr --module conseval   only the modules whose name contains one of these
    MUTATION_JOBS=2 (default) sets the processes; a fresh run starts from an empty mutants/ (--fresh).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
GOAL = 0.90

# Module -> the mutmut names of its functions ("x_name" for a function, "xǁClassǁmethod" for a method).
SCOPE: dict[str, list[str]] = {
    "services/stats": ["services.stats.*"],
    "services/dhp/statistics.py": [
        f"services.dhp.statistics.x_{f}__mutmut_*"
        for f in (
            "wilcoxon_greater",
            "normalise_weights",
            "harmonic_mean_p",
            "paper_literal_p",
            "discernment",
            "level_weights",
            "_weighted_avg",
            "lookup_weights",
            "analyse",
            "_avg_note",
        )
    ],
    "services/dcr: Eq. 3 and alignment": [
        "services.dcr.results.x_eq3__mutmut_*",
        "services.dcr.results.x_score_evaluation__mutmut_*",
        "services.dcr.align.*",
    ],
    "services/conseval: analysis, split, dICL examples": [
        f"services.conseval.analysis.x_{f}__mutmut_*"
        for f in (
            "_alpha_row",
            "score_table",
            "_mapped",
            "compute_rows",
            "missing_summary",
            "_modes",
            "_unit",
            "_scale_rows",
            "_oracle_scores",
            "_accuracy_row",
            "_consensus",
            "_human_rows",
        )
    ]
    + [
        "services.conseval.study.x_test_instances__mutmut_*",
        "services.conseval.run.x__examples__mutmut_*",
    ],
    "services/nli: aggregation and retrieval": [
        "services.nli.paradigms.x__any_inconsistent__mutmut_*",
        "services.nli.retrieval.*",
    ],
    "services/metaeval/classification.py": ["services.metaeval.classification.*"],
    # services/judges, one entry a file: a run of every mutant takes hours, so it is run and scored file by file.
    **{
        f"services/judges/{f}.py": [f"services.judges.{f}.*"]
        for f in (
            "agreement",
            "card",
            "columns",
            "compare",
            "coverage",
            "data",
            "estimate",
            "label_next",
            "links",
            "panels",
            "systems",
            "tables",
        )
    },
    "services/dcr/evidence/calibration.py": ["services.dcr.evidence.calibration.*"],
}

# Mutants that cannot change any result (or, marked harmless, none that matters), each with why. The names
# follow the source: re-check them when a mutated function changes (see docs/development.md).
EQUIVALENT: dict[str, str] = {
    "services.stats.agreement.x_majority__mutmut_13": "every count one higher: the ranking and the ties stay",
    "services.stats.agreement.x_majority__mutmut_14": "every count doubled: the ranking and the ties stay",
    "services.stats.agreement.x__distance_matrices__mutmut_6": "astype(None) is float64, as astype(float)",
    "services.stats.agreement.x__distance_matrices__mutmut_44": "axis=+1 is the last axis of the 2-D margins",
    "services.stats.agreement.x__distance_matrices__mutmut_75": "the shape broadcast to: o * d broadcasts the same",
    "services.stats.agreement.x__distance_matrices__mutmut_76": "the shape broadcast to: o * d broadcasts the same",
    "services.stats.agreement.x__weighted_alpha__mutmut_14": "numpy reads any negative size as 'infer'",
    "services.stats.agreement.x__weighted_alpha__mutmut_16": "numpy reads any negative size as 'infer'",
    "services.stats.agreement.x__weighted_alpha__mutmut_19": "o is symmetric: row and column sums agree",
    "services.stats.agreement.x__weighted_alpha__mutmut_25": "the diagonal of e meets d(c, c) = 0 at every level",
    "services.stats.agreement.x__weighted_alpha__mutmut_38": "astype(None) is float64",
    "services.stats.agreement.x__weighted_alpha__mutmut_53": "d_e = 0 only with d_o = 0: 0/0 is NaN, skipped",
    "services.stats.agreement.x__weighted_alpha__mutmut_54": "d_e = 0 only with d_o = 0: 0/0 is NaN, skipped",
    "services.stats.classification.x_auroc__mutmut_23": "labels as float compare the same",
    "services.stats.classification.x_auroc__mutmut_41": "reached with a class empty: the sum is 0 iff both are",
    "services.dhp.statistics.x_normalise_weights__mutmut_12": "get(m) gives None, and `or 0.0` makes it 0",
    "services.dcr.align.x_align__mutmut_43": "similarity() is 0.0 when either text is blank",
    "services.conseval.analysis.x__accuracy_row__mutmut_10": "as_float reads None as NaN: the pair is left out",
    "services.conseval.analysis.x__accuracy_row__mutmut_14": "appends o, which is None there: as_float reads it as NaN",
    "services.conseval.analysis.x__modes__mutmut_14": "only at n = 1, or n = 0 without greedy: refused",
    "services.conseval.analysis.x_compute_rows__mutmut_109": "a list of floats and NaN is float64 anyway",
    "services.nli.retrieval.x__recall__mutmut_5": "zip over two 2-tuples: strict never matters",
    "services.nli.retrieval.x__recall__mutmut_8": "zip over two 2-tuples: strict never matters",
    "services.nli.retrieval.x__recall__mutmut_9": "zip over two 2-tuples: strict never matters",
    "services.dhp.statistics.x_analyse__mutmut_71": "pandas reads groupby's sort=None as sort=False",
    "services.dhp.statistics.x_harmonic_mean_p__mutmut_20": "needs a p of inf or NaN: wilcoxon's is finite",
    "services.dhp.statistics.x_harmonic_mean_p__mutmut_28": "total == 0 needs a p of inf: wilcoxon's is finite",
    "services.dhp.statistics.x_wilcoxon_greater__mutmut_60": "all three conditions imply `not np.any(d)` (empty d too)",
    "services.dhp.statistics.x_wilcoxon_greater__mutmut_64": "n_ties == a.size: d is all 0, as `not np.any(d)`",
    "services.dhp.statistics.x_wilcoxon_greater__mutmut_66": "n_ties == a.size: d is all 0, as `not np.any(d)`",
    "services.dhp.statistics.x_analyse__mutmut_73": "sorted() then orders the groups by a key unique to each",
    "services.dhp.statistics.x_analyse__mutmut_76": "sorted() then orders the groups by a key unique to each",
    "services.dhp.statistics.x_analyse__mutmut_111": "pandas reads groupby's sort=None as sort=False",
    "services.dhp.statistics.x_harmonic_mean_p__mutmut_25": "weights sum to 1, each p <= 1: 1 / sum(w / p) <= 1",
    "services.dhp.statistics.x_normalise_weights__mutmut_10": "get(m) gives None, and `or 0.0` makes it 0",
    "services.dhp.statistics.x_wilcoxon_greater__mutmut_65": "n_ties == a.size: d is all 0, as `not np.any(d)`",
    "services.dhp.statistics.x_wilcoxon_greater__mutmut_85": "scipy lower-cases the alternative",
    "services.dhp.statistics.x_wilcoxon_greater__mutmut_90": "harmless: no input seen giving a non-finite p",
    "services.dhp.statistics.x_wilcoxon_greater__mutmut_91": "harmless: no input seen giving a non-finite p",
    "services.dcr.align.x_align__mutmut_22": "one of cand, k empty: the assignment is empty, all left over",
    "services.dcr.align.x_align__mutmut_25": "both branches of that return are the same",
    "services.dcr.align.x_align__mutmut_26": "both branches of that return are the same",
    "services.dcr.align.x_align__mutmut_74": "an assignment's rows and cols have one length: strict never matters",
    "services.dcr.align.x_align__mutmut_77": "an assignment's rows and cols have one length: strict never matters",
    "services.dcr.align.x_align__mutmut_78": "an assignment's rows and cols have one length: strict never matters",
    "services.dcr.align.x_is_paragraph_level__mutmut_10": "no sentences: align, its one caller, leaves all over",
    "services.conseval.analysis.x__accuracy_row__mutmut_25": "pearson is correlation()'s default method",
    "services.conseval.analysis.x__scale_rows__mutmut_58": "only at n = 1: create_study refuses it",
    "services.conseval.analysis.x_compute_rows__mutmut_14": "two columns of one frame: the same length",
    "services.conseval.analysis.x__accuracy_row__mutmut_12": "as_float reads None as NaN: the pair is left out",
    "services.conseval.analysis.x__human_rows__mutmut_6": "zip over two columns of one frame: strict never matters",
    "services.conseval.analysis.x__human_rows__mutmut_9": "zip over two columns of one frame: strict never matters",
    "services.conseval.analysis.x__human_rows__mutmut_10": "zip over two columns of one frame: strict never matters",
    "services.conseval.analysis.x__human_rows__mutmut_41": "rater names and (rater, item, scale) unique: mean = first",
    "services.conseval.analysis.x__human_rows__mutmut_73": "a float frame with NaN is float64 anyway",
    "services.conseval.analysis.x__human_rows__mutmut_105": "an empty frame gives an empty table either way",
    "services.conseval.analysis.x__human_rows__mutmut_107": "score_table reads any other mode as 'single'",
    "services.conseval.analysis.x__human_rows__mutmut_110": "score_table reads any other mode as 'single'",
    "services.conseval.analysis.x__human_rows__mutmut_111": "score_table reads any other mode as 'single'",
    "services.conseval.analysis.x__human_rows__mutmut_112": "an empty Series gives NaN for every item either way",
    "services.conseval.analysis.x__human_rows__mutmut_115": "a list of floats and NaN is float64 anyway",
    "services.conseval.analysis.x__human_rows__mutmut_117": "a list of floats and NaN is float64 anyway",
    "services.conseval.analysis.x__human_rows__mutmut_119": "None becomes NaN in a float array",
    "services.conseval.analysis.x__human_rows__mutmut_121": "None becomes NaN in a float array",
    "services.conseval.analysis.x__human_rows__mutmut_123": "None becomes NaN in a float array",
    "services.conseval.analysis.x__human_rows__mutmut_125": "None becomes NaN in a float array",
    "services.conseval.analysis.x__mapped__mutmut_3": "a list of floats and NaN is float64 anyway",
    "services.conseval.analysis.x__mapped__mutmut_6": "a list of floats and NaN is float64 anyway",
    "services.conseval.analysis.x__mapped__mutmut_8": "to_unit(NaN) is None, NaN in the float Series",
    "services.conseval.analysis.x__modes__mutmut_15": "only at n = 0 without greedy: refused",
    "services.conseval.analysis.x__modes__mutmut_16": "only at n = 1: create_study refuses it",
    "services.conseval.analysis.x__modes__mutmut_17": "only at n = 1: create_study refuses it",
    "services.conseval.analysis.x__modes__mutmut_18": "reached only at n = 1: create_study refuses it",
    "services.conseval.analysis.x__modes__mutmut_19": "reached only at n = 1: create_study refuses it",
    "services.conseval.analysis.x__modes__mutmut_20": "reached only at n = 1: create_study refuses it",
    "services.conseval.analysis.x__oracle_scores__mutmut_42": "sort=True is groupby's default",
    "services.conseval.analysis.x__scale_rows__mutmut_17": "reindex puts back the columns dropna takes away",
    "services.conseval.analysis.x__scale_rows__mutmut_22": "reindex puts back the columns dropna takes away",
    "services.conseval.analysis.x__scale_rows__mutmut_31": "reindex puts back the columns dropna takes away",
    "services.conseval.analysis.x__scale_rows__mutmut_72": "reindex puts back the columns dropna takes away",
    "services.conseval.analysis.x__scale_rows__mutmut_77": "reindex puts back the columns dropna takes away",
    "services.conseval.analysis.x__scale_rows__mutmut_86": "reindex puts back the columns dropna takes away",
    "services.conseval.analysis.x__scale_rows__mutmut_21": "(sample, item) unique in r (a constraint): mean = first",
    "services.conseval.analysis.x__scale_rows__mutmut_76": "(sample, item) unique in r (a constraint): mean = first",
    "services.conseval.analysis.x__scale_rows__mutmut_33": "only all-NaN rows differ: alpha, n, its CI skip them",
    "services.conseval.analysis.x__scale_rows__mutmut_35": "only all-NaN rows differ: alpha, n, its CI skip them",
    "services.conseval.analysis.x__scale_rows__mutmut_88": "only all-NaN rows differ; -1, 0 is pivot's order",
    "services.conseval.analysis.x__scale_rows__mutmut_90": "only all-NaN rows differ; -1, 0 is pivot's order",
    "services.conseval.analysis.x__scale_rows__mutmut_54": "a float frame with NaN is float64 anyway",
    "services.conseval.analysis.x__scale_rows__mutmut_109": "a float frame with NaN is float64 anyway",
    "services.conseval.analysis.x__scale_rows__mutmut_59": "only at n = 1: create_study refuses it",
    "services.conseval.analysis.x_compute_rows__mutmut_10": "zip over two columns of one frame: strict never matters",
    "services.conseval.analysis.x_compute_rows__mutmut_13": "zip over two columns of one frame: strict never matters",
    "services.conseval.analysis.x_compute_rows__mutmut_34": "zip over two columns of one frame: strict never matters",
    "services.conseval.analysis.x_compute_rows__mutmut_37": "zip over two columns of one frame: strict never matters",
    "services.conseval.analysis.x_compute_rows__mutmut_38": "zip over two columns of one frame: strict never matters",
    "services.conseval.analysis.x_compute_rows__mutmut_80": "an empty frame gives an empty table either way",
    "services.conseval.analysis.x_compute_rows__mutmut_86": "an empty Series gives NaN for every unit either way",
    "services.conseval.analysis.x_compute_rows__mutmut_107": "a list of floats and NaN is float64 anyway",
    "services.conseval.analysis.x_compute_rows__mutmut_111": "None becomes NaN in a float array",
    "services.conseval.analysis.x_compute_rows__mutmut_113": "None becomes NaN in a float array",
    "services.conseval.analysis.x_missing_summary__mutmut_17": "pandas 3 lower-cases to_dict's orient",
    "services.conseval.analysis.x_score_table__mutmut_49": "keep='first' is drop_duplicates' default",
    "services.stats.agreement.x_alpha_from_long__mutmut_18": "harmless: also drops rows with no unit or rater",
    "services.metaeval.classification.x__method_name__mutmut_5": "every METHOD_LABELS key is in _LEVEL",
    "services.nli.retrieval.x__ngrams__mutmut_7": "strict=None is falsy, as False",
    "services.nli.retrieval.x__ngrams__mutmut_10": "strict is False by default",
    "services.nli.retrieval.x_select_context__mutmut_44": "gains are count ratios: 0 apart or far over 1e-12",
    "services.metaeval.classification.x__binary_row__mutmut_2": "classification() drops the NaN pairs itself",
    "services.metaeval.classification.x_figure3__mutmut_25": "o is read only when another batch is given",
    "services.metaeval.classification.x_figure3__mutmut_85": "Float64 with NA: astype(None) is float64",
    "services.metaeval.classification.x_figure3__mutmut_86": "object bools and None: astype(None) is float64 too",
    "services.metaeval.classification.x__binary_row__mutmut_12": "float predictions: astype(None) is float64 too",
    "services.metaeval.classification.x__binary_row__mutmut_13": "0/1 labels (int, float): astype(None) is float64 too",
    "services.metaeval.classification.x__scored_prediction__mutmut_11": "bools: astype(None) is float64, 1.0 and 0.0",
    "services.metaeval.classification.x__scored_prediction__mutmut_4": "Float64 + NA: astype(None) is float64, NaN",
    "services.metaeval.classification.x__scored_prediction__mutmut_5": "boolean + NA: astype(None) is float64, NaN",
    "services.metaeval.classification.x__scored_prediction__mutmut_9": "boolean + NA: via float64 or Float64, same",
    "services.metaeval.classification.x_figure3__mutmut_90": "boolean + NA: via float64 or Float64, same",
    "services.metaeval.classification.x_figure3__mutmut_95": "o is set whenever other is given: `or` and `and` agree",
    "services.metaeval.classification.x_sentence_level__mutmut_57": "bools: astype(None) is float64, 1.0 and 0.0",
    "services.stats.classification.x_classification__mutmut_21": "0/1 labels as float64 compare the same",
    "services.stats.classification.x_classification__mutmut_23": "bools as float64 (astype(None)) compare the same",
    "services.stats.correlation.x__boot_correlations__mutmut_23": "integers(n) draws as integers(0, n)",
    "services.stats.correlation.x__boot_block__mutmut_43": "None written into a float array is NaN",
    "services.stats.correlation.x__boot_block__mutmut_36": "kendalltau gives NaN itself when a side is constant",
    "services.stats.correlation.x__average_ranks__mutmut_5": "ranks moved by one: r is shift-free",
    "services.stats.correlation.x__average_ranks__mutmut_6": "ranks moved by a half: r is shift-free",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_2": "same-x pairs add t_ij t_ij' and take it away: 0",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_67": "axis +1 of a 2-D array is axis -1",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_75": "axis +1 of a 2-D array is axis -1",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_77": "errstate only silences numpy's warnings",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_78": "errstate only silences numpy's warnings",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_79": "errstate only silences numpy's warnings",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_80": "errstate only silences numpy's warnings",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_86": "|tau-b| <= 1 from integer counts: the clip never acts",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_87": "|tau-b| <= 1 from integer counts: the clip never acts",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_97": "|tau-b| <= 1 from integer counts: the clip never acts",
    "services.stats.correlation.x__tau_b_of_tables__mutmut_98": "|tau-b| <= 1 from integer counts: the clip never acts",
    "services.stats.correlation.x__table_pearson__mutmut_43": "einsum's subscripts in capitals name the same axes",
    "services.stats.correlation.xǁ_Tableǁof__mutmut_8": "the threshold only chooses the path",
    "services.stats.correlation.xǁ_Tableǁof__mutmut_13": "the threshold only chooses the path",
    "services.stats.correlation.xǁ_Tableǁresampled__mutmut_9": "blocks of two rows or more: the same statistics",
    "services.stats.correlation.xǁ_Tableǁresampled__mutmut_22": "blocks of one row: the same statistics",
    "services.stats.correlation.xǁ_Tableǁresampled__mutmut_33": "arange's default integer is int64 here",
    "services.stats.correlation.xǁ_Tableǁresampled__mutmut_35": "arange's default integer is int64 here",
    "services.stats.correlation.xǁ_Tableǁresampled__mutmut_37": "astype(None) is float64",
    "services.stats.correlation.x__r_of__mutmut_7": "den exactly at the noise bound: no data meets it",
    "services.stats.correlation.x__r_of__mutmut_8": "den is far from either bound",
    "services.stats.correlation.x_correlation__mutmut_68": "every value is the same and n >= 3: arr[1] is arr[0]",
    "services.stats.selective.x_reliability__mutmut_92": "harmless: 10 or 11 digits, both strip the float noise",
    "services.stats.selective.x_reliability__mutmut_100": "harmless: 10 or 11 digits, both strip the float noise",
    "services.stats.common.x_as_float__mutmut_8": "numpy reads any negative size as 'infer'",
    "services.stats.selective.x__balanced__mutmut_8": "one class: one recall either way (None); both: both",
    "services.stats.selective.x_reliability__mutmut_40": "edge 1.1 only adds 1.0 as a boundary: clip refolds it",
    "services.stats.selective.x_reliability__mutmut_43": "digitize on the n - 1 inner edges gives 0..n - 1",
    "services.stats.selective.x_reliability__mutmut_44": "digitize on the n - 1 inner edges gives 0..n - 1",
    "services.stats.selective.x_reliability__mutmut_59": "digitize on the n - 1 inner edges gives 0..n - 1",
    "services.stats.selective.x_reliability__mutmut_50": "right=None is falsy, as the default False",
    "services.stats.selective.x_reliability__mutmut_53": "right=False is digitize's default",
    "services.stats.selective.x_risk_coverage__mutmut_32": "bools: astype(None) is float64, 1.0 and 0.0",
    "services.stats.selective.x_risk_coverage__mutmut_36": "equal confidences go together: only group ends read",
    "services.stats.selective.x_risk_coverage__mutmut_38": "equal confidences go together: only group ends read",
    "services.stats.selective.x_risk_coverage__mutmut_41": "equal confidences go together: only group ends read",
    "services.stats.agreement.x_krippendorff_alpha__mutmut_14": "np.asarray(frame, dtype=float): the same values",
    "services.stats.agreement.x_krippendorff_alpha__mutmut_15": "np.asarray(frame, dtype=float): the same values",
    "services.stats.agreement.x__count__mutmut_2": "only called with n = 1 (0 < n_pairable < 2)",
    "services.stats.agreement.x_alpha_from_long__mutmut_44": "codes mapped from value_order are ints: float64",
    "services.stats.agreement.x_alpha_from_long__mutmut_53": "factorize codes: int64, then float in to_numpy",
    "services.stats.agreement.x_alpha_from_long__mutmut_56": "factorize codes: int64, then float in to_numpy",
    "services.stats.agreement.x_alpha_from_long__mutmut_102": "a pivot of floats with NaN is float64 anyway",
    "services.stats.agreement.x_alpha_from_long__mutmut_91": "the one column left is value: the same matrix",
    "services.stats.agreement.x__boot_alpha__mutmut_35": "astype(None) is float64",
    "services.stats.agreement.x__boot_alpha__mutmut_5": "harmless: n = 5,000 units: counts drawn, same law",
    "services.stats.classification.x__boot_balanced__mutmut_4": "harmless: n = 5,000: cells drawn, same law",
    "services.stats.classification.x__boot_balanced__mutmut_14": "harmless: a 5th cell of p = 0, same law",
    "services.stats.classification.x__boot_balanced__mutmut_22": "errstate only silences numpy's warnings",
    "services.stats.classification.x__boot_balanced__mutmut_23": "errstate only silences numpy's warnings",
    "services.stats.classification.x__boot_balanced__mutmut_24": "errstate only silences numpy's warnings",
    "services.stats.classification.x__boot_balanced__mutmut_25": "errstate only silences numpy's warnings",
    "services.stats.classification.x__boot_balanced__mutmut_57": "errstate only silences numpy's warnings",
    "services.stats.classification.x__boot_balanced__mutmut_58": "errstate only silences numpy's warnings",
    "services.stats.classification.x__boot_balanced__mutmut_59": "errstate only silences numpy's warnings",
    "services.stats.classification.x__boot_balanced__mutmut_60": "errstate only silences numpy's warnings",
    "services.stats.classification.x__boot_balanced__mutmut_52": "integers(n) draws as integers(0, n)",
    "services.stats.classification.x_auroc__mutmut_1": "DeLong's interval reads n_boot only as n_boot > 0",
    "services.stats.classification.x_auroc__mutmut_2": "the seed is not read: DeLong's interval draws nothing",
    "services.stats.classification.x_delong__mutmut_22": "only v01's variance is read: shift- and sign-free",
    "services.stats.classification.x_delong__mutmut_23": "only v01's variance is read: shift- and sign-free",
    "services.stats.common.x_resample_chunks__mutmut_6": "n <= 5,000: 200+ rows a block",
    "services.stats.common.x_resample_chunks__mutmut_12": "n = 1 only: smaller blocks of the same draws",
    "services.stats.correlation.x__jackknife_interval__mutmut_23": "at most 2 of 100 leave-outs lack a value",
    "services.stats.correlation.x__jackknife_interval__mutmut_24": "at most 2 of 100 leave-outs lack a value",
    "services.stats.correlation.x__kendall_leave_group_out__mutmut_16": "the threshold only chooses the path",
    "services.stats.correlation.x__kendall_leave_group_out__mutmut_23": "astype(None) is float64",
    "services.stats.correlation.x__leave_group_out__mutmut_13": "every group holds pairs: g bins",
    "services.stats.correlation.x__leave_group_out__mutmut_20": "errstate only silences numpy's warnings",
    "services.stats.correlation.x__leave_group_out__mutmut_21": "errstate only silences numpy's warnings",
    "services.stats.correlation.x__leave_group_out__mutmut_22": "errstate only silences numpy's warnings",
    "services.stats.correlation.x__leave_group_out__mutmut_23": "errstate only silences numpy's warnings",
    "services.stats.correlation.x__leave_group_out__mutmut_54": "only each group's members are read, not their order",
    "services.stats.correlation.x__leave_group_out__mutmut_56": "only each group's members are read, not their order",
    "services.stats.correlation.x__leave_group_out__mutmut_58": "only each group's members are read, not their order",
    "services.stats.correlation.x__leave_group_out__mutmut_66": "one more start, never read",
    "services.stats.correlation.x__leave_group_out__mutmut_78": "None written into a boolean array is False",
    "services.stats.correlation.x__leave_group_out__mutmut_82": "astype(None) is float64",
    "services.stats.correlation.x__leave_group_out__mutmut_95": "harmless: scipy's tau-b, same values",
    "services.stats.correlation.x__pearson_of__mutmut_16": "ranks of over 5,000 pairs: den is 0 or far above 1",
    "services.stats.correlation.x__pearson_of__mutmut_19": "float('NAN') is NaN",
    "services.stats.correlation.x_correlation__mutmut_143": "n_bad is whole: n_bad > n // 10 iff n_bad > n / 10",
    "services.stats.correlation.x_per_group_correlation__mutmut_52": "the mean of the groups' r: order-free",
    "services.stats.correlation.x_per_group_correlation__mutmut_54": "the mean of the groups' r: order-free",
    "services.stats.correlation.x_per_group_correlation__mutmut_57": "the mean of the groups' r: order-free",
    "services.stats.correlation.x_per_group_correlation__mutmut_90": "the mean of the groups' r: order-free",
    "services.stats.correlation.x_per_group_correlation__mutmut_92": "the mean of the groups' r: order-free",
    "services.stats.correlation.x_per_group_correlation__mutmut_95": "the mean of the groups' r: order-free",
    "services.stats.selective.x_wilson__mutmut_8": "0.95 is binomial.wilson's default level",
    "services.judges.estimate.x_rates__mutmut_24": "the card passes verdicts as a float array",
    "services.judges.estimate.x_rates__mutmut_22": "the card passes verdicts as a float array",
    "services.judges.estimate.x_rates__mutmut_13": "the card passes predictions as a float array",
    "services.judges.tables.x__metric__mutmut_2": "runs at import (MEASURES), before a mutant is chosen",
    "services.judges.card.x_card_from_frames__mutmut_71": "a column of strings: to_numpy gives objects anyway",
    "services.judges.agreement.x__no_kappa_interval__mutmut_9": "one verdict only: verdicts[1] is verdicts[0]",
    "services.judges.agreement.x__auroc__mutmut_21": "harmless: stats.auroc's interval is not read",
    "services.judges.agreement.x__auroc__mutmut_22": "harmless: stats.auroc's interval is not read",
    "services.judges.agreement.x__auroc__mutmut_37": "auroc's note: a class missing, refused before",
    "services.judges.agreement.x__auroc__mutmut_42": "auroc's note: a class missing, refused before",
    "services.judges.agreement.x_agreement__mutmut_1": "the seed is kept for callers: every interval here is analytic",
    "services.judges.agreement.x_agreement__mutmut_37": "0/1 verdicts as float64 tabulate and compare as ints do",
    "services.judges.agreement.x_agreement__mutmut_38": "0/1 labels as float64 tabulate and compare as ints do",
    "services.judges.agreement.x__kappa__mutmut_27": "0/1 values: the bins [1, 3) hold the 1s as [1, 2] does",
    "services.judges.agreement.x__kappa__mutmut_29": "the simplefilter ignores numpy's warnings anyway",
    "services.judges.agreement.x__kappa__mutmut_30": "the simplefilter ignores numpy's warnings anyway",
    "services.judges.agreement.x__kappa__mutmut_31": "the simplefilter ignores numpy's warnings anyway",
    "services.judges.agreement.x__kappa__mutmut_32": "the simplefilter ignores numpy's warnings anyway",
    "services.judges.agreement.x__pearson__mutmut_8": "astype(None) is float64",
    "services.judges.columns.x_column_frame__mutmut_16": "a list of floats and NaN is float64 anyway",
    "services.judges.columns.x_column_frame__mutmut_18": "a list of floats and NaN is float64 anyway",
    "services.judges.columns.x_column_frame__mutmut_87": "astype(None) is float64",
    "services.judges.agreement.x__kappa__mutmut_22": "labels hold both classes: to_table finds the 0, 1 bins",
    "services.judges.agreement.x__kappa__mutmut_24": "labels hold both classes: to_table finds the 0, 1 bins",
    "services.judges.agreement.x__pearson__mutmut_38": "|r| exactly 1 - 1e-12: no data meets the bound itself",
    "services.judges.agreement.x_auroc_interval__mutmut_5": "z is squared: the quantile's sign goes",
    "services.judges.agreement.x_auroc_interval__mutmut_24": "at auc 0, gap(0) = 0 and brentq on [0, 0] returns 0",
    "services.judges.agreement.x_auroc_interval__mutmut_27": "an AUROC of exactly 1e-12 needs 1e12 pairs",
    "services.judges.agreement.x_auroc_interval__mutmut_42": "at auc 1, gap(1) = 0 and brentq on [1, 1] returns 1",
    "services.judges.agreement.x_auroc_interval__mutmut_45": "an AUROC of exactly 1 - 1e-12 needs 1e12 pairs",
    "services.judges.agreement.x_auroc_interval__mutmut_46": "at auc 1 brentq on [1, 1] returns 1: gap(1) = 0",
    "services.judges.agreement.x_auroc_interval__mutmut_47": "at auc 1 brentq on [1, 1] returns 1: gap(1) = 0",
}

STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 36: "timeout", -24: "timeout"}
STATUS |= {24: "timeout", 152: "timeout", 255: "timeout", None: "not checked"}


def _module_of(name: str) -> str | None:
    for module, patterns in SCOPE.items():
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            return module
    return None


def results() -> dict[str, dict[str, str]]:
    """module -> {mutant name: status} from mutmut's records in mutants/."""
    out: dict[str, dict[str, str]] = {m: {} for m in SCOPE}
    for meta in MUTANTS.rglob("*.py.meta"):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for name, code in codes.items():
            module = _module_of(name)
            if module is not None:
                out[module][name] = STATUS.get(code, "suspicious")
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of k successes in n."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def sample(by_module: dict[str, dict[str, str]], n: int, seed: int) -> dict[str, dict[str, str]]:
    """n mutants drawn at random from each module (all of a module with fewer)."""
    rng = random.Random(seed)
    return {m: {k: st[k] for k in rng.sample(sorted(st), min(n, len(st)))} for m, st in by_module.items()}


def report(by_module: dict[str, dict[str, str]], *, sampled: bool = False) -> bool:
    """Print the score per module and every survivor; True when each module reaches GOAL."""
    ok = True
    head = "sampled" if sampled else "mutants"
    print(
        f"{'module':52} {head:>7} {'killed':>6} {'equiv.':>6} {'left':>5} {'score':>7}"
        + ("  95% interval" if sampled else "")
    )
    left_over: list[tuple[str, str]] = []
    stale: list[tuple[str, str]] = []
    for module, statuses in by_module.items():
        killed = sum(1 for s in statuses.values() if s in ("killed", "timeout"))
        equivalent = [n for n, s in statuses.items() if s not in ("killed", "timeout") and n in EQUIVALENT]
        left = [n for n, s in statuses.items() if s not in ("killed", "timeout") and n not in EQUIVALENT]
        counted = len(statuses) - len(equivalent)
        score = killed / counted if counted else None
        ok &= score is not None and score >= GOAL and not any(s == "not checked" for s in statuses.values())
        shown = f"{score:.1%}" if score is not None else "-"
        if sampled and counted:
            low, high = wilson(killed, counted)
            shown += f"  {low:.1%} to {high:.1%}"
        print(f"{module:52} {len(statuses):7} {killed:6} {len(equivalent):6} {len(left):5} {shown:>7}")
        left_over += [(n, statuses[n]) for n in sorted(left)]
        stale += stale_entries(module, statuses, sampled=sampled)
    if left_over:
        print("\nNot killed and not known equivalent (`.venv/bin/mutmut show NAME` shows the change):")
        for name, status in left_over:
            print(f"  {name}  [{status}]")
    if stale:
        print("\nEquivalence entries that name a mutant the tests kill, or none of this run (the source changed:")
        print("re-read each against `mutmut show` and remove or renumber it):")
        for name, status in stale:
            print(f"  {name}  [{status}]")
    return ok


def stale_entries(module: str, statuses: dict[str, str], *, sampled: bool = False) -> list[tuple[str, str]]:
    """EQUIVALENT's entries of this module that no longer name a surviving mutant: killed now, or (in a run of
    every mutant) no such mutant. Either way the source moved under the entry, and a later mutant may take its
    number."""
    out = []
    for name in sorted(EQUIVALENT):
        if _module_of(name) != module:
            continue
        status = statuses.get(name, "no such mutant")
        if status in ("killed", "timeout") or (status == "no such mutant" and not sampled):
            out.append((name, status))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", action="store_true", help="only print the scores of the last run")
    ap.add_argument("--fresh", action="store_true", help="start from an empty mutants/ folder")
    ap.add_argument("--sample", type=int, default=0, help="run and score this many mutants drawn per module")
    ap.add_argument("--seed", type=int, default=0, help="the seed of --sample's draw")
    ap.add_argument(
        "--module", action="append", default=[], help="only the modules whose name contains this (repeatable)"
    )
    args = ap.parse_args()
    chosen = [m for m in SCOPE if not args.module or any(w in m for w in args.module)]
    if not chosen:
        ap.error(f"no module matches {', '.join(args.module)}: the modules are {', '.join(SCOPE)}")
    if args.sample and args.fresh:
        ap.error("--sample draws from the mutants of an earlier run: leave out --fresh")
    drawn = sample(results(), args.sample, args.seed) if args.sample else None
    if drawn is not None:
        drawn = {m: st for m, st in drawn.items() if m in chosen}
    if drawn is not None and not any(drawn.values()):
        ap.error("no mutants yet: run `tools/mutation.py` once (it may be stopped once it has started testing)")
    if not args.report:
        if args.fresh and MUTANTS.exists():
            shutil.rmtree(MUTANTS)
        jobs = os.environ.get("MUTATION_JOBS", "2")
        mutmut = Path(sys.executable).with_name("mutmut")
        patterns = [n for st in drawn.values() for n in st] if drawn else [p for m in chosen for p in SCOPE[m]]
        start, load = time.monotonic(), os.getloadavg()[0]
        # Each mutant runs its tests in a new pytest session. Their temporary folders go to a root of their own,
        # kept (pyproject: tmp_path_retention_count): the job queue made at import keeps its file in the first one,
        # and pytest runs elsewhere on the machine must not clean it away.
        (MUTANTS / "tmp").mkdir(parents=True, exist_ok=True)
        env = os.environ | {"PYTEST_DEBUG_TEMPROOT": str(MUTANTS / "tmp")}
        with open(MUTANTS / "run.log", "w") as log:
            done = subprocess.run(
                [str(mutmut), "run", "--max-children", jobs, *patterns],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        minutes = (time.monotonic() - start) / 60
        ran = sum(1 for st in results().values() for n in st if any(fnmatch.fnmatchcase(n, p) for p in patterns))
        print(
            f"mutmut run: exit {done.returncode}, {ran} mutants in {minutes:.1f} min with {jobs} processes, "
            f"{ran / max(minutes, 1e-9):.0f} a minute, load average {load:.1f} at the start and "
            f"{os.getloadavg()[0]:.1f} at the end (log: mutants/run.log)\n"
        )
        if done.returncode != 0:
            print((MUTANTS / "run.log").read_text()[-3000:])
            return done.returncode
    if drawn is not None:
        now = results()
        return 0 if report({m: {k: now[m][k] for k in st} for m, st in drawn.items()}, sampled=True) else 1
    return 0 if report({m: st for m, st in results().items() if m in chosen}) else 1


if __name__ == "__main__":
    sys.exit(main())
