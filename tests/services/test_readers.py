"""Uploaded documents that cannot be read give a clear message (InputError), never a parser's traceback."""

from __future__ import annotations

import pytest

from services.errors import InputError
from services.text import read_document
from tests.support.documents import BROKEN, docx_bytes


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_damaged_document_is_refused_with_a_clear_message(case):
    name, data = BROKEN[case]
    with pytest.raises(InputError) as err:
        read_document(name, data)
    msg = str(err.value)
    assert msg.startswith(name) and "could not be read" in msg
    assert "/" not in msg.replace(name, ""), "no server path in the message"


def test_a_good_docx_still_reads():
    assert read_document("ok.docx", docx_bytes("One. Two.")) == "One. Two."
