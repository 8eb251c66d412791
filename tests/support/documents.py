"""Damaged documents that the readers must refuse with a clear message."""

from __future__ import annotations

import io
import struct
import zipfile

import docx


def docx_bytes(text: str = "The council met on Tuesday.") -> bytes:
    buf = io.BytesIO()
    d = docx.Document()
    d.add_paragraph(text)
    d.save(buf)
    return buf.getvalue()


def with_part(data: bytes, part: str, content: bytes | None) -> bytes:
    """The .docx with one part replaced (or removed, for None)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in src.infolist():
            if info.filename != part:
                z.writestr(info, src.read(info))
            elif content is not None:
                z.writestr(info, content)
    return out.getvalue()


def pdf_bytes() -> bytes:
    from pypdf import PdfWriter

    buf = io.BytesIO()
    w = PdfWriter()
    w.add_blank_page(width=200, height=200)
    w.write(buf)
    return buf.getvalue()


BROKEN = {
    "broken XML": ("report.docx", with_part(docx_bytes(), "word/document.xml", b"<w:document><w:body><w:p>")),
    "no document part": ("report.docx", with_part(docx_bytes(), "word/document.xml", None)),
    "not a zip": ("report.docx", b"PK\x03\x04 this is not really a zip archive"),
    "a .doc renamed": ("report.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600),
    "PDF cut short": ("paper.pdf", pdf_bytes()[:200]),
    "PDF of garbage": ("paper.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 8),
}


MB = 1024 * 1024


def bomb(unpacked: int, *, member: str = "word/document.xml") -> bytes:
    """A zip holding `unpacked` bytes of one repeated byte in one member: a few hundred kB on disk."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z, z.open(member, "w") as f:
        block = b" " * MB
        for _ in range(unpacked // MB):
            f.write(block)
    return out.getvalue()


def understated(data: bytes, size: int) -> bytes:
    """The archive with every member's unpacked size, in its directory and local headers, said to be `size`."""
    buf = bytearray(data)
    for sig, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        at = buf.find(sig)
        while at != -1:
            struct.pack_into("<I", buf, at + offset, size)
            at = buf.find(sig, at + 4)
    return bytes(buf)
