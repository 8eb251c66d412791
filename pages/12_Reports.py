"""Reports: download a stakeholder report, manage read-only share links, show a shared report at
?share=TOKEN, and export a distillation dataset from labelled batches."""

import pandas as pd
import streamlit as st

from components.report import (
    cached_report,
    dhp_run_choices,
    render_built_download,
    render_report,
    render_report_download,
    report_file,
    share_url,
    survey_choices,
)
from components.ui import engine, page_setup
from services import conseval, reports, runs
from services.errors import InputError
from services.jobs import batches
from services.nli import distill
from services.reports import BUILDERS, KIND_LABELS

page_setup("Reports", ":material/summarize:", link="share")
eng = engine()

# -- a shared report, read-only -------------------------------------------------------------------------
token = st.query_params.get("share")
if token is not None:
    share = reports.find_share(eng, token)
    problem = reports.share_problem(share)
    if problem:
        st.title("Shared report")
        st.error(problem, icon=":material/link_off:")
        st.stop()
    try:
        rep = cached_report(share.kind, share.ref_id)
    except InputError as exc:
        st.title("Shared report")
        st.error(f"This report can no longer be built: {exc}", icon=":material/error:")
        st.stop()
    st.info("A read-only shared report.", icon=":material/visibility:")
    render_built_download(
        "HTML file",
        lambda: report_file(share.kind, share.ref_id),
        key=f"rp_shared_{share.id}",
        file_name=rep.file_name,
        mime="text/html",
    )
    render_report(rep)
    st.stop()

st.title("Reports")
st.caption(
    "Share results with people who will not open the app: one self-contained HTML file per run or study "
    "(opens offline, holds no API key), or a read-only link inside the app. Turn correct judgements into "
    "training data for a smaller judge."
)
if "rp_kind" not in st.session_state:  # start on what there is: batches, else single runs
    has_runs_only = not batches.list_batches(eng, limit=1) and bool(runs.list_all(eng, limit=1))
    st.session_state.rp_kind = "run" if has_runs_only else "batch"
tab_make, tab_shares, tab_distill = st.tabs(["Make a report", "Share links", "Distillation dataset"])

# -- make a report ---------------------------------------------------------------------------------------
with tab_make:
    kinds = [k for k in KIND_LABELS if k in BUILDERS]
    # required: a click on the chosen option keeps it (it would otherwise clear it and empty the tab)
    kind = st.segmented_control("Report on", kinds, format_func=KIND_LABELS.get, key="rp_kind", required=True)
    ref_id = None
    if kind == "run":
        rows = runs.list_all(eng, limit=200)
        if not rows:
            st.info("No runs yet: evaluate something on the **Evaluate** page.")
        else:
            ref_id = st.selectbox(
                "Run",
                [r.id for r, _ in rows],
                key="rp_run",
                format_func=lambda i: next(
                    f"#{r.id} · {r.created_at:%Y-%m-%d %H:%M} · {p[:70]}" for r, p in rows if r.id == i
                ),
            )
    elif kind in ("batch", "nli"):
        bl = batches.list_batches(eng)
        if not bl:
            st.info("No batches yet: start one on the **Batches** page.")
        else:
            ref_id = st.selectbox(
                "Batch",
                [b.id for b in bl],
                key="rp_batch",
                format_func=lambda i: next(
                    f"#{b.id} · {b.name or b.method} · {b.model} · {b.status}" for b in bl if b.id == i
                ),
            )
    elif kind == "conseval":
        studies = conseval.list_studies(eng)
        if not studies:
            st.info("No ConsEval studies yet: start one on the **ConsEval** page.")
        else:
            ref_id = st.selectbox(
                "Study",
                [x.id for x in studies],
                key="rp_study",
                format_func=lambda i: next(f"#{x.id} · {x.name or 'study'} · {x.status}" for x in studies if x.id == i),
            )
    elif kind == "survey":
        surveys = survey_choices()
        if not surveys:
            st.info("No expert surveys yet: create one on the **DHP** page.")
        else:
            ref_id = st.selectbox("Survey", list(surveys), format_func=surveys.get, key="rp_survey")
    elif kind == "dhp":
        dhp_runs = dhp_run_choices()
        if not dhp_runs:
            st.info("No DHP benchmark runs yet: start one on the **DHP** page.")
        else:
            ref_id = st.selectbox("DHP run", list(dhp_runs), format_func=dhp_runs.get, key="rp_dhp")
    elif kind == "judges":
        from services.judges import systems

        panels = systems.judge_panels(eng)  # comparisons of systems are listed under "Systems compared"
        if not panels:
            st.info("No judge comparisons yet: compare judges on the **Judges** page.")
        else:
            ref_id = st.selectbox(
                "Comparison",
                [x.id for x in panels],
                key="rp_judges",
                format_func=lambda i: next(
                    f"#{x.id} · dataset {x.dataset_id} · batches {', '.join(map(str, x.batch_ids))}"
                    for x in panels
                    if x.id == i
                ),
            )
    elif kind == "compare":
        from services.judges import systems

        saved = systems.comparison_panels(eng)
        if not saved:
            st.info("No comparisons of systems yet: compare systems on the **Judges** page.")
        else:
            ref_id = st.selectbox(
                "Comparison",
                [x.id for x in saved],
                key="rp_compare",
                format_func=lambda i: next(
                    f"#{x.id} · dataset {x.dataset_id} · judge {x.batch_ids[0]}" for x in saved if x.id == i
                ),
            )
    elif kind:
        ref_id = st.number_input(f"{KIND_LABELS[kind]} id", min_value=1, step=1, key=f"rp_id_{kind}")
    if kind and ref_id is not None:
        render_report_download(kind, int(ref_id), key=f"rp_make_{kind}_{ref_id}")
        st.caption(
            "The file holds the configuration (model, prompts and their versions, dataset and its hash), the "
            "headline numbers with their intervals, the interactive charts, the tables and a few worked examples."
        )
        if st.toggle("Preview it here", key="rp_preview"):
            try:
                with st.container(border=True):
                    render_report(cached_report(kind, int(ref_id)), heading=False)
            except InputError as exc:
                st.warning(str(exc), icon=":material/warning:")

# -- share links ------------------------------------------------------------------------------------------
with tab_shares:
    all_shares = reports.shares(eng)
    if not all_shares:
        st.info("No share links yet. Create one with **Create share link** next to a report.")
    else:
        st.caption("Whoever has a link sees that report read-only. Revoke a link to close it for good.")
        df = pd.DataFrame(
            [
                {
                    "id": s.id,
                    "report": s.title or f"{KIND_LABELS.get(s.kind, s.kind)} #{s.ref_id}",
                    "kind": KIND_LABELS.get(s.kind, s.kind),
                    "created (UTC)": s.created_at.strftime("%Y-%m-%d %H:%M"),
                    "status": "active" if s.revoked_at is None else f"revoked {s.revoked_at:%Y-%m-%d %H:%M}",
                    "link": share_url(s.token),
                }
                for s in all_shares
            ]
        )
        st.dataframe(
            df,
            hide_index=True,
            width="stretch",
            key="rp_shares",
            column_config={
                "id": st.column_config.NumberColumn(width="small"),
                "link": st.column_config.LinkColumn(width="large"),
            },
        )
        open_ids = [s.id for s in all_shares if s.revoked_at is None]
        if open_ids:
            labels = {s.id: f"#{s.id} · {s.title or s.kind}" for s in all_shares}
            c = st.columns([3, 1], vertical_alignment="bottom")
            chosen = c[0].multiselect("Links to revoke", open_ids, format_func=labels.get, key="rp_to_revoke")
            if c[1].button("Revoke", icon=":material/link_off:", disabled=not chosen, key="rp_revoke"):
                for sid in chosen:
                    reports.revoke(eng, sid)
                st.session_state.pop("rp_to_revoke", None)
                st.toast(f"Revoked {len(chosen)} link(s).")
                st.rerun()

# -- distillation ----------------------------------------------------------------------------------------
with tab_distill:
    st.caption(
        "Paper 003, section 4: from batches over labelled data, training examples **with reasoning** (only where "
        "the judge's label matched the gold label: its reasoning, then the label) and **without reasoning** (the "
        "gold label, for every labelled item). The reasoning is Summ-NLI's where it was right, else Sent-NLI's; "
        "items no batch judged train without reasoning only, and each test item is asked with and without."
    )
    done = [b for b in batches.list_batches(eng) if b.status in ("done", "cancelled")]
    if not done:
        st.info("No finished batch yet: run one over a dataset with gold labels on the **Batches** page.")
    else:
        c = st.columns([3, 1, 1, 1, 1])
        picked = c[0].multiselect(
            "Batches (in order of preference for the reasoning)",
            [b.id for b in done],
            default=[done[0].id],
            format_func=lambda i: next(f"#{b.id} · {b.method} · {b.model}" for b in done if b.id == i),
            key="rp_ds_batches",
        )
        split = c[1].selectbox(
            "Split",
            ["in-domain", "ood"],
            key="rp_ds_split",
            help="in-domain: 80/20 by document; ood: test on one dataset",
        )
        fmt = c[2].selectbox(
            "Format", ["chat", "plain"], key="rp_ds_fmt", help="chat: {messages: [...]}; plain: {prompt, completion}"
        )
        answer = c[3].selectbox(
            "Answers",
            ["json", "text"],
            key="rp_ds_answer",
            help="json: the app's JSON answers, so the trained model plugs into the app; "
            "text: the paper's 'Judgement: ...' lines",
        )
        seed = c[4].number_input("Seed", 0, 2**31 - 1, distill.DEFAULT_SEED, key="rp_ds_seed")
        test_ds = None
        if split == "ood" and picked:
            ds_ids = list(dict.fromkeys(b.dataset_id for b in done if b.id in picked))
            test_ds = st.selectbox(
                "Test dataset (out of domain)",
                ds_ids,
                index=len(ds_ids) - 1,
                key="rp_ds_test",
                format_func=lambda i: f"dataset #{i}",
            )
        if picked:
            # Built when asked for: the set reads every labelled item with its document, seconds at 50,000 items.
            params = (tuple(picked), split, int(seed), test_ds, answer, fmt)
            if st.session_state.get("rp_ds_built", {}).get("params") != params:
                st.session_state.pop("rp_ds_built", None)
            if st.button("Build training set", icon=":material/build:", key="rp_ds_build"):
                try:
                    with st.spinner("Building the training set…"):
                        dset = distill.build(
                            eng, picked, split=split, seed=int(seed), test_dataset_id=test_ds, answer=answer
                        )
                        st.session_state.rp_ds_built = {
                            "params": params,
                            "table7": dset.table7(),
                            "stats": dset.stats,
                            "notes": list(dset.notes),
                            "zip": distill.zip_bytes(dset, fmt),
                            "first": dset.train[0].line(fmt) if dset.train else None,
                        }
                except InputError as exc:
                    st.warning(str(exc), icon=":material/warning:")
            built = st.session_state.get("rp_ds_built")
            if built:
                st.markdown("**As in Table 7**")
                st.dataframe(built["table7"], hide_index=True)
                s = built["stats"]
                st.caption(
                    f"{s.n_with_reasoning:,} of {s.n_train:,} training examples carry reasoning "
                    f"(from {s.n_train_items:,} items over {s.n_train_documents:,} documents); the test set has "
                    f"{s.n_test:,} items over {s.n_test_documents:,} other document(s). Length: mean words per summary."
                )
                for note in built["notes"]:
                    st.caption(f":material/info: {note}")
                st.download_button(
                    "Download training set (zip)",
                    built["zip"],
                    file_name=f"distill-{split}-{fmt}-{answer}-seed{int(seed)}.zip",
                    mime="application/zip",
                    icon=":material/download:",
                    key="rp_ds_dl",
                    on_click="ignore",
                )
                if built["first"] is not None:
                    with st.expander("First training example"):
                        st.json(built["first"])
