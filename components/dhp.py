"""DHP views: text diffs, personal links, result tables, figures and notes for pages/10_DHP.py and
pages/11_Survey.py. The figures themselves are made in services/figures/dhp.py (pure)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from services import dhp
from services.dhp.catalogue import TaskSpec
from services.export import frame_csv
from services.figures import dhp as figs
from services.stats import AlphaResult
from services.text import diff_html

LEVEL_NAMES = {"character": "Character", "word": "Word", "sentence": "Sentence", "original": "Original"}


def render_diff(original: str, perturbed: str | None, *, detail: str = "", error: str | None = None) -> None:
    """The perturbed text as a word diff of its original: removed words struck through, added highlighted."""
    error = None if error is None or pd.isna(error) else error
    if error or perturbed is None or pd.isna(perturbed):  # a text still being written reads NaN from its frame
        st.warning(f"No perturbed text: {error or 'not made yet'}", icon=":material/info:")
        return
    st.html(f'<div class="cs-text">{diff_html(original, perturbed)}</div>')
    if detail:
        st.caption(detail if len(detail) < 240 else detail[:240] + "…")


def render_text(text: str) -> None:
    st.html(f'<div class="cs-text">{html.escape(text)}</div>')


def personal_link(token: str, page: str = "Survey") -> str:
    """The absolute link of a personal page (falls back to a relative one without a browser)."""
    try:
        url = st.context.url or ""
    except Exception:  # no browser context (a headless test run)
        url = ""
    root = url.split("?", 1)[0].rsplit("/", 1)[0] if url else ""
    return f"{root}/{page}?token={token}"


def fmt(x: float | None, digits: int = 2) -> str:
    if x is None or pd.isna(x):
        return "—"
    return f"{x:.{digits}f}"


def fmt_p(p: float | None) -> str:
    if p is None or pd.isna(p):
        return "—"
    return f"{p:.2e}" if p < 0.001 else f"{p:.3f}"


def result_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The per-perturbation table, rounded for reading."""
    out = frame.copy()
    for c in ("mean original", "mean perturbed", "D", "D_wilson", "D_EW", "weight"):
        if c in out:
            out[c] = out[c].map(lambda v: None if v is None or pd.isna(v) else round(float(v), 2))
    for c in ("p", "p (HMP)", "p (HMP, EW)", "p (Wilson)"):
        if c in out:
            out[c] = out[c].map(fmt_p)
    return out


# The embedded demo model scored one text in 2-13 s (median about 7 s) on a shared 2-core machine.
DEMO_SECONDS_PER_SCORE = 5.0


def duration(seconds: float) -> str:
    """A rough duration for an estimate: "about 40 s", "about 12 min", "about 2.5 h"."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


# -- the task ---------------------------------------------------------------------------------------------
def render_task_summary(task: TaskSpec) -> None:
    """What the task evaluates, on which metrics, against what; the definitions and perturbations on request."""
    st.markdown(
        f"**{task.text_label}** judged on "
        + ", ".join(f"**{m.name}**" for m in task.metrics)
        + (f" · against the {task.source_label.lower()}" if task.source_label else "")
    )
    with st.expander("Metric definitions and perturbations"):
        for m in task.metrics:
            st.markdown(f"- **{m.name}**: {m.definition}")
        st.markdown(
            "Perturbations: "
            + "; ".join(f"{p.label} ({'LLM' if p.spec.method == 'llm' else 'rule'})" for p in task.perturbations)
        )


# -- a perturbation set -------------------------------------------------------------------------------------
def render_set_summary(pert: pd.DataFrame, known: dict[str, str]) -> pd.DataFrame:
    """The texts made and missing per perturbation, as a table; returns it (one row per perturbation key)."""
    summary = (
        pert.assign(ok=pert["text"].notna() & pert["error"].isna())
        .groupby("perturbation", sort=False)
        .agg(level=("level", "first"), made=("ok", "sum"), missing=("ok", lambda s: int((~s).sum())))
        .reset_index()
    )
    summary.insert(1, "name", [known.get(k, k) for k in summary["perturbation"]])
    # A heading between the set's dropdown and the table: the table's toolbar floats over whatever is above it.
    st.markdown("**Texts made per perturbation**")
    st.dataframe(
        summary.drop(columns="perturbation").rename(columns={"name": "perturbation"}), hide_index=True, width="stretch"
    )
    return summary


# -- results --------------------------------------------------------------------------------------------------
def render_result_notes(results: Sequence[dhp.DiscernmentResult], n_items: int) -> None:
    """Why D may not reach 1: too few items, tied pairs or few untied pairs."""
    if n_items < 5:
        st.warning(
            f"This set has {n_items} items: the smallest one-sided Wilcoxon p with n pairs is 1/2ⁿ "
            f"= {0.5**n_items:.3f}, so D cannot reach 1 whatever the evaluator does. Use at least 5 items "
            "(the paper uses 100) for a verdict; the sample texts are for trying the workflow.",
            icon=":material/info:",
        )
        return
    untied = [t.n_pairs - t.n_ties for res in results for r in res.perturbations for t in r.tests]
    all_tied = sum(u == 0 for u in untied)
    if all_tied:
        st.caption(
            f"In {all_tied} of {len(untied)} tests the evaluator gave every original and its perturbed text the "
            "same score: no untied pair, so no evidence either way (p = 1, D = 0 there). More repeats r give "
            "finer averaged scores."
        )
    few = min((u for u in untied if u > 0), default=None)
    if few is not None and few < 5:
        st.caption(f"Some tests rest on only {few} untied pairs: their p cannot go below {0.5**few:.3f}.")


def render_result_metrics(results: Sequence[dhp.DiscernmentResult]) -> None:
    """Each evaluator's D_avg, with its other overall scores underneath (side by side for up to four)."""
    cols = st.columns(len(results)) if len(results) <= 4 else None
    for i, res in enumerate(results):
        target: Any = cols[i] if cols else st
        target.metric(
            f"{res.model}: D_avg", fmt(res.d_avg), help="Mean D over perturbations, each level weighted equally"
        )
        target.caption(
            f"D_min {fmt(res.d_min)} · D_EW_avg {fmt(res.d_ew_avg)} · D_EW_min {fmt(res.d_ew_min)} · "
            f"extra, Wilson's HMP: D_wilson_avg {fmt(res.d_wilson_avg)} · D_wilson_min {fmt(res.d_wilson_min)}"
        )
        if res.avg_note:
            target.caption(f"D_avg: {res.avg_note}.")


def render_overall_figure(results: Sequence[dhp.DiscernmentResult], *, has_weights: bool) -> None:
    """The overall scores of every evaluator; without expert weights, no D_EW bars."""
    overall = figs.overall_frame(results)
    if not has_weights:  # no expert weights: no D_EW bars, rather than empty ones in the legend
        overall = overall[~overall["score"].str.startswith("D_EW")]
    st.plotly_chart(figs.make_discernment_figure(overall), width="stretch", key="dhp_fig_overall")
    if not has_weights:
        st.caption("D_EW needs the expert weights of a closed survey (pick one above, or run one under Expert survey).")


def render_perturbation_figure(results: Sequence[dhp.DiscernmentResult], labels: dict[str, str], measure: str) -> None:
    """One measure (D, D_wilson or D_EW) per perturbation and evaluator, then what the measures are."""
    per = pd.DataFrame(
        [
            {
                "model": res.model,
                "perturbation": r.perturbation,
                "label": labels.get(r.perturbation, r.perturbation),
                "value": {"D": r.d, "D_wilson": r.d_wilson, "D_EW": r.d_ew}[measure],
            }
            for res in results
            for r in res.perturbations
        ]
    )
    st.plotly_chart(figs.make_perturbation_figure(per), width="stretch", key="dhp_fig_per")
    st.markdown(
        "**D** = log₀.₀₅ p with p = 1 / Σⱼ 1/pⱼ (the paper's, sections 4.3.2-4.3.3; compare with its Figure 4) · "
        "**D_EW** = log₀.₀₅ p with p = 1 / Σⱼ wⱼ/pⱼ, the expert weights normalised to 1 (the paper's weighted "
        "form) · **D_wilson**, an extra that is not the paper's: log₀.₀₅ p with Wilson's harmonic mean p-value "
        "p = M / Σⱼ 1/pⱼ (weights 1/M summing to 1, as in D_EW), so D_wilson = D − ln M / ln 20. "
        "D = 1 is p = 0.05 on every one of them."
    )
    st.caption(dhp.ZERO_METHOD_NOTE)


def render_result_tables(results: Sequence[dhp.DiscernmentResult], labels: dict[str, str]) -> None:
    """Each evaluator's per-perturbation table in an expander, with CSV and JSON downloads."""
    for res in results:
        with st.expander(f"Per-perturbation table · {res.model}", expanded=len(results) == 1):
            table = dhp.results_frame(res)
            shown = result_table(table)
            shown["perturbation"] = shown["perturbation"].map(lambda k: labels.get(k, k))
            # D first after the row's names: a wide table must not push the result off the right edge.
            front = [c for c in ("perturbation", "level", "metric", "D", "D_EW") if c in shown.columns]
            st.dataframe(
                shown,
                hide_index=True,
                width="stretch",
                placeholder="—",
                column_order=front + [c for c in shown.columns if c not in front],
            )
            c = st.columns(2)
            c[0].download_button(
                "CSV",
                frame_csv(table).encode(),
                f"dhp_{res.model}.csv",
                "text/csv",
                key=f"dhp_csv_{res.model}",
                icon=":material/download:",
            )
            c[1].download_button(
                "JSON",
                json.dumps(dhp.result_record(res), indent=2).encode(),
                f"dhp_{res.model}.json",
                "application/json",
                key=f"dhp_json_{res.model}",
                icon=":material/download:",
            )


# -- the expert survey ----------------------------------------------------------------------------------------
def render_survey_weights(wf: pd.DataFrame, alpha: AlphaResult, sid: int) -> None:
    """The expert weights (vote shares) as a figure, and the experts' agreement."""
    st.markdown("**Weights (vote shares)**")
    st.plotly_chart(figs.make_weights_figure(wf), width="stretch", key=f"dhp_fig_w_{sid}")
    if alpha.alpha is not None:
        ci = f" (95% CI {alpha.ci_low:.2f} to {alpha.ci_high:.2f})" if alpha.ci_low is not None else ""
        st.markdown(
            f"Agreement among experts: Krippendorff's α (nominal) = **{alpha.alpha:.2f}**{ci} · "
            f"{alpha.n_raters} experts, {alpha.n_pairable} issues answered by two or more"
        )
    else:
        st.caption(f"Agreement among experts: not yet defined. {alpha.note or ''}")


def render_answer_matrix(matrix: pd.DataFrame, questions: Sequence[dict[str, Any]]) -> None:
    """Who answered what: one row per expert, one column per quality issue."""
    st.markdown("**Who answered what**")
    if matrix.empty:
        st.caption("No answers yet.")
    else:
        names = {q["key"]: q["name"] for q in questions}
        st.dataframe(matrix.rename(columns=names), width="stretch")
