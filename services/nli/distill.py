"""Distillation datasets from batches over labelled data (paper 003, section 4).

Two forms of training example (section 4.1):

* with reasoning: only for an item whose judge's label matched the gold label; the Summ-NLI prompt, and as
  output the judge's reasoning (Summ-NLI's, or the concatenated window reasonings of Sent-NLI; for DCE the
  sentence reasons in order), then the label;
* without reasoning: for every labelled item; the prompt asks for the label alone, the output is the gold label.

An item judged correctly gives both (the paper's contrastive pairs). The reasoning comes from Summ-NLI when
it judged the item correctly, otherwise from Sent-NLI (section 4.1), whatever order the batches are given in;
the DCR evaluators' sentence reasons (beyond the paper) come after both.

Splits (section 4.2): in-domain, 80/20 by document (every summary of a document on one side), seeded, over
the documents the teacher judged; labelled items no batch judged are added to training only, as prompts
without reasoning ("we add remaining documents ... not evaluated by ChatGPT before into training"), never to
the test set. Out-of-domain: by dataset (train on the others, test on one). The test set holds, per item, a
prompt without reasoning (I-wo-R) and one with reasoning (I-w-R), both with the gold label to score against.
The mix ratio and sizes are reported as in Table 7.

Answers are the app's JSON by default (`answer="json"`): the prompt with reasoning is then exactly the
app's Summ-NLI prompt, so the trained student can be served as an endpoint and compared with its teacher
in the app. `answer="text"` gives the paper's plain "Reasoning process: ... / Judgement: ..." lines.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import batches as db_batches
from db import datasets as db_datasets
from db import distill as db
from services.dcr.results import CONSISTENT_AT
from services.prompts import distill as P
from services.text import InputError

log = logging.getLogger(__name__)

Split = Literal["in-domain", "ood"]
Format = Literal["chat", "plain"]
Answer = Literal["json", "text"]  # json: the app's JSON answers (a student plugs into the app); text: the paper's lines
Label = Literal["consistent", "inconsistent"]
DEFAULT_SEED = 0
DEFAULT_TEST_SHARE = 0.2
# Methods whose reasons are a model's reasoning about the summary. The offline evidence checker has no model,
# and QG-QA's answers verify single entities, which section 4.1 does not use as summary-level reasoning.
REASONING_METHODS = ("summ-nli", "sent-nli", "dce-amc", "paragraph")
GOLD = {1: "consistent", 0: "inconsistent"}
TEACHER_PRIORITY = {"summ-nli": 0, "sent-nli": 1, "paragraph": 2, "dce-amc": 3}  # section 4.1, then beyond it


@dataclass(frozen=True)
class Judgement:
    """What one batch's judge said about one item."""

    batch_id: int
    method: str
    label: Label | None
    reasoning: str | None  # None: no complete reasoning (a window failed, or a method without one)


@dataclass(frozen=True)
class LabelledItem:
    """A dataset item with its gold label and every judgement the batches made of it."""

    item_id: int
    dataset_id: int
    dataset: str
    document_id: int
    external_id: str
    document: str
    summary: str
    gold: Label
    judgements: tuple[Judgement, ...]

    def teacher(self) -> Judgement | None:
        """The judgement whose reasoning is learned: one that matched the gold label with a complete reasoning,
        Summ-NLI's first, then Sent-NLI's (section 4.1), then a DCR evaluator's; batch order breaks ties."""
        right = [j for j in self.judgements if j.label == self.gold and j.reasoning]
        return min(right, key=lambda j: TEACHER_PRIORITY.get(j.method, len(TEACHER_PRIORITY)), default=None)


@dataclass(frozen=True)
class TrainingExample:
    item_id: int
    form: Literal["with-reasoning", "without-reasoning"]
    prompt: str
    completion: str
    prompt_version: str

    def line(self, fmt: Format) -> dict[str, Any]:
        """One JSONL record: chat fine-tuning `messages`, or plain `prompt`/`completion`."""
        if fmt == "chat":
            return {
                "messages": [
                    {"role": "user", "content": self.prompt},
                    {"role": "assistant", "content": self.completion},
                ]
            }
        return {"prompt": self.prompt, "completion": self.completion}


@dataclass(frozen=True)
class SplitStats:
    """Table 7: training examples, their mean summary length, the share with reasoning; test examples, length."""

    n_train: int
    train_length: float | None
    r_ratio: float | None
    n_test: int
    test_length: float | None
    n_with_reasoning: int
    n_train_items: int
    n_train_documents: int
    n_test_documents: int


@dataclass(frozen=True)
class DistillSet:
    """A split's training and test examples, its Table 7 row, and what it was made from."""

    split: Split
    seed: int
    train: tuple[TrainingExample, ...]
    test: tuple[TrainingExample, ...]
    stats: SplitStats
    manifest: dict[str, Any]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def table7(self) -> pd.DataFrame:
        """The split as a row of the paper's Table 7."""
        s = self.stats
        return pd.DataFrame(
            [
                {
                    "split": "ID" if self.split == "in-domain" else "OOD",
                    "# Train": s.n_train,
                    "Length": None if s.train_length is None else round(s.train_length, 1),
                    "R-Ratio": None if s.r_ratio is None else f"{s.r_ratio:.0%}",
                    "# Test": s.n_test,
                    "Length (test)": None if s.test_length is None else round(s.test_length, 1),
                }
            ]
        )

    def jsonl(self, part: Literal["train", "test"], fmt: Format) -> str:
        rows = self.train if part == "train" else self.test
        return "".join(json.dumps(e.line(fmt), ensure_ascii=False) + "\n" for e in rows)


# -- reading the judgements ----------------------------------------------------------------------------
def _label(value: Any) -> Label | None:
    v = str(value or "").strip().lower()
    return v if v in ("consistent", "inconsistent") else None  # type: ignore[return-value]


def judgement_of(batch_id: int, method: str, result: dict[str, Any] | None, score: float | None) -> Judgement:
    """The judge's label and complete reasoning from a batch item's stored result."""
    result = result or {}
    method = str(result.get("method") or method)
    if method in ("summ-nli", "sent-nli", "qg-qa"):
        label = _label(result.get("label"))
        reasoning = None
        if method == "summ-nli":
            reasoning = ((result.get("summary") or {}).get("reasoning") or "").strip() or None
        elif method == "sent-nli":
            parts = [(w.get("reasoning") or "").strip() for w in result.get("windows") or []]
            reasoning = "\n".join(parts) if parts and all(parts) else None
        return Judgement(batch_id, method, label, reasoning if method in REASONING_METHODS else None)
    # DCR methods: an item is consistent when every judged sentence is (score 1, as in Table 4 and Figure 3).
    label = None if score is None else ("consistent" if score >= CONSISTENT_AT else "inconsistent")
    rounds = result.get("rounds") or []
    sentences = rounds[0].get("sentences") or [] if rounds else []
    reasons = [(s.get("reason") or "").strip() for s in sentences]
    reasoning = None
    if method in REASONING_METHODS and reasons and all(reasons):
        reasoning = reasons[0] if len(reasons) == 1 else "\n".join(reasons)
    return Judgement(batch_id, method, label, reasoning)  # type: ignore[arg-type]


def load_items(engine: Engine, batch_ids: Sequence[int]) -> tuple[list[LabelledItem], list[str]]:
    """Every labelled item of the batches' datasets, with its gold label and the judgements the batches made of
    it, in the batches' order (none for an item no batch judged)."""
    if not batch_ids:
        raise InputError("Choose at least one batch.")
    notes: list[str] = []
    by_item: dict[int, dict[str, Any]] = {}
    with Session(engine) as s:
        for bid in batch_ids:
            b = db_batches.get_batch(session=s, batch_id=bid)
            if b is None:
                raise InputError(f"Batch {bid} does not exist.")
            rows = db.batch_item_rows(session=s, batch_id=bid)
            unlabelled = 0
            for bi, di, doc, ds_name in rows:
                if di.human_label not in GOLD:
                    unlabelled += 1
                    continue
                entry = by_item.setdefault(
                    di.id,
                    {"di": di, "doc": doc, "dataset": ds_name, "judgements": []},
                )
                if bi.status == "done":
                    entry["judgements"].append(judgement_of(bid, b.method, bi.result, bi.score))
            if unlabelled:
                notes.append(
                    f"Batch #{bid}: {unlabelled:,} item(s) have no binary gold label and are left out "
                    "(the dataset needs a label column, or QAGS/SummEval labels)."
                )
        # Prompts without reasoning apply to every labelled item of these datasets, judged or not (section 4.2
        # adds the documents the teacher never saw this way).
        dataset_ids = sorted({e["di"].dataset_id for e in by_item.values()})
        extra = db.labelled_item_rows(session=s, dataset_ids=dataset_ids, labels=list(GOLD))
        n_unjudged = 0
        for di, doc, ds_name in extra:
            if di.id not in by_item:
                by_item[di.id] = {"di": di, "doc": doc, "dataset": ds_name, "judgements": []}
                n_unjudged += 1
        if n_unjudged:
            notes.append(
                f"{n_unjudged:,} labelled item(s) of these datasets were in no batch: they give prompts "
                "without reasoning only."
            )
    items = [
        LabelledItem(
            item_id=di.id,
            dataset_id=di.dataset_id,
            dataset=e["dataset"],
            document_id=e["doc"].id,
            external_id=di.external_id,
            document=e["doc"].text,
            summary=di.candidate,
            gold=GOLD[di.human_label],
            judgements=tuple(e["judgements"]),
        )
        for e in by_item.values()
        for di in [e["di"]]
    ]
    items.sort(key=lambda x: x.item_id)
    if not items:
        raise InputError(
            "None of these batches' items has a binary gold label: distillation needs labelled data "
            "(import a dataset with a label column, or QAGS / SummEval)."
        )
    return items, notes


# -- splits ------------------------------------------------------------------------------------------
def split_in_domain(
    items: Sequence[LabelledItem], *, seed: int = DEFAULT_SEED, test_share: float = DEFAULT_TEST_SHARE
) -> tuple[list[LabelledItem], list[LabelledItem]]:
    """80/20 by document over the documents a batch judged (all summaries of a document on the same side),
    reproducible under `seed`; items no batch judged go to training only (section 4.2), never to the test set."""
    if not 0.0 < test_share < 1.0:
        raise InputError("The test share must be between 0 and 1 (the paper uses 0.2).")
    judged = [x for x in items if x.judgements]
    docs = sorted({x.document_id for x in judged})
    if len(docs) < 2:
        raise InputError("An in-domain split by document needs judged items from at least two documents.")
    order = np.random.default_rng(seed).permutation(len(docs))
    n_test = min(len(docs) - 1, max(1, round(len(docs) * test_share)))
    test_docs = {docs[i] for i in order[:n_test]}
    # An unjudged summary of a test document stays out of training too: the document would leak.
    train = [x for x in items if x.document_id not in test_docs]
    test = [x for x in judged if x.document_id in test_docs]
    return train, test


def split_ood(
    items: Sequence[LabelledItem], *, test_dataset_id: int | None = None
) -> tuple[list[LabelledItem], list[LabelledItem], int]:
    """Train on every dataset but one, test on that one (default: the dataset of the last item's batch order)."""
    datasets = list(dict.fromkeys(x.dataset_id for x in items))
    if len(datasets) < 2:
        raise InputError(
            "An out-of-domain split needs batches over at least two datasets: train on some, test on another. "
            "Add a batch over another labelled dataset, or use the in-domain split."
        )
    target = test_dataset_id if test_dataset_id is not None else datasets[-1]
    if target not in datasets:
        raise InputError(f"Dataset {target} is not among the batches' datasets ({', '.join(map(str, datasets))}).")
    train = [x for x in items if x.dataset_id != target]
    test = [x for x in items if x.dataset_id == target]
    # An article shared by both sides would leak into the test set: keep it on the test side only.
    test_docs = {x.document_id for x in test}
    train = [x for x in train if x.document_id not in test_docs]
    return train, test, target


# -- examples ----------------------------------------------------------------------------------------
def examples_of(item: LabelledItem, *, train: bool, answer: Answer = "json") -> list[TrainingExample]:
    """A training item's examples (with reasoning when its judge was right, and always without); a test item's
    prompts with reasoning (I-w-R) and without (I-wo-R), each with the gold label to score the answer against."""
    as_json = answer == "json"
    out = []
    teacher = item.teacher() if train else None
    if teacher is not None:
        prompt, version = P.prompt_with_reasoning(item.document, item.summary, as_json=as_json)
        completion = P.completion_with_reasoning(teacher.reasoning or "", item.gold, as_json=as_json)
        out.append(TrainingExample(item.item_id, "with-reasoning", prompt, completion, version))
    elif not train:
        prompt, version = P.prompt_with_reasoning(item.document, item.summary, as_json=as_json)
        out.append(
            TrainingExample(
                item.item_id,
                "with-reasoning",
                prompt,
                P.completion_without_reasoning(item.gold, as_json=as_json),
                version,
            )
        )
    prompt, version = P.prompt_without_reasoning(item.document, item.summary, as_json=as_json)
    completion = P.completion_without_reasoning(item.gold, as_json=as_json)
    out.append(TrainingExample(item.item_id, "without-reasoning", prompt, completion, version))
    return out


def _length(items: Sequence[LabelledItem]) -> float | None:
    return float(np.mean([len(x.summary.split()) for x in items])) if items else None


def build(
    engine: Engine,
    batch_ids: Sequence[int],
    *,
    split: Split = "in-domain",
    seed: int = DEFAULT_SEED,
    test_share: float = DEFAULT_TEST_SHARE,
    test_dataset_id: int | None = None,
    answer: Answer = "json",
) -> DistillSet:
    """The distillation set of these batches: split, examples in both forms, Table 7 statistics, manifest."""
    items, notes = load_items(engine, batch_ids)
    if split == "in-domain":
        train_items, test_items = split_in_domain(items, seed=seed, test_share=test_share)
        target = None
    elif split == "ood":
        train_items, test_items, target = split_ood(items, test_dataset_id=test_dataset_id)
    else:
        raise InputError(f"Unknown split {split!r}: in-domain or ood.")
    if answer not in ("json", "text"):
        raise InputError(f"Unknown answer style {answer!r}: json or text.")
    train = [e for x in train_items for e in examples_of(x, train=True, answer=answer)]
    # The order examples are seen in training: shuffled, reproducibly.
    train = [train[i] for i in np.random.default_rng(seed + 1).permutation(len(train))]
    test = [e for x in test_items for e in examples_of(x, train=False, answer=answer)]
    if split == "in-domain":
        n_extra = sum(1 for x in train_items if not x.judgements)
        if n_extra:
            notes.append(
                f"{n_extra:,} labelled item(s) no batch judged were added to training as prompts without "
                "reasoning (section 4.2); the test set holds judged documents only."
            )
    n_with = sum(e.form == "with-reasoning" for e in train)
    judged_right = sum(1 for x in train_items if any(j.label == x.gold for j in x.judgements))
    if judged_right > n_with:
        notes.append(
            f"{judged_right - n_with:,} training item(s) were judged correctly but have no complete reasoning "
            "(a failed window, or a method without reasoning: the evidence checker, QG-QA); they train "
            "without reasoning only."
        )
    if not n_with:
        notes.append("No training item was judged correctly with a reasoning: every example is without reasoning.")
    stats = SplitStats(
        n_train=len(train),
        train_length=_length(train_items),
        r_ratio=n_with / len(train) if train else None,
        n_test=len(test_items),
        test_length=_length(test_items),
        n_with_reasoning=n_with,
        n_train_items=len(train_items),
        n_train_documents=len({x.document_id for x in train_items}),
        n_test_documents=len({x.document_id for x in test_items}),
    )
    with Session(engine) as s:
        batches = [db_batches.get_batch(session=s, batch_id=b) for b in batch_ids]
        dsets = {x.dataset_id: db_datasets.get_dataset(session=s, dataset_id=x.dataset_id) for x in items}
    manifest = {
        "kind": "consistency-studio/distillation-set",
        "paper": "Identifying Factual Inconsistency in Summaries (paper 003), section 4",
        "split": split,
        "seed": seed,
        "test_share": test_share if split == "in-domain" else None,
        "test_dataset_id": target,
        "batches": [
            {
                "id": b.id,
                "method": b.method,
                "model": b.model,
                "dataset_id": b.dataset_id,
                "prompt_versions": dict(b.prompt_versions),
            }
            for b in batches
            if b is not None
        ],
        "datasets": [{"id": d.id, "name": d.name, "sha256": d.sha256, "format": d.format} for d in dsets.values() if d],
        "answer": answer,
        "prompts": sorted({e.prompt_version for e in [*train, *test]}),
        "prompt_sources": {p.id: p.source for p in P.ALL},
        "table7": asdict(stats),
        "summary_length": "mean whitespace-separated words per summary",
        "train_item_ids": sorted(x.item_id for x in train_items),
        "test_item_ids": sorted(x.item_id for x in test_items),
        "train_document_ids": sorted({x.document_id for x in train_items}),
        "test_document_ids": sorted({x.document_id for x in test_items}),
        "notes": notes,
    }
    return DistillSet(split, seed, tuple(train), tuple(test), stats, manifest, tuple(notes))


def write(ds: DistillSet, out_dir: Path, fmt: Format) -> list[Path]:
    """train.jsonl, test.jsonl and manifest.json in `out_dir` (created)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "train.jsonl", out_dir / "test.jsonl", out_dir / "manifest.json"]
    paths[0].write_text(ds.jsonl("train", fmt), encoding="utf-8")
    paths[1].write_text(ds.jsonl("test", fmt), encoding="utf-8")
    paths[2].write_text(json.dumps({**ds.manifest, "format": fmt}, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return paths


def zip_bytes(ds: DistillSet, fmt: Format) -> bytes:
    """The same three files in one zip (the app's download)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("train.jsonl", ds.jsonl("train", fmt))
        z.writestr("test.jsonl", ds.jsonl("test", fmt))
        z.writestr("manifest.json", json.dumps({**ds.manifest, "format": fmt}, indent=2, ensure_ascii=False) + "\n")
    return buf.getvalue()
