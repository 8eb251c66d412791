"""The reproducibility bundle: configuration, model, prompt ids and hashes, seeds, dataset hash."""

from __future__ import annotations

import hashlib
import tomllib
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import metaeval as db
from db.redact import is_secret_name, redact_url
from services.config import PROJECT_ROOT
from services.dcr import METHOD_LABELS
from services.metaeval.common import DEFAULT_BOOT, DEFAULT_SEED, DEFAULT_THRESHOLD
from services.prompts import dcr as prompts
from services.text import InputError


# -- reproducibility bundle ----------------------------------------------------------------------------
def app_version() -> str:
    """The version in pyproject.toml."""
    try:
        with (PROJECT_ROOT / "pyproject.toml").open("rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def prompt_record(role: str, prompt_id: str) -> dict[str, Any]:
    """A prompt id with the sha256 of its template (the rule converter has none: it is code)."""
    from services.prompts import nli as nli_prompts

    known = {p.id: p for p in (*prompts.ALL, *nli_prompts.ALL)}
    p = known.get(prompt_id)
    if role == "window":  # Sent-NLI / QG-QA record their window with their prompts
        return {"role": role, "id": prompt_id, "sha256": None, "source": "summary sentences per window (w)"}
    if p is not None:
        return {"role": role, "id": prompt_id, "sha256": _sha256(p.template), "source": p.source}
    if prompt_id.startswith("evidence@"):
        return {
            "role": role,
            "id": prompt_id,
            "sha256": None,
            "source": "offline evidence checker (services.dcr.evidence): no prompt, no model call",
        }
    if prompt_id.startswith("rule@"):
        return {
            "role": role,
            "id": prompt_id,
            "sha256": None,
            "source": "deterministic rule converter (services.dcr.rule_mark): no prompt",
        }
    return {"role": role, "id": prompt_id, "sha256": None, "source": "unknown to this version of the app"}


_public_url = redact_url  # the bundle's base URL: no credentials


def _public_params(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters without any whose name says it carries a credential."""
    return {k: v for k, v in params.items() if not is_secret_name(k)}


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat() if dt else None


def bundle(
    engine: Engine,
    batch_id: int,
    *,
    seed: int = DEFAULT_SEED,
    n_boot: int = DEFAULT_BOOT,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any]:
    """What it takes to reproduce a batch and its meta-evaluation. Never contains an API key."""
    from services.jobs.batches import progress

    p = progress(engine, batch_id)
    if p is None:
        raise InputError(f"Batch {batch_id} does not exist.")
    b = p.batch
    with Session(engine) as session:
        dataset = db.dataset_public(session=session, dataset_id=b.dataset_id)
    return {
        "kind": "consistency-studio/reproducibility-bundle",
        "app": {"name": "Consistency Studio", "version": app_version()},
        "batch": {
            "id": b.id,
            "name": b.name,
            "status": b.status,
            "task": b.task,
            "criteria": b.criteria,
            "method": b.method,
            "method_label": METHOD_LABELS.get(b.method, b.method),
            "converter": b.amc,
            "max_rounds": b.max_rounds,
            "concurrency": b.concurrency,
            "item_limit": b.item_limit,
            "created_at": _iso(b.created_at),
            "started_at": _iso(b.started_at),
            "finished_at": _iso(b.finished_at),
        },
        "model": {
            "backend": b.backend_kind,
            "model": b.model,
            "base_url": _public_url(b.base_url),
            "params": _public_params(dict(b.params)),
        },
        "prompts": [prompt_record(role, pid) for role, pid in sorted(b.prompt_versions.items())],
        "seeds": {
            "bootstrap_seed": seed,
            "bootstrap_resamples": n_boot,
            "model_sampling": "no seed is sent to the model; temperature is in model.params, and every answer is "
            "cached by (model, prompt version, messages, parameters), so a re-run of the same batch "
            "reproduces the same verdicts from the cache",
        },
        "meta_evaluation": {
            "threshold": threshold,
            "positive_class": "consistent",
            "consistent_when": "score == 1 (Table 4, Figure 3)" if threshold >= 1.0 else f"score >= {threshold:g}",
        },
        "dataset": None
        if dataset is None
        else {
            "id": dataset.id,
            "name": dataset.name,
            "format": dataset.format,
            "task": dataset.task,
            "sha256": dataset.sha256,
            "n_items": dataset.n_items,
            "n_rejected": dataset.n_rejected,
            "label_kinds": list(dataset.label_kinds),
        },
        "counts": {
            "items": p.total,
            "done": p.done,
            "failed": p.failed,
            "pending": p.pending,
            "running": p.running,
            "calls": p.calls,
            "cache_hits": p.cache_hits,
            "tokens": p.tokens,
        },
    }


def public_params(params: dict[str, Any]) -> dict[str, Any]:
    """Model parameters fit to show or export: none whose name says it carries a credential."""
    return _public_params(params)
