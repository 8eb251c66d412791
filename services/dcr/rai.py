"""RAI, the Reason-Assisted Improver (DCR paper, Eq. 4, Tables 10, 12): rewrites of the inconsistent sentences,
and the candidate they make under the user's choices."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from services.dcr.align import align
from services.dcr.amc import is_template_echo
from services.dcr.config import DCRConfig, user_message
from services.dcr.results import Rewrite, Round
from services.llm import LLMClient
from services.prompts import dcr as P


class RAIItem(BaseModel):
    """Table 10 output item: a sentence, its rewrite and how it changed."""

    sentence: str = ""
    improved_sentence: str
    reason: str = ""


def parse_rai(data: Any) -> list[RAIItem]:
    """The Table 10 array; also accepts it wrapped in an object (JSON-mode servers need one)."""
    if isinstance(data, dict):
        if "improved_sentence" in data:
            data = [data]
        else:
            data = next((v for v in data.values() if isinstance(v, list)), None)
    if not isinstance(data, list):
        raise ValueError("expected a list of rewritten sentences")
    return [RAIItem.model_validate(x) for x in data]


class ParagraphRAIOutput(BaseModel):
    """Table 12 output."""

    sentence: str = ""
    improved_summary: str
    reason: str = ""


def rai_schema(k: int) -> dict:
    item = {
        "type": "object",
        "properties": {
            "sentence": {"type": "string"},
            "improved_sentence": {"type": "string"},
            "reason": {"type": "string"},
        },
        "required": ["sentence", "improved_sentence", "reason"],
    }
    return {"type": "array", "items": item, "minItems": k, "maxItems": k}


def paragraph_rai_schema() -> dict:
    return {
        "type": "object",
        "properties": {
            "sentence": {"type": "string"},
            "improved_summary": {"type": "string"},
            "reason": {"type": "string"},
        },
        "required": ["sentence", "improved_summary", "reason"],
    }


def improve(client: LLMClient, reference: str, rnd: Round, cfg: DCRConfig) -> tuple[list[Rewrite], str | None]:
    """RAI (Eq. 4): rewrites for the inconsistent sentences of a round; consistent ones are kept."""
    ev = rnd.evaluation
    bad = [v for v in ev.sentences if v.verdict == "inconsistent"]
    if not bad:
        return [], None
    if cfg.method == "paragraph":
        unit = ev.sentences[0]
        prompt = P.PARAGRAPH_RAI
        res = client.chat_json(
            user_message(prompt.render(reference=reference, candidate=unit.text, reason=unit.reason or "")),
            parse=ParagraphRAIOutput.model_validate,
            schema=paragraph_rai_schema(),
            prompt_version=prompt.id,
            stage="paragraph-improver",
        )
        if not res.ok:
            return [], res.error
        out: ParagraphRAIOutput = res.value  # type: ignore[assignment]
        if is_template_echo(out.improved_summary):
            return [
                Rewrite(index=0, before=unit.text, after=unit.text, reason="The improver repeated the template.")
            ], None
        return [
            Rewrite(index=0, before=unit.text, after=out.improved_summary.strip() or unit.text, reason=out.reason)
        ], None
    payload = [{"sentence": v.text, "reason": v.reason or ""} for v in ev.sentences]
    res = client.chat_json(
        user_message(P.RAI.render(reference=reference, sentences=json.dumps(payload, ensure_ascii=False, indent=1))),
        parse=parse_rai,
        schema=rai_schema(len(payload)),
        prompt_version=P.RAI.id,
        stage="rai",
    )
    if not res.ok:
        return [], res.error
    items: list[RAIItem] = res.value  # type: ignore[assignment]
    by_sentence, _ = align([it.sentence for it in items], [v.text for v in ev.sentences], [it.reason for it in items])
    rewrites = []
    for v in bad:
        idx = by_sentence[v.index]
        after = items[idx].improved_sentence.strip() if idx is not None else ""
        if after and is_template_echo(after):
            rewrites.append(
                Rewrite(
                    index=v.index, before=v.text, after=v.text, reason="The improver repeated the prompt's template."
                )
            )
        elif not after:
            rewrites.append(
                Rewrite(
                    index=v.index,
                    before=v.text,
                    after=v.text,
                    reason="The improver returned no rewrite for this sentence.",
                )
            )
        else:
            rewrites.append(Rewrite(index=v.index, before=v.text, after=after, reason=items[idx].reason.strip()))  # type: ignore[index]
    return rewrites, None


def apply_rewrites(sentences: list[str], rewrites: Sequence[Rewrite]) -> list[str]:
    """The next round's candidate: each rewrite replaces its sentence (positions are kept)."""
    out = list(sentences)
    for rw in rewrites:
        if rw.accepted and rw.changed:
            out[rw.index] = rw.after
    return out


def compose_final(rounds: Sequence[Round]) -> list[str]:
    """The final text under the user's choices: a sentence follows its chain of accepted rewrites.

    A rejected rewrite freezes its sentence: later rounds' rewrites of it were built on the rejected
    text, so they are not applied either.
    """
    if not rounds:
        return []
    final = list(rounds[0].sentences)
    frozen: set[int] = set()
    for rnd in rounds:
        for rw in rnd.rewrites:
            if rw.index in frozen or not rw.changed:
                continue
            if rw.accepted:
                final[rw.index] = rw.after
            else:
                frozen.add(rw.index)
    return final
