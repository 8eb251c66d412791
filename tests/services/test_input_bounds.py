"""Input is bounded before it is read: a file over the upload limit is refused from its size, and a .docx is
refused from what it unpacks to (a zip bomb), with memory held to a small part of either."""

from __future__ import annotations

import io
import os
import tracemalloc
import zipfile
from pathlib import Path, PosixPath

import docx
import pytest

import cli
import services.text as text_module
from services import tables
from services.errors import InputError
from services.text import MAX_UNZIPPED_MB, check_unzipped, read_document
from tests.support.documents import MB, bomb, docx_bytes, understated

LIMIT_MB = 20  # the limit these tests set (the MAX_UPLOAD_MB setting), small enough for sparse test files


@pytest.fixture(autouse=True)
def _upload_limit(monkeypatch):
    monkeypatch.setenv("MAX_UPLOAD_MB", str(LIMIT_MB))


def peak_bytes(fn, *args, **kwargs) -> tuple[int, BaseException | None]:
    """The most memory Python held while `fn` ran, and what it raised."""
    tracemalloc.start()
    try:
        fn(*args, **kwargs)
        raised = None
    except BaseException as exc:  # returned to the test, SystemExit included
        raised = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak, raised


def big_file(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk space (sparse) and is all JSONL-looking zeros to a reader."""
    with path.open("wb") as f:
        f.truncate(size)
    return path


# -- files over the limit -------------------------------------------------------------------------------
def test_a_file_over_the_limit_is_refused_from_its_size_without_being_read(tmp_path):
    path = big_file(tmp_path / "huge.jsonl", 300 * MB)
    peak, raised = peak_bytes(tables.read_file, path, "Split it.")
    assert isinstance(raised, InputError)
    assert str(raised) == (
        f"{path} is 300.0 MB; the limit is {LIMIT_MB} MB (raise the MAX_UPLOAD_MB setting, in MB, to allow larger "
        "files). Split it."
    )
    assert peak < 1 * MB, f"{peak / MB:.1f} MB held to refuse a file by its size"


class _UnderstatedSize(PosixPath):
    """A file whose size the file system under-states (a file still being written, a special file)."""

    def stat(self, *args, **kwargs):
        real = super().stat(*args, **kwargs)
        return os.stat_result((*real[:6], 10, *real[7:]))


def test_a_file_larger_than_its_stated_size_is_read_only_up_to_the_limit(tmp_path):
    path = _UnderstatedSize(big_file(tmp_path / "growing.jsonl", 64 * MB))
    assert path.stat().st_size == 10
    peak, raised = peak_bytes(tables.read_file, path)
    assert isinstance(raised, InputError) and f"the limit is {LIMIT_MB} MB" in str(raised)
    assert peak < (2 * LIMIT_MB + 2) * MB, f"{peak / MB:.1f} MB held"


def test_a_file_under_the_limit_reads_whole(tmp_path):
    path = tmp_path / "ok.jsonl"
    data = b'{"id": 1}\n' * 300_000  # 3 MB: several chunks
    path.write_bytes(data)
    assert tables.read_file(path) == data


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--input", "{path}", "--output", "{out}"],
        ["batch", "--dataset", "{path}", "--format", "jsonl"],
        ["conseval", "--input", "{path}", "--criteria", "Harmlessness", "--scales", "5-P"],
    ],
    ids=["evaluate", "batch", "conseval"],
)
def test_the_cli_refuses_a_file_over_the_limit_before_reading_it(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    path = big_file(tmp_path / "huge.jsonl", 300 * MB)
    args = [a.format(path=path, out=tmp_path / "out.jsonl") for a in argv]
    # once on a missing file first: the command imports what it needs, which is not what is measured here
    peak_bytes(cli.main, [a.format(path=tmp_path / "none.jsonl", out=tmp_path / "out.jsonl") for a in argv])
    capsys.readouterr()
    peak, raised = peak_bytes(cli.main, args)
    err = capsys.readouterr().err
    assert raised is None or (isinstance(raised, SystemExit) and raised.code == 2), raised
    assert "300.0 MB; the limit is 20 MB" in err and "Traceback" not in err
    assert peak < 10 * MB, f"{peak / MB:.1f} MB held to refuse a 300 MB file"
    assert not (tmp_path / "cli.db").exists(), "a database was made for a file refused by its size"


# -- zip bombs ------------------------------------------------------------------------------------------
def test_a_docx_bomb_is_refused_from_its_directory_before_anything_is_unpacked():
    data = bomb(256 * MB)
    assert len(data) < 1 * MB
    peak, raised = peak_bytes(read_document, "bomb.docx", data)
    assert isinstance(raised, InputError)
    assert str(raised).startswith(f"bomb.docx unpacks to more than {MAX_UNZIPPED_MB} MB")
    assert peak < 2 * MB, f"{peak / MB:.1f} MB held"


def test_a_docx_whose_directory_lies_about_its_sizes_is_refused_with_memory_bounded():
    data = understated(bomb(2 * MAX_UNZIPPED_MB * MB), 1000)
    assert zipfile.ZipFile(io.BytesIO(data)).infolist()[0].file_size == 1000
    peak, raised = peak_bytes(read_document, "liar.docx", data)
    assert isinstance(raised, InputError)
    assert "liar.docx could not be read as a Word document" in str(raised)
    assert peak < 8 * MB, f"{peak / MB:.1f} MB held"


def test_unpacking_stops_at_the_limit_whatever_the_directory_says():
    data = bomb(8 * MB)
    with pytest.raises(InputError, match="unpacks to more than 4 MB"):
        check_unzipped("a.docx", data, limit_mb=4)
    lying = understated(data, 1000)
    with pytest.raises(InputError):
        check_unzipped("a.docx", lying, limit_mb=4)
    check_unzipped("a.docx", data, limit_mb=9)  # under the limit: no complaint


def test_many_small_members_count_together():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(6):
            z.writestr(f"part{i}.xml", b" " * MB)
    with pytest.raises(InputError, match="unpacks to more than 4 MB"):
        check_unzipped("parts.docx", out.getvalue(), limit_mb=4)


def test_an_ordinary_docx_still_reads():
    assert read_document("ok.docx", docx_bytes("One. Two.")) == "One. Two."


def test_xml_parts_count_against_their_own_smaller_limit():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", b" " * (2 * MB))
        z.writestr("word/media/image1.png", b" " * (2 * MB))  # pictures count only against the total
    with pytest.raises(InputError, match="holds more than 1 MB of text and markup"):
        check_unzipped("x.docx", out.getvalue(), limit_mb=10, xml_mb=1)
    check_unzipped("x.docx", out.getvalue(), limit_mb=10, xml_mb=3)


def many(paragraphs: int, runs_each: int) -> bytes:
    d = docx.Document()
    for i in range(paragraphs):
        p = d.add_paragraph()
        for _ in range(runs_each):
            p.add_run(f"{i} ")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("paragraphs", "runs_each", "refused"),
    [(5, 1, "has 5 paragraphs; the limit is 4"), (2, 6, "has 12 runs of text; the limit is 10")],
)
def test_a_docx_with_more_paragraphs_or_runs_than_reading_can_afford_is_refused(
    monkeypatch, paragraphs, runs_each, refused
):
    # a few kB can hold a million tiny paragraphs, each of which costs the reader time: counted before reading
    monkeypatch.setattr(text_module, "MAX_PARAGRAPHS", 4)
    monkeypatch.setattr(text_module, "MAX_RUNS", 10)
    with pytest.raises(InputError, match=refused):
        read_document("long.docx", many(paragraphs, runs_each))
    assert read_document("ok.docx", many(4, 2)).startswith("0 0")


def test_xml_under_another_name_counts_as_xml():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/media/image1.png", b"<w:p/>" * (2 * MB // 6 + 1))  # XML, whatever its name says
    with pytest.raises(InputError, match="holds more than 1 MB of text and markup"):
        check_unzipped("x.docx", out.getvalue(), limit_mb=10, xml_mb=1)
