"""The task catalogue of the DHP paper (Tables 1 and 2): the perturbation kinds, the tasks and their metrics.

Each perturbation has a level (character, word, sentence), a method (rule-based or LLM-based) and, where
Table 2 gives one, a degree (minor or major) with its k. The built-in tasks carry Table 1's metrics (Appendix A
definitions) and Table 2's perturbations; `custom_task` builds a user-added one. The operations that apply the
perturbations live in services/dhp/perturb.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

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
