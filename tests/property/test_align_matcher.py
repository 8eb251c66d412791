"""The compiled sentence matcher gives difflib's numbers, so alignments and verdicts stay those of difflib's."""

from __future__ import annotations

import difflib
import importlib
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.text import similarity, split_sentences

align_mod = importlib.import_module("services.dcr.align")  # the module (services.dcr exports a function align)
ROOT = Path(__file__).resolve().parents[2]
QAGS = Path("/work/shared/data/qags_cnndm_mturk.jsonl")


def difflib_similarity(a: str, b: str) -> float:
    """The matcher as it was: difflib's SequenceMatcher on the lower-cased, space-normalised sentences."""
    na, nb = " ".join(a.lower().split()), " ".join(b.lower().split())
    if not na or not nb:
        return 0.0
    return difflib.SequenceMatcher(a=na, b=nb, autojunk=False).ratio()


def _project_texts() -> list[tuple[list[str], list[str]]]:
    """(candidate sentences, reference sentences) from samples/ and, when present, the first QAGS documents."""
    pairs = [
        (split_sentences(s["candidate"]), split_sentences(s["reference"])[:12])
        for s in json.loads((ROOT / "samples" / "samples.json").read_text(encoding="utf-8"))
    ]
    if QAGS.exists():
        with QAGS.open(encoding="utf-8") as f:
            for _, line in zip(range(40), f, strict=False):
                row = json.loads(line)
                cand = [s["sentence"] for s in row["summary_sentences"]]
                pairs.append((cand, split_sentences(row["article"])[:12]))
    return pairs


def _quotes(cand: list[str], ref: list[str], rng: random.Random) -> list[str]:
    """What a judge quotes: a sentence as it is, cut, with words dropped or changed, or a reference sentence."""
    out = []
    for s in cand:
        words = s.split()
        kind = rng.randrange(5)
        if kind == 0:
            out.append(s)
        elif kind == 1:
            out.append(" ".join(words[: max(1, len(words) // 2)]))
        elif kind == 2:
            out.append(" ".join(w for w in words if rng.random() > 0.3))
        elif kind == 3:
            out.append(" ".join(rng.choice(words) if rng.random() < 0.3 else w for w in words))
        else:
            out.append(rng.choice(ref) if ref else "")
    rng.shuffle(out)
    return out


def test_same_ratio_and_same_alignment_on_the_projects_texts(monkeypatch):
    rng = random.Random(0)
    cases = _project_texts()
    assert len(cases) >= 5
    for cand, ref in cases:
        for a in cand:
            for b in cand + ref:
                assert similarity(a, b) == difflib_similarity(a, b)
        quotes = _quotes(cand, ref, rng)
        reasons = [f"The text says {q.split(' ')[0] if q else ''} as a whole." for q in quotes]
        new = align_mod.align(quotes, cand, reasons)
        with monkeypatch.context() as m:
            m.setattr(align_mod, "similarity", difflib_similarity)
            old = align_mod.align(quotes, cand, reasons)
        assert new == old


SENT = st.lists(st.sampled_from("the a council met on tuesday 12 votes budget was not school new".split()), max_size=30)


@settings(max_examples=300, deadline=None)
@given(SENT.map(" ".join), SENT.map(" ".join), st.sampled_from([" ", "  ", "\t", " \n"]))
def test_same_ratio_on_generated_text(a, b, sep):
    b = sep.join(b.split(" ")).upper() if len(b) % 3 == 0 else b
    assert similarity(a, b) == difflib_similarity(a, b)


@settings(max_examples=150, deadline=None)
@given(st.lists(SENT.map(" ".join), min_size=1, max_size=5), st.randoms(use_true_random=False))
def test_same_alignment_on_generated_text(sentences, rng):
    quotes = _quotes(sentences, [], rng)
    new = align_mod.align(quotes, sentences)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(align_mod, "similarity", difflib_similarity)
        assert align_mod.align(quotes, sentences) == new
