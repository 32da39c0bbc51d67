"""Which responses go to human review: a recorded stratified sampling design (pure).

Within each (model, benchmark) cell, the strata are the judge's unified label. From each clear
stratum (``harmful``, ``safe``) a simple random sample without replacement of ``clear_per_cell``
responses is drawn, and from the ``ambiguous`` stratum what the round's ambiguous rule says
(:func:`ambiguous_sample_size`: all of it, a size or a fraction; ``route --ambiguous``). Each
selected response carries its stratum and inclusion probability pi = n_h / N_h, which the
corrected scores later turn into design weights d = 1 / pi (docs/methods.md section 4.2).

Randomness is a seeded hash of each response's natural key, so the same seed selects the same
responses in any database and in any row order. Responses ingested after a round was routed
form a new *wave* with strata of their own (same rules), so earlier inclusion probabilities stay
exactly true and re-routing adds only the new responses.

Strata from several judges (``route --strata-from``): :func:`unanimity_strata` puts a response
in ``harmful`` when every named judge says harmful, in ``safe`` when every one says safe, and in
the ``ambiguous`` stratum otherwise (sampled by the same rule), a judge without a verdict on it
included. The three names are the judge-label strata's, so the design is drawn and recorded,
and the corrected scores computed, exactly as with one judge's labels.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.columns import CLEAR_LABELS, JUDGE_LABELS, PART_SEPARATOR

__all__ = [
    "AMBIGUOUS_STRATA",
    "ambiguous_rule",
    "SAMPLED_STRATA",
    "ambiguous_sample_size",
    "select_for_review",
    "select_next_wave",
    "stable_uniform",
    "task_order",
    "unanimity_strata",
]

#: Judge-label strata sampled (simple random samples of ``clear_per_cell``): the clear labels.
SAMPLED_STRATA = CLEAR_LABELS
#: Judge-label strata sampled by the round's ambiguous rule (a census with ``all``): ``ambiguous``.
AMBIGUOUS_STRATA = tuple(label for label in JUDGE_LABELS if label not in CLEAR_LABELS)


def unanimity_strata(labels: pd.DataFrame) -> pd.Series:
    """Each response's stratum from several judges' labels on it: unanimous, or the census.

    Parameters
    ----------
    labels : DataFrame, one row per response, one column per judge (two at least)
        Each judge's label on the response (``harmful``, ``safe``, ``ambiguous``); missing
        (None or NaN) where the judge has no verdict on that response.

    Returns
    -------
    Series of str, indexed like ``labels``
        ``harmful`` where every judge says harmful, ``safe`` where every judge says safe, and
        the census stratum ``ambiguous`` for anything else: a judge that says ambiguous, judges
        that disagree, or a judge without a verdict.

    Examples
    --------
    >>> labels = pd.DataFrame(
    ...     {
    ...         "j1": ["harmful", "safe", "harmful", "ambiguous", "safe"],
    ...         "j2": ["harmful", "safe", "safe", "ambiguous", None],
    ...     }
    ... )
    >>> unanimity_strata(labels).tolist()
    ['harmful', 'safe', 'ambiguous', 'ambiguous', 'ambiguous']
    """
    if labels.shape[1] < 2:
        raise ValueError("strata from several judges need the labels of two judges at least")
    values = labels.astype(object).to_numpy()
    harmful = (values == "harmful").all(axis=1)
    safe = (values == "safe").all(axis=1)
    ambiguous = AMBIGUOUS_STRATA[0]
    out = np.where(harmful, "harmful", np.where(safe, "safe", ambiguous)).astype(object)
    return pd.Series(out, index=labels.index, dtype=object)


def stable_uniform(seed: int, keys: pd.Series) -> NDArray[np.float64]:
    """A reproducible U(0, 1) draw per key: the first 8 bytes of sha256(seed|key).

    Parameters
    ----------
    seed : int
        The round's seed.
    keys : Series of str, length N
        Strings identifying the items.

    Returns
    -------
    ndarray of float64, shape (N,)
        ``int.from_bytes(sha256(f"{seed}|{key}")[:8], "big") / 2**64``, in [0, 1); the same for
        the same (seed, key) on any machine, whatever the other keys.

    Examples
    --------
    >>> u = stable_uniform(7, pd.Series(["a", "b"]))
    >>> digest = hashlib.sha256(b"7|a").digest()
    >>> bool(u[0] == int.from_bytes(digest[:8], "big") / 2.0**64)
    True
    >>> bool(stable_uniform(7, pd.Series(["b"]))[0] == u[1]), bool(stable_uniform(8, pd.Series(["b"]))[0] == u[1])
    (True, False)
    """
    prefix = f"{seed}|".encode()
    out = np.empty(len(keys), dtype=np.float64)
    for i, key in enumerate(keys):
        digest = hashlib.sha256(prefix + key.encode("utf-8", "surrogatepass")).digest()
        out[i] = int.from_bytes(digest[:8], "big") / 2.0**64
    return out


def ambiguous_sample_size(population: NDArray[np.int64], ambiguous: int | float | None) -> NDArray[np.int64]:
    """n_U per ambiguous stratum: the census (None or "all"), min(N_U, k) for a whole number k, or
    ceil(f N_U) for a fraction 0 < f < 1 (at least 1 of a non-empty stratum).

    >>> ambiguous_sample_size(np.array([0, 10, 500]), None).tolist()
    [0, 10, 500]
    >>> ambiguous_sample_size(np.array([0, 10, 500]), 25).tolist()
    [0, 10, 25]
    >>> ambiguous_sample_size(np.array([3, 500]), 0.1).tolist()
    [1, 50]
    """
    N = np.asarray(population, dtype=np.int64)
    if ambiguous is None or ambiguous == "all":
        return N
    if isinstance(ambiguous, bool) or not isinstance(ambiguous, int | float):
        raise ValueError(f"ambiguous must be 'all', a whole number or a fraction; got {ambiguous!r}")
    if isinstance(ambiguous, float) and not float(ambiguous).is_integer():
        if not 0 < ambiguous < 1:
            raise ValueError(f"an ambiguous fraction must be between 0 and 1; got {ambiguous!r}")
        out: NDArray[np.int64] = np.minimum(N, np.maximum(np.ceil(ambiguous * N - 1e-9), 1)).astype(np.int64)
        return out
    if ambiguous < 1:
        raise ValueError(f"an ambiguous sample size must be 1 or more; got {ambiguous!r}")
    out = np.minimum(N, int(ambiguous)).astype(np.int64)
    return out


def ambiguous_rule(text: str) -> int | float | None:
    """A round's recorded ambiguous rule (``route --ambiguous``) as :func:`ambiguous_sample_size` takes it.

    ``all``: None (the census); a whole number k >= 1; a fraction 0 < f < 1. ValueError otherwise.

    >>> ambiguous_rule("all"), ambiguous_rule("50"), ambiguous_rule("0.2")
    (None, 50, 0.2)
    """
    value = str(text).strip().lower()
    if value == "all":
        return None
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if np.isfinite(number) and number.is_integer() and number >= 1 and "." not in value:
        return int(number)
    if np.isfinite(number) and 0 < number < 1:
        return number
    raise ValueError(f"ambiguous must be all, a whole number >= 1 or a fraction in (0, 1); got {text!r}")


def select_for_review(
    responses: pd.DataFrame, *, clear_per_cell: int, seed: int, ambiguous: int | float | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Draw one wave of the design.

    Parameters
    ----------
    responses : DataFrame, one row per response
        The wave's population: ``response_id, model, benchmark, prompt_id, epoch, judge,
        judge_label``.
    clear_per_cell : int
        n for each clear stratum of each cell (all of it when N_h <= n).
    seed : int
        The round's seed.
    ambiguous : None, "all", int or float
        The census stratum's sample (:func:`ambiguous_sample_size`): None / "all" = every
        response (the census), k = a simple random sample of min(N_U, k), f = of ceil(f N_U).

    Returns
    -------
    selected : DataFrame
        ``response_id, model, benchmark, stratum, inclusion_prob, sort_key``, one row per
        selected response: the ``clear_per_cell`` responses with the smallest
        :func:`stable_uniform` key of each clear stratum, and every census-stratum response;
        inclusion_prob = n_h / N_h.
    strata : DataFrame
        ``model, benchmark, stratum, population`` (N_h), ``sample`` (n_h), one row per
        non-empty stratum.

    Examples
    --------
    >>> responses = pd.DataFrame(
    ...     {
    ...         "response_id": range(6),
    ...         "model": "m",
    ...         "benchmark": "b",
    ...         "prompt_id": ["p0", "p1", "p2", "p3", "p4", "p5"],
    ...         "epoch": 1,
    ...         "judge": "j",
    ...         "judge_label": ["safe", "safe", "safe", "safe", "harmful", "ambiguous"],
    ...     }
    ... )
    >>> selected, strata = select_for_review(responses, clear_per_cell=2, seed=1)
    >>> strata
      model benchmark    stratum  population  sample
    0     m         b  ambiguous           1       1
    1     m         b    harmful           1       1
    2     m         b       safe           4       2
    >>> selected.groupby("stratum").inclusion_prob.first().to_dict()
    {'ambiguous': 1.0, 'harmful': 1.0, 'safe': 0.5}
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
    # sampled by the ambiguous rule (a census with "all"); a stratum routed by hazard by its judge label
    by_rule = df["stratum"].astype(str).str.partition(PART_SEPARATOR)[0].isin(AMBIGUOUS_STRATA)
    amb = ambiguous_sample_size(df["population"].to_numpy(dtype=np.int64), ambiguous)
    df["sample"] = np.where(by_rule, amb, np.minimum(df["population"], clear_per_cell))
    chosen = df[df["position"] < df["sample"]].copy()
    chosen["inclusion_prob"] = chosen["sample"] / chosen["population"]
    strata = df.groupby(["model", "benchmark", "stratum"], as_index=False).agg(
        population=("population", "first"), sample=("sample", "first")
    )
    return chosen[cols].reset_index(drop=True), strata


def select_next_wave(
    responses: pd.DataFrame, sampled: pd.Series, plan: pd.DataFrame, *, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The next wave of a round: n_h more from the not-yet-sampled remainder of each stratum.

    docs/methods.md 4.9. Every stratum is ordered by the same :func:`stable_uniform` key as
    :func:`select_for_review`, so a stratum's earlier waves hold its smallest keys and the next
    wave takes the next n_h: a simple random sample of the R_h = N_h - p_h responses not yet
    sampled, each with the inclusion probability n_h / R_h fixed now (given the past). The new
    wave's strata have population R_h (the remainder) and sample n_h; what earlier waves sampled
    is, given the past, a census stratum of its own.

    Parameters
    ----------
    responses : DataFrame
        The strata's whole population, as :func:`select_for_review` takes it (``judge_label`` =
        the stratum).
    sampled : Series of int
        response_ids sampled by earlier waves.
    plan : DataFrame
        ``model, benchmark, stratum, n``: how many to draw from each stratum's remainder.
    seed : int
        The round's seed.

    Returns
    -------
    selected, strata : DataFrame
        As :func:`select_for_review`; ``strata`` has ``population`` = R_h, ``sample`` = n_h and
        ``sampled_before`` = p_h, one row per stratum drawn from (n_h > 0).

    Examples
    --------
    >>> responses = pd.DataFrame({"response_id": range(6), "model": "m", "benchmark": "b",
    ...     "prompt_id": [f"p{i}" for i in range(6)], "epoch": 1, "judge": "j", "judge_label": "ambiguous"})
    >>> first, _ = select_for_review(responses, clear_per_cell=0, seed=1, ambiguous=2)
    >>> plan = pd.DataFrame({"model": ["m"], "benchmark": ["b"], "stratum": ["ambiguous"], "n": [2]})
    >>> nxt, strata = select_next_wave(responses, first.response_id, plan, seed=1)
    >>> three, _ = select_for_review(responses, clear_per_cell=0, seed=1, ambiguous=4)
    >>> sorted(set(first.response_id) | set(nxt.response_id)) == sorted(three.response_id)
    True
    >>> strata[["population", "sample", "sampled_before"]].to_dict("records"), nxt.inclusion_prob.tolist()
    ([{'population': 4, 'sample': 2, 'sampled_before': 2}], [0.5, 0.5])
    """
    cols = ["response_id", "model", "benchmark", "stratum", "inclusion_prob", "sort_key"]
    scols = ["model", "benchmark", "stratum", "population", "sample", "sampled_before"]
    if (plan["n"] < 0).any():
        raise ValueError("a next wave's n must be >= 0")
    everything, _ = select_for_review(responses, clear_per_cell=len(responses), seed=seed)
    everything = everything.assign(was=everything.response_id.isin(set(sampled)))
    key = ["model", "benchmark", "stratum"]
    before = everything.groupby(key, as_index=False).agg(N=("response_id", "size"), p=("was", "sum"))
    rest = everything[~everything.was].copy()
    rest["position"] = rest.groupby(key).cumcount()
    want = plan.loc[plan["n"] > 0, [*key, "n"]].merge(before, on=key, how="left")
    if want["N"].isna().any():
        bad = want[want["N"].isna()].iloc[0]
        raise ValueError(f"no stratum {bad['stratum']!r} in cell ({bad['model']}, {bad['benchmark']})")
    want["R"] = want["N"] - want["p"]
    if (want["n"] > want["R"]).any():
        bad = want[want["n"] > want["R"]].iloc[0]
        raise ValueError(
            f"stratum {bad['stratum']!r} of ({bad['model']}, {bad['benchmark']}) has {int(bad['R'])} responses "
            f"not yet sampled; a next wave cannot draw {int(bad['n'])}"
        )
    chosen = rest.merge(want, on=key, how="inner")
    chosen = chosen[chosen["position"] < chosen["n"]].copy()
    chosen["inclusion_prob"] = chosen["n"] / chosen["R"]
    strata = want.rename(columns={"R": "population", "n": "sample", "p": "sampled_before"})
    strata = strata.astype({"population": np.int64, "sample": np.int64, "sampled_before": np.int64})
    return chosen[cols].reset_index(drop=True), strata[scols].reset_index(drop=True)


def task_order(seed: int, annotator: str, ext_ids: pd.Series) -> NDArray[np.intp]:
    """Positions that shuffle one annotator's tasks reproducibly (a different order per annotator).

    Parameters
    ----------
    seed : int
    annotator : str
    ext_ids : Series, length N
        The tasks' external ids.

    Returns
    -------
    ndarray of intp, shape (N,)
        ``argsort`` of :func:`stable_uniform` over ``annotator + "\\x1f" + ext_id``.
    """
    return np.argsort(stable_uniform(seed, annotator + "\x1f" + ext_ids.astype(str)), kind="mergesort")
