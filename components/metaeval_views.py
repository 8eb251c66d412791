"""Meta-evaluation views: table and chart helpers with exports, and the cached loaders.

The figures are services.figures.metaeval's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components import background
from components.superseded import superseding
from components.ui import engine
from services import metaeval
from services.export import frame_csv
from services.figures.metaeval import (  # noqa: F401 - the views' public names
    BIN_LABELS,
    BIN_RANGES,
    CONSISTENT,
    INCONSISTENT,
    PALETTE,
    ROUND_COLORS,
    baselines_display,
    correlations_display,
    fmt,
    fmt_ci,
    make_figure3_figure,
    make_histograms_figure,
    make_scatter_figure,
    make_share_figure,
    pct,
    score_bins,
)

PNG_NOTE = "Download any chart as PNG with the camera icon in its toolbar (top right of the chart)."
CONFUSION_NOTE = (
    "Rows: the human label; columns: the prediction. Consistent is the positive class (as the DCR paper reads "
    "Figure 3), so precision is the share of items marked consistent that humans call consistent, and recall the "
    "share of consistent items marked so; low precision means inconsistent items passed as consistent. "
    "The CSV has the counts and every metric."
)


def metric_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


# -- streamlit helpers -----------------------------------------------------------------------------------
def csv_button(df: pd.DataFrame, file_name: str, key: str, label: str = "CSV") -> None:
    """A download button for a table as CSV (generated on click)."""
    st.download_button(
        label,
        lambda: frame_csv(df),
        file_name=file_name,
        mime="text/csv",
        key=key,
        icon=":material/download:",
        on_click="ignore",
        type="tertiary",
    )


def show_table(
    display: pd.DataFrame,
    file_name: str,
    key: str,
    *,
    raw: pd.DataFrame | None = None,
    column_config: dict[str, Any] | None = None,
) -> None:
    """A table with its CSV export (the raw numbers when given, else what is shown)."""
    st.dataframe(display, hide_index=True, width="stretch", column_config=column_config, key=f"{key}_df")
    csv_button(raw if raw is not None else display, file_name, f"{key}_csv")


def show_chart(fig: go.Figure, file_name: str, key: str) -> None:
    """A plotly chart with its toolbar always visible; the camera button saves it as PNG."""
    st.plotly_chart(
        fig,
        key=key,
        config={
            "displayModeBar": True,
            "displaylogo": False,
            "modeBarButtonsToRemove": ["lasso2d", "select2d"],
            "toImageButtonOptions": {"format": "png", "filename": file_name, "scale": 2},
        },
    )


def show_notes(notes: Sequence[str], *, kind: str = "caption") -> None:
    for n in dict.fromkeys(n for n in notes if n):
        if kind == "info":
            st.info(n, icon=":material/info:")
        else:
            st.caption(f":material/info: {n}")


# -- cached data and background intervals ---------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def running_batches() -> metaeval.RunningBatches:
    """The server's last read of each running batch: a new read of one reads only what changed since."""
    return metaeval.RunningBatches()


@st.cache_data(show_spinner=False, max_entries=8, ttl=3600)
def _load_data(batch_id: int, stamp: str) -> metaeval.BatchData:
    """A batch's items, read once per state of the batch (`stamp` changes when results change): what every
    tab but Sentence level and Human agreement needs, several times faster to read than the verdicts. A
    running batch's items are read from the last read (only the items updated since: RunningBatches)."""
    return running_batches().load(engine(), batch_id)


@st.cache_data(show_spinner=False, max_entries=4, ttl=3600)
def _load_full(batch_id: int, stamp: str) -> metaeval.BatchData:
    """The batch with its round-0 sentence verdicts and human votes (the items come from load_data; a running
    batch's sentences from the last read, only those of the items changed since: RunningBatches)."""
    return running_batches().with_sentences(engine(), load_data(batch_id, stamp))


@st.cache_data(show_spinner=False, max_entries=8, ttl=3600)
def _baseline_values(batch_id: int, stamp: str, bstamp: str, _item_ids: tuple[int, ...]) -> pd.DataFrame:
    """Stored baseline values of the batch's finished items (`bstamp` changes when values are added)."""
    return metaeval.cached_baselines(engine(), list(_item_ids), batch_id=batch_id)


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)
def _estimates(
    batch_id: int,
    stamp: str,
    bstamp: str,
    seed: int,
    n_boot: int,
    full: bool,
    parts: tuple[str, ...],
    _data: metaeval.BatchData,
    _values: pd.DataFrame,
) -> metaeval.Estimates:
    """metaeval.estimates of these parts, computed in the page: points (n_boot=0) always, intervals for
    batches where that is quick."""
    return metaeval.estimates(_data, _values, seed=seed, n_boot=n_boot, parts=parts)


# A batch's newer stamp replaces its entries (components/superseded.py): a running batch keeps one of each.
load_data = superseding(_load_data, stamps=("stamp",))
load_full = superseding(_load_full, stamps=("stamp",))
baseline_values = superseding(_baseline_values, stamps=("stamp", "bstamp"))
estimates = superseding(_estimates, stamps=("stamp", "bstamp"))


QUICK_SECONDS = 1.5  # bootstraps estimated below this run in the page; longer ones in the background
REFRESH_SECONDS = 30.0  # while a batch runs, its figures are recomputed at most this often


@st.cache_resource(show_spinner=False)
def _throttle() -> metaeval.StampThrottle:
    return metaeval.StampThrottle(REFRESH_SECONDS)


def view_stamp(batch: Any) -> str:
    """The stamp the batch's cached data and figures are keyed on: taken again at most every REFRESH_SECONDS
    while the batch is queued or running (shared by every session of this server)."""
    return _throttle().stamp(engine(), batch.id, running=batch.status in ("queued", "running"))


def parts_for(open_tabs: Iterable[str]) -> tuple[str, ...]:
    """The parts of the estimates the open tabs show (the others are not computed)."""
    wanted = {"Summary level": "correlations", "Human agreement": "agreement", "Baselines": "baselines"}
    return tuple(p for p in metaeval.PARTS if p in {wanted.get(t) for t in open_tabs})


def interval_estimates(
    data: metaeval.BatchData,
    values: pd.DataFrame,
    *,
    stamp: str,
    bstamp: str,
    seed: int,
    n_boot: int,
    parts: tuple[str, ...] = metaeval.PARTS,
) -> tuple[metaeval.Estimates, list[str]]:
    """The estimates of `parts` with bootstrap intervals when they are at hand, else their point estimates
    (without the alphas when `data` has no sentences) and the keys under which start_intervals computes the
    missing intervals in the background, one part each; call that once the page is drawn."""
    bid = data.batch.id
    n_baselines = int(values.notna().any().sum()) if len(values) else 0
    in_memory = engine().url.database in (None, "", ":memory:")  # a child process could not read it
    quick = metaeval.bootstrap_seconds(data, n_boot, n_baselines, parts) < QUICK_SECONDS
    if n_boot <= 0 or in_memory or quick:
        if "agreement" in parts and not data.has_sentences and n_boot > 0:
            data = load_full(bid, stamp)
        return estimates(bid, stamp, bstamp, seed, n_boot, data.has_sentences, parts, data, values), []
    found: dict[str, Any] = {}
    pending = []
    for part in parts:
        key = f"me-ci:{bid}:{stamp}:{bstamp}:{seed}:{n_boot}:{part}"
        task = background.get(key)
        if task is not None and task.future.done() and not task.future.cancelled() and task.error() is None:
            found[part] = getattr(task.future.result(), part)
        else:
            pending.append(key)
    points = estimates(
        bid, stamp, bstamp, seed, 0, data.has_sentences, tuple(p for p in parts if p not in found), data, values
    )
    if not pending:
        return metaeval.Estimates(**{p: found.get(p) for p in metaeval.PARTS}, n_boot=n_boot, seed=seed), []
    merged = {p: found.get(p, getattr(points, p)) for p in metaeval.PARTS}
    return metaeval.Estimates(**merged, n_boot=0, seed=seed), pending


def start_intervals(key: str, batch_id: int, *, seed: int, n_boot: int) -> background.Task:
    """Compute one part's intervals (the key's last field) in the background child process, which reads the
    batch itself (a failed attempt is not repeated until the batch or the settings change)."""
    task = background.get(key)
    if task is not None and task.future.done() and task.error() is not None:
        return task
    part = key.rsplit(":", 1)[1]
    url = engine().url.render_as_string(hide_password=False)
    return background.submit_process(
        key,
        metaeval.estimates_from_db,
        url,
        batch_id,
        seed=seed,
        n_boot=n_boot,
        parts=(part,),
        group=f"me-ci:{batch_id}:{part}",
    )


def poll(task: background.Task, what: str) -> None:
    """Show a task's progress and rerun the page when it is done (checks every second)."""

    @st.fragment(run_every=1.0)
    def _poll() -> None:
        if task.future.done():
            st.rerun()
        if task.total_units:
            st.progress(
                task.fraction,
                text=f"{what}: {task.stage}, {task.done_units:,} of {task.total_units:,} items · {task.elapsed:.0f} s",
            )
        else:
            st.caption(f":material/hourglass_top: {what}… {task.elapsed:.0f} s")

    _poll()


# -- selective prediction ---------------------------------------------------------------------------------
SELECTIVE_NOTE = (
    "The score is read as the judge's probability that the summary is consistent. Risk-coverage: the items "
    "whose scores are farthest from 0.5 are decided first; each point is the accuracy on the share decided, "
    "with its 95% interval (a judge that knows when it does not know keeps its accuracy high as the share "
    "falls). Reliability: the items binned by score (0.1 wide), each bin's share consistent against its mean "
    "score; on the diagonal the scores are calibrated, and ECE is the size-weighted mean gap."
)


def render_selective(items: pd.DataFrame, batch_id: int) -> None:
    """Risk-coverage curve and reliability diagram of a batch's scores, with their numbers as CSV."""
    from services.figures.calibration import make_reliability_figure, make_risk_coverage_figure

    st.subheader("Knowing when it does not know: risk-coverage and reliability")
    s = metaeval.selective(items)
    if s.n == 0:
        st.caption(":material/info: No item has both a score and a binary human label: the curves need them.")
        return
    st.caption(SELECTIVE_NOTE)
    show_notes(s.notes)
    left, right = st.columns(2)
    with left:
        show_chart(make_risk_coverage_figure(s.risk_coverage.curve, s.own), f"batch-{batch_id}-risk-coverage", "me_rc")
        aurc = s.risk_coverage.aurc
        own = ""
        if s.own is not None and s.own[1] is not None:
            own = f" Its own verdicts: {s.own[0]:.0%} decided, accuracy {s.own[1]:.3f} (n = {s.own[2]:,})."
        st.caption(f"n = {s.n:,} items; area under the risk-coverage curve {fmt(aurc)} (lower is better).{own}")
        csv_button(s.risk_coverage.curve, f"batch-{batch_id}-risk-coverage.csv", "me_rc_csv", label="Curve (CSV)")
    with right:
        rel = s.reliability
        show_chart(make_reliability_figure(rel.bins, ece=rel.ece, n=rel.n), f"batch-{batch_id}-reliability", "me_rel")
        st.caption(f"n = {rel.n:,} items in {len(rel.bins)} bins; ECE {fmt(rel.ece)}.")
        csv_button(rel.bins, f"batch-{batch_id}-reliability.csv", "me_rel_csv", label="Bins (CSV)")
