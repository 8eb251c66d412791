"""The judge card: how far to trust one judge on one dataset.

Agreement with the human labels (services.judges.agreement), unknown and failure rates, cost per 1,000
documents, linked ConsEval and DHP results, and the dataset's consistency rate three ways
(services.judges.estimate): the judge's raw rate, the classical estimate from the labelled items alone, and
the prediction-powered estimate from both. Every number carries its n and, where it is an estimate, an
interval at the card's level.

The target is the human label (1 consistent, 0 inconsistent) when the dataset has labels, else the human
score in [0, 1]. An item the judge could not score keeps its place with a neutral prediction of 0.5: PPI stays
valid for any prediction rule, and dropping such items could bias the estimate when failures go with the label.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.models import BatchPublic
from services.judges import data
from services.judges.agreement import Agreement, Metric, agreement
from services.judges.estimate import RateEstimates, rates, with_known_values
from services.judges.links import Linked, linked_results
from services.stats import binomial

NEUTRAL = 0.5


@dataclass(frozen=True)
class Cost:
    """What the judge spent over the items it finished, and per 1,000 documents."""

    n_items: int
    calls: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    price_input: float | None = None  # USD per million input tokens
    price_output: float | None = None

    def per_1000(self) -> dict[str, float | None]:
        """Calls, tokens, seconds and (with prices) USD per 1,000 documents."""
        k = 1000.0 / self.n_items if self.n_items else math.nan
        out: dict[str, float | None] = {
            "calls": self.calls * k,
            "prompt_tokens": self.prompt_tokens * k,
            "completion_tokens": self.completion_tokens * k,
            "seconds": self.seconds * k,
            "usd": None,
        }
        if self.price_input is not None or self.price_output is not None:
            usd_in = self.prompt_tokens * (self.price_input or 0.0)
            usd = (usd_in + self.completion_tokens * (self.price_output or 0.0)) / 1e6
            out["usd"] = usd * k
        return {key: (None if v is None or not math.isfinite(v) else v) for key, v in out.items()}

    def as_dict(self) -> dict:
        return {
            "items": self.n_items,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
            "per_1000_documents": self.per_1000(),
        }


@dataclass(frozen=True)
class JudgeInfo:
    """Who a judge is: a batch (key: its id) or a score column (key: the stored column's name)."""

    key: str
    name: str
    method: str
    model: str
    batch_id: int | None = None

    @classmethod
    def of_batch(cls, batch: BatchPublic) -> JudgeInfo:
        model = "" if batch.method == "evidence" else batch.model
        return cls(str(batch.id), judge_name(batch), batch.method, model, int(batch.id))  # type: ignore[arg-type]

    @classmethod
    def of_column(cls, metric: str) -> JudgeInfo:
        from services.judges.columns import PREFIX

        label = metric.removeprefix(PREFIX)
        kind = "score column" if metric.startswith(PREFIX) else "local metric"
        return cls(metric, f"{label} ({kind})", "column", "")


@dataclass(frozen=True)
class JudgeCard:
    """One judge (a batch or a score column) on one dataset: the card's every number."""

    batch_id: int | None
    judge: str
    method: str
    model: str
    target: str  # "label" or "score": what the rate is of
    n: int  # items of the batch
    n_done: int
    n_labelled: int  # items with a human judgment of the target kind
    rates: RateEstimates
    agreement: Agreement
    unknown_rate: Metric  # share of judged sentences left unknown (the sentences of items that did not fail)
    failure_rate: Metric  # share of items that failed
    cost: Cost
    linked: tuple[Linked, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    label_origins: dict[str, int] = field(default_factory=dict)  # labelled items by how they were chosen

    @property
    def n_not_random(self) -> int:
        """Labels whose items were not a random draw (chosen where judges are unsure, by hand, or unknown)."""
        return sum(v for k, v in self.label_origins.items() if k not in data.RANDOM_ORIGINS)

    @property
    def alpha(self) -> float:
        return self.rates.alpha

    def as_dict(self, mode: str = "live") -> dict:
        """The card as JSON (what `cli.py card` writes): its rates in the reading asked for, "live" (confidence
        sequences, the default) or "planned" (fixed-sample), named in "reading" as `cli.py compare` names its own."""
        classical, ppi = self.rates.read(mode)
        return {
            "reading": self.rates.reading(mode),
            "judge": self.judge,
            "batch": self.batch_id,
            "method": self.method,
            "model": self.model,
            "target": self.target,
            "alpha": self.alpha,
            "n": self.n,
            "n_done": self.n_done,
            "n_labelled": self.n_labelled,
            "label_origins": dict(self.label_origins),
            "n_not_random": self.n_not_random,
            "judge_rate": self.rates.judge_rate,
            "n_judged": self.rates.n_judged,
            "n_abstained": self.rates.n_abstained,
            "n_failed": self.rates.n_failed,
            "ppi": ppi.as_dict(),
            "classical": classical.as_dict(),
            "agreement": self.agreement.as_dict(),
            "unknown_rate": self.unknown_rate.as_dict(),
            "failure_rate": self.failure_rate.as_dict(),
            "cost": self.cost.as_dict(),
            "linked": [vars(x) for x in self.linked],
            "notes": list(self.notes),
        }


def judge_name(batch: BatchPublic) -> str:
    """How a judge is named: its method and model (the evidence checker needs no model)."""
    from services.dcr import METHOD_LABELS
    from services.nli import paradigms as nli

    if batch.method == "evidence":
        return f"#{batch.id} evidence checker"
    short = {**{k: k.upper() for k in METHOD_LABELS}, **{k: k for k in nli.METHOD_LABELS}}
    return f"#{batch.id} {short.get(batch.method, batch.method)} · {batch.model or 'model'}"


def _proportion(k: int, n: int, ci: float) -> Metric:
    """k of n with a Wilson interval."""
    if n == 0:
        return Metric(None, 0, note="Nothing to count.")
    lo, hi = binomial.wilson(k, n, ci)
    return Metric(k / n, n, lo, hi)


def card_from_frames(
    judge_of: BatchPublic | JudgeInfo,
    judge: pd.DataFrame,
    human: pd.DataFrame,
    *,
    alpha: float = 0.05,
    price_input: float | None = None,
    price_output: float | None = None,
    seed: int = 0,
    n_boot: int = 1000,
    linked: tuple[Linked, ...] = (),
    budget: int | None = None,
) -> JudgeCard:
    """The card of one judge from its frame (data.judge_frame) and the dataset's (data.human_frame); `budget`:
    the labels kept, planned before labelling (it names the planned reading)."""
    info = judge_of if isinstance(judge_of, JudgeInfo) else JudgeInfo.of_batch(judge_of)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    ci = 1.0 - alpha
    df = human.merge(judge, on="item_id", how="inner")
    notes: list[str] = []
    has_labels = bool(df["label"].notna().any())
    target_col = "label" if has_labels else "hscore"
    y_all = df[target_col].to_numpy(dtype=float)
    if not has_labels and df["hscore"].notna().any():
        notes.append("The dataset has human scores but no labels: the rate is the mean human score.")
    pred = df["prediction"].to_numpy(dtype=float)
    missing = ~np.isfinite(pred)
    if missing.any():
        notes.append(
            f"{int(missing.sum())} item(s) have no score from the judge (failed or unfinished); they count with a "
            f"neutral prediction of {NEUTRAL} in the PPI estimate, which stays valid."
        )
    yhat = np.where(missing, NEUTRAL, pred)
    labelled = np.isfinite(y_all)
    origin = df["origin"].to_numpy(dtype=object) if "origin" in df else np.full(len(df), "imported", dtype=object)
    origin = np.where(labelled, np.where(origin == "", "imported", origin), "")
    chosen = labelled & ~np.isin(origin, data.RANDOM_ORIGINS)
    drawn = labelled & ~chosen
    est = rates(y_all[drawn], yhat[drawn], yhat[~labelled], verdicts=df["verdict"].to_numpy(float), alpha=alpha)
    origins = {o: int((origin[labelled] == o).sum()) for o in data.ORIGIN_NAMES if (origin[labelled] == o).any()}
    if chosen.any():
        known = y_all[chosen]
        est = replace(
            est,
            classical=with_known_values(est.classical, known, len(df)),
            ppi=with_known_values(est.ppi, known, len(df)),
            live_classical=with_known_values(est.live_classical, known, len(df)),  # type: ignore[arg-type]
            live_ppi=with_known_values(est.live_ppi, known, len(df)),  # type: ignore[arg-type]
        )
        how = ", ".join(f"{origins[o]} {data.ORIGIN_NAMES[o]}" for o in origins if o not in data.RANDOM_ORIGINS)
        notes.append(
            f"{int(chosen.sum())} of the {int(labelled.sum())} labels were not a random draw ({how}): they count as "
            f"the known values of their items, and the rate intervals rest on the {int(drawn.sum())} random ones. "
            "Agreement is measured on every label, so it describes those items too."
        )
    n_imported = origins.get("imported", 0)
    if 0 < n_imported < len(df):
        notes.append(
            f"{n_imported} imported labels cover {n_imported} of the {len(df)} items: the intervals assume they are a "
            "random draw of the dataset's items."
        )
    lab = df["label"].to_numpy(dtype=float)
    if not has_labels:
        lab = np.where(np.isfinite(y_all), (y_all >= 0.5).astype(float), np.nan)
        if labelled.any():
            notes.append(
                "Balanced accuracy, AUROC and kappa read a human score of 0.5 or more as consistent, and Pearson's r "
                "counts the items of each class that way."
            )
    hs = df["hscore"].to_numpy(dtype=float)
    agree = agreement(
        pred,
        df["verdict"].to_numpy(dtype=float),
        lab,
        hs if np.isfinite(hs).any() else None,
        seed=seed,
        n_boot=n_boot,
        ci=ci,
    )
    finished = df["status"].isin(["done", "failed"])
    # The unknown rate is over the sentences the judge judged: a failed item stores every sentence as unknown,
    # and it counts once, in the failure rate.
    judged = df["status"] == "done"
    n_sent = int(df.loc[judged, "n_sentences"].sum())
    n_unk = int(df.loc[judged, "n_unknown"].sum())
    n_failed = int((df["status"] == "failed").sum())
    n_abstained = int(((df["status"] == "done") & df["verdict"].isna()).sum())
    est = replace(est, n_abstained=n_abstained, n_failed=n_failed, budget=None if budget is None else int(budget))
    if int(finished.sum()) < len(df):
        notes.append(f"The batch has finished {int(finished.sum())} of {len(df)} items: the card will change.")
    if info.method == "column":
        notes.append("A score column's verdict is a value of 0.5 or more; computed elsewhere, it costs nothing here.")
    done = df[finished]
    cost = Cost(
        n_items=int(finished.sum()),
        calls=int(done["calls"].sum()),
        cache_hits=int(done["cache_hits"].sum()),
        prompt_tokens=int(done["prompt_tokens"].sum()),
        completion_tokens=int(done["completion_tokens"].sum()),
        seconds=float(done["latency_ms"].sum()) / 1000.0,
        price_input=price_input,
        price_output=price_output,
    )
    if cost.cache_hits:
        notes.append(f"{cost.cache_hits} answer(s) came from the cache: the calls and tokens count only the rest.")
    return JudgeCard(
        batch_id=info.batch_id,
        judge=info.name,
        method=info.method,
        model=info.model,
        target=target_col if has_labels else "score",
        n=len(df),
        n_done=int((df["status"] == "done").sum()),
        n_labelled=int(labelled.sum()),
        rates=est,
        agreement=agree,
        unknown_rate=_proportion(n_unk, n_sent, ci),
        failure_rate=_proportion(n_failed, int(finished.sum()), ci),
        cost=cost,
        linked=linked,
        notes=tuple(notes),
        label_origins=origins,
    )


def prices_of(config: object) -> tuple[float | None, float | None]:
    """The backend's prices per million input and output tokens, when its configuration has them."""
    return getattr(config, "price_input_per_million", None), getattr(config, "price_output_per_million", None)


def build_cards(
    engine: Engine,
    refs: list[int] | list[int | str],
    *,
    dataset_id: int | None = None,
    source: data.LabelSource = "all",
    budget: int | None = None,
    seed: int = 0,
    alpha: float = 0.05,
    prices: dict[str, tuple[float | None, float | None]] | None = None,
    n_boot: int = 1000,
    with_links: bool = True,
    human: pd.DataFrame | None = None,
    frames: Mapping[int | str, pd.DataFrame] | None = None,
) -> list[JudgeCard]:
    """The cards of these judges over one dataset: batch ids (ints) and score columns (their stored names, with
    `dataset_id`); prices by judge key (a batch's id as text), in USD per million input and output tokens.
    `human` (data.human_frame with these options) and `frames` (each judge's frame by its ref) when the caller
    has read them already."""
    from services.errors import InputError
    from services.judges import columns

    batch_ids = [int(r) for r in refs if isinstance(r, int)]
    found = {b.id: b for b in data.batches(engine, batch_ids)}
    datasets = {b.dataset_id for b in found.values()} | ({dataset_id} if dataset_id is not None else set())
    if not refs:
        raise InputError("Choose at least one judge.")
    if len(datasets) > 1:
        raise InputError("The judges must run over the same dataset to be compared.")
    if not datasets:
        raise InputError("A score column needs its dataset.")
    (ds,) = datasets
    if human is None:
        human = data.human_frame(engine, ds, source=source, budget=budget, seed=seed)
    frames = frames or {}
    cards = []
    for ref in refs:
        if isinstance(ref, int):
            b = found[ref]
            info = JudgeInfo.of_batch(b)
            frame = frames[ref] if ref in frames else data.judge_frame(engine, b)
            links = tuple(linked_results(engine, b.model)) if with_links and b.method != "evidence" else ()
        else:
            frame = frames[ref] if ref in frames else columns.column_frame(engine, ds, ref)
            info, links = JudgeInfo.of_column(ref), ()
        p_in, p_out = (prices or {}).get(info.key, (None, None))
        cards.append(
            card_from_frames(
                info,
                frame,
                human,
                alpha=alpha,
                price_input=p_in,
                price_output=p_out,
                seed=seed,
                n_boot=n_boot,
                linked=links,
                budget=budget,
            )
        )
    return cards


def most_judged(refs: Sequence[int | str], cards: Sequence[JudgeCard]) -> tuple[int | str, str]:
    """The judge (its ref) with the most judged items, the one a comparison of systems reads by default (a judge
    that abstains on most items would leave most of its PPI to the labels), and why, in words; the first on a tie.
    `cards` in the order of `refs` (build_cards keeps it)."""
    if not refs:
        raise ValueError("no judge to choose from")
    counts = [c.rates.n_judged for c in cards]
    k = max(range(len(refs)), key=lambda i: (counts[i], -i))
    c = cards[k]
    others = "; ".join(f"{o.judge}: {counts[i]:,}" for i, o in enumerate(cards) if i != k)
    why = f"{c.judge} by default: it judged the most items ({counts[k]:,} of {c.n:,})" + (
        f"; {others}." if others else "."
    )
    return refs[k], why
