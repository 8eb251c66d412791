"""How a summary sentence is built from the reference sentence it retells (the best aligned one): read from the
positions of its words there, without parsing.

resolved: the sentence's subject is missing from the retold sentence and a pronoun stands in its place, right
before the words that follow the subject in the sentence ("She found a police officer" told as "Heidi Bretscher,
28, found a police officer"). Summaries resolve pronouns with a name from elsewhere in the article, which the
overlap features read as a name moved from another sentence (displaced) or missing support.
"""

from __future__ import annotations

from services.dcr.evidence.text import _Text, _unit_key

SLOT = 3  # how many words before the retold predicate stand for its subject
# Before a subject: determiners and sentence-opening conjunctions only ("The gossip columnist", "But Wenger").
_OPENERS = frozenset("the a an this that these those his her their its our my your but and so now yet".split())
_PRONOUNS = frozenset("he she they it we i who".split())


def _subject(sent: _Text) -> tuple[list[str], int] | None:
    """The sentence's subject when only openers precede it: the keys of its first run of adjacent content words
    and names, and the index of the first token after the run that is no number ("Sapp, 42, was")."""
    units = [u for u in sent.units if u.kind != "number"]
    if not units or not all(t.lower in _OPENERS for t in sent.toks[: units[0].first]):
        return None
    run = [units[0]]
    for u in units[1:]:
        if u.first != run[-1].last + 1:
            break
        run.append(u)
    after = run[-1].last + 1
    while after < len(sent.toks) and sent.toks[after].is_num:
        after += 1
    return [_unit_key(u) for u in run], after


def resolved_subject(sent: _Text, retold: _Text) -> float:
    """1 when the sentence's subject is missing from the retold reference sentence and a pronoun stands right
    before the two words that follow the subject in the sentence; 0 otherwise."""
    found = _subject(sent)
    if found is None:
        return 0.0
    keys, after = found
    if any(k in (t.base, "~" + t.stem) for k in keys for t in retold.toks) or after + 1 >= len(sent.toks):
        return 0.0
    a, b = sent.toks[after].stem, sent.toks[after + 1].stem
    toks = retold.toks
    at = next((i for i in range(len(toks) - 1) if toks[i].stem == a and toks[i + 1].stem == b), None)
    if at is None:
        return 0.0
    return float(any(t.lower in _PRONOUNS for t in toks[max(0, at - SLOT) : at]))
