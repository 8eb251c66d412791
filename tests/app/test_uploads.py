"""Evaluate page: a damaged upload shows a clear message in the page, no traceback and no server path."""

from __future__ import annotations

from tests.app.helpers import EVALUATE, texts
from tests.support.documents import BROKEN


def test_a_malformed_docx_upload_shows_a_clear_message(open_page):
    at = open_page(EVALUATE)
    name, data = BROKEN["broken XML"]
    mime = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    at.file_uploader(key="ev_reference_file").upload(name, data, mime).run()
    assert not at.exception
    errors = texts(at.error)
    assert any("report.docx could not be read as a Word document" in e for e in errors), errors
    shown = "\n".join(errors + texts(at.markdown))
    assert "Traceback" not in shown and "site-packages" not in shown and "XMLSyntaxError" not in shown
    assert at.text_area(key="ev_reference").value in ("", None), "nothing was loaded"
