"""Start the app and its batch worker: `python serve.py [streamlit options]` (what `make run` does).

The worker starts with the server, before anyone opens a page, so a restarted app resumes its batches at
once. (`streamlit run app.py` works too; its worker then starts when the first page is opened.)
"""

from __future__ import annotations

import sys
from pathlib import Path

from services.jobs.queue import ensure_worker

ROOT = Path(__file__).resolve().parent
# Imported once before the server listens, so no visitor waits for them: ppi_py alone (statsmodels, scipy.stats)
# is 1.7 s of CPU, and the Judges, Meta-evaluation, ConsEval and DHP pages each paid for theirs on first visit.
PRELOAD = (
    "pandas",
    "plotly.graph_objects",
    "scipy.stats",
    "ppi_py",
    "services.judges",
    "services.metaeval",
    "services.conseval",
    "services.dhp",
    "services.reports",
    "services.figures.metaeval",
    "services.figures.conseval",
    "services.figures.dhp",
    "services.figures.judges",
)


def preload() -> None:
    """Import what the pages need, in this thread, before any script thread runs (imports never race).

    Then the modules' objects are moved out of the garbage collector's sight (`gc.freeze`): Streamlit runs a
    full collection after every script run (`runner.postScriptGC`), a fragment's poll included, and walking the
    ~300,000 objects the imports leave cost 0.25 CPU s each time. What a page makes later is still collected."""
    import gc
    import importlib
    import logging

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # a missing optional module must not stop the server: the page says what is wrong
            logging.getLogger(__name__).exception("could not preload %s", name)
    gc.collect()  # the imports' own garbage first: only what lives on is frozen
    gc.freeze()


def main(argv: list[str] | None = None) -> int:
    from streamlit.web import cli as stcli

    from services.tables import upload_limit_mb

    ensure_worker()
    preload()
    # the browser's uploader refuses what the services would refuse: the MAX_UPLOAD_MB setting for both
    limit = [f"--server.maxUploadSize={upload_limit_mb()}"]
    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *limit, *(sys.argv[1:] if argv is None else argv)]
    return stcli.main()


if __name__ == "__main__":
    raise SystemExit(main())
