"""The demo workspace's texts, written for this project: short factual paragraphs about invented towns,
people and organisations, and summaries made from them by known rules.

Every reference is one of the paragraph templates below with invented names and numbers drawn from a seeded
generator. Each summary sentence restates facts of its paragraph; a system's summary takes three of them. A
summary left as written is consistent by construction. An error is made by one rule applied to one
sentence: a changed number, a swapped name, or an inserted negation. The sentence changed is known, so each
item carries its label and the sentence that is wrong, and nothing here is a finding about real text.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

PLACES = (
    "Ardley", "Brennmoor", "Calloway", "Dunmere", "Eskvale", "Farrowgate", "Glenholt", "Harwick", "Istrell",
    "Juniper Falls", "Kelmsby", "Lowrie", "Marrowfield", "Northam Cross", "Oakhollow", "Pellmouth", "Quarrington",
    "Redlake", "Saltmere", "Tollbridge", "Upperfold", "Varrow", "Westerby", "Yarnton Vale",
)  # fmt: skip
FIRST = (
    "Ada", "Bram", "Clara", "Dev", "Elin", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Luca", "Mina",
    "Nils", "Olga", "Pavel", "Rosa", "Sami", "Tove", "Umar", "Vera", "Wim", "Yara", "Zeno",
)  # fmt: skip
LAST = (
    "Abernathy", "Brightwell", "Castellan", "Dunstable", "Ellery", "Fairbairn", "Gorrell", "Hollins", "Ibbotson",
    "Jessamy", "Kettering", "Lindqvist", "Marchetti", "Norwood", "Okafor", "Pellegrin", "Quennell", "Rowntree",
    "Stavros", "Thackeray", "Underhill", "Vasquez", "Whitlock", "Yardley",
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")

# A template: the reference paragraph, then the summary sentences, each (affirmative, with a negation).
# Slots: {place}, {person}, {person2} (invented names), {n1}..{n4} (numbers), {day} (a weekday).
TEMPLATES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "The town of {place} opened a new public library on {day}. The building cost {n1} million euros and "
        "took {n2} months to build. It holds about {n3} thousand books and has a reading room with {n4} seats. "
        "The head librarian, {person}, said the library would stay open late on weekdays. The town council paid "
        "for most of the work, and a local charity led by {person2} raised the rest.",
        (
            ("{place} opened a new public library that cost {n1} million euros.",
             "{place} did not open a new public library that cost {n1} million euros."),
            ("The library holds about {n3} thousand books.", "The library does not hold about {n3} thousand books."),
            ("It took {n2} months to build.", "It did not take {n2} months to build."),
            ("Head librarian {person} said it would stay open late on weekdays.",
             "Head librarian {person} said it would not stay open late on weekdays."),
            ("Its reading room has {n4} seats.", "Its reading room does not have {n4} seats."),
        ),
    ),
    (
        "A footbridge over the river in {place} reopened on {day} after repairs. Engineers replaced {n1} steel "
        "cables and repainted the whole span. The work cost {n2} thousand euros, less than the council had "
        "planned. About {n3} people cross the bridge every day, most of them on their way to the station. "
        "{person}, who led the repairs, said the bridge should last another {n4} years.",
        (
            ("The footbridge in {place} reopened after repairs.",
             "The footbridge in {place} did not reopen after repairs."),
            ("Engineers replaced {n1} steel cables.", "Engineers did not replace {n1} steel cables."),
            ("The repairs cost {n2} thousand euros.", "The repairs did not cost {n2} thousand euros."),
            ("About {n3} people cross it every day.", "About {n3} people do not cross it every day."),
            ("{person} said the bridge should last another {n4} years.",
             "{person} said the bridge should not last another {n4} years."),
        ),
    ),
    (
        "The {place} choir won first prize at the regional festival on {day}. The choir has {n1} members, the "
        "youngest of them {n2} years old. They sang four songs, two of them written by their conductor, {person}. "
        "The prize comes with {n4} hundred euros, which the choir will spend on a trip. It was the choir's "
        "first win since {person2} founded it.",
        (
            ("The {place} choir won first prize at the regional festival.",
             "The {place} choir did not win first prize at the regional festival."),
            ("The choir has {n1} members.", "The choir does not have {n1} members."),
            ("Its conductor, {person}, wrote two of the songs.",
             "Its conductor, {person}, did not write two of the songs."),
            ("The prize comes with {n4} hundred euros.", "The prize does not come with {n4} hundred euros."),
            ("It was the choir's first win since {person2} founded it.",
             "It was not the choir's first win since {person2} founded it."),
        ),
    ),
    (
        "A bakery in {place} has been named the best in the county. It was opened {n1} years ago by {person}, who "
        "still starts work before dawn. The bakery sells about {n3} loaves a day and employs {n4} "
        "people. The judges praised its rye bread and its apple cake. {person2}, the owner's nephew, now runs the "
        "shop on weekends.",
        (
            ("A bakery in {place} was named the best in the county.",
             "A bakery in {place} was not named the best in the county."),
            ("{person} opened it {n1} years ago.", "{person} did not open it {n1} years ago."),
            ("It sells about {n3} loaves a day.", "It does not sell about {n3} loaves a day."),
            ("The bakery employs {n4} people.", "The bakery does not employ {n4} people."),
            ("The judges praised its rye bread.", "The judges did not praise its rye bread."),
        ),
    ),
    (
        "The primary school in {place} planted {n1} trees around its playground on {day}. Each of the school's "
        "{n2} pupils helped to plant at least one. The trees were given by a nursery run by {person}. The head "
        "teacher, {person2}, said the trees would give shade within a few years. The school plans to add a "
        "vegetable garden next spring at a cost of {n4} hundred euros.",
        (
            ("The school in {place} planted {n1} trees around its playground.",
             "The school in {place} did not plant {n1} trees around its playground."),
            ("Each of its {n2} pupils helped to plant one.", "Each of its {n2} pupils did not help to plant one."),
            ("The trees came from a nursery run by {person}.",
             "The trees did not come from a nursery run by {person}."),
            ("Head teacher {person2} said they would give shade within a few years.",
             "Head teacher {person2} said they would not give shade within a few years."),
            ("A vegetable garden is planned for next spring.", "A vegetable garden is not planned for next spring."),
        ),
    ),
    (
        "A new bus line links {place} with the nearest city from {day}. Buses run every {n1} minutes in the "
        "morning and every {n2} minutes in the afternoon. The trip takes {n4} minutes, about half the time of the "
        "old route, and the line carried {n3} passengers on its first day. The company bought {n1} electric "
        "buses for the line. {person}, who speaks for the company, "
        "said tickets would cost the same as before.",
        (
            ("A new bus line links {place} with the nearest city.",
             "A new bus line does not link {place} with the nearest city."),
            ("Buses run every {n1} minutes in the morning.", "Buses do not run every {n1} minutes in the morning."),
            ("The trip takes {n4} minutes.", "The trip does not take {n4} minutes."),
            ("The line carried {n3} passengers on its first day.",
             "The line did not carry {n3} passengers on its first day."),
            ("{person} said tickets would cost the same as before.",
             "{person} said tickets would not cost the same as before."),
        ),
    ),
    (
        "The swimming pool in {place} will close for {n1} weeks from {day} for repairs. Workers will replace the "
        "heating and retile the main pool. The repairs will cost {n2} thousand euros. While the pool is closed, "
        "the {n3} members of the swimming club will train in a neighbouring town. {person}, the pool's manager, "
        "said about {n4} hundred people use the pool each week.",
        (
            ("The pool in {place} will close for {n1} weeks for repairs.",
             "The pool in {place} will not close for {n1} weeks for repairs."),
            ("Workers will replace the heating.", "Workers will not replace the heating."),
            ("The repairs will cost {n2} thousand euros.", "The repairs will not cost {n2} thousand euros."),
            ("The club's {n3} members will train in a neighbouring town.",
             "The club's {n3} members will not train in a neighbouring town."),
            ("Manager {person} said about {n4} hundred people use it each week.",
             "Manager {person} said about {n4} hundred people do not use it each week."),
        ),
    ),
    (
        "Volunteers in {place} counted {n1} species of birds in the town park over one weekend. The count was "
        "organised by {person}, a retired teacher. The {n2} volunteers walked the park at dawn on {day} and on the "
        "next day. The most common bird was the sparrow, seen {n3} times. {person2} of the county nature society "
        "said it was the highest count in {n4} years.",
        (
            ("Volunteers in {place} counted {n1} species of birds in the park.",
             "Volunteers in {place} did not count {n1} species of birds in the park."),
            ("{person} organised the count.", "{person} did not organise the count."),
            ("{n2} volunteers took part.", "{n2} volunteers did not take part."),
            ("Sparrows were seen {n3} times.", "Sparrows were not seen {n3} times."),
            ("{person2} said it was the highest count in {n4} years.",
             "{person2} said it was not the highest count in {n4} years."),
        ),
    ),
)  # fmt: skip


@dataclass(frozen=True)
class Made:
    """One summary as made: its text, its sentences, its label (1 consistent) and the rule that made it."""

    text: str
    sentences: tuple[str, ...]
    label: int
    rule: str  # "" (left as written), "number", "name" or "negation"
    wrong: str | None  # the sentence the rule changed


@dataclass(frozen=True)
class Reference:
    """One invented paragraph and the facts its summaries restate."""

    text: str
    template: int
    slots: dict[str, str]


SYSTEMS = {"system-A": 0.15, "system-B": 0.35, "system-C": 0.6}  # how often each system's summary is wrong
RULES = ("number", "name", "negation")


def _person(rng: random.Random, taken: set[str]) -> str:
    while True:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if name not in taken:
            taken.add(name)
            return name


def reference(i: int, rng: random.Random) -> Reference:
    """The i-th invented paragraph (template i mod the templates, names and numbers from `rng`)."""
    t = i % len(TEMPLATES)
    taken: set[str] = set()
    slots = {
        "place": PLACES[(i * 7 + t) % len(PLACES)],
        "person": _person(rng, taken),
        "person2": _person(rng, taken),
        "day": rng.choice(WEEKDAYS),
        "n1": str(rng.randint(3, 19)),
        "n2": str(rng.randint(20, 60)),
        "n3": str(rng.randint(61, 400)),
        "n4": str(rng.randint(5, 40)),
    }
    if slots["n4"] in (slots["n1"],):
        slots["n4"] = str(int(slots["n4"]) + 20)
    return Reference(TEMPLATES[t][0].format(**slots), t, slots)


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def _rules_for(template: str) -> list[str]:
    fields = _fields(template)
    rules = ["negation"]
    if any(f.startswith("n") and f[1:].isdigit() for f in fields):
        rules.append("number")
    if "person" in fields or "person2" in fields:
        rules.append("name")
    return rules


def _changed(template: str, slots: dict[str, str], rule: str, rng: random.Random) -> dict[str, str]:
    """The slots with one fact changed by `rule`: a number no sentence of the paragraph gives, or a person's name
    swapped for one the paragraph does not name."""
    out = dict(slots)
    fields = _fields(template)
    if rule == "number":
        key = rng.choice([f for f in fields if f.startswith("n") and f[1:].isdigit()])
        used = {v for k, v in slots.items() if k.startswith("n")}
        value = int(slots[key])
        while str(value) in used:
            value += rng.choice((2, 3, 5, 10))
        out[key] = str(value)
    elif rule == "name":
        key = rng.choice([f for f in fields if f in ("person", "person2")])
        out[key] = _person(rng, {slots["person"], slots["person2"]})
    return out


def summary(ref: Reference, rng: random.Random, error_rate: float) -> Made:
    """Three of the paragraph's summary sentences, in order; with probability `error_rate` one of them is
    changed by a rule (a changed number, a swapped name or an inserted negation)."""
    pairs = TEMPLATES[ref.template][1]
    picked = sorted(rng.sample(range(len(pairs)), 3))
    sentences = [pairs[j][0].format(**ref.slots) for j in picked]
    if rng.random() >= error_rate:
        return Made(" ".join(sentences), tuple(sentences), 1, "", None)
    rule = rng.choice(RULES)
    fits = [i for i in range(3) if rule in _rules_for(pairs[picked[i]][0])]
    if not fits:  # no number or name among these sentences: a negation fits every one
        rule, fits = "negation", [0, 1, 2]
    which = rng.choice(fits)
    affirmative, negated = pairs[picked[which]]
    if rule == "negation":
        wrong = negated.format(**ref.slots)
    else:
        wrong = affirmative.format(**_changed(affirmative, ref.slots, rule, rng))
    sentences[which] = wrong
    return Made(" ".join(sentences), tuple(sentences), 0, rule, wrong)


@dataclass(frozen=True)
class Row:
    """One item of the demo dataset."""

    id: str
    system: str
    reference: str
    made: Made


def dataset_rows(n_refs: int, *, seed: int = 0) -> list[Row]:
    """Each system's summary of each of `n_refs` invented paragraphs (seeded: the same rows every time)."""
    rng = random.Random(seed)
    refs = [reference(i, rng) for i in range(n_refs)]
    rows: list[Row] = []
    for system, rate in SYSTEMS.items():
        srng = random.Random(f"{seed}-{system}")
        rows += [Row(f"{system}-{i:03d}", system, r.text, summary(r, srng, rate)) for i, r in enumerate(refs)]
    return rows


def faithful(n: int, *, seed: int = 0) -> list[tuple[str, str, str]]:
    """(id, summary, paragraph) of `n` paragraphs, each summary left as written: good texts for DHP to degrade."""
    rng = random.Random(f"{seed}-faithful")
    out = []
    for i in range(n):
        ref = reference(1000 + i, rng)
        out.append((f"text-{i:02d}", summary(ref, rng, 0.0).text, ref.text))
    return out
