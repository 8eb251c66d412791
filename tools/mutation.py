"""Mutation testing of the code that implements the papers' formulas and procedures (`make mutation`).

mutmut 3 (configured in pyproject.toml, [tool.mutmut]) copies the project to mutants/, changes one thing at a
time in the functions named in SCOPE and runs the fast conformance and unit tests that reach each changed
function. A mutant is killed when a test fails (a timeout counts as killed: the change made the code loop).
The score of a module is killed / (mutants - known equivalent ones); EQUIVALENT lists those, each with why.

    python tools/mutation.py            run the mutants of SCOPE, then print the score per module
    python tools/mutation.py --report   print the scores of the last run only
    MUTATION_JOBS=2 (default) sets the processes; a fresh run starts from an empty mutants/ (--fresh).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
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
        "services.conseval.analysis.*",
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


def report(by_module: dict[str, dict[str, str]]) -> bool:
    """Print the score per module and every survivor; True when each module reaches GOAL."""
    ok = True
    print(f"{'module':52} {'mutants':>7} {'killed':>6} {'equiv.':>6} {'left':>5} {'score':>7}")
    left_over: list[tuple[str, str]] = []
    for module, statuses in by_module.items():
        killed = sum(1 for s in statuses.values() if s in ("killed", "timeout"))
        equivalent = [n for n, s in statuses.items() if s not in ("killed", "timeout") and n in EQUIVALENT]
        left = [n for n, s in statuses.items() if s not in ("killed", "timeout") and n not in EQUIVALENT]
        counted = len(statuses) - len(equivalent)
        score = killed / counted if counted else None
        ok &= score is not None and score >= GOAL and not any(s == "not checked" for s in statuses.values())
        shown = f"{score:.1%}" if score is not None else "-"
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
    args = ap.parse_args()
    if not args.report:
        if args.fresh and MUTANTS.exists():
            shutil.rmtree(MUTANTS)
        jobs = os.environ.get("MUTATION_JOBS", "2")
        mutmut = Path(sys.executable).with_name("mutmut")
        patterns = [p for ps in SCOPE.values() for p in ps]
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
    return 0 if report(results()) else 1


if __name__ == "__main__":
    sys.exit(main())
