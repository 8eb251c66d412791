"""Mutation testing of the code that implements the papers' formulas and procedures (`make mutation`).

mutmut 3 (configured in pyproject.toml, [tool.mutmut]) copies the project to mutants/, changes one thing at a
time in the functions named in SCOPE and runs the fast conformance and unit tests that reach each changed
function. A mutant is killed when a test fails (a timeout counts as killed: the change made the code loop).
The score of a module is killed / (mutants - known equivalent ones); EQUIVALENT lists those, each with why.

    python tools/mutation.py            run the mutants of SCOPE, then print the score per module
    python tools/mutation.py --report   print the scores of the last run only
    python tools/mutation.py --sample 80   a quicker estimate: 80 mutants drawn per module (seeded), the score with
                                           its 95% interval (needs the mutants/ of an earlier run, even a partial one)
    MUTATION_JOBS=2 (default) sets the processes; a fresh run starts from an empty mutants/ (--fresh).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
GOAL = 0.90

# Module -> the mutmut names of its functions ("x_name" for a function, "xǁClassǁmethod" for a method).
SCOPE: dict[str, list[str]] = {
    "services/stats": ["services.stats.*"],
    "services/dhp/statistics.py": [
        f"services.dhp.statistics.x_{f}__mutmut_*"
        for f in (
            "wilcoxon_greater",
            "normalise_weights",
            "harmonic_mean_p",
            "paper_literal_p",
            "discernment",
            "level_weights",
            "_weighted_avg",
            "lookup_weights",
            "analyse",
            "_avg_note",
        )
    ],
    "services/dcr: Eq. 3 and alignment": [
        "services.dcr.results.x_eq3__mutmut_*",
        "services.dcr.results.x_score_evaluation__mutmut_*",
        "services.dcr.align.*",
    ],
    "services/conseval: analysis, split, dICL examples": [
        f"services.conseval.analysis.x_{f}__mutmut_*"
        for f in (
            "_alpha_row",
            "score_table",
            "_mapped",
            "compute_rows",
            "missing_summary",
            "_modes",
            "_unit",
            "_scale_rows",
            "_oracle_scores",
            "_accuracy_row",
            "_consensus",
            "_human_rows",
        )
    ]
    + [
        "services.conseval.study.x_test_instances__mutmut_*",
        "services.conseval.run.x__examples__mutmut_*",
    ],
    "services/nli: aggregation and retrieval": [
        "services.nli.paradigms.x__any_inconsistent__mutmut_*",
        "services.nli.retrieval.*",
    ],
    "services/metaeval/classification.py": ["services.metaeval.classification.*"],
}

# Mutants that cannot change any result, each with why (see docs/development.md, "Mutation testing").
EQUIVALENT: dict[str, str] = {}

STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 36: "timeout", -24: "timeout"}
STATUS |= {24: "timeout", 152: "timeout", 255: "timeout", None: "not checked"}


def _module_of(name: str) -> str | None:
    for module, patterns in SCOPE.items():
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            return module
    return None


def results() -> dict[str, dict[str, str]]:
    """module -> {mutant name: status} from mutmut's records in mutants/."""
    out: dict[str, dict[str, str]] = {m: {} for m in SCOPE}
    for meta in MUTANTS.rglob("*.py.meta"):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for name, code in codes.items():
            module = _module_of(name)
            if module is not None:
                out[module][name] = STATUS.get(code, "suspicious")
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of k successes in n."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def sample(by_module: dict[str, dict[str, str]], n: int, seed: int) -> dict[str, dict[str, str]]:
    """n mutants drawn at random from each module (all of a module with fewer)."""
    rng = random.Random(seed)
    return {m: {k: st[k] for k in rng.sample(sorted(st), min(n, len(st)))} for m, st in by_module.items()}


def report(by_module: dict[str, dict[str, str]], *, sampled: bool = False) -> bool:
    """Print the score per module and every survivor; True when each module reaches GOAL."""
    ok = True
    head = "sampled" if sampled else "mutants"
    print(
        f"{'module':52} {head:>7} {'killed':>6} {'equiv.':>6} {'left':>5} {'score':>7}"
        + ("  95% interval" if sampled else "")
    )
    left_over: list[tuple[str, str]] = []
    for module, statuses in by_module.items():
        killed = sum(1 for s in statuses.values() if s in ("killed", "timeout"))
        equivalent = [n for n, s in statuses.items() if s not in ("killed", "timeout") and n in EQUIVALENT]
        left = [n for n, s in statuses.items() if s not in ("killed", "timeout") and n not in EQUIVALENT]
        counted = len(statuses) - len(equivalent)
        score = killed / counted if counted else None
        ok &= score is not None and score >= GOAL and not any(s == "not checked" for s in statuses.values())
        shown = f"{score:.1%}" if score is not None else "-"
        if sampled and counted:
            low, high = wilson(killed, counted)
            shown += f"  {low:.1%} to {high:.1%}"
        print(f"{module:52} {len(statuses):7} {killed:6} {len(equivalent):6} {len(left):5} {shown:>7}")
        left_over += [(n, statuses[n]) for n in sorted(left)]
    if left_over:
        print("\nNot killed and not known equivalent (`.venv/bin/mutmut show NAME` shows the change):")
        for name, status in left_over:
            print(f"  {name}  [{status}]")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", action="store_true", help="only print the scores of the last run")
    ap.add_argument("--fresh", action="store_true", help="start from an empty mutants/ folder")
    ap.add_argument("--sample", type=int, default=0, help="run and score this many mutants drawn per module")
    ap.add_argument("--seed", type=int, default=0, help="the seed of --sample's draw")
    args = ap.parse_args()
    if args.sample and args.fresh:
        ap.error("--sample draws from the mutants of an earlier run: leave out --fresh")
    drawn = sample(results(), args.sample, args.seed) if args.sample else None
    if drawn is not None and not any(drawn.values()):
        ap.error("no mutants yet: run `tools/mutation.py` once (it may be stopped once it has started testing)")
    if not args.report:
        if args.fresh and MUTANTS.exists():
            shutil.rmtree(MUTANTS)
        jobs = os.environ.get("MUTATION_JOBS", "2")
        mutmut = Path(sys.executable).with_name("mutmut")
        patterns = [n for st in drawn.values() for n in st] if drawn else [p for ps in SCOPE.values() for p in ps]
        start = time.monotonic()
        # Each mutant runs its tests in a new pytest session. Their temporary folders go to a root of their own,
        # kept (pyproject: tmp_path_retention_count): the job queue made at import keeps its file in the first one,
        # and pytest runs elsewhere on the machine must not clean it away.
        (MUTANTS / "tmp").mkdir(parents=True, exist_ok=True)
        env = os.environ | {"PYTEST_DEBUG_TEMPROOT": str(MUTANTS / "tmp")}
        with open(MUTANTS / "run.log", "w") as log:
            done = subprocess.run(
                [str(mutmut), "run", "--max-children", jobs, *patterns],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        minutes = (time.monotonic() - start) / 60
        print(f"mutmut run: exit {done.returncode}, {minutes:.1f} min with {jobs} processes (log: mutants/run.log)\n")
        if done.returncode != 0:
            print((MUTANTS / "run.log").read_text()[-3000:])
            return done.returncode
    if drawn is not None:
        now = results()
        return 0 if report({m: {k: now[m][k] for k in st} for m, st in drawn.items()}, sampled=True) else 1
    return 0 if report(results()) else 1


if __name__ == "__main__":
    sys.exit(main())
