"""Per-model macro-averages over the benchmarks (docs/methods.md 4.7).

p_hat_m = (1/B) sum_b p_hat_{m,b},  V = (1/B^2) sum_b V_{m,b},  draws = (1/B) sum_b draws_{m,b}
(per draw), with the interval from the averaged draws. Where a model's cells have unresolved
items, the interval of ``corrected`` (and ``adjudicated_clear_trusted``) is the
partial-identification interval of the averages: the lower end of the averaged unresolved-safe
draws to the upper end of the averaged unresolved-harmful ones. Every interval holds its
estimate (:func:`.intervals.enclose`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.columns import JUDGE_ONLY_TREATMENTS
from annotate.stats.scoring._arrays import group_sum
from annotate.stats.scoring.intervals import enclose, equal_tailed
from annotate.stats.scoring.strata import Strata
from annotate.stats.scoring.treatments import (
    FIXED_INTERVAL,
    GENERAL_INTERVAL,
    PARTIAL_IDENTIFICATION,
    TRANSPORTED,
    UNBOUNDED_NOTE,
    Columns,
    add_note,
    not_estimable,
    stack,
)

__all__ = ["Bounds", "Grouping", "macro_average", "macro_averages"]

#: (models (M,), model code of each cell (C,), cell's benchmark is in the averaged set (C,)).
Grouping = tuple[tuple[Any, ...], NDArray[np.int64], NDArray[np.bool_]]
#: Per-cell draws of the two bounds: (unresolved safe fixed, unresolved harmful fixed, the same
#: for the general estimand); None where not drawn.
Bounds = tuple[
    NDArray[np.float64] | None, NDArray[np.float64] | None, NDArray[np.float64] | None, NDArray[np.float64] | None
]

_MACRO = ", macro-average of draws"


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


def _average(
    d: NDArray[np.float64] | None, everything: bool, in_set: NDArray[np.bool_], mc: NDArray[np.int64], M: int, Bn: int
) -> NDArray[np.float64] | None:
    if d is None:
        return None
    return group_sum(d if everything else d[in_set], mc, M) / Bn


def macro_average(
    grouping: Grouping,
    tf: Columns,
    name: str,
    draws: NDArray[np.float64] | None,
    draws_general: NDArray[np.float64] | None,
    benchmarks: list[Any],
    confidence: float,
    bounds: Bounds | None = None,
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
    bounds : Bounds, optional
        The bound runs' draws; used for models with a cell whose ``estimate_kind`` is ``mar``.

    Returns
    -------
    frame : Columns, M rows
        ``model, treatment, estimate`` = (1/B) sum_b p_b, ``se`` = sqrt(sum_b V_b)/B, ``ci_low,
        ci_high`` (from the averaged draws), ``interval, se_general, ci_low_general,
        ci_high_general, interval_general, estimate_kind, n_benchmarks, n_responses,
        n_reviewed, flag, note``. A model without a cell in one of the benchmarks, or with a
        not-estimable cell, is not estimable.
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
    kind_of = tf["estimate_kind"]
    special_cell = flag_of != "ok"
    flags = np.full(M, "ok", dtype=object)
    notes: NDArray[Any] = np.full(M, "", dtype=object)
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
    mar = np.bincount(mc, weights=(kind_of == "mar").astype(float), minlength=M) > 0
    transported = np.bincount(mc, weights=(kind_of == "transport").astype(float), minlength=M) > 0
    transported |= np.bincount(mc, weights=(flag_of == "transport").astype(float), minlength=M) > 0
    lo: NDArray[Any] = np.full(M, np.nan)
    hi: NDArray[Any] = lo
    log: NDArray[Any] = lo
    hig: NDArray[Any] = lo
    d = _average(draws, everything, in_set, mc, M, Bn)
    if d is not None:
        d[na] = np.nan
        lo, hi = equal_tailed(d, confidence)
    dg = _average(draws_general, everything, in_set, mc, M, Bn)
    if dg is not None:
        dg[na] = np.nan
        log, hig = equal_tailed(dg, confidence)
    elif name in JUDGE_ONLY_TREATMENTS:
        log, hig = lo, hi
    missing_bound = np.zeros(M, dtype=bool)
    if bounds is not None and mar.any():
        ends = []
        for k, side in ((0, 0), (1, 1), (2, 0), (3, 1)):
            b = _average(bounds[k], everything, in_set, mc, M, Bn)
            ends.append(equal_tailed(b, confidence)[side] if b is not None else np.full(M, np.nan))
        use = mar & ~na
        lo, hi = np.where(use, ends[0], lo), np.where(use, ends[1], hi)
        log, hig = np.where(use, ends[2], log), np.where(use, ends[3], hig)
        missing_bound = use & ~(np.isfinite(lo) & np.isfinite(hi) & np.isfinite(log) & np.isfinite(hig))
        # As in a cell: a bound that is not estimable is the one that needs no data (0 or 1).
        fill = missing_bound & (draws is not None)
        lo, log = (np.where(fill & ~np.isfinite(a), 0.0, a) for a in (lo, log))
        hi, hig = (np.where(fill & ~np.isfinite(a), 1.0, a) for a in (hi, hig))
        notes = add_note(notes, fill, UNBOUNDED_NOTE)
    for a in (est, se, seg):
        a[na] = np.nan
    lo, hi, moved = enclose(est, lo, hi)
    log, hig, moved_g = enclose(est, log, hig)
    notes = add_note(notes, moved, "fixed-prompt interval extended to include the estimate")
    notes = add_note(notes, moved_g, "general-estimand interval extended to include the estimate")
    fixed_name: NDArray[Any]
    general_name: NDArray[Any]
    kind: NDArray[Any]
    if name in JUDGE_ONLY_TREATMENTS:
        fixed_name = np.full(M, "dirichlet-jeffreys (general)" + _MACRO, dtype=object)
        general_name = fixed_name
        kind = np.full(M, "judge", dtype=object)
    else:
        fixed_name = np.where(transported, FIXED_INTERVAL + TRANSPORTED, FIXED_INTERVAL).astype(object) + _MACRO
        general_name = np.where(transported, GENERAL_INTERVAL + TRANSPORTED, GENERAL_INTERVAL).astype(object) + _MACRO
        if bounds is not None:
            fixed_name = np.where(mar, PARTIAL_IDENTIFICATION + fixed_name, fixed_name)
            general_name = np.where(mar, PARTIAL_IDENTIFICATION + general_name, general_name)
        kind = np.where(mar, "mar", np.where(transported, "transport", "stratified")).astype(object)
    kind[na | ~np.isfinite(est)] = ""
    frame = {
        "model": np.asarray(models, dtype=object),
        "treatment": np.full(M, name, dtype=object),
        "estimate": est,
        "se": se,
        "ci_low": lo,
        "ci_high": hi,
        "interval": fixed_name,
        "se_general": seg,
        "ci_low_general": log,
        "ci_high_general": hig,
        "interval_general": general_name,
        "estimate_kind": kind,
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
    bounds: dict[str, Bounds] | None = None,
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
    bounds = bounds or {}
    for t, tf in frames.items():
        o, od = macro_average(
            grouping, tf, t, draws.get(t), draws_general.get(t), benchmarks, confidence, bounds.get(t)
        )
        overall_frames.append(o)
        if od is not None:
            overall_draws[t] = od
    return stack(overall_frames, interleave=False), overall_draws, models
