"""Hierarchical perturbations of the DHP paper (Tables 1 and 2): degrade good texts on purpose.

The perturbations of a task (their level, method, degree and k) are in its catalogue, services/dhp/catalogue.py.
Rule-based perturbations are pure functions of the text and a `random.Random` seeded from (seed, item id,
perturbation), so the same seed gives the same texts in any process. LLM-based ones send the paper's Auto-CoT
"adjustment" prompt (services/prompts/dhp.py) through the one LLM client at temperature 0; their answers are
cached like every model answer.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, field_validator

from services.dhp.catalogue import Level, Perturbation, TaskSpec
from services.llm import LLMClient
from services.prompts import dhp as prompts
from services.text import join_sentences, split_sentences


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
