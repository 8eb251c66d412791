"""A PDF is bounded as a .docx is: by its pages (refused from the page tree's count before a page is read)
and by the characters extracted (reading stops at the first page past the limit)."""

from __future__ import annotations

import pypdf
import pytest

import services.text as text_module
from services.errors import InputError
from services.text import MAX_PDF_PAGES, read_document


def pages_pdf(n: int, *, text: str = "x", count: int | None = None) -> bytes:
    """A PDF of n pages sharing one content stream that shows `text`; the page tree declares `count` pages
    (default n). Written by hand with its cross-reference table: 100,000 pages take well under a second."""
    n_fixed = 4  # catalog, page tree, font, content
    stream = f"BT /F1 1 Tf 0 0 Td ({text}) Tj ET".encode("latin-1")
    kids = b" ".join(b"%d 0 R" % (n_fixed + 1 + i) for i in range(n))
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % (n if count is None else count),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 9 9] /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    objs += [page] * n
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


@pytest.fixture
def extracted(monkeypatch):
    """How many pages had their text extracted."""
    calls = {"n": 0}
    real = pypdf.PageObject.extract_text

    def spy(self, *args, **kwargs):
        calls["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pypdf.PageObject, "extract_text", spy)
    return calls


def test_a_pdf_of_100000_pages_is_refused_before_a_page_is_read(extracted):
    data = pages_pdf(100_000)
    assert len(data) < 20 * 1024 * 1024  # under the upload limit: only the page bound refuses it
    with pytest.raises(InputError, match=rf"has 100,000 pages; the limit is {MAX_PDF_PAGES:,}"):
        read_document("tiny-pages.pdf", data)
    assert extracted["n"] == 0


def test_a_page_tree_that_understates_its_count_is_stopped_at_the_bound_while_it_is_walked(extracted, monkeypatch):
    monkeypatch.setattr(text_module, "MAX_PDF_PAGES", 20)
    with pytest.raises(InputError, match="more than 20 pages"):
        read_document("liar.pdf", pages_pdf(300, count=1))
    assert extracted["n"] == 0, "refused while the tree was walked, before a page was read"


def page_tree_pdf(levels: int = 7, fan: int = 8) -> bytes:
    """A PDF of a few hundred bytes whose page tree says /Count 1, while each of its `levels` /Pages nodes names
    the next one `fan` times: fan ** levels pages (2,097,152) to walk."""
    objs = ["<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(levels):
        n = 2 + level
        parent = f" /Parent {n - 1} 0 R" if level else ""
        objs.append(f"<< /Type /Pages /Kids [{' '.join([f'{n + 1} 0 R'] * fan)}] /Count 1{parent} >>")
    objs.append(f"<< /Type /Page /MediaBox [0 0 72 72] /Parent {1 + levels} 0 R >>")
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    return out + f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()


def test_a_small_pdf_whose_tree_names_millions_of_pages_is_refused_at_the_page_bound(extracted):
    """The reader walked the whole tree first (to its own limit of 100,000 nodes) and the file was called
    damaged; the walk stops at the bound, and the message says why."""
    data = page_tree_pdf()
    assert len(data) < 2_000
    with pytest.raises(InputError, match=rf"has more than {MAX_PDF_PAGES:,} pages; the limit is {MAX_PDF_PAGES:,}"):
        read_document("tree.pdf", data)
    assert extracted["n"] == 0


def test_reading_stops_at_the_first_page_past_the_character_limit(extracted, monkeypatch):
    monkeypatch.setenv("MAX_INPUT_CHARS", "100")
    with pytest.raises(InputError, match="more than 100 characters of text by page 4"):
        read_document("long.pdf", pages_pdf(50, text="y" * 24))
    assert extracted["n"] == 4  # 24 + (2 + 24) * 3 = 102 characters with the blank lines: past 100 at page 4


def test_a_pdf_within_both_bounds_is_read_whole():
    assert read_document("short.pdf", pages_pdf(3, text="Hello there.")) == "\n\n".join(["Hello there."] * 3)
