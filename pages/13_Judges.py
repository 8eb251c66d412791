"""Judges: how far to trust each judge on a dataset, side by side; the dataset's consistency rate from a few
human labels (prediction-powered inference); which items to label next."""

import streamlit as st

from components.judges import render_cards, render_comparison
from components.report import render_report_download
from components.superseded import superseding
from components.ui import current_backend, engine, page_setup
from services import annotations, datasets, judges
from services.errors import InputError

page_setup("Judges", ":material/gavel:")
eng = engine()
st.title("Judges")
st.caption(
    "Which judge to use on your data, and what the true consistency rate of your outputs is. Each judge is a "
    "batch over a dataset (Batches page). Its card shows agreement with the human labels, unknown and failure "
    "rates, cost, and the rate three ways: the judge's own, from the labels alone, and prediction-powered (PPI: "
    "the judge's verdicts on every item, corrected by the labelled ones)."
)

all_ds = datasets.list_datasets(eng)
if not all_ds:
    st.info("No dataset yet: import one on the **Datasets** page, then run judges over it on the **Batches** page.")
    st.page_link("pages/4_Datasets.py", label="Go to Datasets", icon=":material/dataset:")
    st.stop()
with_judges = [d for d in all_ds if judges.candidate_batches(eng, d.id)]
all_ds = with_judges + [d for d in all_ds if d not in with_judges]  # datasets with batches first
ds_id = st.selectbox(
    "Dataset",
    [d.id for d in all_ds],
    format_func=lambda i: next(f"#{d.id} · {d.name}" for d in all_ds if d.id == i),
    key="jd_dataset",
)
found = judges.candidate_batches(eng, ds_id)
names: dict[int | str, str] = {
    b.id: judges.judge_name(b) + ("" if b.status == "done" else f" ({b.status})") for b in found
}
names |= {c: judges.JudgeInfo.of_column(c).name for c in judges.list_columns(eng, ds_id)}
with st.expander("Import a score column as a judge", expanded=False):
    st.caption(
        "Scores another tool computed for this dataset's items: a CSV or JSONL file with the items' ids and a "
        "number in [0, 1] per item (1 = consistent). It is compared like any judge; 0.5 or more counts as "
        "consistent."
    )
    up = st.file_uploader("File", type=["csv", "tsv", "jsonl", "json"], key="jd_col_file")
    i1, i2, i3 = st.columns(3)
    col_name = i1.text_input("Name", key="jd_col_name", max_chars=judges.columns.MAX_NAME)
    id_col = i2.text_input("Id column", "id", key="jd_col_id")
    score_col = i3.text_input("Score column", "score", key="jd_col_score")
    if st.button("Import the column", disabled=up is None or not col_name, key="jd_col_import"):
        try:
            got = judges.import_column(
                eng,
                ds_id,
                name=col_name,
                data=up.getvalue(),
                filename=up.name,
                id_column=id_col,
                score_column=score_col,
            )
        except InputError as exc:
            st.error(str(exc))
        else:
            st.success(
                f"Imported {got.n_matched} score(s); {got.n_unmatched} row(s) matched no item, {got.n_missing} had "
                "no number. Choose it among the judges."
            )
            names[got.name] = judges.JudgeInfo.of_column(got.name).name
if not names:
    st.info("No judge on this dataset yet: run one or more on the **Batches** page (or import a score column above).")
    st.page_link("pages/5_Batches.py", label="Go to Batches", icon=":material/dynamic_feed:")
    st.stop()
# Each dataset keeps its own choice of judges (its first two by default): another dataset's judges are no option
# here, and an empty picker would only say "Choose at least one judge".
picked = st.session_state.setdefault("jd_judges_by_dataset", {})
if st.session_state.get("jd_judges_dataset") != ds_id or "jd_judges" not in st.session_state:
    kept = [j for j in picked.get(ds_id, []) if j in names]
    st.session_state.jd_judges = kept or list(names)[:2]
    st.session_state.jd_judges_dataset = ds_id
chosen = st.multiselect("Judges (two or more to compare)", list(names), format_func=names.get, key="jd_judges")
picked[ds_id] = list(chosen)
if not chosen:
    st.info("Choose at least one judge.")
    st.stop()

with st.expander("Labels, interval level and prices", expanded=False):
    c1, c2 = st.columns(2)
    source = c1.radio("Human labels", list(judges.LABEL_SOURCES), format_func=judges.LABEL_SOURCES.get, key="jd_source")
    alpha = c2.select_slider(
        "Interval level", [0.2, 0.1, 0.05, 0.01], value=0.05, format_func=lambda a: f"{1 - a:.0%}", key="jd_alpha"
    )
    budget = None
    if source != "annotators" and c1.toggle(
        "Use only some of the imported labels",
        key="jd_use_budget",
        help="What would the estimate be with fewer labels?",
    ):
        budget = int(c1.number_input("Imported labels to keep (a random draw)", 0, 100_000, 50, key="jd_budget"))
    seed = int(c2.number_input("Seed (label draw and bootstrap)", 0, 1_000_000, 0, key="jd_seed"))
    backend = current_backend()
    default_in, default_out = judges.prices_of(backend)
    prices: dict[str, tuple[float | None, float | None]] = {}
    for b in found:
        if b.id not in chosen or b.method == "evidence":
            continue
        p1, p2 = st.columns(2)
        p_in = p1.number_input(
            f"{names[b.id]}: USD per million input tokens", 0.0, value=default_in, key=f"jd_pin_{b.id}"
        )
        p_out = p2.number_input(
            f"{names[b.id]}: USD per million output tokens", 0.0, value=default_out, key=f"jd_pout_{b.id}"
        )
        prices[str(b.id)] = (p_in, p_out)


@st.cache_data(show_spinner="Computing the judge cards…", max_entries=16, ttl=600)
def _read_human(dataset_id: int, source: str, budget: int | None, seed: int, labels: str, queued: tuple):
    """The human frame, read once per change of the annotators' labels (`labels`) or of the queues (`queued`:
    sending items changes origins). A judge's batch running does not change it, so it is not read again at
    every visit while one runs (0.9 s at 100,000 items)."""
    return judges.human_frame(engine(), dataset_id, source=source, budget=budget, seed=seed)  # type: ignore[arg-type]


@st.cache_data(show_spinner="Computing the judge cards…", max_entries=16, ttl=600)
def _read_judges(refs: tuple, dataset_id: int, stamp: str) -> dict:
    """Each judge's frame by its ref, read once per change of the judges' results (`stamp`), for the cards and
    Label next both: at 50,000 items reading them on every rerun was most of the page's time."""
    eng = engine()
    refs_int = [r for r in refs if isinstance(r, int)]
    frames: dict = {b.id: judges.judge_frame(eng, b) for b in judges.data.batches(eng, refs_int)}
    frames |= {r: judges.column_frame(eng, dataset_id, r) for r in refs if isinstance(r, str)}
    return frames


@st.cache_data(show_spinner="Computing the judge cards…", max_entries=16, ttl=600)
def _cards_for(
    refs: tuple,
    dataset_id: int,
    source: str,
    budget: int | None,
    seed: int,
    alpha: float,
    prices: tuple,
    stamp: str,
    _human,
    _frames: dict,
):
    return judges.build_cards(
        engine(),
        list(refs),
        dataset_id=dataset_id,
        source=source,
        budget=budget,
        seed=seed,
        alpha=alpha,
        prices=dict(prices),  # type: ignore[arg-type]
        human=_human,
        frames=_frames,
    )


# A newer stamp replaces the same choice's entry (components/superseded.py): a running batch keeps one of each.
read_human = superseding(_read_human, stamps=("labels", "queued"))
read_judges = superseding(_read_judges, stamps=("stamp",))
cards_for = superseding(_cards_for, stamps=("stamp",))

judges_stamp = judges.stamp(eng, ds_id, chosen)
queued = judges.queued_items(eng, ds_id)
try:
    human_all = read_human(ds_id, source, budget, seed, judges.stamp(eng, ds_id, []), tuple(queued))
    frames = read_judges(tuple(chosen), ds_id, judges_stamp)
    cards = cards_for(
        tuple(chosen),
        ds_id,
        source,
        budget,
        seed,
        alpha,
        tuple(sorted(prices.items())),
        judges_stamp,
        human_all,
        frames,
    )
except InputError as exc:
    st.error(str(exc))
    st.stop()
render_cards(cards)

options = {
    "source": source,
    "budget": budget,
    "seed": seed,
    "alpha": alpha,
    "prices": {str(k): v for k, v in prices.items()},
}
st.subheader("Export")
st.caption(
    "A self-contained HTML report of these cards, or a read-only link to them (kept up to date as labels arrive)."
)
panel_id = judges.save_panel(eng, ds_id, list(chosen), options)
render_report_download("judges", panel_id, key=f"jd_report_{panel_id}")

# -- compare systems -------------------------------------------------------------------------------------
st.subheader("Compare systems")
comparison = None
system_counts = judges.systems.systems_of(eng, ds_id)
if len(system_counts) < 2:
    st.info(
        "Is one system (or prompt, model, version) more consistent than another? Import a dataset whose items say "
        "which system wrote them (choose the **System** column on the **Datasets** page) to compare them here."
        + (f" This dataset has one system only ({next(iter(system_counts))})." if system_counts else "")
    )
else:
    st.caption(
        f"{len(system_counts)} systems: "
        + ", ".join(f"{name} ({n:,} items)" for name, n in system_counts.items())
        + ". Each system's rate by one judge, and every pair's difference with what it shows."
    )
    c1, c2, c3 = st.columns([2, 2, 1])
    default_ref, why_default = judges.most_judged(chosen, cards)
    if st.session_state.get("jd_cmp_judge") not in chosen:  # first visit, or another dataset or set of judges
        st.session_state.jd_cmp_judge = default_ref
    cmp_ref = c1.selectbox("Judge", chosen, format_func=names.get, key="jd_cmp_judge", help=why_default)
    if cmp_ref == default_ref:
        c1.caption(why_default)
    cmp_mode = c2.radio(
        "Reading",
        ["live", "planned"],
        format_func={"live": "Live (valid at every look)", "planned": "Planned (fixed budget)"}.get,
        key="jd_cmp_mode",
        horizontal=True,
        help="Live: read as often as labels arrive and stop when a pair is decided. Planned: state the labels a "
        "system before labelling and read the fixed-sample intervals once, when they are reached.",
    )
    cmp_plan = None
    if cmp_mode == "planned":
        cmp_plan = int(c3.number_input("Labels a system", 2, 100_000, 150, step=10, key="jd_cmp_plan"))

    @st.cache_data(show_spinner="Comparing the systems…", max_entries=16, ttl=600)
    def _comparison_for(
        ref, dataset_id: int, source: str, budget: int | None, seed: int, alpha: float, mode: str, plan, stamp: str
    ):
        return judges.systems.compare_dataset(
            engine(), dataset_id, ref, source=source, budget=budget, seed=seed, alpha=alpha, mode=mode, plan=plan
        )

    comparison_for = superseding(_comparison_for, stamps=("stamp",))
    try:
        comparison = comparison_for(
            cmp_ref, ds_id, source, budget, seed, alpha, cmp_mode, cmp_plan, judges.stamp(eng, ds_id, [cmp_ref])
        )
    except InputError as exc:
        st.error(str(exc))
    else:
        render_comparison(comparison)
        points = st.number_input(
            "Plan: a difference of (points)", 1, 50, 5, key="jd_cmp_points", help="Labels a system to tell it."
        )
        st.caption(judges.compare.planning(comparison, points / 100))
        cmp_id = judges.systems.save_comparison(
            eng, ds_id, cmp_ref, source=source, budget=budget, seed=seed, alpha=alpha, mode=cmp_mode, plan=cmp_plan
        )
        render_report_download("compare", cmp_id, key=f"jd_cmp_report_{cmp_id}")

# -- label next ------------------------------------------------------------------------------------------
st.subheader("Label next")
done = comparison.decided_systems() if comparison is not None and comparison.mode == "live" else set()
judge_frames = list(frames.values())
human = human_all[human_all["item_id"].isin(set().union(*(set(f["item_id"]) for f in judge_frames)))]
n_free = int((human["label"].isna() & human["hscore"].isna()).sum())
st.caption(
    f"{len(human) - n_free:,} of {len(human):,} items have a human judgment. Each label narrows the PPI interval; "
    "the items go to the chosen annotators' queues on the **Annotate** page, and the cards update as they label."
)
if n_free == 0:
    st.success("Every item is labelled: PPI equals the classical estimate. Nothing to propose.")
    st.stop()
l1, l2, l3 = st.columns([2, 1, 2])
strategy = l1.radio("Choose", list(judges.STRATEGIES), format_func=judges.STRATEGIES.get, key="jd_strategy")
k = int(l2.number_input("Items", 1, max(n_free, 1), min(10, n_free), key="jd_k"))
per_system = None
if (
    strategy == "random"
    and len(system_counts) >= 2
    and l2.toggle(
        "Per system", key="jd_per_system", help="Draw this many items from each system, so each has its own labels."
    )
):
    per_system = judges.systems.strata(eng, ds_id)
if per_system is not None and done:
    st.caption(
        "Not proposed any more: "
        + ", ".join(sorted(done))
        + " (each of its pairs is decided in the live comparison; more labels would change no conclusion)."
    )
people = annotations.list_annotators(eng)
who = l3.multiselect(
    "Annotators", [a.id for a in people], format_func=lambda i: next(a.name for a in people if a.id == i), key="jd_who"
)
if not people:
    l3.caption("No annotators yet: add them on the **Annotate** page.")
prop = judges.propose(
    human,
    judge_frames,
    k=k,
    strategy=strategy,
    exclude=queued,
    seed=seed,  # type: ignore[arg-type]
    per_system=per_system,
    decided=done,
)
if strategy == "uncertain":
    st.warning(
        "These items are not a random draw: they are recorded as chosen where the judges are unsure. Once "
        "labelled they sharpen the agreement figures; the rate intervals count them as known values and rest "
        "on the random labels only (the cards say how many).",
        icon=":material/warning:",
    )
if not prop.item_ids:
    st.info("Every unlabelled item is already in someone's queue.")
else:
    st.dataframe(
        prop.table.assign(idx=prop.table["idx"] + 1).rename(columns={"external_id": "item", "idx": "position"}),
        hide_index=True,
        column_config={"item_id": None},
        key="jd_proposal",
    )
    if st.button(
        f"Send {len(prop.item_ids)} item(s) to the annotators' queues", type="primary", disabled=not who, key="jd_send"
    ):
        try:
            sent = judges.send(eng, ds_id, prop.item_ids, who, origin=strategy)
        except InputError as exc:
            st.error(str(exc))
        else:
            st.success(
                "Sent: " + ", ".join(f"{n} item(s) to {name}" for name, n in sent.items()), icon=":material/send:"
            )
            st.page_link("pages/7_Annotate.py", label="Open Annotate", icon=":material/edit_note:")
