"""The saved results as the paper's tables and figures: Table 5 rows, the model x method matrix, the radar."""

from __future__ import annotations

from typing import Any

import pandas as pd

from services.conseval.scales import IC_CASES
from services.conseval.study import METHODS, PAPER_ACCURACY_SCALE


def results_frame(results: dict[str, Any] | None) -> pd.DataFrame:
    """The saved result rows as a DataFrame, with the row label of Table 5 (e.g. 'dICL (random) & SCE')."""
    cols = [
        "kind",
        "stat",
        "value",
        "ci_low",
        "ci_high",
        "n",
        "n_raters",
        "level",
        "note",
        "model",
        "method",
        "criterion",
        "granularity",
        "scale",
        "mode",
        "oracle",
    ]
    df = pd.DataFrame((results or {}).get("rows", []))
    for c in cols:
        if c not in df.columns:
            df[c] = None
    if df.empty:
        return df.assign(variant=pd.Series(dtype=str))
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    # SC (across the samples) and GS sit on the method's own row, as SC does in Table 5.
    modes = ["single" if k in ("SC", "GS") else mode for k, mode in zip(df["kind"], df["mode"], strict=True)]
    df["variant"] = [variant_label(m, mode) for m, mode in zip(df["method"], modes, strict=True)]
    return df


def variant_label(method: str, mode: str) -> str:
    """Table 5's row label of a method and decoding: Base (the greedy answer), SCE, dICL_r & SCE; the IC of the
    sampled answers (Figure 3's other decoding) is its own row, e.g. 'Base (sampled)'."""
    if method not in METHODS:
        return str(method)
    base = {"base": "Base", "dicl_r": "dICL_r", "dicl_sm": "dICL_sm"}[method]
    if mode == "sce":
        return "SCE" if method == "base" else f"{base} & SCE"
    if mode == "sampled":
        return f"{base} (sampled)"
    return base


PAPER_KINDS = ["SC", "IC1", "IC2", "IC3", "IC4"]


def accuracy_scale(df: pd.DataFrame) -> str | None:
    """The scale accuracy is reported on, as Table 3: 5-P when the study has it (else none: see the extra)."""
    return PAPER_ACCURACY_SCALE if (df.kind == "ACC").any() and (df.scale == PAPER_ACCURACY_SCALE).any() else None


def model_method_matrix(df: pd.DataFrame, criterion: str) -> pd.DataFrame:
    """Table 5: rows model x method (and decoding), columns SC, IC1-IC4 (each the mean over definitions and
    scales), accuracy r per oracle on the 5-P scale as Table 3; then, labelled as extras, the accuracy averaged
    over all scales and GS."""
    d = df[(df.criterion == criterion) & df.kind.isin([*PAPER_KINDS, "GS", "ACC"])]
    if d.empty:
        return pd.DataFrame()
    d = d.assign(row=d.model + " · " + d.variant)
    table = d[d.kind.isin(PAPER_KINDS)].pivot_table(index="row", columns="kind", values="value", aggfunc="mean")
    table = table.reindex(index=sorted(set(d.row)), columns=[c for c in PAPER_KINDS if c in table.columns])
    acc = d[d.kind == "ACC"]
    oracle = acc["oracle"] if "oracle" in acc.columns else pd.Series(index=acc.index, dtype=object)
    acc = acc.assign(oracle=oracle.fillna("oracle").astype(str))
    for name, g in acc.groupby("oracle", sort=False):
        on5 = g[g.scale == PAPER_ACCURACY_SCALE]
        if len(on5):
            table[f"Accuracy r vs {name} (5-P)"] = on5.groupby("row")["value"].mean()
        table[f"Extra: accuracy r vs {name}, mean of all scales"] = g.groupby("row")["value"].mean()
    gs = d[d.kind == "GS"]
    if len(gs):
        table["Extra: GS, greedy vs sampled (not in the paper)"] = gs.groupby("row")["value"].mean()
    return table


def radar_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 4: per model and criterion, SC (mean over scales), IC (mean over cases, greedy answers) and
    accuracy (5-P when the study has it, as Table 3; mean over oracles), base method."""
    d = df[df.method == "base"]
    on = accuracy_scale(df)
    out = []
    for (model, crit), g in d.groupby(["model", "criterion"]):
        ic = g[g.kind.isin(list(IC_CASES)) & g["mode"].isin(["greedy", "single"])]
        if ic.empty:
            ic = g[g.kind.isin(list(IC_CASES)) & (g["mode"] == "sampled")]
        acc = g[(g.kind == "ACC") & g["mode"].isin(["greedy", "single"])]
        if on is not None:
            acc = acc[acc.scale == on]
        out.append(
            {
                "model": model,
                "criterion": crit,
                "SC": g[g.kind == "SC"].value.mean(),
                "IC": ic.value.mean(),
                "Accuracy": acc.value.mean(),
            }
        )
    return pd.DataFrame(out, columns=["model", "criterion", "SC", "IC", "Accuracy"])
