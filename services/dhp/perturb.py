"""Hierarchical perturbations of the DHP paper (Tables 1 and 2): degrade good texts on purpose.

Each perturbation has a level (character, word, sentence), a method (rule-based or LLM-based) and, where
Table 2 gives one, a degree (minor or major) with its k. Rule-based perturbations are pure functions of the
text and a `random.Random` seeded from (seed, item id, perturbation), so the same seed gives the same texts
in any process. LLM-based ones send the paper's Auto-CoT "adjustment" prompt (services/prompts/dhp.py)
through the one LLM client at temperature 0; their answers are cached like every model answer.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, field_validator

from services.llm import LLMClient
from services.prompts import dhp as prompts
from services.text import join_sentences, split_sentences

Level = Literal["character", "word", "sentence"]
LEVELS: tuple[Level, ...] = ("character", "word", "sentence")
LEVEL_LETTER = {"character": "C", "word": "W", "sentence": "S"}


# -- the catalogue -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """A perturbation method: what it does and the quality issue it creates (the survey's question)."""

    key: str
    name: str
    level: Level
    method: Literal["rule", "llm"]
    issue: str  # the quality issue in words an expert reads in the survey
    needs: str | None = None  # a field each item must carry (e.g. wrong_ending)


KINDS: dict[str, Kind] = {
    k.key: k
    for k in (
        Kind(
            "char_deletion",
            "Random Deletions",
            "character",
            "rule",
            "Characters are missing at random places in the text (dropped letters and digits).",
        ),
        Kind(
            "typo",
            "Random Typos",
            "character",
            "rule",
            "The text has typographical errors: swapped, doubled, neighbouring-key or missing characters.",
        ),
        Kind(
            "word_deletion",
            "Random Deletions (words)",
            "word",
            "rule",
            "A run of consecutive words is missing from the text.",
        ),
        Kind(
            "fictional_entities",
            "Fictional Named Entities",
            "word",
            "llm",
            "Named entities (names, places, numbers, technical terms) are replaced with fictional ones.",
        ),
        Kind(
            "grammar",
            "Grammatical Errors",
            "word",
            "llm",
            "The text has grammatical errors: agreement, tense, prepositions, sentence fragments.",
        ),
        Kind("reorder", "Reordering", "sentence", "rule", "The sentences of the text are in a shuffled order."),
        Kind(
            "rewrite_insert",
            "Rewriting and Insertion",
            "sentence",
            "llm",
            "Some sentences are repeated right after themselves in other words (redundant rephrasings).",
        ),
        Kind(
            "random_ending",
            "Random Ending Sentence",
            "sentence",
            "rule",
            "The ending belongs to another story altogether.",
        ),
        Kind(
            "wrong_ending",
            "Wrong Ending Sentence",
            "sentence",
            "rule",
            "The ending contradicts the story (the dataset's wrong ending).",
            needs="wrong_ending",
        ),
        Kind("random_answer", "Random Answer", "sentence", "rule", "The answer belongs to another question."),
    )
}


@dataclass(frozen=True)
class Perturbation:
    """One perturbation of a task: a kind at a degree with its k (None where the kind takes no k)."""

    kind: str
    degree: Literal["minor", "major", "single"] = "single"
    k: int | None = None  # characters, typos, words or sentences; 0 for reordering means "all"

    @property
    def key(self) -> str:
        return self.kind if self.degree == "single" else f"{self.kind}:{self.degree}"

    @property
    def spec(self) -> Kind:
        return KINDS[self.kind]

    @property
    def level(self) -> Level:
        return self.spec.level

    @property
    def label(self) -> str:
        base = self.spec.name
        deg = "" if self.degree == "single" else f"{self.degree.capitalize()} "
        kk = "" if self.k is None else (" (k=all)" if self.k == 0 else f" (k={self.k})")
        return f"{LEVEL_LETTER[self.level]}: {deg}{base}{kk}"

    def record(self) -> dict[str, Any]:
        return {"kind": self.kind, "degree": self.degree, "k": self.k}


def kind_of(perturbation_key: str) -> str:
    """The kind of a perturbation key ("typo:minor" -> "typo")."""
    return perturbation_key.split(":", 1)[0]


@dataclass(frozen=True)
class Metric:
    name: str
    definition: str


@dataclass(frozen=True)
class TaskSpec:
    """An NLG task: what is evaluated, what it is judged against, its metrics and its perturbations."""

    key: str
    name: str
    text_label: str  # what is evaluated: Summary, Ending, Answer, Translation
    source_label: str | None  # what it is judged against: Article, Story, Question, Source text
    metrics: tuple[Metric, ...]
    perturbations: tuple[Perturbation, ...]
    builtin: bool = True
    definition: str = ""

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def perturbation(self, key: str) -> Perturbation:
        for p in self.perturbations:
            if p.key == key:
                return p
        raise KeyError(f"task {self.key!r} has no perturbation {key!r}")

    def kinds(self) -> list[str]:
        """The perturbation kinds of the task, in order, once each (the survey's quality issues)."""
        out: list[str] = []
        for p in self.perturbations:
            if p.kind not in out:
                out.append(p.kind)
        return out


def _mm(kind: str, minor: int | None, major: int | None) -> tuple[Perturbation, Perturbation]:
    return Perturbation(kind, "minor", minor), Perturbation(kind, "major", major)


# Table 1 metrics (Appendix A definitions) and Table 2's k: SummEval's k for summarization, SumPubMed's for
# sumpubmed (the same metrics, filled in below).
TASKS: dict[str, TaskSpec] = {
    "summarization": TaskSpec(
        "summarization",
        "Summarization",
        "Summary",
        "Article",
        (
            Metric(
                "Coherence",
                "The collective quality of all sentences: the summary should be well-structured "
                "and well-organized, building from sentence to sentence to a coherent body of information.",
            ),
            Metric(
                "Consistency",
                "The factual alignment between the summary and the article: the summary should "
                "contain only statements entailed by the article, with no hallucinated facts.",
            ),
            Metric(
                "Fluency",
                "The quality of the individual sentences: free of spelling, grammar, punctuation and "
                "formatting problems that make the text hard to read.",
            ),
            Metric(
                "Relevance",
                "The selection of important content from the article: the summary should include only "
                "important information, without redundancies or excess information.",
            ),
        ),
        (
            *_mm("char_deletion", 10, 50),
            *_mm("typo", 10, 50),
            *_mm("fictional_entities", None, None),
            *_mm("grammar", None, None),
            *_mm("reorder", 2, 0),
            *_mm("rewrite_insert", None, None),
        ),
        definition="Write a short summary that conveys the main points of a news article.",
    ),
    # Table 2's SumPubMed: the summarization task on scientific articles, with its own k for the character level.
    "sumpubmed": TaskSpec(
        "sumpubmed",
        "Summarization (SumPubMed k)",
        "Summary",
        "Article",
        (),
        (
            *_mm("char_deletion", 20, 100),
            *_mm("typo", 20, 100),
            *_mm("fictional_entities", None, None),
            *_mm("grammar", None, None),
            *_mm("reorder", 2, 0),
            *_mm("rewrite_insert", None, None),
        ),
        definition="Write a short summary that conveys the main points of a scientific article (its background).",
    ),
    "story": TaskSpec(
        "story",
        "Story completion",
        "Ending",
        "Story",
        (
            Metric("Coherence", "The story's overall structure and narrative flow."),
            Metric(
                "Consistency",
                "How well the ending maintains the established tone, setting, character "
                "development, and narrative style of the story.",
            ),
            Metric("Fluency", "The linguistic and stylistic quality of the story's conclusion."),
        ),
        (
            Perturbation("char_deletion", k=5),
            Perturbation("typo", k=5),
            Perturbation("fictional_entities"),
            Perturbation("grammar"),
            Perturbation("random_ending"),
            Perturbation("wrong_ending"),
        ),
        definition="Write the fifth, ending sentence of a four-sentence story.",
    ),
    "qa": TaskSpec(
        "qa",
        "Question answering",
        "Answer",
        "Question",
        (
            Metric(
                "Answer Quality",
                "Whether the answer provides a comprehensive and accurate response to the "
                "question, effectively capturing the essence of the content discussed in the paragraph.",
            ),
        ),
        (
            *_mm("char_deletion", 5, 25),
            *_mm("typo", 5, 25),
            *_mm("fictional_entities", None, None),
            *_mm("grammar", None, None),
            Perturbation("random_answer"),
        ),
        definition="Answer a question about a paragraph in one or two sentences.",
    ),
    "translation": TaskSpec(
        "translation",
        "Translation",
        "Translation",
        "Source text",
        (
            Metric(
                "Accuracy",
                "How closely the translation mirrors the source text, focusing on the absence of "
                "additions, omissions, or mistranslations.",
            ),
            Metric(
                "Fluency",
                "The translation's compliance with the linguistic norms of the target language, "
                "specifically examining spelling, grammar, and consistency.",
            ),
        ),
        (
            *_mm("char_deletion", 10, 50),
            *_mm("typo", 10, 50),
            *_mm("word_deletion", 5, 25),
            *_mm("fictional_entities", None, None),
            *_mm("grammar", None, None),
        ),
        definition="Translate a news text into English.",
    ),
}


TASKS["sumpubmed"] = replace(TASKS["sumpubmed"], metrics=TASKS["summarization"].metrics)


def custom_task(
    key: str,
    name: str,
    *,
    text_label: str,
    source_label: str | None,
    metrics: Sequence[tuple[str, str]],
    perturbations: Sequence[dict[str, Any]],
    definition: str = "",
) -> TaskSpec:
    """A user-added task; raises ValueError with a readable message for bad metrics or perturbations."""
    if not re.fullmatch(r"[a-z0-9_-]{2,40}", key or ""):
        raise ValueError("The task key must be 2-40 characters: lower-case letters, digits, _ or -.")
    if key in TASKS:
        raise ValueError(f"'{key}' is a built-in task; choose another key.")
    mets = tuple(Metric(n.strip(), d.strip()) for n, d in metrics if n.strip())
    if not mets:
        raise ValueError("A task needs at least one metric with a name.")
    if len({m.name.lower() for m in mets}) != len(mets):
        raise ValueError("Metric names must differ.")
    perts: list[Perturbation] = []
    for p in perturbations:
        kind = p.get("kind")
        if kind not in KINDS:
            raise ValueError(f"Unknown perturbation {kind!r}; choose from {', '.join(KINDS)}.")
        perts.append(Perturbation(kind, p.get("degree") or "single", p.get("k")))
    if not perts:
        raise ValueError("A task needs at least one perturbation.")
    if len({p.key for p in perts}) != len(perts):
        raise ValueError("Each perturbation (kind and degree) may appear once.")
    return TaskSpec(
        key,
        name.strip() or key,
        text_label.strip() or "Text",
        (source_label or "").strip() or None,
        mets,
        tuple(perts),
        builtin=False,
        definition=definition.strip(),
    )


# -- the items ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Item:
    """A good text to perturb, with what it is judged against (article, story, question, source)."""

    id: str
    text: str
    source: str = ""
    extra: dict[str, str] = field(default_factory=dict)  # e.g. {"wrong_ending": ...}


@dataclass(frozen=True)
class Perturbed:
    """One perturbed text; `error` says why there is none (the item lacks a field, the model failed)."""

    item_id: str
    perturbation: str
    level: Level
    original: str
    perturbed: str | None
    detail: str = ""
    error: str | None = None


def seeded_rng(seed: int, item_id: str, perturbation: str) -> random.Random:
    """A generator that depends only on (seed, item, perturbation): stable across processes and orders."""
    digest = hashlib.sha256(f"{seed}|{item_id}|{perturbation}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


# -- rule-based perturbations ----------------------------------------------------------------------
def delete_characters(text: str, k: int, rng: random.Random) -> tuple[str, int]:
    """Delete k alphanumeric characters at random (all of them if fewer); returns (text, number deleted)."""
    positions = [i for i, c in enumerate(text) if c.isalnum()]
    chosen = set(rng.sample(positions, min(k, len(positions))))
    return "".join(c for i, c in enumerate(text) if i not in chosen), len(chosen)


TYPO_OPERATIONS = (
    "char_swap",
    "missing_char",
    "extra_char",
    "nearby_char",
    "similar_char",
    "skipped_space",
    "random_space",
    "repeated_char",
)
_typo_lock = threading.Lock()  # the typo package draws from the global `random` state


def add_typos(text: str, k: int, rng: random.Random) -> tuple[str, list[str]]:
    """Add k typographical errors with the `typo` package; returns (text, the operations applied)."""
    import typo

    applied: list[str] = []
    out = text
    with _typo_lock:
        saved = random.getstate()
        try:
            for _ in range(k):
                # An operation can leave the text as it was (swapping "ll"): try others until one changes it.
                for _attempt in range(8):
                    op = rng.choice(TYPO_OPERATIONS)
                    changed = getattr(typo.StrErrer(out, seed=rng.getrandbits(32)), op)().result
                    if changed != out:
                        out = changed
                        applied.append(op)
                        break
        finally:
            random.setstate(saved)
    return out, applied


_WORD = re.compile(r"\S+")


def delete_words(text: str, k: int, rng: random.Random) -> tuple[str, int]:
    """Delete k consecutive words at a random place (keeping at least one word); returns (text, deleted)."""
    words = list(_WORD.finditer(text))
    k = min(k, max(0, len(words) - 1))
    if k == 0:
        return text, 0
    start = rng.randrange(0, len(words) - k + 1)
    first, last = words[start], words[start + k - 1]
    # Remove the words and the space after them (or before them when they end the text).
    cut_start = first.start()
    cut_end = words[start + k].start() if start + k < len(words) else last.end()
    if start + k == len(words) and start > 0:
        cut_start = words[start - 1].end()
    return text[:cut_start] + text[cut_end:], k


def reorder_sentences(text: str, k: int, rng: random.Random) -> tuple[str, list[int]]:
    """Shuffle k sentences among their own places (k=0: all of them); returns (text, the new order)."""
    sents = split_sentences(text)
    n = len(sents)
    if n < 2 or len(set(sents)) < 2:
        return text, list(range(n))
    count = n if k == 0 or k >= n else k
    order = list(range(n))
    for _ in range(50):  # a shuffle that leaves every sentence in place is no perturbation: draw again
        places = sorted(rng.sample(range(n), count))
        moved = places[:]
        rng.shuffle(moved)
        order = list(range(n))
        for place, src in zip(places, moved, strict=True):
            order[place] = src
        if [sents[i] for i in order] != sents:
            break
    return join_sentences([sents[i] for i in order]), order


def other_item_text(items: Sequence[Item], item: Item, rng: random.Random) -> Item | None:
    """Another item whose text differs from this one's, drawn at random (None when there is none)."""
    others = [o for o in items if o.id != item.id and o.text.strip() != item.text.strip()]
    return rng.choice(others) if others else None


# -- LLM-based perturbations -------------------------------------------------------------------------
class Revision(BaseModel):
    """The perturbing model's answer."""

    revised: str

    @field_validator("revised")
    @classmethod
    def _not_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the revised text is empty")
        return v.strip()


def _parse_revision(data: Any) -> Revision:
    if isinstance(data, dict) and "revised" not in data:
        # A model may name the field after the text ("revised_summary"): take the one string field.
        strings = [v for k, v in data.items() if isinstance(v, str) and "revis" in k.lower()]
        if len(strings) == 1:
            data = {"revised": strings[0]}
    return Revision.model_validate(data)


def read_revision(raw: str, text_label: str) -> str:
    """The revised text of a plain reply: as written, without an echoed "Revised Summary:" label or wrapping quotes."""
    text = raw.strip()
    text = re.sub(rf"^\**\s*(revised\s+)?{re.escape(text_label)}\s*\**\s*:\s*\**", "", text, flags=re.I).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'“”":
        text = text[1:-1].strip()
    return text


def llm_perturb(
    client: LLMClient, task: TaskSpec, p: Perturbation, item: Item, *, answer_format: str = "plain"
) -> tuple[str | None, str | None]:
    """Ask the model for the adjusted text (the paper's plain reply, or JSON); returns (text, error)."""
    structured = answer_format == prompts.STRUCTURED
    prompt = prompts.perturbation_prompt(p.kind, p.degree, task.key, structured=structured)
    a_source = prompts.article_of(task.key, task.source_label)
    content = prompt.render(
        text_noun=task.text_label.lower(),
        text_label=task.text_label,
        a_source=a_source,
        source_noun=(task.source_label or "source").lower(),
        text=item.text,
    )
    common = dict(prompt_version=prompt.id, stage=f"dhp-perturb-{p.kind}", temperature=0.0)
    messages = [{"role": "user", "content": content}]
    if structured:
        res = client.chat_json(messages, parse=_parse_revision, schema=Revision.model_json_schema(), **common)
        revised = res.value.revised if res.ok else None  # type: ignore[union-attr]
    else:
        res = client.chat_text(messages, **common)
        revised = read_revision(res.value, task.text_label) if res.ok else None  # type: ignore[arg-type]
    if not res.ok:
        return None, res.error or "no answer"
    if not revised:
        return None, "the model's reply was empty"
    if revised.strip() == item.text.strip():
        return None, "the model returned the text unchanged"
    return revised, None


# -- applying ------------------------------------------------------------------------------------------
def apply_rule(p: Perturbation, item: Item, items: Sequence[Item], seed: int) -> Perturbed:
    """Apply a rule-based perturbation to one item."""
    rng = seeded_rng(seed, item.id, p.key)
    base = Perturbed(item.id, p.key, p.level, item.text, None)
    if p.kind == "char_deletion":
        out, n = delete_characters(item.text, p.k or 0, rng)
        return replace(base, perturbed=out, detail=f"{n} character(s) deleted")
    if p.kind == "typo":
        out, ops = add_typos(item.text, p.k or 0, rng)
        return replace(base, perturbed=out, detail=f"{len(ops)} typo(s): {', '.join(ops)}")
    if p.kind == "word_deletion":
        out, n = delete_words(item.text, p.k or 0, rng)
        if n == 0:
            return replace(base, error="the text has too few words to delete any")
        return replace(base, perturbed=out, detail=f"{n} consecutive word(s) deleted")
    if p.kind == "reorder":
        out, order = reorder_sentences(item.text, p.k or 0, rng)
        if out == item.text or order == sorted(order):
            return replace(base, error="the text has fewer than two different sentences to reorder")
        return replace(base, perturbed=out, detail="sentence order " + ", ".join(str(i + 1) for i in order))
    if p.kind in ("random_ending", "random_answer"):
        other = other_item_text(items, item, rng)
        if other is None:
            return replace(base, error="needs at least one other item to take its text from")
        return replace(base, perturbed=other.text, detail=f"taken from item {other.id}")
    if p.kind == "wrong_ending":
        wrong = (item.extra.get("wrong_ending") or "").strip()
        if not wrong:
            return replace(base, error="the item has no wrong_ending")
        return replace(base, perturbed=wrong, detail="the item's wrong ending")
    raise ValueError(f"{p.kind} is not a rule-based perturbation")


def perturb_item(
    task: TaskSpec,
    p: Perturbation,
    item: Item,
    items: Sequence[Item],
    *,
    seed: int,
    client: LLMClient | None = None,
    answer_format: str = "plain",
) -> Perturbed:
    """One item under one perturbation: rule-based locally, LLM-based through `client`."""
    if p.spec.method == "rule":
        return apply_rule(p, item, items, seed)
    base = Perturbed(item.id, p.key, p.level, item.text, None)
    if client is None:
        return replace(base, error="LLM-based: needs a model")
    out, err = llm_perturb(client, task, p, item, answer_format=answer_format)
    if err:
        return replace(base, error=err)
    return replace(base, perturbed=out, detail=f"by {client.backend.model}")


def perturb_all(
    task: TaskSpec,
    items: Sequence[Item],
    *,
    seed: int,
    client: LLMClient | None = None,
    only: Sequence[str] | None = None,
) -> list[Perturbed]:
    """Every item under every perturbation of the task (or those in `only`), in a stable order."""
    out: list[Perturbed] = []
    for p in task.perturbations:
        if only is not None and p.key not in only:
            continue
        for item in items:
            out.append(perturb_item(task, p, item, items, seed=seed, client=client))
    return out


def items_from_records(records: Sequence[dict[str, Any]]) -> list[Item]:
    """Items from dicts with `id`, `text` and optionally `source` and `wrong_ending`; ValueError when unusable."""
    items: list[Item] = []
    seen: set[str] = set()
    for n, r in enumerate(records, 1):
        if not isinstance(r, dict):
            raise ValueError(f"item {n}: expected an object with id and text")
        text = str(r.get("text") or "").strip()
        if not text:
            raise ValueError(f"item {n}: no text")
        iid = str(r.get("id") or n).strip()
        if iid in seen:
            raise ValueError(f"item {n}: the id {iid!r} appears twice")
        seen.add(iid)
        extra = {k: str(v) for k, v in r.items() if k not in ("id", "text", "source") and v not in (None, "")}
        items.append(Item(iid, text, str(r.get("source") or "").strip(), extra))
    if not items:
        raise ValueError("no items")
    return items
