"""The strata frame: per-stratum counts every estimator takes, built and validated (pure).

Two builders produce it: :func:`strata_table` from an export's two audit tables (``labels.csv``,
one row per routed response with its stratum and final label, and ``design.json``, N_h and n_h
per cell and stratum; ``annotate score`` and ``annotate verify`` both go through it, so an
export's scores can be re-derived from its own files without the database), and
:func:`strata_from_responses` from a per-response table. :func:`prepare_strata` validates a
strata frame and sorts it into the arrays the estimator works on (:class:`Strata`).

Judge labels are coded by their position in :data:`annotate.columns.JUDGE_LABELS`:
``H_CODE`` = 0 (harmful), ``S_CODE`` = 1 (safe), ``U_CODE`` = 2 (ambiguous).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.columns import HUMAN_LABELS, JUDGE_LABELS, PART_SEPARATOR, STRATA_COLUMNS

__all__ = [
    "DESIGN_STRATA_COLUMNS",
    "ALIASES",
    "H_CODE",
    "S_CODE",
    "U_CODE",
    "Strata",
    "prepare_strata",
    "strata_from_responses",
    "strata_table",
    "stratum_key",
]

#: Codes of the judge labels: positions in JUDGE_LABELS (harmful, safe, ambiguous).
H_CODE, S_CODE, U_CODE = range(len(JUDGE_LABELS))
#: One-letter aliases accepted for the judge labels.
ALIASES = dict(zip("HSU", JUDGE_LABELS, strict=True))

_DS_COLUMNS = ("harmful_ds", "resolved_ds")


# --------------------------------------------------------------------------------------------
# From an export's audit tables
# --------------------------------------------------------------------------------------------


def stratum_key(judge_label: str, wave: int, part: str | None = None) -> str:
    """Strata of later waves are separate: ``ambiguous`` (wave 1), ``ambiguous#w2``, ...; a round routed
    by hazard cuts each judge label by it (``part``): ``ambiguous|vcr``, ``safe|ssh#w2``.

    >>> stratum_key("ambiguous", 1), stratum_key("safe", 3), stratum_key("safe", 2, "ssh")
    ('ambiguous', 'safe#w3', 'safe|ssh#w2')
    """
    base = judge_label if part is None else f"{judge_label}{PART_SEPARATOR}{part}"
    return base if int(wave) == 1 else f"{base}#w{int(wave)}"


def split_routed(label: str) -> tuple[str, str | None]:
    """A routed stratum label as (judge label, part): ``"ambiguous|vcr"`` -> ``("ambiguous", "vcr")``.

    >>> split_routed("ambiguous|vcr"), split_routed("safe")
    (('ambiguous', 'vcr'), ('safe', None))
    """
    head, sep, tail = label.partition(PART_SEPARATOR)
    return (head, tail) if sep else (label, None)


#: The design as the estimators take it: one row per stratum of every round (from design.json,
#: ``annotate.audit.Design.strata_frame``).
DESIGN_STRATA_COLUMNS = ("round", "model", "benchmark", "judge_label", "wave", "stratum", "population", "sample")


def strata_table(labels: pd.DataFrame, design_strata: pd.DataFrame) -> pd.DataFrame:
    """Per (model, benchmark, stratum): population, reviewed, harmful, unresolved, harmful_ds, resolved_ds.

    Parameters
    ----------
    labels : DataFrame
        ``labels.csv`` of an export: ``round, model, benchmark, stratum, final_label, ds_label``.
    design_strata : DataFrame
        The strata of design.json, :data:`DESIGN_STRATA_COLUMNS`: one row per (round, model,
        benchmark, stratum) with its judge label, wave, N_h (``population``) and n_h (``sample``).

    Returns
    -------
    DataFrame, one row per (round, model, benchmark, stratum) of the design
        ``round, model, benchmark, judge_label, wave, stratum, population, sample, labelled,
        harmful, resolved, harmful_ds, resolved_ds, reviewed, unresolved``. ``reviewed`` is the
        stratum's sample size n_h (every routed response); ``harmful`` counts final labels
        ``harmful``; ``unresolved`` counts the sampled responses without a final harmful/safe
        label (escalated, unresolved or awaiting review). Dawid-Skene counts use the
        ``ds_label`` column (``unsure`` counts as unresolved).
    """
    keep = [*DESIGN_STRATA_COLUMNS, *(["judged"] if "judged" in design_strata else [])]
    strata = design_strata.reindex(columns=keep)
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


# --------------------------------------------------------------------------------------------
# From a per-response table
# --------------------------------------------------------------------------------------------


def _codes(col: pd.Series) -> tuple[NDArray[np.integer[Any]], pd.Index]:
    """Integer codes (-1 = missing) and categories of a column (fast for categoricals)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(), col.cat.categories
    codes, uniques = pd.factorize(col, sort=True)
    return codes, pd.Index(uniques)


def _lookup(
    categories: pd.Index, wanted: tuple[str, ...], what: str, aliases: Mapping[str, str] | None = None
) -> NDArray[np.int64]:
    """Map category positions to positions in ``wanted`` (-1 for missing values)."""
    table = np.empty(len(categories) + 1, dtype=np.int64)
    table[-1] = -1  # code -1 (missing) indexes the last slot
    bad = []
    for i, c in enumerate(categories):
        name = aliases.get(c, c) if aliases else c
        if name in wanted:
            table[i] = wanted.index(name)
        else:
            bad.append(c)
    if bad:
        raise ValueError(f"Unknown {what} value(s) {bad[:5]}; expected one of {list(wanted)}.")
    return table


def strata_from_responses(
    responses: pd.DataFrame,
    *,
    wave: str | None = None,
    human_label: str = "human_label",
    reviewed: str = "reviewed",
    ds_label: str | None = None,
) -> pd.DataFrame:
    """Aggregate a per-response table into the strata frame of :func:`corrected_scores`.

    One pass of ``np.bincount`` over integer codes; use pandas categoricals for speed.

    Parameters
    ----------
    responses : DataFrame, R rows
        Columns ``model, benchmark, judge_label`` (harmful / safe / ambiguous or H / S / U),
        ``reviewed`` (bool) and ``human_label`` (``harmful`` / ``safe`` / ``unresolved``, missing
        for responses not reviewed). A reviewed response without a human label counts as
        unresolved; a label on a response that was not reviewed is an error.
    wave : str, optional
        Column that splits strata further (e.g. the routing wave); the stratum key becomes
        ``"<judge_label>|<wave>"``. Without it the stratum key is the judge label.
    human_label, reviewed : str
        Column names.
    ds_label : str, optional
        Column with Dawid-Skene labels (harmful / safe, missing = none); adds ``harmful_ds`` and
        ``resolved_ds``.

    Returns
    -------
    DataFrame
        ``model, benchmark, stratum, judge_label, population, reviewed, harmful, unresolved``
        (+ ``harmful_ds, resolved_ds``), one row per non-empty stratum, sorted by cell and stratum.

    Examples
    --------
    Four safe-judged responses, three reviewed (one harmful, one safe, one without a label), and
    one ambiguous response reviewed as harmful:

    >>> responses = pd.DataFrame(
    ...     {
    ...         "model": "m",
    ...         "benchmark": "b",
    ...         "judge_label": ["S", "S", "S", "S", "U"],
    ...         "reviewed": [True, True, True, False, True],
    ...         "human_label": ["harmful", "safe", None, None, "harmful"],
    ...     }
    ... )
    >>> strata_from_responses(responses).drop(columns=["model", "benchmark"])
         stratum judge_label  population  reviewed  harmful  unresolved
    0       safe        safe           4         3        1           1
    1  ambiguous   ambiguous           1         1        1           0
    """
    missing = [c for c in ("model", "benchmark", "judge_label", reviewed, human_label) if c not in responses]
    if missing:
        raise ValueError(f"responses lacks column(s) {missing}.")
    mc, mcat = _codes(responses["model"])
    bc, bcat = _codes(responses["benchmark"])
    jc_raw, jcat = _codes(responses["judge_label"])
    jc = _lookup(jcat, JUDGE_LABELS, "judge_label", ALIASES)[jc_raw]
    if (mc < 0).any() or (bc < 0).any() or (jc < 0).any():
        raise ValueError("model, benchmark and judge_label must not be missing.")
    wc: NDArray[np.integer[Any]]
    if wave is not None:
        wc, wcat = _codes(responses[wave])
        if (wc < 0).any():
            raise ValueError(f"column {wave!r} must not be missing.")
    else:
        wc, wcat = np.zeros(1, dtype=np.int64), pd.Index([None])
    hc_raw, hcat = _codes(responses[human_label])
    hc = _lookup(hcat, HUMAN_LABELS, human_label)[hc_raw]  # 0 harmful, 1 safe, 2 unresolved, -1 none
    rev = responses[reviewed].to_numpy(dtype=bool)
    if ((hc >= 0) & ~rev).any():
        raise ValueError(
            f"{int(((hc >= 0) & ~rev).sum())} response(s) have a {human_label!r} but are not {reviewed!r}."
        )
    # outcome: 0 not reviewed, 1 harmful, 2 safe, 3 unresolved (reviewed without a label included)
    outcome = np.where(rev, np.where(hc < 0, 3, hc + 1), 0).astype(np.int64)
    nM, nB, nW = len(mcat), len(bcat), len(wcat)
    key = ((mc.astype(np.int64) * nB + bc) * nW + (wc if wave is not None else 0)) * 3 + jc
    n_keys = nM * nB * nW * 3
    counts: NDArray[np.int64]
    if n_keys * 4 <= 50_000_000:
        counts = np.bincount(key * 4 + outcome, minlength=n_keys * 4).reshape(n_keys, 4)
        present = np.flatnonzero(counts.sum(axis=1))
        counts = counts[present]
    else:  # sparse key space: compress first
        present, inv = np.unique(key, return_inverse=True)
        counts = np.bincount(inv * 4 + outcome, minlength=len(present) * 4).reshape(len(present), 4)
    j = present % 3
    w = (present // 3) % nW
    b = (present // (3 * nW)) % nB
    m = present // (3 * nW * nB)
    labels = np.asarray(JUDGE_LABELS, dtype=object)[j]
    if wave is not None:
        stratum = pd.Series(labels).str.cat(pd.Series(np.asarray(wcat, dtype=object)[w]).astype(str), sep="|")
    else:
        stratum = pd.Series(labels)
    out = pd.DataFrame(
        {
            "model": np.asarray(mcat, dtype=object)[m],
            "benchmark": np.asarray(bcat, dtype=object)[b],
            "stratum": stratum.to_numpy(dtype=object),
            "judge_label": labels,
            "population": counts.sum(axis=1),
            "reviewed": counts[:, 1:].sum(axis=1),
            "harmful": counts[:, 1],
            "unresolved": counts[:, 3],
        }
    )
    if ds_label is not None:
        dc_raw, dcat = _codes(responses[ds_label])
        dc = _lookup(dcat, ("harmful", "safe"), ds_label)[dc_raw]
        ds_out = np.where(rev & (dc >= 0), dc + 1, 0).astype(np.int64)  # 1 harmful, 2 safe
        if n_keys * 4 <= 50_000_000:
            dcounts = np.bincount(key * 3 + ds_out, minlength=n_keys * 3).reshape(n_keys, 3)[present]
        else:
            dcounts = np.bincount(inv * 3 + ds_out, minlength=len(present) * 3).reshape(len(present), 3)
        out["harmful_ds"] = dcounts[:, 1]
        out["resolved_ds"] = dcounts[:, 1] + dcounts[:, 2]
    return out


# --------------------------------------------------------------------------------------------
# Validated, sorted strata
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Strata:
    """A validated strata frame as arrays: S strata in C cells over B benchmarks.

    Strata are sorted by (model, benchmark, judge label code, stratum key), so each cell's
    strata are contiguous (``starts``) and so is every (cell, judge label) group within it.

    Attributes
    ----------
    frame : DataFrame, S rows
        The sorted non-empty strata (counts as float64, judge labels without aliases).
    cell : ndarray of int64, shape (S,)
        Cell of each stratum, 0 .. C - 1 in (model, benchmark) order.
    starts : ndarray of int64, shape (C,)
        First stratum of each cell.
    label : ndarray of int64, shape (S,)
        Judge-label code (``H_CODE``, ``S_CODE``, ``U_CODE``).
    N, n, y, u : ndarray of float64, shape (S,)
        N_h, n_h, y_h, u_h.
    cells : DataFrame, C rows
        ``model, benchmark``.
    N_cell : ndarray of float64, shape (C,)
        N = sum_h N_h per cell.
    bench : ndarray of int64, shape (C,)
        Benchmark code of each cell (position in ``benchmarks``).
    benchmarks : Index, length B
        Sorted benchmark names.
    y_ds, r_ds : ndarray of float64, shape (S,), or None
        ``harmful_ds`` and ``resolved_ds`` when the input has ``harmful_ds``.
    judged : ndarray of bool, shape (C,)
        Whether a judge labelled the cell's responses (the input's optional ``judged``, default
        True; False for responses ingested unjudged: their judge-only treatments are not estimable).
    """

    frame: pd.DataFrame
    cell: NDArray[np.int64]
    starts: NDArray[np.int64]
    label: NDArray[np.int64]
    N: NDArray[np.float64]
    n: NDArray[np.float64]
    y: NDArray[np.float64]
    u: NDArray[np.float64]
    cells: pd.DataFrame
    N_cell: NDArray[np.float64]
    bench: NDArray[np.int64]
    benchmarks: pd.Index
    y_ds: NDArray[np.float64] | None
    r_ds: NDArray[np.float64] | None
    judged: NDArray[np.bool_]

    @property
    def C(self) -> int:
        """Number of cells."""
        return len(self.starts)

    @property
    def S(self) -> int:
        """Number of strata."""
        return len(self.cell)


def prepare_strata(strata: pd.DataFrame) -> Strata:
    """Validate a strata frame and sort it into :class:`Strata`.

    Parameters
    ----------
    strata : DataFrame
        Columns :data:`annotate.columns.STRATA_COLUMNS` (+ optional ``harmful_ds``,
        ``resolved_ds``; ``resolved_ds`` defaults to ``reviewed``; optional ``judged``). Rows with
        population 0 are dropped.

    Returns
    -------
    Strata

    Raises
    ------
    ValueError
        Missing columns or values, unknown judge labels, counts that are not non-negative
        integers, inconsistent counts (n_h <= N_h, y_h + u_h <= n_h, harmful_ds <= resolved_ds <=
        reviewed), duplicate strata within a cell.
    """
    missing = [c for c in STRATA_COLUMNS if c not in strata]
    if missing:
        raise ValueError(f"The strata frame lacks column(s) {missing}; required: {list(STRATA_COLUMNS)}.")
    df = strata.loc[:, [c for c in strata.columns if c in STRATA_COLUMNS or c in _DS_COLUMNS or c == "judged"]].copy()
    if df[list(STRATA_COLUMNS)].isna().any().any():
        raise ValueError("The strata frame has missing values in required columns.")
    jl = df["judge_label"].astype(str).map(lambda v: ALIASES.get(v, v))
    bad = sorted(set(jl) - set(JUDGE_LABELS))
    if bad:
        raise ValueError(f"Unknown judge_label value(s) {bad[:5]}; expected one of {list(JUDGE_LABELS)} (or H/S/U).")
    df["judge_label"] = jl.to_numpy(dtype=object)
    count_cols = ["population", "reviewed", "harmful", "unresolved"] + [c for c in _DS_COLUMNS if c in df]
    for c in count_cols:
        v = pd.to_numeric(df[c], errors="raise").to_numpy(dtype=np.float64)
        if (v < 0).any() or (v != np.round(v)).any():
            raise ValueError(f"Column {c!r} must hold non-negative integers.")
        df[c] = v
    problems = []
    if (df["reviewed"] > df["population"]).any():
        problems.append("reviewed > population")
    if (df["harmful"] + df["unresolved"] > df["reviewed"]).any():
        problems.append("harmful + unresolved > reviewed")
    if "harmful_ds" in df:
        if "resolved_ds" not in df:
            df["resolved_ds"] = df["reviewed"]
        if (df["harmful_ds"] > df["resolved_ds"]).any() or (df["resolved_ds"] > df["reviewed"]).any():
            problems.append("harmful_ds <= resolved_ds <= reviewed violated")
    if problems:
        raise ValueError("Inconsistent strata counts: " + "; ".join(problems) + ".")
    df = df[df["population"] > 0]
    df = df.assign(_key=df["stratum"].astype(str))
    if df.duplicated(["model", "benchmark", "_key"]).any():
        dup = df[df.duplicated(["model", "benchmark", "_key"], keep=False)].iloc[0]
        raise ValueError(f"Duplicate stratum {dup['stratum']!r} in cell ({dup['model']!r}, {dup['benchmark']!r}).")
    # Sorted by cell, then judge label (H, S, U), then stratum key: every (cell, label) group is
    # contiguous, so group sums are single reduceat calls.
    df["_lab"] = pd.Categorical(df["judge_label"], categories=list(JUDGE_LABELS)).codes
    df = df.sort_values(["model", "benchmark", "_lab", "_key"], kind="mergesort")
    df = df.drop(columns=["_key", "_lab"]).reset_index(drop=True)
    cell = df.groupby(["model", "benchmark"], sort=False, observed=True).ngroup().to_numpy().astype(np.int64)
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]]) if len(cell) else np.zeros(0, np.int64)
    cells = df.loc[starts, ["model", "benchmark"]].reset_index(drop=True)
    N = df["population"].to_numpy()
    bench_codes, benchmarks = pd.factorize(cells["benchmark"], sort=True)
    has_ds = "harmful_ds" in df
    judged = df["judged"].astype(bool).to_numpy() if "judged" in df else np.ones(len(df), dtype=bool)
    return Strata(
        frame=df,
        cell=cell,
        starts=starts.astype(np.int64),
        label=pd.Categorical(df["judge_label"], categories=list(JUDGE_LABELS)).codes.astype(np.int64),
        N=N,
        n=df["reviewed"].to_numpy(),
        y=df["harmful"].to_numpy(),
        u=df["unresolved"].to_numpy(),
        cells=cells,
        N_cell=np.add.reduceat(N, starts) if len(N) else np.zeros(0),
        bench=bench_codes.astype(np.int64),
        benchmarks=pd.Index(benchmarks),
        y_ds=df["harmful_ds"].to_numpy() if has_ds else None,
        r_ds=df["resolved_ds"].to_numpy() if has_ds else None,
        judged=np.minimum.reduceat(judged, starts) if len(judged) else np.zeros(0, dtype=bool),
    )


def shared_cell(strata: pd.DataFrame) -> str | None:
    """The first cell that more than one round covers, as an error message; None when each cell has one round.

    A cell's responses are one population: two rounds over it (a routed round and an imported one, or
    two imports) would count every response twice and average the two, whatever their strata are
    called (an imported round's are ``harmful#w0``, a routed one's ``harmful``).

    >>> t = pd.DataFrame({"round": ["r1", "r1", "jbb"], "model": ["m"] * 3, "benchmark": ["b"] * 3,
    ...                   "stratum": ["harmful", "safe", "harmful#w0"]})
    >>> shared_cell(t)[:58]
    'cell m x b is covered by more than one round (jbb, r1): it'
    """
    if not len(strata):
        return None
    rounds = strata.groupby(["model", "benchmark"]).round.unique()
    shared = rounds[rounds.map(len) > 1]
    if shared.empty:
        return None
    (model, bench), names = shared.index[0], sorted(map(str, shared.iloc[0]))
    return (
        f"cell {model} x {bench} is covered by more than one round ({', '.join(names)}): its responses would be "
        "counted twice; score one round at a time (--round)."
    )
