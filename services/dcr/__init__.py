"""Divide-Conquer-Reasoning (DCR paper): DCE (Eq. 1), AMC (Eq. 2), the score (Eq. 3), RAI (Eq. 4).

Pure domain code: every model call goes through `LLMClient.chat_json`; nothing here touches the
database or the UI. The parts live in submodules named after the paper's sections: config (what a run
does), dce (the evaluator), amc (the converter), rai (the improver), align (matching reasons to
sentences), rounds (Algorithm 1) and results (the result types and Eq. 3); the offline evidence checker
is services.dcr.evidence. This package re-exports their public names.
"""

from services.dcr.align import (
    ALIGN_THRESHOLD,
    MIN_MATCH,
    POSITION_BONUS,
    align,
    content_overlap,
    is_paragraph_level,
)
from services.dcr.amc import (
    TEMPLATE_ECHOES,
    AMCOutput,
    amc_schema,
    convert,
    is_template_echo,
    rule_mark,
    stated_mark,
    verdict_of,
)
from services.dcr.config import (
    CONVERTER_LABELS,
    METHOD_LABELS,
    NO_IMPROVE_REASON,
    REFERENCE_NOUN,
    TASK_LABELS,
    VERDICT_FIELD,
    Converter,
    DCRConfig,
    Method,
    Task,
)
from services.dcr.dce import DCEOutput, SentenceReason, dce_schema, evaluate, paragraph_schema
from services.dcr.delivery import DELIVERED_NOTE, Delivered, LeftOut, delivered
from services.dcr.rai import (
    ParagraphRAIOutput,
    RAIItem,
    apply_rewrites,
    compose_final,
    improve,
    paragraph_rai_schema,
    parse_rai,
    rai_schema,
)
from services.dcr.results import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    Evaluation,
    ExtraReason,
    Rewrite,
    Round,
    SentenceVerdict,
    Verdict,
    score_evaluation,
)
from services.dcr.rounds import candidate_units, continue_rounds, first_round

__all__ = [
    "ALIGN_THRESHOLD",
    "CONVERTER_LABELS",
    "DEFAULT_ALPHA",
    "DEFAULT_BETA",
    "METHOD_LABELS",
    "MIN_MATCH",
    "NO_IMPROVE_REASON",
    "POSITION_BONUS",
    "REFERENCE_NOUN",
    "TASK_LABELS",
    "TEMPLATE_ECHOES",
    "VERDICT_FIELD",
    "AMCOutput",
    "Converter",
    "DCEOutput",
    "DCRConfig",
    "DELIVERED_NOTE",
    "Delivered",
    "Evaluation",
    "ExtraReason",
    "LeftOut",
    "Method",
    "ParagraphRAIOutput",
    "RAIItem",
    "Rewrite",
    "Round",
    "SentenceReason",
    "SentenceVerdict",
    "Task",
    "Verdict",
    "align",
    "amc_schema",
    "apply_rewrites",
    "candidate_units",
    "compose_final",
    "content_overlap",
    "continue_rounds",
    "convert",
    "dce_schema",
    "delivered",
    "evaluate",
    "first_round",
    "improve",
    "is_paragraph_level",
    "is_template_echo",
    "paragraph_rai_schema",
    "paragraph_schema",
    "parse_rai",
    "rai_schema",
    "rule_mark",
    "score_evaluation",
    "stated_mark",
    "verdict_of",
]
