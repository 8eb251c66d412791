"""The OpenAI SDK, imported when it is first used rather than with services.llm.

Everything that runs a batch imports the client, including the evidence checker, which never calls a model:
importing `openai` costs a second or more of CPU (its typed models), most of the start-up of
`cli.py evaluate --method evidence` after nltk's. `openai.X` here reads `X` from the real package, imported
then (a thread-safe import; once imported, a dictionary lookup).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any


class _OnFirstUse:
    """Stands for the `openai` package: an attribute read imports it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module("openai"), name)


if TYPE_CHECKING:
    import openai
else:
    openai = _OnFirstUse()
