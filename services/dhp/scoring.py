"""DHP scoring: an evaluator rates a text on one metric from 1 to 5, r times (the paper's prompt, or JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, field_validator

from services.dhp.catalogue import TaskSpec
from services.llm import LLMClient
from services.prompts import dhp as prompts


class Rating(BaseModel):
    score: float

    @field_validator("score")
    @classmethod
    def _in_range(cls, v: float) -> float:
        if not 1 <= v <= 5:
            raise ValueError(f"score {v} is not between 1 and 5")
        return float(v)


def _parse_rating(data: Any) -> Rating:
    if isinstance(data, int | float):
        data = {"score": data}
    return Rating.model_validate(data)


ANSWER_FORMATS = prompts.ANSWER_FORMATS
LEGACY_FORMAT = prompts.STRUCTURED  # runs and sets recorded before the format was a choice asked for JSON


def answer_format_of(params: Mapping[str, Any]) -> str:
    """The answer format a run or set recorded (plain unless it asked for JSON)."""
    return str(params.get("answer_format") or LEGACY_FORMAT)


def eval_prompts(task: TaskSpec, answer_format: str = "plain") -> dict[str, prompts.Prompt]:
    """The rating prompt of each metric of a task."""
    structured = answer_format == prompts.STRUCTURED
    return {
        m.name: prompts.evaluation_prompt(
            task.key, task.text_label, task.source_label, m.name, m.definition, structured=structured
        )
        for m in task.metrics
    }


def read_score(raw: str) -> tuple[float | None, str | None]:
    """A plain reply read as a score from 1 to 5 (ConsEval's reader: one number on the scale, else why not)."""
    from services.conseval import SCALES, parse_score

    parsed = parse_score(raw, SCALES["5-P"])
    return parsed.value, None if parsed.value is not None else f"{parsed.problem}: {raw.strip()[:120]!r}"


def score_text(
    client: LLMClient,
    prompt: prompts.Prompt,
    text: str,
    source: str,
    *,
    repeats: int,
    seed: int = 0,
    answer_format: str = "plain",
) -> tuple[list[float], str | None]:
    """Rate one text `repeats` times (distinct samples, each cached); returns (scores, first error).

    Plain (the paper's prompt): the reply is read once as written; structured: JSON, asked again once if unread."""
    content = prompt.render(source=source or "(none)", text=text)
    messages = [{"role": "user", "content": content}]
    scores: list[float] = []
    error = None
    for r in range(repeats):
        common = dict(prompt_version=prompt.id, stage="dhp-score", sample_index=seed * 1000 + r)
        if answer_format == prompts.STRUCTURED:
            res = client.chat_json(messages, parse=_parse_rating, schema=Rating.model_json_schema(), **common)
            value, problem = (res.value.score, None) if res.ok else (None, res.error)  # type: ignore[union-attr]
        else:
            res = client.chat_text(messages, **common)
            value, problem = read_score(res.value) if res.ok else (None, res.error)  # type: ignore[arg-type]
        if value is not None:
            scores.append(value)
        else:
            error = error or problem
            if res.fatal:
                break
    return scores, error
