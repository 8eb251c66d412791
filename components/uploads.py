"""Letting go of an upload's bytes: Streamlit keeps every uploaded file in the server's memory for as long as the
session lasts, unless the file is removed from its uploaded-file manager (as its chat input does)."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def release_upload(upload: Any) -> None:
    """Remove this UploadedFile from the server's memory; the page reads its own copy from then on. The
    uploader shows no file afterwards (give it a new key)."""
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or upload is None:
        return
    if isinstance(ctx.uploaded_file_mgr, MemoryUploadedFileManager):
        ctx.uploaded_file_mgr.remove_file(session_id=ctx.session_id, file_id=upload.file_id)
    else:  # another manager keeps files its own way
        log.debug("uploaded file manager %s: file %s left to it", type(ctx.uploaded_file_mgr).__name__, upload.file_id)
