"""Reading the paradigms' replies (paper 003, Figures 4-7): the JSON schemas asked for and strict parsers; a reply
that skips the judgement, gives no questions or judges one question twice raises, and no verdict is guessed."""

from __future__ import annotations

from typing import Any, Literal

Label = Literal["consistent", "inconsistent"]

JUDGEMENT_SCHEMA = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string"},
        "judgement": {"type": "string", "enum": ["Consistent", "Inconsistent"]},
    },
    "required": ["reasoning", "judgement"],
}
QG_SCHEMA = {
    "type": "object",
    "properties": {
        "entities": {"type": "array", "items": {"type": "string"}},
        "pairs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
                "required": ["question", "answer"],
            },
        },
    },
    "required": ["pairs"],
}
QA_SCHEMA = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "answer": {"type": "string"},
                    "reasoning": {"type": "string"},
                    "judgement": {"type": "string", "enum": ["Consistent", "Inconsistent"]},
                },
                "required": ["reasoning", "judgement"],
            },
        }
    },
    "required": ["results"],
}


def parse_judgement(value: Any) -> Label:
    """The judgement field, read strictly: "Consistent" or "Inconsistent" (any case), nothing else."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError("no Judgement given")
    if not isinstance(value, str):
        raise ValueError(f"Judgement is not a word: {value!r}")
    word = value.strip().lower()
    if word not in ("consistent", "inconsistent"):
        raise ValueError(f"Judgement must be Consistent or Inconsistent, not {value!r}")
    return word  # type: ignore[return-value]


def _reasoning(data: dict) -> str:
    value = data.get("reasoning")
    if value is None:
        value = data.get("reasoning process", data.get("reasoning_process", ""))
    return value if isinstance(value, str) else str(value)


def parse_nli(data: Any) -> tuple[Label, str]:
    """A Figure 4/5 answer as (label, reasoning); raises when the Judgement is missing or unreadable."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object with reasoning and judgement")
    return parse_judgement(data.get("judgement", data.get("Judgement"))), _reasoning(data)


SCORE_SCHEMA = {
    "type": "object",
    "properties": {"reasoning": {"type": "string"}, "score": {"type": "number"}},
    "required": ["reasoning", "score"],
}


def parse_nli_score(data: Any, low: float, high: float) -> tuple[float, str]:
    """A score-mode Summ-NLI answer as (score, reasoning); raises when the score is missing or outside [low, high]."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object with reasoning and score")
    value = data.get("score", data.get("Score"))
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"Score is not a number: {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("no Score given" if value is None else f"Score is not a number: {value!r}")
    if not low <= float(value) <= high:
        raise ValueError(f"Score {value} is outside {low:g}-{high:g}")
    return float(value), _reasoning(data)


def parse_qg(data: Any) -> list[tuple[str, str]]:
    """Figure 6 (question, answer) pairs; raises when there are none or one is incomplete."""
    if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
        raise ValueError("expected a JSON object with a list of pairs")
    out: list[tuple[str, str]] = []
    for item in data["pairs"]:
        if not isinstance(item, dict):
            raise ValueError("each pair must be an object with question and answer")
        q, a = item.get("question"), item.get("answer")
        if not isinstance(q, str) or not q.strip() or not isinstance(a, str) or not a.strip():
            raise ValueError("a pair lacks its question or its answer")
        out.append((q.strip(), a.strip()))
    if not out:
        raise ValueError("no questions generated")
    return out


def parse_qa_window(data: Any, n: int) -> list[tuple[Label, str, str | None]]:
    """A Figure 7 reply to a window's n question-answer pairs, in order: exactly one judgement per pair."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError("expected a JSON object with a list of results")
    results = data["results"]
    if len(results) != n:
        raise ValueError(f"{n} question(s) were asked, {len(results)} judgement(s) given")
    out = []
    for item in results:
        if not isinstance(item, dict):
            raise ValueError("each result must be an object")
        answer = item.get("answer")
        restated = answer if isinstance(answer, str) else None
        out.append((parse_judgement(item.get("judgement")), _reasoning(item), restated))
    return out


def qa_pairs_text(pairs: list[tuple[str, str]]) -> str:
    """Figure 7's pair list: "Q1: ... A1: ..." one pair a line."""
    return "\n\n".join(f"Q{i}: {q} A{i}: {a}" for i, (q, a) in enumerate(pairs, 1))


def parse_qa(data: Any) -> tuple[Label, str, str | None]:
    """A Figure 7 reply to one question as (label, reasoning, restated answer); exactly one judgement."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError("expected a JSON object with a list of results")
    results = data["results"]
    if not results:
        raise ValueError("the question was not answered")
    if len(results) > 1:
        raise ValueError(f"one question was asked, {len(results)} judgements given")
    item = results[0]
    if not isinstance(item, dict):
        raise ValueError("the result must be an object")
    answer = item.get("answer")
    return parse_judgement(item.get("judgement")), _reasoning(item), answer if isinstance(answer, str) else None
