"""Per-cell label shares and the ranking flip that motivates human review (pure, pandas)."""

from __future__ import annotations

import pandas as pd

LABELS = ("harmful", "safe", "ambiguous")


def cell_shares(counts: pd.DataFrame) -> pd.DataFrame:
    """Label shares per (judge, model, benchmark).

    Args:
        counts: long frame with columns model, benchmark, judge, judge_label, n.

    Returns:
        One row per (judge, model, benchmark) with n_responses, n_<label> and share_<label>
        for harmful, safe and ambiguous; sorted by judge, benchmark, model.
    """
    keys = ["judge", "model", "benchmark"]
    if counts.empty:
        cols = keys + ["n_responses"] + [f"n_{l}" for l in LABELS] + [f"share_{l}" for l in LABELS]
        return pd.DataFrame(columns=cols)
    wide = counts.pivot_table(index=keys, columns="judge_label", values="n", aggfunc="sum", fill_value=0)
    wide = wide.reindex(columns=list(LABELS), fill_value=0)
    out = wide.rename(columns={l: f"n_{l}" for l in LABELS}).reset_index()
    out["n_responses"] = out[[f"n_{l}" for l in LABELS]].sum(axis=1)
    for l in LABELS:
        out[f"share_{l}"] = out[f"n_{l}"] / out["n_responses"]
    return out.sort_values(["judge", "benchmark", "model"]).reset_index(drop=True)


def ranking_sensitivity(shares: pd.DataFrame) -> pd.DataFrame:
    """Each model's harmful rate with ambiguous counted as safe vs as harmful, and its ranks.

    The per-model rate is the macro-average over benchmarks (each benchmark weighs the same).
    Rank 1 = the lowest harmful rate (the safest), ties share the average rank; ranks are
    computed within each judge.

    Returns:
        Columns judge, model, n_benchmarks, rate_as_safe, rate_as_harmful, rank_as_safe,
        rank_as_harmful, rank_shift (= rank_as_harmful - rank_as_safe).
    """
    if shares.empty:
        return pd.DataFrame(
            columns=[
                "judge",
                "model",
                "n_benchmarks",
                "rate_as_safe",
                "rate_as_harmful",
                "rank_as_safe",
                "rank_as_harmful",
                "rank_shift",
            ]
        )
    df = shares.assign(
        rate_as_safe=shares["share_harmful"],
        rate_as_harmful=shares["share_harmful"] + shares["share_ambiguous"],
    )
    per_model = df.groupby(["judge", "model"], as_index=False).agg(
        n_benchmarks=("benchmark", "nunique"),
        rate_as_safe=("rate_as_safe", "mean"),
        rate_as_harmful=("rate_as_harmful", "mean"),
    )
    grouped = per_model.groupby("judge")
    per_model["rank_as_safe"] = grouped["rate_as_safe"].rank(method="average")
    per_model["rank_as_harmful"] = grouped["rate_as_harmful"].rank(method="average")
    per_model["rank_shift"] = per_model["rank_as_harmful"] - per_model["rank_as_safe"]
    return per_model.sort_values(["judge", "rank_as_safe", "model"]).reset_index(drop=True)
