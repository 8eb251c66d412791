"""Human annotation: annotators, their sentence labels, assignments, the queue, export/import, agreement.

A label is one annotator's verdict on one sentence of a target: a run's round (the Evaluate and History
pages) or a dataset item (the annotation queue). Labels live in their own table, one row per annotator and
sentence; they never change the model's verdicts. Writing a label is an upsert on that annotator's own row,
so two annotators labelling the same sentence at once both keep their label.

The modules: annotators (names and personal-link tokens), labels (targets and labelling), assignment (who
labels which item, each annotator's queue and progress), verdicts (the model's verdicts beside an item and
the lead's settings for them), transfer (label export and import), agreement (alpha and disagreements).
"""

from db.annotations import AnnotationItem, QueueEntry
from db.models import SentenceLabelPublic
from services.annotations.agreement import VERDICT_CODES, agreement, agreement_frame, disagreements
from services.annotations.annotators import (
    MAX_NAME,
    annotator_by_name,
    annotator_by_token,
    annotator_token,
    create_annotator,
    get_annotator,
    get_or_create_annotator,
    list_annotators,
    replace_token,
)
from services.annotations.assignment import (
    AnnotationProgress,
    AssignResult,
    assign,
    datasets_of,
    get_item,
    next_item,
    progress,
    progress_frame,
    queue,
)
from services.annotations.labels import (
    LABELS,
    Target,
    label_sentence,
    labels_for,
    labels_for_item,
    labels_for_run,
    my_labels,
)
from services.annotations.transfer import EXPORT_COLUMNS, ExportFormat, export_labels, import_labels
from services.annotations.verdicts import (
    QUEUE_SETTINGS_KEY,
    ModelVerdict,
    QueueSettings,
    batches_for_dataset,
    model_verdicts,
    queue_settings,
    set_queue_settings,
)

__all__ = [
    "EXPORT_COLUMNS",
    "LABELS",
    "MAX_NAME",
    "QUEUE_SETTINGS_KEY",
    "VERDICT_CODES",
    "AnnotationItem",
    "AnnotationProgress",
    "AssignResult",
    "ExportFormat",
    "ModelVerdict",
    "QueueEntry",
    "QueueSettings",
    "SentenceLabelPublic",
    "Target",
    "agreement",
    "agreement_frame",
    "annotator_by_name",
    "annotator_by_token",
    "annotator_token",
    "assign",
    "batches_for_dataset",
    "create_annotator",
    "datasets_of",
    "disagreements",
    "export_labels",
    "get_annotator",
    "get_item",
    "get_or_create_annotator",
    "import_labels",
    "label_sentence",
    "labels_for",
    "labels_for_item",
    "labels_for_run",
    "list_annotators",
    "model_verdicts",
    "my_labels",
    "next_item",
    "progress",
    "progress_frame",
    "queue",
    "queue_settings",
    "replace_token",
    "set_queue_settings",
]
