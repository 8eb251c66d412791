"""Meta-evaluation: how well a batch's scores agree with human judgments (the DCR paper's section 4)."""

import json

import pandas as pd
import streamlit as st

from components import background
from components import metaeval_views as mv
from components.ui import engine, page_setup
from services import annotations, baselines, metaeval
from services.dcr import METHOD_LABELS
from services.figures import nli as nf
from services.jobs import batches
from services.nli import paradigms as nli

page_setup("Meta-evaluation", ":material/query_stats:")
eng = engine()
st.session_state.setdefault("me_param", None)

st.title("Meta-evaluation")
st.caption(
    "How well a batch's scores agree with the human judgments of its dataset, as in the DCR paper: "
    "correlations (Tables 2-3), AUROC (Table 1), precision and recall with consistency as the positive "
    "class (Figure 3), local baselines on the same items, and the improver's rounds (Table 4, Figure 4)."
)

all_batches = batches.list_batches(eng)
if not all_batches:
    st.info("No batch yet. Import a dataset with human judgments, then run a batch over it.")
    c = st.container(horizontal=True)
    c.page_link("pages/4_Datasets.py", label="Go to Datasets", icon=":material/dataset:")
    c.page_link("pages/5_Batches.py", label="Go to Batches", icon=":material/dynamic_feed:")
    st.stop()

by_id = {b.id: b for b in all_batches}
param = st.query_params.get("batch")
if param != st.session_state.me_param:  # a (new) deep link wins over the last choice
    st.session_state.me_param = param
    if param and param.isdigit() and int(param) in by_id:
        st.session_state.me_batch = int(param)
    elif param:
        st.warning(f"Batch {param} does not exist (deleted?). Showing the newest batch instead.")
if st.session_state.get("me_batch") not in by_id:
    st.session_state.me_batch = all_batches[0].id


def _label(bid: int) -> str:
    b = by_id[bid]
    return f"#{b.id} · {b.name} · {b.status} · {b.n_items:,} items"


# The batch on a row of its own: its label (name, status, size) is long and a third of the page cuts it off.
bid = st.selectbox("Batch", list(by_id), format_func=_label, key="me_batch")
if st.query_params.get("batch") != str(bid):
    st.query_params["batch"] = str(bid)
    st.session_state.me_param = str(bid)
batch = by_id[bid]
peers = [b.id for b in all_batches if b.dataset_id == batch.dataset_id and b.id != bid]
if st.session_state.get("me_other") not in (None, *peers):
    st.session_state.me_other = None
top = st.columns([3, 2])
other_id = top[0].selectbox(
    "Compare with (Figure 3)",
    [None, *peers],
    key="me_other",
    format_func=lambda i: "— none —" if i is None else f"{_label(i)} · {METHOD_LABELS.get(by_id[i].method, '')}",
    help="Another batch over the same dataset, e.g. the paragraph-level evaluator.",
)
threshold = top[1].slider(
    "Threshold",
    0.0,
    1.0,
    metaeval.binary.default_threshold(batch.method),  # the report's and the CLI's default too
    0.05,
    key=f"me_threshold_{batch.method}",  # another method's batch starts at its own default
    help="A score at or above the threshold marks the summary consistent (the positive class); below, "
    "inconsistent. 1.0, the "
    "default, flags any summary with an inconsistent sentence, as the paper's Table 4 and Figure 3 do; 0.5 for "
    "the evidence checker, whose score is its probability that the summary is consistent.",
)
with st.expander("Statistics settings", icon=":material/tune:"):
    s = st.columns(3)
    seed = int(s[0].number_input("Bootstrap seed", 0, 2**31 - 1, metaeval.DEFAULT_SEED, key="me_seed"))
    n_boot = int(
        s[1].selectbox(
            "Bootstrap resamples",
            [0, 200, 1000, 2000],
            index=2,
            key="me_boot",
            help="Percentile bootstrap for the 95% intervals; 0: no intervals.",
        )
    )
    s[2].caption(
        "95% intervals: DeLong's for AUROC; up to 5,000 items percentile bootstraps (pairs of items for "
        "correlations, sentences for Krippendorff's alpha), above that their linear forms. A slow bootstrap runs "
        "in a background process."
    )

# While a batch runs the stamp is taken again at most every mv.REFRESH_SECONDS: reruns reuse the cached figures.
stamp = mv.view_stamp(batch)
data = mv.load_data(bid, stamp)  # items only; the sentences are read when a tab needs them
other = mv.load_data(other_id, mv.view_stamp(by_id[other_id])) if other_id is not None else None
ds = data.dataset
done = data.done
item_ids = tuple(int(i) for i in done["item_id"])
bstamp = metaeval.baseline_stamp(eng, batch.dataset_id)
values = mv.baseline_values(bid, stamp, bstamp, item_ids)

level = {"paragraph": "paragraph-level evaluator", "evidence": "evidence checker", **nli.METHOD_LABELS}.get(
    batch.method, "sentence-level DCE"
)
level += "" if nli.is_nli(batch.method) or batch.method == "evidence" else f", converter {batch.amc}"
st.markdown(
    f"**{ds.name if ds else 'deleted dataset'}**"
    + (f" <span style='color:#6b7280'>({ds.format}, sha256 {ds.sha256[:10]}…)</span>" if ds else "")
    + f" · **{len(done):,}** of {len(data.items):,} items scored · {level} · model "
    f"`{batch.model or '—'}` · status **{batch.status}**",
    unsafe_allow_html=True,
)
mv.show_notes(data.notes, kind="info")
if batch.status in ("queued", "running") and data.loaded_at is not None:
    st.caption(
        f":material/schedule: As of {data.loaded_at:%H:%M:%S} UTC, {len(done):,} items done. While the batch "
        f"runs the figures are recomputed at most every {mv.REFRESH_SECONDS:.0f} s: rerun the page (R) later "
        "for newer ones."
    )
if done.empty:
    if batch.status in ("done", "cancelled"):
        st.info(
            "No item of this batch got a score: in every item each sentence was left unknown (the model's "
            "answers could not be read as verdicts, or the calls failed). The items and their errors are on "
            "the Batches page."
        )
    else:
        st.info("No item of this batch has a score yet. Come back when some items are done.")
    st.page_link(
        "pages/5_Batches.py",
        label="Follow it on Batches",
        icon=":material/dynamic_feed:",
        query_params={"batch": str(bid)},
    )
    st.stop()

ci_slot = st.container()  # filled at the end, once the page is drawn, if the intervals are still to come
score_m = metaeval.binary.score_measure(batch.method, data.items, threshold)
cls = score_m.classification


def _full() -> metaeval.BatchData:
    """The batch with its sentence verdicts and human votes (read on demand, cached)."""
    return mv.load_full(bid, stamp)


TABS = ["Summary level", "Figure 3", "Methods", "Sentence level", "Baselines", "RAI", "Human agreement", "Export"]
tab = dict(zip(TABS, st.tabs(TABS, key="me_tab", bind="query-params"), strict=True))
# Only the open tab's statistics are computed (the correlations, the alphas or the baselines table).
parts = mv.parts_for(t for t, container in tab.items() if container.open)
est, ci_keys = mv.interval_estimates(data, values, stamp=stamp, bstamp=bstamp, seed=seed, n_boot=n_boot, parts=parts)

# -- methods compared (Summ-NLI, Sent-NLI, QG-QA beside DCE) -------------------------------------------
if tab["Methods"].open:
    with tab["Methods"]:
        st.caption(
            "Every method run over this dataset, side by side: balanced accuracy of the score at each method's own "
            "threshold (1.0, every unit consistent; 0.5 for the evidence checker's probability; the same whichever "
            "class is positive), Pearson with the human score, accuracy by document and summary length "
            "(Figure 2 of the NLI paper), recall per error type (Table 5), the spread over repeated runs (Table 4) "
            "and the cost per document. Start repeated runs on the Batches page (Repeats)."
        )
        same = [b.id for b in all_batches if b.dataset_id == batch.dataset_id]
        chosen = st.multiselect(
            "Batches over this dataset", same, default=same[:12], format_func=_label, key=f"me_methods_{bid}"
        )
        if not chosen:
            st.info("Choose at least one batch.")
        else:
            cmp = metaeval.compare_method_batches(eng, sorted(chosen))  # each at its method's own threshold
            mv.show_notes(cmp.notes)
            t = cmp.table
            show = t.drop(columns=["configuration", "repeat_group"]).assign(
                **{c: t[c].map(mv.fmt) for c in ("balanced_accuracy", "recall", "pearson")},
                calls_per_doc=t["calls_per_doc"].map(lambda x: mv.fmt(x, 1)),
                tokens_per_doc=t["tokens_per_doc"].map(lambda x: f"{x:,.0f}"),
                seconds_per_doc=t["seconds_per_doc"].map(lambda x: mv.fmt(x, 1)),
            )
            mv.show_table(show, f"dataset-{batch.dataset_id}-methods.csv", "me_methods_t", raw=t)
            c = st.columns(2)
            with c[0]:
                mv.show_chart(nf.make_methods_figure(t), f"dataset-{batch.dataset_id}-methods", "me_methods_f")
            st.markdown("###### Standard deviation over repeated runs (Table 4)")
            if cmp.repeats.empty:
                st.caption("No configuration among these batches was run more than once.")
            else:
                r = cmp.repeats
                mv.show_table(
                    r.assign(
                        balanced_accuracy=[
                            mv.fmt(m) + " ± " + mv.fmt(sd)
                            for m, sd in zip(r["balanced_accuracy_mean"], r["balanced_accuracy_std"], strict=True)
                        ],
                        pearson=[
                            mv.fmt(m) + " ± " + mv.fmt(sd)
                            for m, sd in zip(r["pearson_mean"], r["pearson_std"], strict=True)
                        ],
                    )[["method", "runs", "balanced_accuracy", "pearson", "calls_per_doc"]],
                    f"dataset-{batch.dataset_id}-repeats.csv",
                    "me_methods_rep",
                    raw=r,
                )
            st.markdown("###### Accuracy by document and summary length (Figure 2)")
            if cmp.lengths.empty:
                st.caption("No item with a binary human label: accuracy needs one.")
            else:
                mv.show_chart(
                    nf.make_length_accuracy_figure(cmp.lengths), f"dataset-{batch.dataset_id}-lengths", "me_methods_len"
                )
            if not cmp.error_types.empty:
                st.markdown("###### Recall per error type (Table 5)")
                st.caption(
                    "None: the consistent summaries, recalled when judged consistent (Table 5's first column); "
                    "each error type: its inconsistent summaries, recalled when judged inconsistent."
                )
                e = cmp.error_types
                wide = e.pivot_table(index="error_type", columns="method", values="recall", sort=False)
                wide = wide.map(mv.fmt).reset_index()
                mv.show_table(wide, f"dataset-{batch.dataset_id}-error-types.csv", "me_methods_types", raw=e)

# -- summary level -----------------------------------------------------------------------------
if tab["Summary level"].open:
    with tab["Summary level"]:
        corr = est.correlations or metaeval.correlations(done, seed=seed, n_boot=0)  # asked for: never None
        st.subheader("Correlation with human scores (Tables 2-3)")
        mv.show_notes(corr.notes)
        if any(c.r is not None for c in corr.correlations) or corr.auroc.auc is not None:
            table = corr.frame()
            mv.show_table(mv.correlations_display(table), f"batch-{bid}-summary-level.csv", "me_corr", raw=table)
        if done["human_score"].notna().any():
            mv.show_chart(mv.make_scatter_figure(done), f"batch-{bid}-scatter", "me_scatter")
            st.caption(mv.PNG_NOTE)
            mv.csv_button(
                done[["item_id", "external_id", "score", "human_score", "human_label"]],
                f"batch-{bid}-scores.csv",
                "me_scores_csv",
                label="Scores per item (CSV)",
            )
        st.subheader(f"Binary: consistent when the score is at least {threshold:g}")
        if cls.n == 0:
            st.caption(":material/info: No binary human labels for these items: AUROC and the confusion need them.")
        else:
            verdict_m = metaeval.binary.verdict_measure(batch.method, data.items)
            b = st.columns(2)
            b[0].metric(score_m.name, mv.fmt(score_m.value), help=f"Rests on: {score_m.rests_on}.")
            vm = verdict_m.metric
            b[1].metric(
                verdict_m.name,
                mv.fmt(verdict_m.value),
                help=f"Rests on: {verdict_m.rests_on}. {mv.fmt_ci(vm.value, vm.ci_low, vm.ci_high)}"
                + (f" {vm.note}" if vm.note else ""),
            )
            st.caption(f"{score_m.name}: {score_m.rests_on}. {verdict_m.name}: {verdict_m.rests_on}.")
            k = st.columns(4)
            a = corr.auroc
            k[0].metric(
                "AUROC",
                mv.fmt(a.auc),
                help=f"{mv.fmt_ci(a.auc, a.ci_low, a.ci_high)} · {a.n_neg:,} "
                f"inconsistent, {a.n_pos:,} consistent (Table 1)",
            )
            k[1].metric(
                "Precision",
                mv.fmt(cls.precision),
                help="Of the summaries marked consistent, the share "
                "humans call consistent (consistent is the positive class, as in Figure 3)",
            )
            k[2].metric(
                "Recall",
                mv.fmt(cls.recall),
                help="Of the summaries humans call consistent, the share marked consistent",
            )
            k[3].metric("F1", mv.fmt(cls.f1))
            st.caption(
                f"n = {cls.n:,} labelled items · precision {mv.fmt_ci(cls.precision, *cls.precision_ci())} "
                f"(n = {cls.tp + cls.fp:,} marked consistent) · recall {mv.fmt_ci(cls.recall, *cls.recall_ci())} "
                f"(n = {cls.tp + cls.fn:,} consistent by humans) · AUROC {mv.fmt_ci(a.auc, a.ci_low, a.ci_high)}; "
                "95% intervals (Wilson for precision and recall)."
            )
            if cls.note:
                st.caption(f":material/info: {cls.note}")
            c = st.columns([3, 2])
            with c[0]:
                mv.show_table(
                    metaeval.confusion_frame(cls).reset_index(),
                    f"batch-{bid}-classification.csv",
                    "me_cls",
                    raw=metaeval.classification_frame(cls),
                )
            c[1].caption(mv.CONFUSION_NOTE)
        mv.render_selective(data.items, bid)

# -- Figure 3 ----------------------------------------------------------------------------------
if tab["Figure 3"].open:
    with tab["Figure 3"]:
        f3 = metaeval.figure3(data=data, other=other)
        st.subheader("Sentence level vs paragraph level, with and without AMC (Figure 3)")
        st.caption(
            "Binary at summary level against the human label; consistent is the positive class, as the paper reads "
            "Figure 3 (higher recall with lower precision means more candidates wrongly marked consistent). "
            "A summary is flagged when its score is below 1 (with AMC) or when the model's own is_consistent is "
            "false (without)."
        )
        mv.show_notes(f3.notes)
        if other is None:
            st.caption(
                ":material/lightbulb: Pick a paragraph-level batch over the same dataset under *Compare "
                "with* to add its bars."
            )
        if f3.frame["n"].sum() == 0:
            st.info("Nothing to compare: these items have no binary human labels (or no result yet).")
        else:
            show = f3.frame.copy()
            for col in ("precision", "recall", "f1", "balanced_accuracy"):
                show[col] = show[col].map(mv.fmt)
            mv.show_table(show, f"batch-{bid}-figure3.csv", "me_f3", raw=f3.frame)
            mv.show_chart(mv.make_figure3_figure(f3.frame), f"batch-{bid}-figure3", "me_f3_chart")
            st.caption(mv.PNG_NOTE)

# -- sentence level ----------------------------------------------------------------------------
if tab["Sentence level"].open:
    with tab["Sentence level"]:
        sl = metaeval.sentence_level(data=_full())
        st.subheader("Sentence verdicts vs the human majority")
        mv.show_notes(sl.notes)
        if sl.classification is not None:
            sc = sl.classification
            k = st.columns(5)
            k[0].metric(
                "Sentences compared",
                f"{sl.n_compared:,}",
                help=f"{sl.n_labelled:,} labelled; {sl.n_unknown:,} unknown verdicts and {sl.n_ties:,} ties left out",
            )
            k[1].metric("Balanced accuracy (sentences)", mv.fmt(sc.balanced_accuracy))
            k[2].metric("Precision", mv.fmt(sc.precision))
            k[3].metric("Recall", mv.fmt(sc.recall))
            k[4].metric("F1", mv.fmt(sc.f1))
            raw = metaeval.classification_frame(sc).assign(
                sentences=sl.n_sentences,
                labelled=sl.n_labelled,
                unknown_left_out=sl.n_unknown,
                ties_left_out=sl.n_ties,
            )
            c = st.columns([3, 2])
            with c[0]:
                mv.show_table(
                    metaeval.confusion_frame(sc).reset_index(), f"batch-{bid}-sentence-level.csv", "me_sl", raw=raw
                )
            c[1].caption(mv.CONFUSION_NOTE)

# -- baselines ---------------------------------------------------------------------------------
if tab["Baselines"].open:
    with tab["Baselines"]:
        st.subheader("Baselines on the same items (Tables 1-3)")
        st.caption(
            "ROUGE-2 and ROUGE-L precision (the share of the summary's n-grams found in the article) and the "
            "all-MiniLM-L6-v2 embedding similarity, computed locally, against the same human judgments."
        )
        emb_ok, emb_msg = baselines.embeddings_available()
        if not emb_ok:
            st.warning(f"Embedding similarity unavailable. {emb_msg}", icon=":material/extension_off:")
        bl_key = f"me-bl:{bid}"
        task = background.get(bl_key)
        missing = {k: int(values[k].isna().sum()) for k in metaeval.wanted_metrics(emb_ok)}
        if task is not None and not task.future.done():
            mv.poll(task, "Computing baselines")
        elif any(missing.values()):
            if task is not None and task.error() is not None:
                st.error(f"Computing the baselines failed: {task.error()}")
            with_emb = emb_ok and st.checkbox(
                "Include the embedding similarity",
                value=emb_ok,
                key="me_with_emb",
                help="About 0.1 s per item on a CPU; ROUGE takes about 6 ms per item.",
            )
            todo = ", ".join(f"{metaeval.BASELINE_METRICS[k]}: {n:,}" for k, n in missing.items() if n)
            st.caption(f"Missing values: {todo}. Computed values are stored and never computed again.")
            if st.button("Compute baselines", icon=":material/calculate:", type="primary", key="me_compute_bl"):
                ids = list(item_ids)
                background.submit(
                    bl_key,
                    lambda t: metaeval.compute_baselines(eng, ids, with_embeddings=with_emb, on_progress=t.report),
                    restart=True,
                )
                st.rerun()
        if done["human_score"].isna().all() and done["human_label"].isna().all():
            st.info("These items have no human scores or labels: there is nothing to compare the baselines with.")
        else:
            bl_table = est.baselines
            if bl_table is None:  # asked for by this tab: never None
                bl_table = metaeval.baseline_table(data.items, values, seed=seed, n_boot=0)
            mv.show_table(mv.baselines_display(bl_table), f"batch-{bid}-baselines.csv", "me_bl", raw=bl_table)

# -- RAI ---------------------------------------------------------------------------------------
if tab["RAI"].open:
    with tab["RAI"]:
        st.subheader("Consistency improvement with RAI (Table 4)")
        level = {True: "Paragraph", False: "Sentence"}
        rai = metaeval.rai_table(data.items).assign(batch=bid, level=level[data.is_paragraph])
        if other is not None:
            rai = pd.concat(
                [rai, metaeval.rai_table(other.items).assign(batch=other.batch.id, level=level[other.is_paragraph])]
            )
        cols = [
            "batch",
            "level",
            "evaluated",
            "inconsistent",
            "improved",
            "corrected",
            "improvement_rate",
            "rounds_run",
            "corrected_after_m",
            "rate_after_m",
        ]
        rai = rai[cols]
        shown = rai.assign(
            improvement_rate=rai["improvement_rate"].map(mv.pct), rate_after_m=rai["rate_after_m"].map(mv.pct)
        )
        mv.show_table(shown, f"batch-{bid}-table4.csv", "me_rai", raw=rai)
        st.caption(
            "As Table 4: inconsistent = score below 1 at round 0; corrected = of those, the ones that score 1 "
            "after one RAI round; improvement rate = corrected / inconsistent. corrected_after_m and "
            "rate_after_m count the ones that score 1 after the last of the m rounds (Figure 4)."
        )
        rounds = metaeval.rounds_of(data.items)
        if batch.method == "evidence" or nli.is_nli(batch.method):
            st.caption(
                ":material/info: This batch's evaluator gives verdicts, not rewrites: there are no "
                "improvement rounds to show. RAI follows DCE batches only."
            )
        elif batch.max_rounds == 0:
            st.caption(
                ":material/info: This batch ran with 0 improvement rounds (evaluation only): start a batch "
                "with rounds ≥ 1 on the Batches page to see RAI at work."
            )
        else:
            mv.show_notes(rounds.notes)
        share = rounds.share.assign(label=f"batch #{bid}")
        if other is not None:
            share = pd.concat([share, metaeval.rounds_of(other.items).share.assign(label=f"batch #{other.batch.id}")])
        c = st.columns(2)
        with c[0]:
            mv.show_chart(mv.make_share_figure(share), f"batch-{bid}-share-per-round", "me_share")
            mv.csv_button(share, f"batch-{bid}-share-per-round.csv", "me_share_csv")
        with c[1]:
            mv.show_chart(mv.make_histograms_figure(rounds.scores), f"batch-{bid}-scores-per-round", "me_hist")
            mv.csv_button(rounds.scores, f"batch-{bid}-scores-per-round.csv", "me_hist_csv")
        st.caption(
            mv.PNG_NOTE + " Figure 4 (left): of the items inconsistent at round 0, the share that scores 1 "
            "after each round. The histograms cover every item; an item that stopped early (consistent, or "
            "nothing left to rewrite) keeps its last score in later rounds."
        )

# -- human agreement ---------------------------------------------------------------------------
if tab["Human agreement"].open:
    with tab["Human agreement"]:
        h = est.agreement or metaeval.human_agreement(data=_full(), n_boot=0)
        st.subheader("Agreement among the human raters, and with the model")
        mv.show_notes(h.notes)
        if h.among_humans is not None:
            a = h.among_humans
            k = st.columns(4)
            k[0].metric(
                "Krippendorff's α (humans)", mv.fmt(a.alpha, 4), help=mv.fmt_ci(a.alpha, a.ci_low, a.ci_high, 4)
            )
            k[1].metric("Sentences", f"{a.n_pairable:,}", help=f"Rated by two or more raters, in {h.n_items:,} items")
            k[2].metric("Workers", f"{h.n_workers:,}")
            vs = h.model_vs_majority
            k[3].metric(
                "α model vs majority",
                mv.fmt(vs.alpha, 4) if vs else "—",
                help=mv.fmt_ci(vs.alpha, vs.ci_low, vs.ci_high, 4) if vs else None,
            )
            st.caption(
                "Nominal alpha; units are summary sentences, raters are worker ids, values yes (1) / no (0). "
                "The model is compared with the majority of the workers (ties and unknown verdicts left out)."
            )
            table = metaeval.alpha_frame(h)
            show = table.assign(
                alpha=table["alpha"].map(lambda x: mv.fmt(x, 4)),
                ci_low=table["ci_low"].map(mv.fmt),
                ci_high=table["ci_high"].map(mv.fmt),
            )
            mv.show_table(show, f"batch-{bid}-agreement.csv", "me_alpha", raw=table)
        st.subheader("Agreement of the app's annotators")
        # Every model or method run over this dataset, this batch first.
        ann = annotations.agreement(eng, batch.dataset_id, batch_ids=[bid, *peers])
        if not ann["n_units"]:
            st.caption(
                "Nobody has labelled this dataset's sentences in the app yet. Labels made on the Annotate page "
                "appear here: alpha among annotators and between their majority and this batch's verdicts."
            )
        else:
            st.caption(
                f"Krippendorff's alpha (nominal) over {ann['n_units']} sentence(s) labelled by "
                f"{ann['n_annotators']} annotator(s), with 95% bootstrap intervals over sentences; against each "
                "batch over this dataset, the annotators' majority is one rater and the batch's verdicts the other."
            )
            atable = annotations.agreement_frame(ann)
            mv.show_table(atable, f"batch-{bid}-annotator-agreement.csv", "me_ann_alpha", raw=atable)
        st.page_link(
            "pages/7_Annotate.py",
            label="Label sentences, or see where annotators and models disagree",
            icon=":material/edit_note:",
            query_params={"dataset": str(batch.dataset_id)},
        )

# -- export ------------------------------------------------------------------------------------
if tab["Export"].open:
    with tab["Export"]:
        st.subheader("Reproducibility")
        st.caption(
            "The bundle records what it takes to reproduce this batch and these figures: configuration, model "
            "and parameters (never an API key), prompt ids with the sha256 of each template, seeds, and the "
            "dataset's name, format and sha256."
        )
        settings = {"threshold": threshold, "seed": seed, "bootstrap_resamples": est.n_boot, "other_batch_id": other_id}
        bundle = metaeval.bundle(eng, bid, seed=seed, n_boot=est.n_boot, threshold=threshold)

        def _report() -> str:
            """Every table as JSON, built when the button is clicked (on another thread: no Streamlit here)."""
            full = metaeval.load_batch(eng, bid)
            every = metaeval.estimates(full, values, seed=seed, n_boot=est.n_boot)
            rep = metaeval.Report(
                summary=metaeval.SummaryLevel(every.correlations, cls),
                sentence=metaeval.sentence_level(data=full),
                figure3=metaeval.figure3(data=data, other=other),
                baselines=every.baselines,
                rai=metaeval.rai_table(data.items),
                rounds=metaeval.rounds_of(data.items),
                agreement=every.agreement,
                notes=data.notes,
            )
            return metaeval.report_json(metaeval.report_dict(rep, batch_id=bid, settings=settings, bundle=bundle))

        c = st.container(horizontal=True)
        json_kw = {"mime": "application/json", "icon": ":material/download:", "on_click": "ignore"}
        c.download_button(
            "Download reproducibility bundle (JSON)",
            json.dumps(bundle, indent=2),
            file_name=f"batch-{bid}-bundle.json",
            type="primary",
            key="me_bundle",
            **json_kw,
        )
        c.download_button(
            "Download every table (JSON)",
            _report,
            file_name=f"batch-{bid}-meta-evaluation.json",
            key="me_report",
            **json_kw,
        )
        st.caption("The same tables from a terminal:")
        st.code(f"python cli.py report --run {bid} --output batch-{bid}-meta-evaluation.json", language="bash")
        with st.expander("Bundle preview", icon=":material/data_object:"):
            st.json(bundle, expanded=2)

for ci_key in ci_keys:
    ci_task = mv.start_intervals(ci_key, bid, seed=seed, n_boot=n_boot)
    with ci_slot:
        if ci_task.error() is not None:
            st.error(f"The bootstrap intervals failed: {ci_task.error()}. Showing point estimates.")
        else:
            st.caption(f"Showing point estimates while {n_boot:,} bootstrap resamples run in the background.")
            mv.poll(ci_task, "Computing 95% intervals")
