"""How many clear responses to review per stratum for a target SE: Neyman allocation (docs/methods.md 4.8)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.columns import CLEAR_LABELS, JUDGE_LABELS
from annotate.stats.scoring.strata import ALIASES

__all__ = ["DEFAULT_RATES", "plan_allocation", "plan_sensitivity"]

#: docs/methods.md's guesses of P(harmful | judge label) for the clear labels.
DEFAULT_RATES = {"harmful": 0.85, "safe": 0.04}

_NEED = ["model", "benchmark", "stratum", "judge_label", "population"]


def _strata(strata: pd.DataFrame) -> pd.DataFrame:
    """Validated non-empty strata sorted by cell, judge labels without aliases."""
    miss = [c for c in _NEED if c not in strata]
    if miss:
        raise ValueError(f"The strata frame lacks column(s) {miss}.")
    df = strata.copy()
    df["judge_label"] = df["judge_label"].astype(str).map(lambda v: ALIASES.get(v, v))
    if not set(df["judge_label"]) <= set(JUDGE_LABELS):
        raise ValueError(f"Unknown judge_label values; expected one of {list(JUDGE_LABELS)}.")
    df["population"] = pd.to_numeric(df["population"]).astype(np.float64)
    return df[df["population"] > 0].sort_values(["model", "benchmark"], kind="mergesort").reset_index(drop=True)


def _rate_guesses(df: pd.DataFrame, rates: Mapping[str, float] | str | None) -> pd.Series:
    """pi_h per stratum: the defaults, a mapping, or the pooled Jeffreys rate per benchmark and label."""
    if rates is None:
        return df["judge_label"].map(DEFAULT_RATES)
    if isinstance(rates, str):
        if rates != "data":
            raise ValueError(f"rates must be a mapping, 'data' or None; got {rates!r}.")
        for c in ("reviewed", "harmful", "unresolved"):
            if c not in df:
                raise ValueError(f"rates='data' needs column {c!r}.")
        r = df["reviewed"] - df["unresolved"]
        agg = df.assign(_r=r).groupby(["benchmark", "judge_label"], observed=True)[["harmful", "_r"]].sum()
        pooled = (agg["harmful"] + 0.5) / (agg["_r"] + 1.0)
        pooled[agg["_r"] == 0] = np.nan
        guess = pd.Series(
            pooled.reindex(pd.MultiIndex.from_frame(df[["benchmark", "judge_label"]])).to_numpy(), index=df.index
        )
        return guess.fillna(df["judge_label"].map(DEFAULT_RATES))
    return df["judge_label"].map(lambda label: rates.get(label, DEFAULT_RATES.get(label, np.nan)))


def _neyman(
    cell: NDArray[np.int64],
    C: int,
    N: NDArray[np.float64],
    Ncell: NDArray[np.float64],
    W: NDArray[np.float64],
    Sh: NDArray[np.float64],
    clear: NDArray[np.bool_],
    e2: float,
) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
    """The unrounded optimum, re-solved after strata whose n_h reaches N_h become censuses.

    Returns
    -------
    census : ndarray of bool, shape (K,)
    n_h : ndarray of float64, shape (K,)
        n W_h S_h / sum_k W_k S_k over the sampled strata (0 elsewhere).
    n_cell : ndarray of float64, shape (C,)
        n = (sum_h W_h S_h)^2 / (e^2 + sum_h W_h S_h^2 / N).
    """
    census = np.zeros(len(N), dtype=bool)
    n_h: NDArray[np.float64] = np.zeros(len(N))
    n_cell_f: NDArray[np.float64] = np.zeros(C)
    for _ in range(max(1, int(clear.sum()) + 1)):
        samp = clear & ~census
        A = np.bincount(cell, weights=np.where(samp, W * Sh, 0.0), minlength=C)
        Bv = np.bincount(cell, weights=np.where(samp, W * Sh**2, 0.0), minlength=C) / Ncell
        n_cell_f = A**2 / (e2 + Bv)
        with np.errstate(divide="ignore", invalid="ignore"):
            n_h = np.where(samp & (A[cell] > 0), n_cell_f[cell] * W * Sh / A[cell], 0.0)
        over = samp & (n_h >= N)
        if not over.any():
            break
        census |= over
    return census, n_h, n_cell_f


def _round(
    cell: NDArray[np.int64],
    C: int,
    N: NDArray[np.float64],
    W: NDArray[np.float64],
    Sh: NDArray[np.float64],
    clear: NDArray[np.bool_],
    census: NDArray[np.bool_],
    n_cell_f: NDArray[np.float64],
    min_per_stratum: int,
) -> NDArray[np.float64]:
    """Integer n_h: n per cell rounded up, split by largest remainders, then the floor and cap.

    Returns
    -------
    ndarray of float64, shape (K,)
        N_h for censuses and non-clear strata; otherwise min(max(n_h, min(min_per_stratum,
        N_h)), N_h).
    """
    samp = clear & ~census
    n_int_cell = np.ceil(n_cell_f - 1e-9)
    with np.errstate(divide="ignore", invalid="ignore"):
        A = np.bincount(cell, weights=np.where(samp, W * Sh, 0.0), minlength=C)
        share = np.where(samp & (A[cell] > 0), n_int_cell[cell] * W * Sh / A[cell], 0.0)
    base = np.floor(share + 1e-9)
    deficit = n_int_cell - np.bincount(cell, weights=base, minlength=C)
    rem = np.where(samp, share - base, -1.0)
    order = np.lexsort((-rem, cell))
    pos = np.empty(len(N), dtype=np.int64)
    pos[order] = np.arange(len(N)) - np.searchsorted(cell[order], cell[order], side="left")
    n_plan = base + ((pos < deficit[cell]) & samp)
    n_plan = np.where(census, N, n_plan)
    n_plan = np.minimum(np.maximum(n_plan, np.minimum(min_per_stratum, N)), N)
    out: NDArray[np.float64] = np.where(clear, n_plan, N)
    return out


def plan_allocation(
    strata: pd.DataFrame,
    target_se: float,
    *,
    rates: Mapping[str, float] | str | None = None,
    min_per_stratum: int = 10,
) -> pd.DataFrame:
    """How many clear responses to review per stratum for a target SE (Neyman allocation).

    With S_h = sqrt(pi_h (1 - pi_h)) from guessed rates pi_h, W_h = N_h / N over the whole cell
    and e the target standard error (census strata contribute 0 to the variance):

        n = (sum_h W_h S_h)^2 / (e^2 + sum_h W_h S_h^2 / N),   n_h = n W_h S_h / sum_k W_k S_k,

    sums over the sampled (clear) strata of the cell. n is rounded up, then split over the
    strata by largest remainders (so sum n_h = n); a stratum whose n_h reaches N_h becomes a
    census and the others are re-solved; finally n_h >= min(min_per_stratum, N_h).

    Parameters
    ----------
    strata : DataFrame
        ``model, benchmark, stratum, judge_label, population`` (the strata frame; ``reviewed``,
        ``harmful``, ``unresolved`` are needed only for ``rates="data"``).
    target_se : float
        e, the wanted SE of the cell's corrected rate (fixed-prompt).
    rates : mapping, "data" or None
        Guessed P(harmful | judge label) for ``harmful`` and ``safe``. None = docs/methods.md
        defaults pi_H = 0.85, pi_S = 0.04. ``"data"`` = the pooled Jeffreys rate
        (sum y + 1/2)/(sum r + 1) over the models of each benchmark, per judge label (the
        defaults where nothing was reviewed yet).
    min_per_stratum : int, default 10

    Returns
    -------
    DataFrame, one row per clear stratum
        ``model, benchmark, stratum, judge_label, population, weight (W_h), rate_guess (pi_h),
        n_neyman`` (unrounded optimum), ``n`` (planned, integer), ``census`` (n = N_h),
        ``n_cell`` (sum of n over the cell's clear strata), ``expected_se`` (with the planned n).

    Examples
    --------
    docs/methods.md 4.8: W_H = 0.10, W_S = 0.50, N = 1000, e = 0.02, so W_H S_H = 0.1 sqrt(0.85 * 0.15)
    = 0.035707 and W_S S_S = 0.5 sqrt(0.04 * 0.96) = 0.097980; n = 0.133687^2 / (0.0004 +
    0.0311 / 1000) = 41.38, split 41.38 * 0.035707 / 0.133687 = 11.05 and 30.32, rounded to
    11 + 31 = 42:

    >>> strata = pd.DataFrame(
    ...     {
    ...         "model": "m",
    ...         "benchmark": "b",
    ...         "stratum": ["harmful", "safe", "ambiguous"],
    ...         "judge_label": ["harmful", "safe", "ambiguous"],
    ...         "population": [100, 500, 400],
    ...     }
    ... )
    >>> plan = plan_allocation(strata, 0.02)
    >>> plan[["judge_label", "n_neyman", "n", "n_cell"]].round(2)
      judge_label  n_neyman   n  n_cell
    0     harmful     11.05  11      42
    1        safe     30.32  31      42
    """
    if not target_se > 0:
        raise ValueError(f"target_se must be positive; got {target_se!r}.")
    df = _strata(strata)
    guess = _rate_guesses(df, rates)
    cell = df.groupby(["model", "benchmark"], sort=False).ngroup().to_numpy()
    C = int(cell.max()) + 1 if len(cell) else 0
    N = df["population"].to_numpy()
    # (np.bincount with weights returns float64; astype without a copy only tells the type checker)
    Ncell: NDArray[np.float64] = np.bincount(cell, weights=N, minlength=C).astype(np.float64, copy=False)
    W = N / Ncell[cell]
    pi = guess.to_numpy(dtype=np.float64)
    Sh = np.sqrt(np.clip(pi * (1 - pi), 0.0, None))
    clear = df["judge_label"].isin(CLEAR_LABELS).to_numpy()
    census, n_h, n_cell_f = _neyman(cell, C, N, Ncell, W, Sh, clear, float(target_se) ** 2)
    n_plan = _round(cell, C, N, W, Sh, clear, census, n_cell_f, min_per_stratum)
    census = census | (n_plan >= N)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(clear & (n_plan > 0), W**2 * (1 - n_plan / N) * Sh**2 / n_plan, 0.0)
    out = df.loc[:, _NEED].copy()
    out["population"] = out["population"].astype(np.int64)
    out["weight"] = W
    out["rate_guess"] = pi
    out["n_neyman"] = np.where(census & clear & (n_h >= N), N, n_h)
    out["n"] = n_plan.astype(np.int64)
    out["census"] = census
    out["n_cell"] = np.bincount(cell, weights=np.where(clear, n_plan, 0.0), minlength=C)[cell].astype(np.int64)
    out["expected_se"] = np.sqrt(np.bincount(cell, weights=v, minlength=C))[cell]
    return out[clear].reset_index(drop=True)


def plan_sensitivity(
    strata: pd.DataFrame,
    target_se: float,
    *,
    rates: Mapping[str, float] | str | None = None,
    n_harmful: int | None = None,
    min_per_stratum: int = 10,
) -> pd.DataFrame:
    """How many judge-safe responses per cell to review for a target SE of the judge's sensitivity.

    The routing judge's sensitivity over the design is Se = A / (A + B) with A = sum_c N_H,c pi_H
    (its true positives) and B = sum_c N_S,c pi_S (the harmful responses it called safe, the ones
    hidden in the sparsely reviewed judge-safe strata; docs/methods.md 9.7). With n_H,c reviewed of
    each judge-harmful stratum and a common n of each judge-safe one (capped at N_S,c), the delta
    method gives

        Var(Se) = sum_c [ (B / (A + B)^2)^2 V_A,c + (A / (A + B)^2)^2 V_B,c ],
        V_k,c = N_k,c^2 (1 / n_k,c - 1 / N_k,c) pi_k (1 - pi_k),

    and n is the smallest number (at least ``min_per_stratum``) that brings sqrt(Var(Se)) down to
    ``target_se``, found by bisection. Rare harm makes n large (issue #23: a judge's sensitivity
    for rare harm cannot be audited at 25 per stratum). Where the judge-safe samples together
    would hold fewer than 3 harmful responses in expectation, the normal SE understates the
    interval (which then rests on the unseen-harm draw of 9.7): ``note`` says so.

    Parameters
    ----------
    strata : DataFrame
        As :func:`plan_allocation`.
    target_se : float
        The wanted SE of the judge's sensitivity over all the cells.
    rates : mapping, "data" or None
        As :func:`plan_allocation`.
    n_harmful : int, optional
        Reviewed per judge-harmful stratum (default: the stratum's ``reviewed`` if given, else
        ``min_per_stratum``).
    min_per_stratum : int, default 10

    Returns
    -------
    DataFrame, one row per cell with a judge-safe stratum
        ``model, benchmark, population`` (N_S), ``rate_guess`` (pi_S), ``n`` (judge-safe to review),
        ``census``, ``n_harmful`` (judge-harmful reviewed), ``expected_harmful`` (n pi_S in the cell),
        ``expected_se`` (of the pooled sensitivity, the same on every row), ``reachable``, ``note``.

    Examples
    --------
    Four cells of 50 judge-harmful (pi_H = 0.85) and 950 judge-safe responses (pi_S = 0.01), 25
    reviewed of each judge-harmful stratum: Se = 170 / (170 + 38) = 0.817, and an SE of 0.05 needs
    181 judge-safe reviews per cell, where 25 give 0.147:

    >>> strata = pd.DataFrame({"model": [f"m{i}" for i in range(4) for _ in range(2)], "benchmark": "b",
    ...     "stratum": ["harmful", "safe"] * 4, "judge_label": ["harmful", "safe"] * 4,
    ...     "population": [50, 950] * 4})
    >>> plan = plan_sensitivity(strata, 0.05, rates={"harmful": 0.85, "safe": 0.01}, n_harmful=25)
    >>> int(plan.n.iloc[0]), round(float(plan.expected_se.iloc[0]), 3), bool(plan.reachable.iloc[0])
    (181, 0.05, True)
    """
    if not target_se > 0:
        raise ValueError(f"target_se must be positive; got {target_se!r}.")
    df = _strata(strata)
    pi = _rate_guesses(df, rates).to_numpy(dtype=np.float64)
    df = df.assign(_pi=pi)
    if n_harmful is None and "reviewed" in df:
        df["_n"] = pd.to_numeric(df["reviewed"]).astype(np.float64)
    else:
        df["_n"] = float(min_per_stratum if n_harmful is None else n_harmful)
    key = ["model", "benchmark"]
    H = (
        df[df.judge_label == "harmful"]
        .groupby(key, sort=False)[["population", "_pi", "_n"]]
        .agg({"population": "sum", "_pi": "mean", "_n": "sum"})
    )
    S = (
        df[df.judge_label == "safe"]
        .groupby(key, sort=False)[["population", "_pi"]]
        .agg({"population": "sum", "_pi": "mean"})
    )
    H = H.rename(columns={"population": "population_h", "_pi": "_pi_h", "_n": "_n_h"})
    cells = S.join(H, how="left").fillna({"population_h": 0.0, "_pi_h": 0.0, "_n_h": 0.0})
    NS, pS = cells["population"].to_numpy(), cells["_pi"].to_numpy()
    NH, pH = cells["population_h"].to_numpy(), cells["_pi_h"].to_numpy()
    nH = np.minimum(np.maximum(cells["_n_h"].to_numpy(), np.minimum(1.0, NH)), NH)
    A, B = float((NH * pH).sum()), float((NS * pS).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        VA = np.where(nH > 0, NH**2 * (1.0 / nH - 1.0 / np.where(NH > 0, NH, 1.0)) * pH * (1 - pH), 0.0)
    cA, cB = (B / (A + B) ** 2) ** 2, (A / (A + B) ** 2) ** 2

    def se(n: float) -> float:
        m = np.minimum(n, NS)
        with np.errstate(divide="ignore", invalid="ignore"):
            VB = np.where(m > 0, NS**2 * (1.0 / m - 1.0 / np.where(NS > 0, NS, 1.0)) * pS * (1 - pS), 0.0)
        return float(np.sqrt(cA * VA.sum() + cB * VB.sum()))

    lo, hi = float(min_per_stratum), float(max(NS.max() if len(NS) else 1.0, min_per_stratum))
    reachable = se(hi) <= target_se
    if se(lo) <= target_se:
        n = lo
    elif not reachable:
        n = hi
    else:
        while hi - lo > 0.5:
            mid = (lo + hi) / 2.0
            lo, hi = (lo, mid) if se(mid) <= target_se else (mid, hi)
        n = float(np.ceil(hi))
    n_cell = np.minimum(n, NS)
    expected = n_cell * pS
    few = (
        "fewer than 3 harmful responses expected in all the judge-safe samples: the normal SE understates the interval"
    )
    notes = np.full(len(NS), few if expected.sum() < 3 else "", dtype=object)
    if not reachable:
        why = "not reachable by judge-safe reviews alone (review more judge-harmful responses)"
        notes = np.asarray([f"{x}; {why}" if x else why for x in notes], dtype=object).reshape(len(NS))
    out = cells.reset_index()[key]
    out["population"] = NS.astype(np.int64)
    out["rate_guess"] = pS
    out["n"] = n_cell.astype(np.int64)
    out["census"] = n_cell >= NS
    out["n_harmful"] = nH.astype(np.int64)
    out["expected_harmful"] = expected
    out["expected_se"] = se(n)
    out["reachable"] = reachable
    out["note"] = notes
    return out
