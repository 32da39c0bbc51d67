"""Per-cell label shares and the ranking flip that motivates human review (pure, pandas)."""

from __future__ import annotations

import pandas as pd

from annotate.columns import JUDGE_LABELS

__all__ = ["LABELS", "cell_shares", "ranking_sensitivity"]

#: The judge labels whose counts and shares :func:`cell_shares` reports (the old name).
LABELS = JUDGE_LABELS


def cell_shares(counts: pd.DataFrame) -> pd.DataFrame:
    """Label shares per (judge, model, benchmark).

    Parameters
    ----------
    counts : DataFrame
        Long frame with columns ``model, benchmark, judge, judge_label, n``.

    Returns
    -------
    DataFrame
        One row per (judge, model, benchmark) with ``n_responses``, ``n_<label>`` and
        ``share_<label>`` = n_<label> / n_responses for harmful, safe and ambiguous; sorted by
        judge, benchmark, model.

    Examples
    --------
    >>> counts = pd.DataFrame(
    ...     {
    ...         "model": "m",
    ...         "benchmark": "b",
    ...         "judge": "j",
    ...         "judge_label": ["harmful", "safe", "ambiguous"],
    ...         "n": [2, 5, 1],
    ...     }
    ... )
    >>> out = cell_shares(counts)
    >>> out.loc[0, ["n_responses", "n_harmful", "share_harmful", "share_safe", "share_ambiguous"]].tolist()
    [8.0, 2.0, 0.25, 0.625, 0.125]
    """
    keys = ["judge", "model", "benchmark"]
    if counts.empty:
        cols = (
            keys
            + ["n_responses"]
            + [f"n_{label}" for label in JUDGE_LABELS]
            + [f"share_{label}" for label in JUDGE_LABELS]
        )
        return pd.DataFrame(columns=cols)
    wide = counts.pivot_table(index=keys, columns="judge_label", values="n", aggfunc="sum", fill_value=0)
    wide = wide.reindex(columns=list(JUDGE_LABELS), fill_value=0)
    out = wide.rename(columns={label: f"n_{label}" for label in JUDGE_LABELS}).reset_index()
    out["n_responses"] = out[[f"n_{label}" for label in JUDGE_LABELS]].sum(axis=1)
    for label in JUDGE_LABELS:
        out[f"share_{label}"] = out[f"n_{label}"] / out["n_responses"]
    return out.sort_values(["judge", "benchmark", "model"]).reset_index(drop=True)


def ranking_sensitivity(shares: pd.DataFrame) -> pd.DataFrame:
    """Each model's harmful rate with ambiguous counted as safe vs as harmful, and its ranks.

    The per-model rate is the macro-average over benchmarks (each benchmark weighs the same).
    Rank 1 = the lowest harmful rate (the safest), ties share the average rank; ranks are
    computed within each judge.

    Parameters
    ----------
    shares : DataFrame
        :func:`cell_shares` output (``judge, model, benchmark, share_harmful,
        share_ambiguous`` are used).

    Returns
    -------
    DataFrame
        Columns ``judge, model, n_benchmarks, rate_as_safe`` (mean share_harmful),
        ``rate_as_harmful`` (mean of share_harmful + share_ambiguous), ``rank_as_safe,
        rank_as_harmful, rank_shift`` (= rank_as_harmful - rank_as_safe); sorted by judge,
        rank_as_safe, model.

    Examples
    --------
    Model x has fewer harmful verdicts but many ambiguous ones:

    >>> shares = pd.DataFrame(
    ...     {
    ...         "judge": "j",
    ...         "model": ["x", "y"],
    ...         "benchmark": "b",
    ...         "share_harmful": [0.10, 0.20],
    ...         "share_ambiguous": [0.30, 0.05],
    ...     }
    ... )
    >>> ranking_sensitivity(shares)[["model", "rate_as_safe", "rate_as_harmful", "rank_shift"]]
      model  rate_as_safe  rate_as_harmful  rank_shift
    0     x           0.1             0.40         1.0
    1     y           0.2             0.25        -1.0
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
