"""The invariants every score row keeps, as a pure check over a scores table (for ``verify``).

:func:`check_scores` reads the rows of ``scores.csv`` / ``scores.json`` (or
``ScoreOutput.scores``) and lists every row that breaks one of them:

* an estimate lies in [0, 1] and inside its own interval [ci_low, ci_high];
* an interval is both ends or neither, with 0 <= ci_low <= ci_high <= 1;
* a rank lies inside its rank interval [rank_low, rank_high];
* a missing number has a reason: a missing estimate a flag ``not estimable: ...``, a missing
  interval around an estimate a ``note``;
* **bounds bound** (issue #23): the missing-at-random estimate of ``corrected`` lies between the
  rows ``corrected_unresolved_safe`` (the lower bound over the unresolved items) and
  ``corrected_unresolved_harmful`` (the upper bound) of the same model and benchmark, and a row
  with ``lower_bound`` / ``upper_bound`` columns (``ScoreResult.cells``) has its estimate between
  them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["check_scores"]

_TOL = 1e-9


def _num(df: pd.DataFrame, col: str) -> pd.Series:
    if col not in df:
        return pd.Series(np.nan, index=df.index, dtype=np.float64)
    return pd.to_numeric(df[col], errors="coerce").astype(np.float64)


def _text(df: pd.DataFrame, col: str) -> pd.Series:
    if col not in df:
        return pd.Series("", index=df.index, dtype=object)
    return df[col].where(df[col].notna(), "").astype(str)


def _g(x: float) -> str:
    return f"{x:.6g}"


def check_scores(
    scores: pd.DataFrame | Iterable[Mapping[str, Any]], *, source: str | None = None, lines: list[int] | None = None
) -> list[str]:
    """Every broken invariant of a scores table, one sentence per problem (empty when all hold).

    Parameters
    ----------
    scores : DataFrame or iterable of mappings
        Rows with ``model, benchmark, treatment, estimate, ci_low, ci_high`` and, when present,
        ``rank, rank_low, rank_high, flag, note``. Numbers may be strings (as read from a CSV
        without conversion); text that is not a number counts as missing.
    source : str, optional
        The file the rows come from (e.g. ``"scores.csv"``), to start each problem with.
    lines : list of int, optional
        The line of each row in ``source`` (``source:LINE:`` then starts each problem).

    Returns
    -------
    list of str
        ``"[source[:LINE]: ]scores row MODEL x BENCHMARK x TREATMENT: what is wrong"``.

    Examples
    --------
    >>> rows = [
    ...     {"model": "a", "benchmark": "b", "treatment": "corrected", "estimate": 0.669,
    ...      "ci_low": 0.0, "ci_high": 0.664, "flag": "transport", "note": ""},
    ...     {"model": "c", "benchmark": "b", "treatment": "corrected", "estimate": None,
    ...      "ci_low": None, "ci_high": None, "flag": "ok", "note": ""},
    ... ]
    >>> for p in check_scores(rows, source="scores.csv", lines=[2, 3]):
    ...     print(p)
    scores.csv:2: scores row a x b x corrected: estimate 0.669 lies outside its interval [0, 0.664].
    scores.csv:3: scores row c x b x corrected: the estimate is missing but the flag does not say why ('ok').

    Bounds that do not bound (issue #23's transport case printed 0.480 above 0.380):

    >>> bounds = {"corrected": 0.25, "corrected_unresolved_safe": 0.48, "corrected_unresolved_harmful": 0.38}
    >>> rows = [
    ...     {"model": "t", "benchmark": "b", "treatment": t, "estimate": e, "ci_low": 0.0, "ci_high": 1.0,
    ...      "flag": "transport", "note": ""}
    ...     for t, e in bounds.items()
    ... ]
    >>> for p in check_scores(rows):  # doctest: +ELLIPSIS
    ...     print(p.replace("scores row t x b x corrected: ", ""))
    the bounds over the unresolved items do not bound: lower 0.48 (corrected_unresolved_safe) > upper 0.38 (...).
    estimate 0.25 lies outside its bounds [0.48, 0.38] over the unresolved items.
    """
    df = scores if isinstance(scores, pd.DataFrame) else pd.DataFrame(list(scores))
    if df.empty:
        return []
    est, lo, hi = _num(df, "estimate"), _num(df, "ci_low"), _num(df, "ci_high")
    rank, rlo, rhi = _num(df, "rank"), _num(df, "rank_low"), _num(df, "rank_high")
    lb, ub = _num(df, "lower_bound").to_numpy(), _num(df, "upper_bound").to_numpy()
    flag, note = _text(df, "flag"), _text(df, "note")
    where = (_text(df, "model") + " x " + _text(df, "benchmark") + " x " + _text(df, "treatment")).tolist()
    e, lo_, hi_ = est.to_numpy(), lo.to_numpy(), hi.to_numpy()
    k, kl, kh = rank.to_numpy(), rlo.to_numpy(), rhi.to_numpy()
    fl, nt = flag.tolist(), note.tolist()
    problems: list[str] = []
    if lines is not None and len(lines) != len(df):
        raise ValueError(f"lines has {len(lines)} entries for {len(df)} rows.")
    for i in range(len(df)):
        say = problems.append
        at = f"{source}:{lines[i]}: " if source and lines is not None else f"{source}: " if source else ""
        head = f"{at}scores row {where[i]}: "
        has_e, has_lo, has_hi = np.isfinite(e[i]), np.isfinite(lo_[i]), np.isfinite(hi_[i])
        if has_e and not -_TOL <= e[i] <= 1 + _TOL:
            say(head + f"estimate {_g(e[i])} is not a rate in [0, 1].")
        if has_lo != has_hi:
            say(head + f"the interval has one end only ([{lo_[i]}, {hi_[i]}]).")
        if has_lo and has_hi:
            if not (-_TOL <= lo_[i] <= hi_[i] + _TOL and hi_[i] <= 1 + _TOL):
                say(head + f"interval [{_g(lo_[i])}, {_g(hi_[i])}] is not an interval within [0, 1].")
            if has_e and not (lo_[i] - _TOL <= e[i] <= hi_[i] + _TOL):
                say(head + f"estimate {_g(e[i])} lies outside its interval [{_g(lo_[i])}, {_g(hi_[i])}].")
        if not has_e and not fl[i].startswith("not estimable"):
            say(head + f"the estimate is missing but the flag does not say why ({fl[i]!r}).")
        if has_e and not has_lo and not has_hi and not nt[i]:
            say(head + "the estimate has no interval and the note does not say why.")
        if np.isfinite(k[i]) and np.isfinite(kl[i]) and np.isfinite(kh[i]) and not (kl[i] <= k[i] <= kh[i]):
            say(head + f"rank {k[i]:g} lies outside its rank interval [{kl[i]:g}, {kh[i]:g}].")
        if has_e and np.isfinite(lb[i]) and np.isfinite(ub[i]) and not (lb[i] - _TOL <= e[i] <= ub[i] + _TOL):
            say(
                head
                + f"estimate {_g(e[i])} lies outside its bounds [{_g(lb[i])}, {_g(ub[i])}] (lower_bound, upper_bound)."
            )
    problems += _bound_order(df, est, source, lines)
    return problems


#: The treatments whose estimates bound ``corrected``'s over the unresolved items.
BOUND_ROWS = ("corrected_unresolved_safe", "corrected_unresolved_harmful")


def _bound_order(df: pd.DataFrame, est: pd.Series, source: str | None, lines: list[int] | None) -> list[str]:
    """corrected_unresolved_safe <= corrected <= corrected_unresolved_harmful per (model, benchmark)."""
    if "treatment" not in df:
        return []
    treatment = _text(df, "treatment")
    key = _text(df, "model") + "\x1f" + _text(df, "benchmark")
    at: dict[tuple[str, str], int] = {}
    for i, (k_, t) in enumerate(zip(key, treatment, strict=True)):
        if t in ("corrected", *BOUND_ROWS):
            at.setdefault((k_, t), i)
    out = []
    e = est.to_numpy()
    for (k_, t), i in at.items():
        if t != "corrected":
            continue
        lo_i, hi_i = at.get((k_, BOUND_ROWS[0])), at.get((k_, BOUND_ROWS[1]))
        if lo_i is None or hi_i is None:
            continue
        lo, hi, mid = e[lo_i], e[hi_i], e[i]
        if not (np.isfinite(lo) and np.isfinite(hi)):
            continue
        where = f"{source}:{lines[i]}: " if source and lines is not None else f"{source}: " if source else ""
        model, bench = k_.split("\x1f", 1)
        head = f"{where}scores row {model} x {bench} x corrected: "
        if lo > hi + _TOL:
            out.append(
                head + f"the bounds over the unresolved items do not bound: lower {_g(lo)} ({BOUND_ROWS[0]}) > "
                f"upper {_g(hi)} ({BOUND_ROWS[1]})."
            )
        if np.isfinite(mid) and not (lo - _TOL <= mid <= hi + _TOL):
            out.append(
                head + f"estimate {_g(mid)} lies outside its bounds [{_g(lo)}, {_g(hi)}] over the unresolved items."
            )
    return out
