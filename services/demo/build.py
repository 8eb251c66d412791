"""Build the demo workspace in an empty database, through the services users use: import a dataset, run
batches in this process, label items from the Annotate queue, save the judge and systems comparisons, run a
ConsEval study and a DHP benchmark, evaluate one document, and create a share link to the report.

Nothing calls a language model: the judges are the offline evidence checker and ROUGE-2 precision (a score
column), the labels come from how the texts were made (services/demo/texts.py), and the evaluators that
ConsEval and DHP study are the scripted rules of services/demo/raters.py. The embedded model is left out: at
about a second per sentence on two cores, one batch of it over the dataset would take longer than the whole
build, and its verdicts are near chance.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass

from sqlalchemy.engine import Engine

from services import annotations, baselines, datasets, dcr, dhp, judges, reports, runs
from services import conseval as ce
from services.config import BackendConfig
from services.demo import raters, texts
from services.dhp.catalogue import TASKS
from services.dhp.perturb import Item
from services.jobs import batches

log = logging.getLogger(__name__)

DATASET_NAME = "Demo: summaries of invented town news (labels by construction)"
LABELLER = "Demo labeller (labels by construction)"
ROUGE_COLUMN = "ROUGE-2 precision"
DHP_PERTURBATIONS = ("typo:minor", "typo:major", "char_deletion:major", "reorder:minor")


@dataclass(frozen=True)
class Size:
    """How much the workspace holds."""

    n_refs: int = 90  # paragraphs; each system summarizes every one
    imported_per_system: int = 25  # labels imported with the dataset (a random draw)
    annotated_per_system: int = 15  # labelled through Label next and the Annotate queue (a random draw)
    queued_per_system: int = 3  # sent to the queue and left for the visitor to label
    dhp_items: int = 10
    conseval_items: int = 8
    conseval_samples: int = 3


FULL = Size()
SMALL = Size(n_refs=12, imported_per_system=4, annotated_per_system=3, queued_per_system=1, dhp_items=4,
             conseval_items=2, conseval_samples=2)  # fmt: skip


@dataclass(frozen=True)
class Tour:
    """Where the tour's steps point in a built workspace, and what building it took."""

    dataset_id: int
    evidence_batch_id: int
    rouge_column: str
    panel_id: int
    comparison_id: int
    share_token: str
    run_id: int
    study_id: int
    dhp_set_id: int
    dhp_run_ids: list[int]
    annotator_id: int
    n_items: int
    n_labelled: int
    cpu_seconds: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Tour:
        return cls(**json.loads(text))


OFFLINE = BackendConfig(kind="embedded")  # recorded on the checker's batch and run; never started


def _dataset(engine: Engine, rows: list[texts.Row], size: Size, seed: int) -> int:
    """Import the rows as a JSONL file, a random draw of each system's items carrying their label."""
    import random

    rng = random.Random(f"{seed}-imported")
    keep: set[str] = set()
    for system in texts.SYSTEMS:
        ids = [r.id for r in rows if r.system == system]
        keep |= set(rng.sample(ids, min(size.imported_per_system, len(ids))))
    lines = [
        json.dumps(
            {
                "id": r.id,
                "system": r.system,
                "reference": r.reference,
                "summary": r.made.text,
                "label": r.made.label if r.id in keep else None,
            }
        )
        for r in rows
    ]
    mapping = datasets.ColumnMapping(
        reference="reference", candidate="summary", id="id", human_label="label", system="system"
    )
    saved, _ = datasets.import_file(
        engine, name=DATASET_NAME, data="\n".join(lines).encode(), fmt="jsonl", mapping=mapping
    )
    return saved.id


def _judges(engine: Engine, dataset_id: int, rows: list[texts.Row]) -> tuple[int, str]:
    """The evidence checker as a batch run here, and ROUGE-2 precision imported as a score column: (the batch's
    id, the column's judge reference)."""
    cfg = dcr.DCRConfig(method="evidence", max_rounds=0)
    bid = batches.create_batch(engine, dataset_id=dataset_id, backend=OFFLINE, cfg=cfg, name="Evidence checker")
    batches.process_batch(engine, bid, backend=OFFLINE)
    scores = baselines.rouge_scores([r.reference for r in rows], [r.made.text for r in rows])
    key = baselines.DEFAULT_ROUGE_KEY
    lines = [json.dumps({"id": r.id, "score": s[key]}) for r, s in zip(rows, scores, strict=True)]
    column = judges.import_column(
        engine, dataset_id, name=ROUGE_COLUMN, data="\n".join(lines).encode(), filename="rouge.jsonl",
        score_column="score",
    )  # fmt: skip
    return bid, column.name


def _label(engine: Engine, dataset_id: int, rows: list[texts.Row], judge_ids: list, size: Size, seed: int) -> int:
    """Label next (a random draw per system) to the demo labeller's queue; label all but the last few of them,
    each sentence by how it was made; returns the annotator's id."""
    by_id = {r.id: r for r in rows}
    who = annotations.create_annotator(engine, LABELLER)
    human = judges.human_frame(engine, dataset_id)
    frames = [judges.judge_frame(engine, b) for b in judges.data.batches(engine, [judge_ids[0]])]
    k = size.annotated_per_system + size.queued_per_system
    prop = judges.propose(
        human, frames, k=k, strategy="random", seed=seed, per_system=judges.systems.strata(engine, dataset_id)
    )
    judges.send(engine, dataset_id, prop.item_ids, [who.id], origin="random")
    chosen = prop.table.assign(system=prop.table["external_id"].map(lambda x: by_id[x].system))
    labelled = chosen.groupby("system", group_keys=False).head(size.annotated_per_system)
    for item_id, external_id in zip(labelled["item_id"], labelled["external_id"], strict=True):
        made = by_id[external_id].made
        item = annotations.get_item(engine, int(item_id))
        for j, sentence in enumerate(item.sentences if item else ()):
            wrong = made.wrong is not None and (sentence.strip() == made.wrong or made.wrong in sentence)
            annotations.label_sentence(
                engine, annotator_id=who.id, target=annotations.Target.item(int(item_id)), sentence_idx=j,
                label=0 if wrong else 1,
            )  # fmt: skip
    return who.id


def _conseval(engine: Engine, base_url: str, size: Size) -> int:
    backend = BackendConfig(kind="openai", base_url=base_url, model=raters.BREVITY, max_retries=0)
    cfg = ce.StudyConfig(
        criteria=["Conciseness"],
        scales=["5-P", "10-P", "5-P Likert", "Binary"],
        granularities=["none", "long"],
        models=[ce.ModelSpec.of(backend)],
        n_samples=size.conseval_samples,
        n_boot=200,
    )
    sid = ce.create_study(
        engine, cfg, ce.sample_items(cfg.criteria, size.conseval_items), name="Demo: a scripted brevity rule"
    )
    ce.run_study(engine, sid, backends={backend.model: backend})
    return sid


def _dhp(engine: Engine, base_url: str, size: Size, seed: int) -> tuple[int, list[int]]:
    items = [Item(i, text, source) for i, text, source in texts.faithful(size.dhp_items, seed=seed)]
    set_id = dhp.make_set(
        engine, TASKS["summarization"], items, name="Demo: faithful summaries, degraded by rule", seed=seed,
        only=list(DHP_PERTURBATIONS),
    )  # fmt: skip
    backends = [BackendConfig(kind="openai", base_url=base_url, model=m, max_retries=0) for m in raters.DHP_RATERS]
    run_ids, _ = dhp.start_runs(engine, set_id, backends, repeats=1, seed=seed)
    for rid, backend in zip(run_ids, backends, strict=True):
        dhp.process_run(engine, rid, backend=backend)
    return set_id, run_ids


def _one_document(engine: Engine, dataset_id: int, rows: list[texts.Row], batch_id: int) -> int:
    """The evidence checker on one document whose summary has a changed number (for Evaluate): one the batch's
    checker called inconsistent when there is one, so the page shows it at work."""
    (batch,) = judges.data.batches(engine, [batch_id])
    found = judges.judge_frame(engine, batch).merge(judges.human_frame(engine, dataset_id), on="item_id")
    caught = set(found.query("verdict == 0 and n_unknown == 0")["external_id"])
    changed = [r for r in rows if r.made.rule == "number"]
    row = next((r for r in changed if r.id in caught), changed[0])
    cfg = dcr.DCRConfig(method="evidence", max_rounds=0)
    return runs.start_run(engine, OFFLINE, row.reference, row.made.text, cfg, title=f"Demo document {row.id}")


def build(engine: Engine, *, size: Size = FULL, seed: int = 0) -> Tour:
    """Fill an empty database with the demo workspace; returns where the tour points."""
    started = time.process_time()
    rows = texts.dataset_rows(size.n_refs, seed=seed)
    ds = _dataset(engine, rows, size, seed)
    bid, column = _judges(engine, ds, rows)
    judge_ids: list[int | str] = [bid, column]
    who = _label(engine, ds, rows, judge_ids, size, seed)
    options = {"source": "all", "budget": None, "seed": seed, "alpha": 0.05, "prices": {}}
    panel = judges.save_panel(engine, ds, judge_ids, options)
    cmp_id = judges.systems.save_comparison(engine, ds, bid, source="all", seed=seed, alpha=0.05)
    share = reports.new_share(engine, "compare", cmp_id, title="Demo: systems compared by the evidence checker")
    run_id = _one_document(engine, ds, rows, bid)
    with raters.serving() as (url, _):
        sid = _conseval(engine, url, size)
        set_id, dhp_runs = _dhp(engine, url, size, seed)
    human = judges.human_frame(engine, ds)
    return Tour(
        dataset_id=ds,
        evidence_batch_id=bid,
        rouge_column=column,
        panel_id=panel,
        comparison_id=cmp_id,
        share_token=share.token,
        run_id=run_id,
        study_id=sid,
        dhp_set_id=set_id,
        dhp_run_ids=dhp_runs,
        annotator_id=who,
        n_items=len(rows),
        n_labelled=int(human["label"].notna().sum()),
        cpu_seconds=round(time.process_time() - started, 1),
    )
