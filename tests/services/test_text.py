"""Sentence splitting, reading uploads, input checks and the diff view."""

from __future__ import annotations

import io

import docx
import pytest

from services.errors import InputError
from services.text import check_pair, diff_html, read_document, similarity, split_sentences


# -- splitting --------------------------------------------------------------------------------
def test_split_keeps_abbreviations_and_decimals_inside_sentences():
    text = "Dr. Smith earned 3.5 million dollars in 2020. He said it was enough! Was it? The U.S. economy grew."
    assert split_sentences(text) == [
        "Dr. Smith earned 3.5 million dollars in 2020.",
        "He said it was enough!",
        "Was it?",
        "The U.S. economy grew.",
    ]


def test_split_paragraphs_and_line_wraps():
    text = "First paragraph ends here\n\n  Second paragraph is\nwrapped over lines. It has two sentences.\n"
    assert split_sentences(text) == [
        "First paragraph ends here",
        "Second paragraph is wrapped over lines.",
        "It has two sentences.",
    ]


@pytest.mark.parametrize("text", ["", "   \n\n ", "... !!", None])
def test_split_nothing_to_split(text):
    assert split_sentences(text) == []


# -- reading uploads --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["notes.txt", "NOTES.MD"])
def test_read_text_files_utf8(name):
    data = "\ufeffCafé in Zürich — 3.5 km.\n".encode()  # with a BOM, which is dropped
    assert read_document(name, data) == "Café in Zürich — 3.5 km."


def test_read_non_utf8_text_says_utf8():
    with pytest.raises(InputError, match="UTF-8") as exc:
        read_document("latin.txt", "Café crème".encode("latin-1"))
    assert "latin.txt" in str(exc.value) and "byte 3" in str(exc.value)


def test_read_binary_with_nul_bytes():
    with pytest.raises(InputError, match="binary"):
        read_document("image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


def test_read_empty_and_whitespace_files():
    with pytest.raises(InputError, match="is empty"):
        read_document("a.txt", b"")
    with pytest.raises(InputError, match="no text"):
        read_document("a.md", b"  \n\t\n")


@pytest.mark.parametrize("name", ["slides.pptx", "data.csv", "noextension"])
def test_unsupported_extension(name):
    with pytest.raises(InputError, match="unsupported file type"):
        read_document(name, b"hello")


def test_read_docx():
    document = docx.Document()
    document.add_paragraph("The Eiffel Tower is in Paris.")
    document.add_paragraph("")
    document.add_paragraph("It was completed in 1889.")
    buf = io.BytesIO()
    document.save(buf)
    assert read_document("report.docx", buf.getvalue()) == "The Eiffel Tower is in Paris.\n\nIt was completed in 1889."


def test_read_invalid_docx():
    with pytest.raises(InputError, match="Word document"):
        read_document("broken.docx", b"this is not a zip file")


def make_pdf(text: str | None) -> bytes:
    """A one-page PDF with `text` in Helvetica (or no content stream at all), xref offsets computed."""
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >>"
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"]
    if text is None:
        objs += [page + b" >>", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    else:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
        objs += [
            page + b" /Contents 5 0 R >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def test_read_pdf_with_text():
    assert read_document("article.PDF", make_pdf("The tower is 330 metres tall.")) == "The tower is 330 metres tall."


def test_read_pdf_without_text_layer():
    with pytest.raises(InputError, match="no extractable text"):
        read_document("scan.pdf", make_pdf(None))


def test_read_invalid_pdf():
    with pytest.raises(InputError, match="could not be read as a PDF"):
        read_document("broken.pdf", b"%PDF-1.4\nthis is not really a pdf")


# -- input checks -----------------------------------------------------------------------------
def test_check_pair_returns_candidate_sentences():
    assert check_pair("Ref text.", "  One. Two.  ", max_chars=100) == ["One.", "Two."]


def test_check_pair_empty_reference():
    with pytest.raises(InputError, match="reference is empty"):
        check_pair("  \n", "A sentence.", max_chars=100)


def test_check_pair_empty_candidate():
    with pytest.raises(InputError, match="candidate is empty"):
        check_pair("A reference.", "", max_chars=100)


def test_check_pair_punctuation_only_candidate():
    with pytest.raises(InputError, match="no sentence"):
        check_pair("A reference.", "... -- !?", max_chars=100)


def test_check_pair_too_long_names_side_and_numbers():
    with pytest.raises(InputError) as exc:
        check_pair("r" * 1500, "Short.", max_chars=1200)
    msg = str(exc.value)
    assert "reference" in msg and "1,500" in msg and "1,200" in msg
    with pytest.raises(InputError, match="candidate is 1,201 characters"):
        check_pair("ok", "c" * 1201, max_chars=1200)
    assert check_pair("r" * 1200, "Fine.", max_chars=1200) == ["Fine."]  # the limit itself is allowed


# -- diff -------------------------------------------------------------------------------------
def test_diff_html_marks_changes_and_escapes():
    out = diff_html("It was built in <1999> & opened.", "It was built in 1889 & opened.")
    assert out == (
        'It was built in <del class="cs-del">&lt;1999&gt;</del> <ins class="cs-ins">1889</ins> &amp; opened.'
    )
    assert "<script>" not in diff_html("a", "<script>alert(1)</script>")


def test_diff_html_identical_has_no_marks():
    out = diff_html("Same words here.", "Same  words here.")
    assert out == "Same words here." and "<del" not in out and "<ins" not in out


def test_similarity_ignores_case_and_spacing():
    assert similarity("The  Tower.", "the tower.") == 1.0
    assert similarity("", "x") == 0.0
    assert 0 < similarity("The tower is tall.", "The tower is short.") < 1


def test_read_records_reads_csv_json_and_jsonl_and_names_the_bad_line():
    from services.text import read_records

    assert read_records("a,b\n1,2\n", "t.csv") == [{"a": "1", "b": "2"}]
    assert read_records('[{"a": 1}]', "t.json") == [{"a": 1}]
    assert read_records('{"items": [{"a": 1}]}', "t.json") == [{"a": 1}]
    assert read_records('{"a": 1}\n\n{"a": 2}\n'.encode("utf-8-sig"), "t.json") == [{"a": 1}, {"a": 2}]
    assert read_records("", "t.jsonl") == []
    with pytest.raises(InputError, match=r"t.jsonl:2: not valid JSON"):
        read_records('{"a": 1}\nnope\n', "t.jsonl")
    with pytest.raises(InputError, match=r"t.jsonl:1: each line must be a JSON object"):
        read_records("1\n", "t.jsonl")
    with pytest.raises(InputError, match="expected a list of objects"):
        read_records("[1, 2]", "t.json")
    with pytest.raises(InputError, match="not UTF-8"):
        read_records(b"\xff\xfe\xfa", "t.jsonl")


def test_splitting_compiles_no_pattern_per_document(monkeypatch):
    # pysbd compiled a pattern per sentence to find its span, which also pushed its own patterns out of re's
    # cache: every document compiled hundreds of patterns again. Once warm, a new document compiles none.
    # re's cache drops its oldest entry first, so patterns other tests compiled earlier in this process can
    # evict pysbd's mid-test; the cache is emptied first so the test sees one process splitting documents.
    import re._compiler

    docs = [f"Summary {i} says the council met on day {i}. The mayor, Dr. Lee, spoke {i} minutes." for i in range(9)]
    re.purge()
    split_sentences(docs[0])
    compiled = []
    real = re._compiler.compile
    monkeypatch.setattr(re._compiler, "compile", lambda p, flags=0: compiled.append(p) or real(p, flags))
    assert [split_sentences(d) for d in docs[1:]] == [
        [f"Summary {i} says the council met on day {i}.", f"The mayor, Dr. Lee, spoke {i} minutes."]
        for i in range(1, 9)
    ]
    assert compiled == []
