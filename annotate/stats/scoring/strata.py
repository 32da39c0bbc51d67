"""The per-stratum counts every estimator takes, from an export's two audit tables (pure).

``labels`` is ``labels.csv`` (one row per routed response: its stratum and final label) and
``design`` is ``design.json`` (N_h and n_h per cell and stratum). ``annotate score`` and
``annotate verify`` both go through :func:`strata_table`, so an export's scores can be
re-derived from its own files without the database.
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def stratum_key(judge_label: str, wave: int) -> str:
    """Strata of later waves are separate: ``ambiguous`` (wave 1), ``ambiguous#w2``, ..."""
    return judge_label if int(wave) == 1 else f"{judge_label}#w{int(wave)}"


def strata_table(labels: pd.DataFrame, design_doc: dict[str, Any]) -> pd.DataFrame:
    """Per (model, benchmark, stratum): population, reviewed, harmful, unresolved, harmful_ds, resolved_ds.

    ``reviewed`` is the stratum's sample size n_h (every routed response); ``harmful`` counts
    final labels ``harmful``; ``unresolved`` counts the sampled responses without a final
    harmful/safe label (escalated, unresolved or awaiting review). Dawid-Skene counts use the
    ``ds_label`` column (``unsure`` counts as unresolved).
    """
    rows = []
    for rnd in design_doc["rounds"]:
        rows += [{**s, "round": rnd["round"]} for s in rnd["strata"]]
    strata = pd.DataFrame(
        rows, columns=["round", "model", "benchmark", "judge_label", "wave", "stratum", "population", "sample"]
    )
    if strata.empty:
        return strata.assign(reviewed=[], harmful=[], unresolved=[], harmful_ds=[], resolved_ds=[])
    lab = labels.assign(
        is_harmful=(labels.final_label == "harmful").astype(int),
        is_resolved=labels.final_label.isin(["harmful", "safe"]).astype(int),
        ds_harmful=(labels.ds_label == "harmful").astype(int),
        ds_resolved=labels.ds_label.isin(["harmful", "safe"]).astype(int),
    )
    agg = lab.groupby(["round", "model", "benchmark", "stratum"], as_index=False).agg(
        labelled=("is_harmful", "size"),
        harmful=("is_harmful", "sum"),
        resolved=("is_resolved", "sum"),
        harmful_ds=("ds_harmful", "sum"),
        resolved_ds=("ds_resolved", "sum"),
    )
    out = strata.merge(agg, on=["round", "model", "benchmark", "stratum"], how="left").fillna(
        {"labelled": 0, "harmful": 0, "resolved": 0, "harmful_ds": 0, "resolved_ds": 0}
    )
    out["reviewed"] = out["sample"].astype(int)
    out["unresolved"] = (out["reviewed"] - out["resolved"]).astype(int)
    for c in ("harmful", "resolved", "harmful_ds", "resolved_ds", "labelled"):
        out[c] = out[c].astype(int)
    return out
