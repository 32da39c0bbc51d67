"""Per-model macro-averages over the benchmarks (methods.md 4.7).

p_hat_m = (1/B) sum_b p_hat_{m,b},  V = (1/B^2) sum_b V_{m,b},  draws = (1/B) sum_b draws_{m,b}
(per draw), with the interval from the averaged draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.columns import JUDGE_ONLY_TREATMENTS
from annotate.stats.scoring._arrays import group_sum
from annotate.stats.scoring.intervals import equal_tailed
from annotate.stats.scoring.strata import Strata
from annotate.stats.scoring.treatments import INTERVALS, Columns, not_estimable, stack

__all__ = ["Grouping", "macro_average", "macro_averages"]

#: (models (M,), model code of each cell (C,), cell's benchmark is in the averaged set (C,)).
Grouping = tuple[tuple[Any, ...], NDArray[np.int64], NDArray[np.bool_]]


def _macro_flag(flags: NDArray[Any], benchmarks: NDArray[Any]) -> tuple[str, str]:
    """Aggregate cell flags of one model into (flag, note)."""
    pairs = list(zip(flags, benchmarks, strict=True))
    ne = [f"{b}: {f[len('not estimable: ') :]}" for f, b in pairs if f.startswith("not estimable")]
    if ne:
        return "not estimable: " + " | ".join(ne), ""
    tr = [str(b) for f, b in pairs if f == "transport"]
    low = [str(b) for f, b in pairs if f.startswith("low n")]
    if tr:
        return "transport", f"transported benchmark(s): {', '.join(tr)}" + (f"; low n: {', '.join(low)}" if low else "")
    if low:
        return "low n", f"low n benchmark(s): {', '.join(low)}"
    return "ok", ""


def macro_average(
    grouping: Grouping,
    tf: Columns,
    name: str,
    draws: NDArray[np.float64] | None,
    draws_general: NDArray[np.float64] | None,
    benchmarks: list[Any],
    confidence: float,
) -> tuple[Columns, NDArray[np.float64] | None]:
    """Macro-average of one treatment per model over ``benchmarks``.

    Parameters
    ----------
    grouping : Grouping
        M models, each cell's model and whether its benchmark is averaged.
    tf : Columns
        The treatment's rows, one per cell in cell order.
    name : str
        The treatment.
    draws, draws_general : ndarray of float64, shape (C, D), optional
        The treatment's draws, rows aligned with the cells.
    benchmarks : list, length B
    confidence : float

    Returns
    -------
    frame : Columns, M rows
        ``model, treatment, estimate`` = (1/B) sum_b p_b, ``se`` = sqrt(sum_b V_b)/B, ``ci_low,
        ci_high`` (from the averaged draws), ``interval, se_general, ci_low_general,
        ci_high_general, n_benchmarks, n_responses, n_reviewed, flag, note``. A model without a
        cell in one of the benchmarks, or with a not-estimable cell, is not estimable.
    draws : ndarray of float64, shape (M, D), or None
        (1/B) sum_b draws_b (NaN rows where not estimable).
    """
    Bn = len(benchmarks)
    models, m_code, in_set = grouping
    M = len(models)
    everything = bool(in_set.all())
    mc = m_code[in_set]
    if not everything:
        tf = {k: v[in_set] for k, v in tf.items()}
    count = np.bincount(mc, minlength=M)
    est = np.bincount(mc, weights=tf["estimate"], minlength=M) / Bn
    se = np.sqrt(np.bincount(mc, weights=tf["se"] ** 2, minlength=M)) / Bn
    seg = np.sqrt(np.bincount(mc, weights=tf["se_general"] ** 2, minlength=M)) / Bn
    bench_of = tf["benchmark"]
    flag_of = tf["flag"]
    special_cell = flag_of != "ok"
    flags = np.full(M, "ok", dtype=object)
    notes = np.full(M, "", dtype=object)
    flagged = np.flatnonzero((np.bincount(mc, weights=special_cell.astype(float), minlength=M) > 0) | (count != Bn))
    for m_i in flagged:  # strings for flagged models only
        rows = mc == m_i
        f, nt = _macro_flag(flag_of[rows], bench_of[rows])
        if count[m_i] != Bn:
            have = set(bench_of[rows])
            lacking = [str(b) for b in benchmarks if b not in have]
            f = f"not estimable: no responses for benchmark(s) {', '.join(lacking)}"
        flags[m_i], notes[m_i] = f, nt
    na = not_estimable(flags)
    lo: NDArray[np.float64] = np.full(M, np.nan)
    hi, log, hig = lo, lo, lo
    d = None
    if draws is not None:
        d = group_sum(draws if everything else draws[in_set], mc, M) / Bn
        d[na] = np.nan
        lo, hi = equal_tailed(d, confidence)
    if draws_general is not None:
        dg = group_sum(draws_general if everything else draws_general[in_set], mc, M) / Bn
        dg[na] = np.nan
        log, hig = equal_tailed(dg, confidence)
    elif name in JUDGE_ONLY_TREATMENTS:
        log, hig = lo, hi
    for a in (est, se, seg):
        a[na] = np.nan
    frame = {
        "model": np.asarray(models, dtype=object),
        "treatment": np.full(M, name, dtype=object),
        "estimate": est,
        "se": se,
        "ci_low": lo,
        "ci_high": hi,
        "interval": np.full(
            M,
            "dirichlet-jeffreys (general), macro-average of draws"
            if name in JUDGE_ONLY_TREATMENTS
            else INTERVALS[name] + ", macro-average of draws",
            dtype=object,
        ),
        "se_general": seg,
        "ci_low_general": log,
        "ci_high_general": hig,
        "n_benchmarks": count,
        "n_responses": np.bincount(mc, weights=tf["n_responses"], minlength=M).astype(np.int64),
        "n_reviewed": np.bincount(mc, weights=tf["n_reviewed"], minlength=M).astype(np.int64),
        "flag": flags,
        "note": notes,
    }
    return frame, d


def macro_averages(
    st: Strata,
    frames: dict[str, Columns],
    draws: dict[str, NDArray[np.float64]],
    draws_general: dict[str, NDArray[np.float64]],
    benchmarks: list[Any],
    confidence: float,
) -> tuple[pd.DataFrame, dict[str, NDArray[np.float64]], tuple[Any, ...]]:
    """:func:`macro_average` of every treatment in ``frames``, in that order.

    Returns
    -------
    overall : DataFrame
        One row per (treatment, model), treatment-major.
    overall_draws : dict of str to ndarray, shape (M, D)
    models : tuple, length M
        In order of first appearance among the (sorted) cells.
    """
    overall_frames = []
    overall_draws: dict[str, NDArray[np.float64]] = {}
    models = tuple(pd.unique(st.cells["model"]))
    grouping = (
        models,
        pd.Index(models).get_indexer(st.cells["model"]),
        st.cells["benchmark"].isin(benchmarks).to_numpy(),
    )
    for t, tf in frames.items():
        o, od = macro_average(grouping, tf, t, draws.get(t), draws_general.get(t), benchmarks, confidence)
        overall_frames.append(o)
        if od is not None:
            overall_draws[t] = od
    return stack(overall_frames, interleave=False), overall_draws, models
