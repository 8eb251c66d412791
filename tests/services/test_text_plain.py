"""split_sentences gives the sentences pysbd gives, on generated text and on the data: its plain-prose path,
which does not run pysbd, and pysbd with the abbreviations that cannot change a line skipped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pysbd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pysbd.lang.english import English

from services import text as T
from services.text import split_sentences

ROOT = Path(__file__).resolve().parents[2]
QAGS_FILE = ROOT.parent.parent / "shared" / "data" / "qags_cnndm_mturk.jsonl"
if not QAGS_FILE.is_file():
    QAGS_FILE = Path("/work/shared/data/qags_cnndm_mturk.jsonl")


PYSBD = pysbd.Segmenter(language="en", clean=False)  # pysbd itself, none of its passes skipped


def pysbd_split(text: str) -> list[str]:
    """split_sentences as it was: pysbd on every paragraph."""
    text = (text or "").strip()
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text) if text else []:
        para = " ".join(para.split())
        if para:
            out.extend(s.strip() for s in PYSBD.segment(para) if s.strip())
    return [s for s in out if re.search(r"\w", s)]


# Words that come near each rule the plain path must respect: pysbd's abbreviations in several cases, the
# patterns its dotted abbreviations match ("d phil", "eng" for "e.g"), roman numerals, single letters and
# initials, "Co. KG", numbers, words with apostrophes and dashes, and ordinary words.
ABBREVIATIONS = [a.strip() for a in English.Abbreviation.ABBREVIATIONS]
WORDS = sorted(
    {a for a in ABBREVIATIONS if a.isalpha()}
    | {a.capitalize() for a in ABBREVIATIONS if a.isalpha()}
    | {a.upper() for a in ABBREVIATIONS if a.isalpha()}
    | {"d phil", "dr phil", "Dr philos", "eng", "egg", "ice", "ups", "use", "phid", "e g", "i e", "u s"}
    | {"i", "ii", "iv", "v", "x", "xi", "mix", "civil", "vi", "I", "A", "a", "b", "J", "K"}
    | {"Co", "KG", "Taco", "Inc", "Ltd", "am", "pm", "AM", "PM", "US", "UK", "EU"}
    | {"1", "12", "2020", "3,5", "100%", "5pm", "v2", "jpg", "pdf"}
    | {"it's", "dogs'", "'tis", "don't", "well-known", "-", "--", "x-no", "d'phil"}
    | {"the", "The", "council", "met", "He", "She", "said", "However", "In", "It", "There", "When"}
    | {"a,", "b;", "c:", "note,", "rate:", "then;"}
)
ENDS = [".", ". ", "", " ", "!", "?", "...", ".'", '."', ")"]


@st.composite
def paragraphs(draw: st.DrawFn) -> str:
    """Sentences of chosen words, each ended by a period (mostly) or another mark, joined by a space."""
    sentences = []
    for _ in range(draw(st.integers(1, 5))):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
        if draw(st.booleans()):
            words[0] = words[0].capitalize()
        end = draw(st.sampled_from(ENDS)) if draw(st.integers(0, 4)) == 0 else "."
        sentences.append(" ".join(words) + end)
    return " ".join(sentences)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paragraphs())
def test_the_plain_path_splits_as_pysbd_on_generated_sentences(text):
    assert split_sentences(text) == pysbd_split(text)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="abnopvAB IiDr.,;:%'-0\n()!?\"\u017fK", max_size=60))
def test_the_plain_path_splits_as_pysbd_on_any_text_of_its_characters(text):
    assert split_sentences(text) == pysbd_split(text)


def test_the_generated_sentences_take_the_plain_path_often():
    # the property above is only worth something if the plain path is taken: plain sentences are most of them
    plain = [T._is_plain(p) for p in ["Ab cd. Ef gh.", "The council met. It said no.", "He is Dr. Lee."]]
    assert plain == [True, False, False]


@pytest.mark.parametrize(
    "text",
    [
        "The firm is TaCo. KG buys it.",  # pysbd: "Co. KG" is one company name, whatever precedes "Co"
        "He -- said it. Then -- it ends.",  # pysbd keeps what lies between two dashes in one sentence
        "It is 'ab. Cd' Ef gh.",  # and what lies between quotes
        "He said 'ab cd. Ef gh' Ij kl.",
        "We met at 12. Then left.",
        "He met Gen. Lee there.",
        "It cost no. Then it rose.",
        "Part v. It ends.",
        "We met at 5. Then left.",
        "The end.. Next one.",
        "Fine. and then.",
    ],
)
def test_the_cases_pysbd_splits_otherwise_are_split_as_pysbd_does(text):
    assert split_sentences(text) == pysbd_split(text)


def _data_texts() -> list[str]:
    texts: list[str] = []
    if QAGS_FILE.is_file():
        with QAGS_FILE.open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                texts.append(row["article"])
                texts.append(" ".join(s["sentence"] for s in row["summary_sentences"]))
    for name in ("samples.json", "conseval.json", "dhp.json"):
        data = json.loads((ROOT / "samples" / name).read_text(encoding="utf-8"))
        texts.extend(v for v in _strings(data) if len(v) > 20)
    return texts


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_the_plain_path_splits_as_pysbd_on_the_project_data():
    texts = _data_texts()
    assert len(texts) > 400
    plain = 0
    for text in texts:
        assert split_sentences(text) == pysbd_split(text), text[:200]
        for para in re.split(r"\n\s*\n", text.strip()):
            para = " ".join(para.split())
            if para and T._is_plain(para):
                plain += 1
                assert T._plain_sentences(para) == [s.strip() for s in PYSBD.segment(para) if s.strip()]
    assert plain > 50  # the data does take the plain path (its summaries' sentences, short paragraphs)
