"""Sentence splitting, reading uploaded documents, and input checks."""

from __future__ import annotations

import difflib
import html
import io
import logging
import re
import threading
from pathlib import Path

import cydifflib
import pysbd
from pysbd.lang.english import English
from pysbd.utils import TextSpan

from services.errors import InputError
from services.tables import MAX_UPLOAD_MB as MAX_UPLOAD_MB  # the upload limit's default, also read from here
from services.tables import check_size, read_rows
from services.tables import upload_limit_mb as upload_limit_mb  # the limit in force (MAX_UPLOAD_MB setting)

log = logging.getLogger(__name__)


_local = threading.local()


class _Segmenter(pysbd.Segmenter):
    r"""pysbd's segmenter, placing each sentence in the text with str.find instead of a regular expression.

    pysbd finds each sentence's span with `re.finditer(re.escape(sentence) + r"\s*", text)`: one pattern
    compiled per sentence, which also pushes pysbd's own patterns out of re's cache, so they are compiled
    again for the next document (half of its time). The matches are the same: the sentence as written,
    then any whitespace, the first such match (not overlapping the one before) ending after the previous
    sentence's span.
    """

    def sentences_with_char_spans(self, sentences):
        if not all(sentences):  # an empty pattern: leave regex's own empty-match rules to regex
            return super().sentences_with_char_spans(sentences)
        text = self.original_text
        spans = []
        prior_end = 0
        for sent in sentences:
            pos = 0
            while (start := text.find(sent, pos)) >= 0:
                end = start + len(sent)
                while end < len(text) and text[end].isspace():  # \s* (re's \s is str.isspace)
                    end += 1
                if end > prior_end:
                    spans.append(TextSpan(text[start:end], start, end))
                    prior_end = end
                    break
                pos = end  # finditer goes on after the match
        return spans


class _AbbreviationReplacer(English.AbbreviationReplacer):
    r"""pysbd's abbreviation pass, skipping the abbreviations that cannot change the line.

    For each of its 188 abbreviations found in the line, pysbd runs a case-insensitive `findall` and then, for
    each match M, a substitution of the period in `\s M \.`: a period right after the abbreviation as written.
    (Its other edits only turn periods into a placeholder, never make one.) In ASCII text M is the
    abbreviation in some case, so when "abbreviation." is not in the lowered line no substitution can match and
    the abbreviation is skipped; lines with other characters, and the dotted abbreviations ("e.g", which pysbd
    reads as patterns), go through pysbd's own loop. A third of pysbd's time, with the same sentences
    (tests/services/test_text_plain.py holds them to pysbd's).
    """

    def search_for_abbreviations_in_string(self, text):
        if not text.isascii():
            return super().search_for_abbreviations_in_string(text)
        lowered = text.lower()
        for abbr in self.lang.Abbreviation.ABBREVIATIONS:
            stripped = abbr.strip()
            if stripped not in lowered or (stripped.isalpha() and stripped + "." not in lowered):
                continue
            abbrev_match = re.findall(r"(?:^|\s|\r|\n){}".format(stripped), text, flags=re.IGNORECASE)  # noqa: UP032
            if not abbrev_match:
                continue
            next_word_start = r"(?<={" + str(re.escape(stripped)) + "} ).{1}"
            char_array = re.findall(next_word_start, text)
            for ind, match in enumerate(abbrev_match):
                text = self.scan_for_replacements(text, match, ind, char_array)
        return text


class _English(English):
    AbbreviationReplacer = _AbbreviationReplacer


def _segmenter() -> pysbd.Segmenter:
    # one per thread: a pysbd Segmenter keeps the text being split on itself, so threads sharing one
    # (batch workers, the CLI's concurrent items) get each other's sentences
    seg = getattr(_local, "segmenter", None)
    if seg is None:
        seg = _local.segmenter = _Segmenter(language="en", clean=False)
        seg.language_module = _English
    return seg


# -- plain prose: the sentences pysbd gives, without running it -----------------------------------------
# pysbd runs some 150 regular expressions over every paragraph (0.7 ms for a 4-sentence summary), each looking
# for something that makes a period, a quote or a bracket not end a sentence, or a list item begin one. A
# paragraph that has none of those things is split by pysbd at each ". " and nowhere else; `_is_plain` says
# when a paragraph is such, and `_plain_sentences` splits it. The conditions, each closing off pysbd's rules:
# - printable ASCII from letters, digits, spaces and , ; : % ' - and periods, starting with a letter or digit:
#   no quotes, brackets, !, ?, ellipses, list markers "1)", special symbols or line breaks for its rules to see;
# - an apostrophe only inside a word ("it's"), never "--" (pysbd keeps what lies between quotes or dashes);
# - each period ends a word of two or more letters and is followed by a space and a capital, or ends the
#   paragraph: no decimals, numbered lists "1.", initials "J.", single-letter or roman list items "a.", "v.",
#   multi-period abbreviations "e.g.", file names, or a period before a lower-case word;
# - the word before a period is none of pysbd's abbreviations ("Dr.", "Jan.", "no.", "Gen."), and there is no
#   "Co. KG".
# tests/services/test_text_plain.py holds this to pysbd itself on generated text and on the project's data.
_PLAIN_CHARS = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ,;:%'.-]*")
_NOT_PLAIN = re.compile(r"--|(?<![A-Za-z])'|'(?![A-Za-z])|\.(?! [A-Z]|$)")
_PERIOD_WORD = re.compile(r"(?:^| )([^ ]*)\.")
# pysbd's own list of abbreviations: a word of letters is one when equal to it in any case. (Its dotted ones,
# "e.g" or "d.phil", are looked for only where the text holds them literally, with a period inside a word.)
_ABBREVIATIONS = frozenset(a.strip().lower() for a in English.Abbreviation.ABBREVIATIONS if a.strip().isalpha())
_SENTENCE_END = re.compile(r"(?<=\.) ")


def _is_plain(para: str) -> bool:
    """Whether pysbd would split this paragraph (single-spaced, stripped) at each ". " and nowhere else."""
    if not para.isascii() or not _PLAIN_CHARS.fullmatch(para) or _NOT_PLAIN.search(para):
        return False
    if "." not in para:
        return True
    if "Co. KG" in para:
        return False
    return all(len(w) >= 2 and w.isalpha() and w.lower() not in _ABBREVIATIONS for w in _PERIOD_WORD.findall(para))


def _plain_sentences(para: str) -> list[str]:
    return _SENTENCE_END.split(para)


def _pysbd_sentences(para: str) -> list[str]:
    return [s.strip() for s in _segmenter().segment(para) if s.strip()]


def split_sentences(text: str) -> list[str]:
    """Split text into sentences with pysbd (rule-based, handles abbreviations and decimals).

    A paragraph of plain prose (see `_is_plain`) is split at each ". " directly: the sentences pysbd gives it.
    """
    text = (text or "").strip()
    if not text:
        return []
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        if para:
            out.extend(_plain_sentences(para) if _is_plain(para) else _pysbd_sentences(para))
    return [s for s in out if re.search(r"\w", s)]


def join_sentences(sentences: list[str]) -> str:
    return " ".join(s.strip() for s in sentences if s.strip())


SUPPORTED_UPLOADS = ("txt", "md", "pdf", "docx")


def read_document(name: str, data: bytes) -> str:
    """Text of an uploaded .txt, .md, .pdf or .docx file; raises InputError with the reason."""
    suffix = Path(name).suffix.lower().lstrip(".")
    if suffix not in SUPPORTED_UPLOADS:
        raise InputError(f"{name}: unsupported file type '.{suffix}'. Use .txt, .md, .pdf or .docx.")
    if not data:
        raise InputError(f"{name} is empty.")
    check_size(data, name, "Upload a shorter document or paste the part to check.")
    if suffix in ("txt", "md"):
        if b"\x00" in data[:8192]:
            raise InputError(f"{name} looks like a binary file, not text.")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{name} is not UTF-8 text (byte {exc.start} cannot be read). Save it as UTF-8 and upload it again."
            ) from None
    elif suffix == "pdf":
        text = _read_pdf(name, data)
    else:
        text = _read_docx(name, data)
    text = text.strip()
    if not text:
        raise InputError(f"{name} contains no text.")
    return text


# A PDF's text is at most max_input_chars (200,000 by default): a few hundred pages of prose. More pages than
# MAX_PDF_PAGES is refused from the page tree's count, before any page is read, or while the tree is walked when
# the count understates it; text is extracted page by page
# and the reading stops at the first page past the character limit.
MAX_PDF_PAGES = 1_000


def _read_pdf(name: str, data: bytes) -> str:
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError, PdfReadError

    from services.config import get_settings

    max_chars = get_settings().max_input_chars
    try:
        # The reader walks the whole page tree before the first page: a tree whose /Count understates it is
        # stopped while it is walked, at MAX_PDF_PAGES pages with as many nodes between them.
        # (pypdf counts both the pages and the /Pages nodes above them: twice the pages is room for any tree)
        with apply_configuration(page_tree_maximum_entries=2 * MAX_PDF_PAGES):
            reader = PdfReader(io.BytesIO(data))
            declared = reader.trailer["/Root"]["/Pages"].get("/Count", 0)
            if isinstance(declared, int) and declared > MAX_PDF_PAGES:
                raise _too_many_pages(name, f"{declared:,}")
            pages_of = list(reader.pages)
        pages: list[str] = []
        n_chars = 0
        for k, page in enumerate(pages_of, 1):  # a count that understates the tree is caught here
            if k > MAX_PDF_PAGES:
                raise _too_many_pages(name, f"more than {MAX_PDF_PAGES:,}")
            text = (page.extract_text() or "").strip()
            n_chars += len(text) + (2 if text and pages else 0)  # with the blank line that joins the pages
            if n_chars > max_chars:
                raise InputError(
                    f"{name} has more than {max_chars:,} characters of text by page {k:,}; the limit is "
                    f"{max_chars:,} (about {max_chars // 4:,} tokens). Upload fewer pages or paste the part to check."
                )
            if text:
                pages.append(text)
    except InputError:
        raise
    except LimitReachedError:
        raise _too_many_pages(name, f"more than {MAX_PDF_PAGES:,}") from None
    except PdfReadError as exc:
        raise InputError(f"{name} could not be read as a PDF ({_reason(exc)}).") from None
    except Exception as exc:  # a damaged file makes the parser fail in many ways; none is the user's to debug
        log.info("%s: PDF reader failed: %r", name, exc)
        raise InputError(f"{name} could not be read as a PDF: the file is damaged or not a PDF.") from None
    text = "\n\n".join(pages)
    if not text:
        raise InputError(f"{name} has no extractable text (a scanned PDF?). Paste the text instead.")
    return text


def _too_many_pages(name: str, n: str) -> InputError:
    return InputError(f"{name} has {n} pages; the limit is {MAX_PDF_PAGES:,}. Upload fewer pages or paste the text.")


# What a .docx may unpack to, and hold. Its text is at most max_input_chars (200,000 by default), which Word
# stores in a few MB of XML in a few thousand paragraphs, and pictures are stored compressed already: a file
# over these is a zip bomb, or would take minutes to read (the time goes into each paragraph, not each byte).
MAX_UNZIPPED_MB = 40  # every part together
MAX_XML_MB = 10  # the XML parts together: what the parser builds a tree of
MAX_PARAGRAPHS = 20_000
MAX_RUNS = 50_000  # runs of text (w:r): each costs an XPath query to read; a run holds words, not letters
_MB = 1024 * 1024


def check_unzipped(name: str, data: bytes, *, limit_mb: int = MAX_UNZIPPED_MB, xml_mb: int = MAX_XML_MB) -> None:
    """InputError when the zip archive `data` unpacks to more than `limit_mb` (or its XML parts to more than
    `xml_mb`), checked before any parser opens it.

    First the sizes its directory declares; then every member is decompressed a chunk at a time, counting, and
    the count stops at the limit, so an archive whose directory under-states its members (zipfile stops at the
    declared size and fails on the checksum) is refused too, having held one chunk in memory at a time."""
    import zipfile
    import zlib

    limit = limit_mb * _MB
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        raise InputError(f"{name} could not be read as a Word document: it is not a .docx file (a .doc?).") from None
    too_big = InputError(f"{name} unpacks to more than {limit_mb} MB (an archive bomb?). Paste the text instead.")
    too_much_xml = InputError(
        f"{name} holds more than {xml_mb} MB of text and markup; the limit is {xml_mb} MB. Paste the part to check."
    )
    with archive:
        members = archive.infolist()
        xml_limit = xml_mb * _MB
        if sum(m.file_size for m in members) > limit:
            raise too_big
        if sum(m.file_size for m in members if _is_xml(m.filename)) > xml_limit:
            raise too_much_xml
        total = xml = 0
        try:
            for m in members:
                with archive.open(m) as f:
                    is_xml, first = _is_xml(m.filename), True
                    while chunk := f.read(_MB):
                        if first:  # XML under another name is XML to the parser: a part's name is not its type
                            is_xml, first = is_xml or _looks_like_xml(chunk), False
                        total += len(chunk)
                        xml += len(chunk) if is_xml else 0
                        if total > limit:
                            raise too_big
                        if xml > xml_limit:
                            raise too_much_xml
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
            # a checksum that does not match (a directory that lies), a member cut short, encryption, ...
            log.info("%s: zip member unreadable: %r", name, exc)
            raise _damaged(name) from None


def _is_xml(member: str) -> bool:
    return member.lower().endswith((".xml", ".rels"))


def _looks_like_xml(head: bytes) -> bool:
    return head.startswith((b"\xff\xfe", b"\xfe\xff")) or head[:64].lstrip(b" \t\r\n\xef\xbb\xbf").startswith(b"<")


def _read_docx(name: str, data: bytes) -> str:
    import zipfile

    import docx

    check_unzipped(name, data)
    try:
        document = docx.Document(io.BytesIO(data))
        paragraphs = document.paragraphs
        runs = int(document.element.body.xpath("count(.//w:r)"))  # counted by lxml, at C speed
        for what, n, limit in (("paragraphs", len(paragraphs), MAX_PARAGRAPHS), ("runs of text", runs, MAX_RUNS)):
            if n > limit:
                raise InputError(f"{name} has {n:,} {what}; the limit is {limit:,}. Paste the part to check.")
        return "\n\n".join(t for t in (p.text for p in paragraphs) if t.strip())
    except InputError:
        raise
    except zipfile.BadZipFile:
        raise InputError(f"{name} could not be read as a Word document: it is not a .docx file (a .doc?).") from None
    except Exception as exc:  # broken XML inside (lxml), missing parts, ...: all mean a damaged document
        log.info("%s: Word reader failed: %r", name, exc)
        raise _damaged(name) from None


def _damaged(name: str) -> InputError:
    return InputError(
        f"{name} could not be read as a Word document: the file is damaged. Open and save it again, or paste the text."
    )


def _reason(exc: Exception) -> str:
    """The first line of a parser's message, without any file path in it."""
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return re.sub(r"(?:[A-Za-z]:)?[\\/][^\s'\"]+", "…", first)[:160]


def check_pair(reference: str, candidate: str, *, max_chars: int) -> list[str]:
    """Sentences of the candidate, or InputError saying what is wrong with the pair."""
    if not (reference or "").strip():
        raise InputError("The reference is empty. Paste or upload the text to check against.")
    if not (candidate or "").strip():
        raise InputError("The candidate is empty. Paste or upload the text to check.")
    for label, text in (("reference", reference), ("candidate", candidate)):
        if len(text) > max_chars:
            raise InputError(
                f"The {label} is {len(text):,} characters; the limit is {max_chars:,} "
                f"(about {max_chars // 4:,} tokens). Shorten it or split it into several documents."
            )
    sentences = split_sentences(candidate)
    if not sentences:
        raise InputError("The candidate has no sentence to check (only punctuation or whitespace).")
    return sentences


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token for English)."""
    return len(text) // 4 + 1


def diff_html(before: str, after: str) -> str:
    """Word-level diff as HTML: removed words struck through, added words highlighted."""
    a, b = before.split(), after.split()
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(html.escape(" ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f'<del class="cs-del">{html.escape(" ".join(a[i1:i2]))}</del>')
        if j2 > j1:
            out.append(f'<ins class="cs-ins">{html.escape(" ".join(b[j1:j2]))}</ins>')
    return " ".join(out)


def similarity(a: str, b: str) -> float:
    """Similarity of two sentences in [0, 1], ignoring case and spacing: difflib's SequenceMatcher ratio.

    cydifflib is difflib's algorithm compiled (same matching blocks, same ratio, about 9x faster; a test
    holds it to difflib's numbers). rapidfuzz's ratio would be faster still but is another measure (the
    longest common subsequence, never below this one), which would move alignments near their thresholds.
    """
    na, nb = " ".join(a.lower().split()), " ".join(b.lower().split())
    if not na or not nb:
        return 0.0
    if na == nb:  # a quote as written: the ratio of a string with itself is 1 (most of a judge's quotes)
        return 1.0
    return cydifflib.SequenceMatcher(a=na, b=nb, autojunk=False).ratio()


# The one table reader lives in services/tables.py; this name stays for the callers that import it from here.
read_records = read_rows
