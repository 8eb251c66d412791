"""Start the app and its batch worker: `python serve.py [streamlit options]` (what `make run` does).

The worker starts with the server, before anyone opens a page, so a restarted app resumes its batches at
once. (`streamlit run app.py` works too; its worker then starts when the first page is opened.)
"""

from __future__ import annotations

import sys
from pathlib import Path

from services.jobs.queue import ensure_worker

ROOT = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    from streamlit.web import cli as stcli

    from services.tables import upload_limit_mb

    ensure_worker()
    # the browser's uploader refuses what the services would refuse: the MAX_UPLOAD_MB setting for both
    limit = [f"--server.maxUploadSize={upload_limit_mb()}"]
    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *limit, *(sys.argv[1:] if argv is None else argv)]
    return stcli.main()


if __name__ == "__main__":
    raise SystemExit(main())
