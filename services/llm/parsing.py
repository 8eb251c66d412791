"""Reading a model's JSON reply: lenient parsing with repair, and telling a cut-off answer from a whole one."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import json_repair
from pydantic import ValidationError

T = TypeVar("T")


def loads_lenient(raw: str) -> Any:
    """Parse JSON; on failure repair it with json_repair (code fences, trailing prose, bad quotes)."""
    text = raw.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    value = json_repair.loads(text)
    if value in ("", None):
        raise ValueError("no JSON found in the answer")
    return value


def is_cut_off(raw: str) -> bool:
    """True when the answer's first JSON value opens a string, object or array it never closes."""
    text = raw.strip()
    try:
        json.loads(text)
        return False
    except ValueError:
        pass
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return False
    depth, in_string, escaped = 0, False, False
    for ch in text[min(starts) :]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return False  # the value is whole; anything after it is prose
    return True


def try_parse(raw: str, parse: Callable[[Any], T]) -> tuple[T | None, str | None]:
    try:
        data = loads_lenient(raw)
    except ValueError as exc:
        return None, str(exc)
    try:
        return parse(data), None
    except (ValidationError, ValueError, TypeError, KeyError) as exc:
        first = str(exc).splitlines()[0:3]
        return None, "unexpected shape: " + " ".join(first)[:240]
