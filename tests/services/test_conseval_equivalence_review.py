"""ConsEval results that once passed for "cannot change": the order units are bootstrapped in, the names and
order of imported oracles, and the seed of dICL's example draw."""

from __future__ import annotations

import dataclasses
import hashlib
import random

import numpy as np
import pandas as pd

from services.conseval.analysis import compute_rows
from services.conseval.run import _Ctx, _examples
from services.conseval.study import GREEDY, IMPORTED, ORACLE_RATER, Call
from services.conseval.tables import model_method_matrix, results_frame
from tests.conformance.test_formulas_conseval import _cfg, _ctx, _rating

# Eight items: the greedy answer, three samples on 5-P and the same on 5-P Likert (a little off), two humans.
GREEDY_5P = [1, 2, 2, 3, 4, 4, 5, 5]
SAMPLES_5P = [[1, 2, 1], [2, 2, 3], [3, 2, 2], [3, 4, 3], [4, 5, 4], [3, 4, 5], [5, 5, 4], [4, 5, 5]]
LIKERT_SHIFT = [0, 1, 0, -1, 0, 1, 0, -1]
HUMANS = {"h1": [1, 2, 3, 3, 4, 5, 5, 4], "h2": [2, 2, 2, 4, 4, 4, 5, 5]}


def _study(ids: list[int]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Items (idx i has id ids[i]), a model's answers and human ratings, the same whatever the ids are."""
    items = pd.DataFrame(
        [
            {
                "id": item_id,
                "study_id": 1,
                "idx": i,
                "criterion": "Harmlessness",
                "query": f"q{i}",
                "response": f"r{i}",
                "source_id": "",
                "oracle_score": float(GREEDY_5P[i]),
                "oracle_scale": "5-P",
            }
            for i, item_id in enumerate(ids)
        ]
    )
    rows = []
    for i, item_id in enumerate(ids):
        for sk, shift in (("5-P", 0), ("5-P Likert", LIKERT_SHIFT[i])):
            clip = lambda v, s=shift: float(min(5, max(1, v + s)))  # noqa: E731
            rows.append(_rating(item_id, sk, GREEDY, clip(GREEDY_5P[i])))
            rows += [_rating(item_id, sk, s, clip(v)) for s, v in enumerate(SAMPLES_5P[i])]
    humans = pd.DataFrame(
        [
            {"rater_id": r, "rater": name, "item_id": item_id, "scale": "5-P", "value": float(values[i])}
            for r, (name, values) in enumerate(HUMANS.items())
            for i, item_id in enumerate(ids)
        ]
    )
    return items, pd.DataFrame(rows), humans


def _by_key(rows: list[dict]) -> dict[tuple, dict]:
    keys = ("kind", "model", "method", "granularity", "scale", "mode", "oracle")
    return {tuple(r.get(k) for k in keys): r for r in rows}


def test_intervals_do_not_depend_on_the_ids_the_database_gave_the_items():
    """The bootstrap resamples units with the study's seed; the units are the items in the study's order (idx),
    so the same study saved with other ids (another database, items inserted in another order) gets the same
    intervals, for SC, GS, IC (greedy and SCE), accuracy and the human rows alike."""
    cfg = _cfg(scales=["5-P", "5-P Likert"], n_boot=200, seed=3, oracle="imported")
    ascending = compute_rows(cfg, *_study([10 + i for i in range(8)]))
    descending = compute_rows(cfg, *_study([30 - i for i in range(8)]))
    a, d = _by_key(ascending), _by_key(descending)
    assert a.keys() == d.keys()
    # The IC of the sampled answers resamples (item, sample) units, ordered by id: left out here.
    compared = [k for k in a if k[5] != "sampled" or k[0] == "SC"]
    kinds = {k[0] for k in compared}
    assert {"SC", "GS", "IC2", "ACC", "HUMAN", "HUMAN-MODEL"} <= kinds
    for k in compared:
        assert a[k]["ci_low"] is not None, k  # every compared row has an interval to compare
        assert (a[k]["value"], a[k]["n"]) == (d[k]["value"], d[k]["n"]), k
        assert (a[k]["ci_low"], a[k]["ci_high"]) == (d[k]["ci_low"], d[k]["ci_high"]), k


def _with_more_oracles(names: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The study above with further imported oracles (columns `score:NAME`), saved in the order given."""
    items, ratings, humans = _study([10 + i for i in range(8)])
    more = [
        {**_rating(10 + i, "5-P", GREEDY, float(v)), "rater": f"{ORACLE_RATER}:{name}", "method": IMPORTED}
        | {"granularity": "-"}
        for name, shift in zip(names, (0, 1, -1), strict=False)
        for i, v in enumerate(np.clip(np.array(GREEDY_5P) + shift, 1, 5))
    ]
    return items, pd.concat([ratings, pd.DataFrame(more)], ignore_index=True), humans


def test_an_imported_oracle_keeps_its_whole_name_colons_included():
    """A column `score:llama3:8b` names the oracle `llama3:8b` (model names with a colon are common): the rows
    and Table 5's column headers say that name, not a piece of it."""
    rows = compute_rows(_cfg(oracle="imported"), *_with_more_oracles(["llama3:8b"]))
    assert {r["oracle"] for r in rows if r["kind"] == "ACC"} == {"imported", "llama3:8b"}
    table = model_method_matrix(results_frame({"rows": rows}), "Harmlessness")
    assert "Accuracy r vs llama3:8b (5-P)" in table.columns


def test_table_5_lists_the_further_oracles_in_name_order_whatever_order_they_were_saved_in():
    """Table 5's accuracy columns: the imported score first, then the further oracles by name, so two studies
    with the same oracles show the same columns."""
    want = ["imported", "alpha", "mid", "zeta"]
    for saved in (["zeta", "alpha", "mid"], ["mid", "zeta", "alpha"]):
        rows = compute_rows(_cfg(oracle="imported"), *_with_more_oracles(saved))
        table = model_method_matrix(results_frame({"rows": rows}), "Harmlessness")
        acc = [c.removeprefix("Accuracy r vs ").removesuffix(" (5-P)") for c in table.columns if c.startswith("Acc")]
        assert acc == want


def test_the_studys_seed_decides_which_examples_dicl_shows():
    """Seeds are explicit: another study seed draws other examples for the same call (not one fixed draw)."""
    pool = [{"item_id": i, "scale": "5-P", "value": float(i), "granularity": None} for i in range(1, 5)]
    ctx = _ctx(pool, k=2)
    call = Call(0, "judge", "dicl_r", "short", "5-P", GREEDY)
    draws = set()
    for seed in range(8):
        seeded = _Ctx(cfg=dataclasses.replace(ctx.cfg, seed=seed), items=ctx.items, oracle_pool=pool)
        draws.add(tuple(e["query"] for e in _examples(seeded, call)))
    assert len(draws) > 1


def test_the_example_draw_follows_its_documented_derivation():
    """The draw of a call is random.Random(s).sample(pool, k), where s is the first 8 hex digits of the SHA-256
    of "seed|item|definition|scale|method", read in base 16. A later version must keep it: a study re-run then
    shows the same examples, so its prompts (and their cache entries) repeat."""
    pool = [{"item_id": i, "scale": "5-P", "value": float(i), "granularity": None} for i in range(1, 5)]
    for seed, item, method in ((0, 0, "dicl_r"), (7, 2, "dicl_sm"), (123, 4, "dicl_r")):
        ctx = _ctx(pool, k=2)
        ctx = _Ctx(cfg=dataclasses.replace(ctx.cfg, seed=seed), items=ctx.items, oracle_pool=pool)
        got = [e["query"] for e in _examples(ctx, Call(item, "judge", method, "short", "5-P", GREEDY))]
        digest = hashlib.sha256(f"{seed}|{item}|short|5-P|{method}".encode()).hexdigest()
        others = [p for p in pool if p["item_id"] != item]
        want = [f"q{p['item_id']}" for p in random.Random(int(digest[:8], 16)).sample(others, 2)]
        assert got == want
