"""Streamlit rendering of ConsEval studies: progress, results (alphas with intervals and n), raters."""

from __future__ import annotations

import html
import math

import pandas as pd
import streamlit as st

from services import conseval as ce
from services.config import BackendConfig
from services.estimates import calls_text
from services.export import frame_csv
from services.figures.conseval import make_ic_figure, make_matrix_figure, make_radar_figure, make_sc_figure

RESULT_TABS = ["Self-consistency", "Inter-consistency", "Model × method", "Radar", "Humans", "Answers"]
KIND_LABELS = {
    "SC": "Self-consistency",
    **ce.IC_LABELS,
    "ACC": "Accuracy (Pearson r)",
    "HUMAN": "Among human raters",
    "HUMAN-MODEL": "Humans vs model",
}


def fmt_value(v, lo, hi) -> str:
    """'0.82 [0.71, 0.90]', or '0.82' without an interval, or 'undefined'."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "undefined"
    if lo is None or hi is None or (isinstance(lo, float) and math.isnan(lo)):
        return f"{v:.3f}"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Result rows for reading: the value with its 95% interval, n, level and the note (why undefined)."""
    if df.empty:
        return pd.DataFrame()
    out = pd.DataFrame(
        {
            # the value first, beside what it measures: at 1280 px a column far to the right is off screen
            "measure": df["kind"].map(lambda k: KIND_LABELS.get(k, k)),
            "scale(s)": df["scale"],
            "α or r [95% CI]": [
                fmt_value(v, lo, hi) for v, lo, hi in zip(df["value"], df["ci_low"], df["ci_high"], strict=True)
            ],
            "n": df["n"],
            "criterion": df["criterion"],
            "definition": df["granularity"],
            "model": df["model"],
            "method": df["variant"],
            "oracle": df["oracle"].fillna("") if "oracle" in df else "",
            "level": df["level"].fillna("pearson"),
            "note": df["note"].fillna(""),
        }
    )
    return out.reset_index(drop=True)


def show_table(df: pd.DataFrame) -> None:
    """The result rows, each note as a numbered line under the table: a table cell would cut a long note short."""
    t = table(df)
    notes = list(dict.fromkeys(n for n in t["note"] if n)) if "note" in t else []
    if notes:
        t["note"] = t["note"].map(lambda n: f"note {notes.index(n) + 1}" if n else "")
    st.dataframe(t, hide_index=True, width="stretch", placeholder="—")
    for i, n in enumerate(notes, 1):
        st.caption(f"Note {i}: {n}")


def render_progress(study: ce.ConsevalStudyPublic, prices: BackendConfig | None = None) -> None:
    """Status, answers done of planned, answered calls and retries, cache hits; once ended, what it cost
    (`prices`: the backend in use, whose prices are set on Settings)."""
    done, planned = study.n_done, max(1, study.n_planned)
    label = {
        "queued": "Waiting for the worker",
        "running": "Running",
        "done": "Finished",
        "failed": "Failed",
        "cancelled": "Cancelled",
    }.get(study.status, study.status)
    st.progress(min(1.0, done / planned), text=f"{label} · {done:,} of {study.n_planned:,} answers")
    m = st.columns(5)
    m[0].metric("Answers", f"{done:,}")
    answered, retries = calls_text(study.calls, study.answered)
    m[1].metric("Answered calls", answered, help=f"Requests the model answered, of {study.calls:,} sent")
    m[2].metric("Retries", retries, help="Requests sent again or failed (refused connections, timeouts, errors)")
    m[3].metric("Cache hits", f"{study.cache_hits:,}")
    missing = (study.results or {}).get("missing") or {}
    m[4].metric("Unreadable / off-scale", f"{missing.get('missing', 0):,}" if study.results else "–")
    if prices is not None and study.status in ("done", "failed", "cancelled"):
        st.caption(ce.study_spent(study, prices).summary())
    if study.error:
        st.error(study.error)


def _picked_figure(rows: pd.DataFrame, key: str, make_figure) -> None:
    """The rows of the model and variant picked (`_pick`), drawn by `make_figure` and shown as a table."""
    model, variant = _pick(rows, key)
    d = rows[(rows["model"] == model) & (rows["variant"] == variant)]
    st.plotly_chart(make_figure(d), key=f"{key}_fig")
    show_table(d)


def _pick(df: pd.DataFrame, key: str) -> tuple[str, str]:
    models = list(dict.fromkeys(df["model"]))
    variants = list(dict.fromkeys(df["variant"]))
    c = st.columns(2)
    model = c[0].selectbox("Model", models, key=f"{key}_model")
    variant = c[1].selectbox("Method", variants, key=f"{key}_variant")
    return model, variant


def render_results(study: ce.ConsevalStudyPublic, ratings: pd.DataFrame) -> None:
    """Tabs: self-consistency, inter-consistency, model x method, radar, human raters, answers."""
    df = ce.results_frame(study.results)
    if df.empty:
        st.info("No results yet: they appear when the study has finished.")
        return
    # Only the open tab runs and is sent (a tab click reruns the page): every tab at once was five Plotly
    # figures and a dozen tables for the browser to draw, most of them hidden.
    tabs = st.tabs(RESULT_TABS, key="ce_tab", on_change="rerun")
    model_rows = df[~df["kind"].isin(["HUMAN", "HUMAN-MODEL"])]
    if tabs[0].open:
        with tabs[0]:
            sc = model_rows[model_rows["kind"] == "SC"]
            if sc.empty:
                st.info("Self-consistency needs n ≥ 2 samples per item.")
            else:
                st.caption(
                    "Krippendorff's α across the n samples (temperature 1.0) of each item; interval level for "
                    "numeric scales, ordinal for Likert, nominal for binary. Whiskers: bootstrap 95% intervals "
                    "(resampling items). Hatched bars are undefined: the table says why."
                )
                _picked_figure(sc, "ce_sc", make_sc_figure)
    if tabs[1].open:
        with tabs[1]:
            ic = model_rows[model_rows["kind"].isin(["IC1", "IC2", "IC3", "IC4", "GS"])]
            if ic.empty:
                st.info("Inter-consistency needs the scales of a case of Table 4 (e.g. 5-P and 5-P Likert).")
            else:
                st.caption(
                    "α between the scores the model gives on different scales, each mapped onto [0, 1] "
                    "(interval level), apart for each decoding as in Figure 3: the method's own row is the "
                    "greedy answers, '(sampled)' the answers at temperature 1.0 (units: item × sample), SCE "
                    "their mean. GS (greedy against a sampled answer on one scale) is an extra, not in the "
                    "paper."
                )
                with st.expander("Mappings onto [0, 1]"):
                    st.dataframe(
                        pd.DataFrame([{"scale": k, "mapping": s.mapping} for k, s in ce.SCALES.items()]),
                        hide_index=True,
                        width="stretch",
                    )
                _picked_figure(ic, "ce_ic", make_ic_figure)
    if tabs[2].open:
        with tabs[2]:
            crits = list(dict.fromkeys(model_rows["criterion"]))
            crit = st.selectbox("Criterion", crits, key="ce_mx_crit")
            matrix = ce.model_method_matrix(model_rows, crit)
            if matrix.empty:
                st.info("Nothing to show for this criterion.")
            else:
                st.caption(
                    "Each cell: the mean over definitions and scales (SC) or definitions (IC); accuracy is "
                    "Pearson r against each oracle on the 5-P scale, as Table 3. Columns marked Extra are not "
                    "the paper's: accuracy averaged over every scale, and GS. SC is blank for SCE rows, as in "
                    "Table 5. The intervals are in the other tabs."
                )
                st.plotly_chart(make_matrix_figure(matrix), key="ce_mx_fig")
                st.dataframe(matrix.round(3), width="stretch", placeholder="—")
    if tabs[3].open:
        with tabs[3]:
            radar = ce.radar_frame(model_rows)
            if radar.empty:
                st.info("No base-prompt results to draw.")
            else:
                if radar["criterion"].nunique() < 3:
                    st.caption(
                        "With fewer than three criteria the radar is a line or a point; the table has the numbers."
                    )
                st.plotly_chart(make_radar_figure(radar), key="ce_radar_fig")
                shown = radar.round(3).astype(object).where(radar.notna(), "–")
                st.dataframe(shown, hide_index=True, width="stretch")
                if radar["Accuracy"].isna().all():
                    st.caption("Accuracy needs an oracle (a second endpoint, human ratings or imported scores).")
    if tabs[4].open:
        with tabs[4]:
            hum = df[df["kind"].isin(["HUMAN", "HUMAN-MODEL"])]
            if hum.empty:
                st.info(
                    "No human ratings yet. Add raters below; their personal links open the Rate page. Then press "
                    "**Recompute results**."
                )
            else:
                st.caption(
                    "α among the human raters, and between each model's greedy score (base prompt) and the "
                    "humans' consensus (mean, median or majority by the scale's level)."
                )
                show_table(hum)
    if tabs[5].open:
        with tabs[5]:
            if ratings.empty:
                st.info("No answers yet.")
            else:
                only_missing = st.toggle("Only unreadable or off-scale answers", key="ce_only_missing")
                r = ratings[ratings["value"].isna()] if only_missing else ratings
                st.caption(
                    f"{len(ratings):,} answers, {int(ratings['value'].isna().sum()):,} missing. Sample −1 is the "
                    "greedy answer. A missing value keeps the raw answer and the reason."
                )
                st.dataframe(r.head(2000), hide_index=True, width="stretch")
                st.download_button(
                    "Download answers (CSV)",
                    frame_csv(ratings),
                    file_name=f"conseval-{study.id}.csv",
                    mime="text/csv",
                    icon=":material/download:",
                )
    st.download_button(
        "Download results (CSV)",
        frame_csv(table(df)),
        file_name=f"conseval-{study.id}-results.csv",
        mime="text/csv",
        icon=":material/download:",
    )


def rater_link(token: str) -> str:
    """The personal link of a rater: this app's Rate page with the token."""
    try:
        base = (st.context.url or "").split("?", 1)[0]
    except Exception:  # no browser context (a headless test run)
        base = ""
    root = base.rsplit("/", 1)[0] if base else ""
    return f"{root}/Rate?token={token}"


def render_raters(raters: list[ce.RaterInfo], n_items: int, n_scales: int, on_revoke) -> None:
    """Who rates, their link, and how much each has rated."""
    if not raters:
        st.caption("No rater yet.")
        return
    total = n_items * n_scales
    for r in raters:
        c = st.columns([1.5, 1.8, 6.7, 1.3], vertical_alignment="center")  # the link on one line
        c[0].markdown(f"**{html.escape(r.name)}**" + ("" if r.active else " · :red[revoked]"))
        c[1].progress(min(1.0, r.n_rated / max(1, total)), text=f"{r.n_rated} of {total} ratings")
        if r.active:
            # as inline code, not st.code: its highlighter bundle (1.5 MB) would be the slowest part of the page
            c[2].markdown(f"`{rater_link(r.token)}`", help="Send this link to the rater; it opens the Rate page.")
            c[3].button("Revoke", key=f"ce_revoke_{r.id}", on_click=on_revoke, args=(r.id,), icon=":material/block:")
        else:
            c[2].caption("Link revoked; the ratings stay.")


def rating_matrix(humans: pd.DataFrame, items: pd.DataFrame, n_scales: int) -> pd.DataFrame:
    """Who has rated what: one row per item, one column per rater, 'k/N' scales rated."""
    if humans.empty or items.empty:
        return pd.DataFrame()
    counts = humans.pivot_table(index="item_id", columns="rater", values="value", aggfunc="count")
    counts = counts.reindex(items["id"]).fillna(0).astype(int)
    out = counts.map(lambda k: f"{k}/{n_scales}" if k else "–")
    out.insert(
        0,
        "item",
        [f"{i + 1}. {c}: {q[:50]}" for i, (c, q) in enumerate(zip(items["criterion"], items["query"], strict=True))],
    )
    return out.reset_index(drop=True)
