"""README.md and docs/ cannot drift from the code: every link, file, function, test and make target they name exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = {p.name for p in ROOT.iterdir()} - {".git", ".venv", "data"}

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[\w.\-/]+$")
SYMBOL_DEF = (
    r"^\s*(?:async\s+def|def|class)\s+{name}\b"  # a function or class
    r"|^\s*{name}\s*(?::[^=]+)?="  # an assignment
    r"|^\s*from\s+\S+\s+import\s+.*\b{name}\b"  # a name a package re-exports
)
DOTTED = re.compile(r"^((?:services|db|components|clitools)(?:\.\w+)+)(?:\(\))?$")
MAKE = re.compile(r"^make ([\w-]+)")


def _docs_text(path: Path) -> str:
    """The text of a page without its fenced code blocks (they show commands and output, not names)."""
    return re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)


def _defines(path: Path, name: str) -> bool:
    text = path.read_text(encoding="utf-8")
    return re.search(SYMBOL_DEF.format(name=re.escape(name)), text, flags=re.M) is not None


def _made_by_the_user(path: str) -> bool:
    """A file the docs tell users to create, which git is told to ignore (`.streamlit/secrets.toml`)."""
    done = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, check=False)
    return done.returncode == 0


def _module_file(parts: list[str]) -> tuple[Path | None, list[str]]:
    """The longest prefix of a dotted name that is a module file, and the attribute names after it."""
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate, parts[cut:]
    return None, parts


def _problems(page: Path) -> list[str]:
    text = _docs_text(page)
    out: list[str] = []
    for m in LINK.finditer(text):
        target = (m.group(1) or m.group(2)).split("#", 1)[0]
        if not target or re.match(r"^[a-z]+:", target):
            continue
        if not (page.parent / target).exists():
            out.append(f"link to {target!r} leads nowhere")
    make_targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), flags=re.M))
    for m in CODE.finditer(text):
        span = m.group(1).strip()
        if mt := MAKE.match(span):
            if mt.group(1) not in make_targets:
                out.append(f"`{span}`: the Makefile has no target {mt.group(1)!r}")
            continue
        if "__mutmut_" in span:  # a mutant's name (mutmut), not a name in the code
            continue
        if md := DOTTED.match(span):
            file, rest = _module_file(md.group(1).split("."))
            if file is None:
                out.append(f"`{span}`: no such module")
            elif rest and not _defines(file, rest[0]):
                out.append(f"`{span}`: {file.relative_to(ROOT)} defines no {rest[0]!r}")
            continue
        path_part, _, symbols = span.partition("::")
        if not PATH.match(path_part) or "/" not in path_part and path_part not in TOP:
            continue
        if path_part.split("/", 1)[0] not in TOP:
            continue
        target = ROOT / path_part
        if not target.exists() and not _made_by_the_user(path_part):
            out.append(f"`{span}`: {path_part} does not exist")
            continue
        for name in filter(None, symbols.split("::")):
            name = name.split("[", 1)[0]
            if not _defines(target, name):
                out.append(f"`{span}`: {path_part} defines no {name!r}")
    return out


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_file_function_and_test_named_in_the_docs_exists(page: Path) -> None:
    assert _problems(page) == []


def test_the_checker_notices_a_missing_file_function_test_and_target(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "[gone](nowhere.md) `services/no_such.py` `services/dcr/results.py::no_such_function` "
        "`tests/conformance/test_paper000_dcr.py::test_no_such` `services.dcr.results.no_such` `make no-such`\n"
        "`services/dcr/results.py::eq3` `services.dcr.results.eq3` `make test` `pairs.jsonl`\n",
        encoding="utf-8",
    )
    problems = _problems(page)
    assert len(problems) == 6, problems


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


def test_the_readme_names_the_buttons_as_the_pages_label_them():
    """The first session's quoted button ("press ...") is a label the Evaluate page shows."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pressed = re.findall(r'press "([^"]+)"', readme)
    assert pressed, "the README's first session names a button"
    evaluate = (ROOT / "pages" / "1_Evaluate.py").read_text(encoding="utf-8")
    for label in pressed:
        assert f'"{label}"' in evaluate, label
