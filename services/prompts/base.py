"""Prompts are data: a name, a version that goes into the cache key and the run record, a template."""

from __future__ import annotations

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
        out = self.template
        for key, value in values.items():
            out = out.replace("{" + key + "}", value)
        return out
