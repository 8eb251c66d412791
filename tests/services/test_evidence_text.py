"""The evidence checker's reading of text, against the definitions it replaced: the Porter stemmer loaded
without nltk's package stems as nltk's does, and each unit's overlap key is the one its keys give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from services.dcr.evidence import text
from tests.support.qags import QAGS_FILE

ROOT = Path(__file__).resolve().parents[2]

# Numbers with scales and ordinals, dates, names, acronyms, possessives, plurals, negation, hyphens.
TEXT = (
    "On Tuesday, 3 March 2015, the U.S. Senate's committee didn't approve $4.5 million for the 1990s' programmes. "
    "Mr. Obama's advisers said twenty-one cities, including New York and Leeds, would receive the second "
    "payments by July; none of the councils was fined. The ponies, the buses and the churches were generously "
    "relocated; nationalisation and conditional organizational studies are dying, said Dr. Smith-Jones."
)


def corpus() -> list[str]:
    texts = [TEXT]
    if QAGS_FILE.is_file():  # the project's data where it is present (never committed)
        rows = [json.loads(line) for line in QAGS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
        texts += [r["article"] for r in rows] + [s["sentence"] for r in rows for s in r.get("summary_sentences", [])]
    return texts


# A fresh interpreter: the stemmer loads first, then nltk's own package, and both stem every word.
STEMS = """
import json, sys
from services.dcr.evidence import text
stemmer = text._stemmer()
spared = "nltk" not in sys.modules and "scipy" not in sys.modules
from nltk.stem.porter import PorterStemmer  # the real package, imported after the stand-ins left
words = json.loads(sys.stdin.read())
nltks = PorterStemmer()
print(json.dumps({"spared": spared, "ours": [stemmer.stem(w) for w in words], "nltk": [nltks.stem(w) for w in words],
                  "real_package": hasattr(sys.modules["nltk"], "__version__")}))
"""


def test_the_stemmer_loaded_without_nltks_package_stems_every_word_as_nltks_own():
    words = sorted({t.base for doc in corpus() for t in text._tokens(doc) if not t.is_num})
    assert len(words) > 40
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", STEMS], input=json.dumps(words), cwd=ROOT, env=env, capture_output=True, text=True
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["spared"], "loading the stemmer imported nltk's package (or scipy)"
    assert out["real_package"], "a later `import nltk` must get the real package, not a stand-in"
    differ = [(w, a, b) for w, a, b in zip(words, out["ours"], out["nltk"], strict=True) if a != b]
    assert not differ, differ[:10]


def _key_as_before(u: text._Unit) -> str:
    """The key as `_unit_key` worked it out from the unit's keys before units carried it."""
    if u.kind == "word":
        for k in u.keys:
            if k.startswith("~"):
                return k
    return min(u.keys)


def test_each_units_key_is_the_one_its_kind_and_keys_give():
    units = [u for doc in corpus() for u in text._units(doc)]
    assert {u.kind for u in units} == {"number", "name", "word"}
    wrong = [u for u in units if text._unit_key(u) != _key_as_before(u)]
    assert not wrong, wrong[:5]
