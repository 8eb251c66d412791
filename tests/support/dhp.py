"""A fake DHP evaluator and the summaries it judges."""

from __future__ import annotations

import re

from services.dhp.perturb import Item
from tests.fakes import last_user


def rated_text(content: str, label: str = "Summary") -> str:
    """The text an Appendix E rating prompt asks about: after its label, before the "Evaluation Score" line."""
    return re.search(rf"{label}:\n\n(.*)\n\nEvaluation Score \(", content, re.S).group(1)


def judge_fluency_only(originals: set[str]):
    """A fake evaluator that notices damage only on Fluency: 5 for an original, 2 for anything else."""

    def respond(body: dict) -> dict:
        content = last_user(body)
        text = rated_text(content)
        metric = re.search(r"Evaluation Criterion: (\w+)", content).group(1)
        if metric != "Fluency":
            return "4"
        return "5" if text in originals else "Fluency: 2"

    return respond


def council_items(n: int) -> list[Item]:
    """n short summaries of council meetings, each with its own numbers and article."""
    return [
        Item(
            f"s{i}",
            f"The council met on day {i} in Leeds. It approved {40 + i} million pounds. Work starts soon.",
            f"article {i}",
        )
        for i in range(n)
    ]
