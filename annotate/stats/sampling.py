"""Which responses go to human review: a recorded stratified sampling design (pure).

Within each (model, benchmark) cell, the strata are the judge's unified label. Every
``ambiguous`` response is reviewed (a census); from each clear stratum (``harmful``, ``safe``)
a simple random sample without replacement of ``clear_per_cell`` responses is drawn. Each
selected response carries its stratum and inclusion probability pi = n_h / N_h, which the
corrected scores later turn into design weights d = 1 / pi (methods.md section 4.2).

Randomness is a seeded hash of each response's natural key, so the same seed selects the same
responses in any database and in any row order. Responses ingested after a round was routed
form a new *wave* with strata of their own (same rules), so earlier inclusion probabilities stay
exactly true and re-routing adds only the new responses.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

CENSUS_STRATA = ("ambiguous",)
SAMPLED_STRATA = ("harmful", "safe")


def stable_uniform(seed: int, keys: pd.Series) -> np.ndarray:
    """A reproducible U(0, 1) draw per key: the first 8 bytes of sha256(seed|key).

    Args:
        seed: the round's seed.
        keys: (N,) strings identifying the items.

    Returns:
        (N,) float64 in [0, 1).
    """
    prefix = f"{seed}|".encode()
    out = np.empty(len(keys), dtype=np.float64)
    for i, key in enumerate(keys):
        digest = hashlib.sha256(prefix + key.encode("utf-8", "surrogatepass")).digest()
        out[i] = int.from_bytes(digest[:8], "big") / 2.0**64
    return out


def select_for_review(responses: pd.DataFrame, *, clear_per_cell: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Draw one wave of the design.

    Args:
        responses: the wave's population, one row per response, columns ``response_id, model,
            benchmark, prompt_id, epoch, judge, judge_label``.
        clear_per_cell: n for each clear stratum of each cell (all of it when N_h <= n).
        seed: the round's seed.

    Returns:
        (selected, strata). ``selected``: response_id, model, benchmark, stratum,
        inclusion_prob, sort_key. ``strata``: model, benchmark, stratum, population (N_h),
        sample (n_h), one row per non-empty stratum.
    """
    if clear_per_cell < 0:
        raise ValueError("clear_per_cell must be >= 0")
    cols = ["response_id", "model", "benchmark", "stratum", "inclusion_prob", "sort_key"]
    if responses.empty:
        return pd.DataFrame(columns=cols), pd.DataFrame(
            columns=["model", "benchmark", "stratum", "population", "sample"]
        )
    df = responses.rename(columns={"judge_label": "stratum"}).copy()
    keys = (
        df["benchmark"].astype(str)
        + "\x1f"
        + df["model"].astype(str)
        + "\x1f"
        + df["prompt_id"].astype(str)
        + "\x1f"
        + df["epoch"].astype(str)
        + "\x1f"
        + df["judge"].astype(str)
    )
    df["sort_key"] = stable_uniform(seed, keys)
    df = df.sort_values(["model", "benchmark", "stratum", "sort_key"], kind="mergesort")
    group = df.groupby(["model", "benchmark", "stratum"], sort=False)
    df["population"] = group["response_id"].transform("size")
    df["position"] = group.cumcount()
    census = df["stratum"].isin(CENSUS_STRATA)
    df["sample"] = np.where(census, df["population"], np.minimum(df["population"], clear_per_cell))
    chosen = df[df["position"] < df["sample"]].copy()
    chosen["inclusion_prob"] = chosen["sample"] / chosen["population"]
    strata = df.groupby(["model", "benchmark", "stratum"], as_index=False).agg(
        population=("population", "first"), sample=("sample", "first")
    )
    return chosen[cols].reset_index(drop=True), strata


def task_order(seed: int, annotator: str, ext_ids: pd.Series) -> np.ndarray:
    """Positions that shuffle one annotator's tasks reproducibly (a different order per annotator)."""
    return np.argsort(stable_uniform(seed, annotator + "\x1f" + ext_ids.astype(str)), kind="mergesort")
