"""Prompts render in one pass: no user text is ever treated as a placeholder."""

from __future__ import annotations

import pytest

from services.prompts import conseval, dcr, dhp, distill, nli
from services.prompts.base import Prompt, render_template


def test_a_value_that_contains_another_placeholder_stays_literal():
    p = Prompt("t", "1", "test", "Article\n{reference}\nSummary\n{candidate}")
    out = p.render(reference="He wrote {candidate} on the wall.", candidate="It says {reference}.")
    assert out == "Article\nHe wrote {candidate} on the wall.\nSummary\nIt says {reference}."


def test_json_braces_and_unknown_keys_in_the_template_are_left_alone():
    out = render_template('{"reason": [{"sentence": "x"}]} {source text} {missing}', {"source text": "S"})
    assert out == '{"reason": [{"sentence": "x"}]} S {missing}'


ALL_PROMPTS = [
    v for m in (conseval, dcr, dhp, distill, nli) for v in vars(m).values() if isinstance(v, Prompt)
]  # every prompt module's prompts


@pytest.mark.parametrize("prompt", ALL_PROMPTS, ids=lambda p: p.id)
def test_every_prompt_keeps_user_text_verbatim(prompt):
    import re

    keys = set(re.findall(r"\{([A-Za-z][A-Za-z -]*)\}", prompt.template))
    tricky = {k: f"<{k}: {{{next(iter(keys - {k}), k)}}} {{candidate}} {{response}}>" for k in keys}
    out = prompt.render(**tricky)
    for value in tricky.values():
        assert value in out
