"""ConsEval study items, settings and a fake judge that scores GOOD responses high."""

from __future__ import annotations

import re

import services.database
from services import conseval as ce
from services.config import BackendConfig
from services.conseval import ModelSpec, StudyConfig
from tests.fakes import last_user

GOOD = "GOOD"


def options_of(prompt: str) -> str:
    return re.findall(r"Options: (.*)", prompt)[-1].strip()


def scorer(noisy: bool = False):
    """A fake judge: GOOD responses score high, others low; on the Likert and binary scales it answers labels."""
    seen: dict[str, int] = {}

    def respond(body):
        prompt = last_user(body)
        target = prompt.rsplit("### Target", 1)[-1]
        good = GOOD in target.split("Response:", 1)[-1]
        opts = options_of(prompt)
        # The jitter counts the samples of each prompt, so it does not depend on the order concurrent requests
        # arrive in: every prompt's samples alternate 0, 1, 0, ... however they interleave.
        seen[prompt] = seen.get(prompt, 0) + 1
        jitter = seen[prompt] % 2 if noisy and body.get("temperature", 0) > 0 else 0
        if opts.startswith("Strongly"):
            ans = "Agree" if good else "Disagree"
        elif opts == "No, Yes":
            ans = "Yes" if good else "No"
        elif opts == "-5 to 5":
            ans = 4 - jitter if good else -3 + jitter
        else:
            hi = int(opts.split("-")[1])
            ans = hi - 1 - jitter if good else 2 + jitter
        return {"score": ans}

    return respond


def items(n: int = 6, criterion: str = "Helpfulness", scored: bool = False) -> list[ce.ItemIn]:
    out = []
    for i in range(n):
        good = i % 2 == 0
        out.append(
            ce.ItemIn(
                criterion,
                f"question {i}",
                f"{GOOD if good else 'bad'} answer {i}",
                str(i),
                oracle_score=(5.0 if good else 1.0) if scored else None,
                oracle_scale="5-P" if scored else None,
            )
        )
    return out


def config(backend, **kw) -> StudyConfig:
    base = dict(
        criteria=["Helpfulness"],
        scales=["5-P", "7-P", "11-P (POS)", "5-P Likert", "11-P (NEG)", "Binary", "10-P"],
        granularities=["none", "long"],
        models=[ModelSpec.of(backend, "judge")],
        n_samples=3,
        n_boot=50,
        concurrency=4,
    )
    base.update(kw)
    return StudyConfig(**base)


def seeded_study(judge, *, n_items: int = 4) -> int:
    """A finished study in the app's database (DATABASE_URL), judged by the fake `judge`."""
    judge.responder = scorer()
    eng = services.database.get_engine()
    backend = BackendConfig(kind="openai", base_url=judge.base_url, model="fake-model", max_retries=0)
    cfg = ce.StudyConfig(
        criteria=["Conciseness"],
        scales=["5-P", "Binary", "10-P"],
        granularities=["none"],
        models=[ce.ModelSpec.of(backend)],
        n_samples=2,
        n_boot=30,
    )
    sid = ce.create_study(eng, cfg, ce.sample_items(["Conciseness"], n_items))
    ce.run_study(eng, sid, backends={backend.model: backend})
    return sid


def browser_study(engine, base_url: str) -> tuple[int, str]:
    """The study of the ConsEval browser test (and of bench/pages_small.py), run to the end against the fake at
    `base_url` (answering with `scorer(noisy=True)`): 2 criteria, 4 scales, 2 definitions, 4 items, n = 3 and
    greedy, 256 answers; with a rater, Ada. Returns the study's id and Ada's token."""
    backend = BackendConfig(kind="openai", base_url=base_url, model="fake-model", max_retries=1)
    cfg = StudyConfig(
        criteria=["Harmlessness", "Conciseness"],
        scales=["5-P", "7-P", "11-P (POS)", "5-P Likert"],
        granularities=["none", "long"],
        models=[ModelSpec.of(backend)],
        n_samples=3,
        n_boot=200,
    )
    sid = ce.create_study(engine, cfg, ce.sample_items(cfg.criteria, 4), name="Harm and brevity")
    assert ce.run_study(engine, sid, backends={backend.model: backend}).status == "done"
    return sid, ce.add_rater(engine, sid, "Ada").token
