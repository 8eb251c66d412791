"""Prompts are data: a name, a version that goes into the cache key and the run record, a template."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Prompt:
    """A versioned prompt template with `{placeholders}` filled by `render`."""

    name: str
    version: str
    source: str
    template: str

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    def render(self, **values: str) -> str:
        """The template with each `{key}` replaced by its value, in one pass over the template only.

        A value is never searched for placeholders: a reference that contains the literal text
        `{candidate}` stays as it is, and JSON braces in the template are left alone.
        """
        return render_template(self.template, values)


def render_template(template: str, values: dict[str, str]) -> str:
    """One-pass substitution of `{key}` for the given keys (keys may contain spaces, as the papers' do)."""
    if not values:
        return template
    keys = sorted(values, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape("{" + k + "}") for k in keys))
    return pattern.sub(lambda m: str(values[m.group(0)[1:-1]]), template)
