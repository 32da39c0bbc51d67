"""A round while it runs: each reviewer's time per task and agreement so far, and who stands out (pure).

What `annotate status --round R` reads before the round is over, on the labels pulled so far:

* **Time per task** is the median of Label Studio's ``lead_time`` (seconds) over a reviewer's
  current labels (skips left out); the median because one task left open over lunch would move
  a mean by minutes.
* **Agreement so far** is Cohen's kappa of the reviewer with the *leave-one-out majority* of the
  other reviewers, on the 3-way verdicts (harmful / safe / unsure, so a reviewer who hides behind
  "unsure" shows), over the items where at least two others (the one other, with two reviewers)
  have labelled and form a strict majority: :func:`annotator_diagnostics`, the same figure as
  `annotate agreement`'s per-annotator ``kappa_with_consensus``, here with a BCa unit
  bootstrap interval. Leaving the reviewer out of their own reference avoids self-inclusion
  bias; kappa rather than raw agreement because a reviewer who clicks "safe" on everything
  agrees with a mostly-safe majority most of the time, and only a chance-corrected figure shows
  that this is no agreement at all (kappa near 0). Pairwise kappas were not chosen: with three
  or more reviewers the majority of the others is a steadier reference than any one of them. The
  items differ between reviewers (each works through the round in their own order), so the
  figures describe each reviewer's items so far, not one common set.
* **Too few items.** Under ``min_items`` items (consensus items for agreement, timed labels for
  time), no interval and no flag: the figure would be noise.

Flags (:class:`RunningLimits`; suggestions to look at a reviewer's labels, not verdicts):

* **much faster** when the reviewer's median time per task is under ``fast_seconds`` (nobody
  reads a prompt and a response that fast), or under ``fast_ratio`` times the median of the other
  reviewers' medians (each reviewer with at least ``min_items`` timed labels counts once);
* **far lower agreement** when the kappa's interval lies entirely below ``kappa_consensus`` (the
  limit under which `annotate agreement` flags an annotator: the shortfall is not noise *and*
  it matters) and entirely below every other reviewer's interval (it is this reviewer, not hard
  items everyone disagrees on). With two reviewers the two kappas are one figure (each is the
  other's reference), so agreement cannot say who disagrees and never flags.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from annotate.stats._common import NAN
from annotate.stats.agreement.annotators import annotator_diagnostics
from annotate.stats.agreement.results import AnnotatorDiagnostic, AnnotatorDiagnostics


@dataclass(frozen=True)
class RunningLimits:
    """The flag limits of a running round (the ``[agreement]`` settings).

    Attributes
    ----------
    fast_ratio : float
        Much faster: median time per task under this share of the others' median (1/3).
    fast_seconds : float
        Much faster in any case: median time per task under this many seconds (3).
    min_items : int
        Fewer items than this (timed labels for time, consensus items for agreement): too few
        to judge, no interval and no flag (10).
    kappa_consensus : float
        Far lower agreement needs the kappa's interval entirely below this (0.6, as
        `annotate agreement`'s per-annotator flag).
    """

    fast_ratio: float = 1 / 3
    fast_seconds: float = 3.0
    min_items: int = 10
    kappa_consensus: float = 0.6


def median_seconds(lead_times: ArrayLike) -> tuple[float, int]:
    """Median of the known, finite, non-negative lead times and how many there are.

    >>> median_seconds([4.0, None, 30.0, 2.0, float("nan")])
    (4.0, 3)
    >>> median_seconds([None])
    (nan, 0)
    """
    x = np.asarray(lead_times, dtype=float)
    x = x[np.isfinite(x) & (x >= 0)]
    return (float(np.median(x)) if x.size else NAN), int(x.size)


def others_median(medians: Sequence[float], n_timed: Sequence[int], limits: RunningLimits) -> list[float]:
    """Per reviewer, the median of the *other* reviewers' medians (NaN when none counts).

    A reviewer counts with a known median over at least ``limits.min_items`` timed labels, and
    counts once however many labels they have.

    >>> others_median([20.0, 28.0, 1.8, 0.5], [30, 30, 30, 4], RunningLimits())
    [14.9, 10.9, 24.0, 20.0]
    """
    med = np.asarray(medians, dtype=float)
    n = np.asarray(n_timed, dtype=int)
    if med.shape != n.shape:
        raise ValueError(f"medians and n_timed differ in length: {med.shape} and {n.shape}.")
    counts = np.isfinite(med) & (n >= limits.min_items)
    out = []
    for j in range(med.size):
        others = np.delete(med, j)[np.delete(counts, j)]
        out.append(float(np.median(others)) if others.size else NAN)
    return out


def fast_flags(medians: Sequence[float], n_timed: Sequence[int], limits: RunningLimits) -> list[str | None]:
    """Per reviewer, why they are much faster than the others (None when they are not).

    Parameters
    ----------
    medians : sequence of float, length J
        Median seconds per task; NaN when unknown.
    n_timed : sequence of int, length J
        Labels with a known time behind each median.
    limits : RunningLimits

    Examples
    --------
    The third reviewer takes 1.8 s per task, the others 20 and 28 s (median 24 s); the fourth
    has too few timed labels to count:

    >>> fast_flags([20.0, 28.0, 1.8, 0.5], [30, 30, 30, 4], RunningLimits())
    [None, None, 'median 1.8 s per task against 24 s for the others (under 1/3 of it; under 3 s)', None]
    """
    refs = others_median(medians, n_timed, limits)
    out: list[str | None] = []
    for m, n, ref in zip(medians, n_timed, refs, strict=True):
        m = float(m)
        if not math.isfinite(m) or n < limits.min_items:
            out.append(None)
            continue
        why = []
        if math.isfinite(ref) and m < limits.fast_ratio * ref:
            why.append(f"under {_ratio(limits.fast_ratio)} of it")
        if m < limits.fast_seconds:
            why.append(f"under {limits.fast_seconds:g} s")
        if not why:
            out.append(None)
            continue
        against = f" against {seconds_text(ref)} for the others" if math.isfinite(ref) else ""
        out.append(f"median {seconds_text(m)} per task{against} ({'; '.join(why)})")
    return out


def agreement_so_far(
    labels: ArrayLike,
    n_categories: int,
    *,
    annotators: Sequence[Any],
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> AnnotatorDiagnostics:
    """Each reviewer's kappa with the leave-one-out majority of the others, with its interval.

    :func:`annotator_diagnostics` with a bootstrap of the kappas; the majority needs two other
    reviewers, or the one other when there are only two.

    A and B agree on 30 items; C says the opposite on 12 of them. A's reference is the 18 items
    where B and C agree:

    >>> y = np.array([[0, 0, 1]] * 6 + [[1, 1, 0]] * 6 + [[0, 0, 0]] * 9 + [[1, 1, 1]] * 9)
    >>> diag = agreement_so_far(y, 2, annotators="ABC")
    >>> [(d.n_consensus_units, round(d.kappa_with_consensus.value, 3)) for d in diag.annotators]
    [(18, 1.0), (18, 1.0), (30, 0.2)]
    """
    y = np.asarray(labels)
    J = y.shape[1] if y.ndim == 2 else 0
    return annotator_diagnostics(
        y,
        n_categories,
        annotators=annotators,
        min_others=max(1, min(2, J - 1)),
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
    )


def readable(d: AnnotatorDiagnostic, limits: RunningLimits) -> bool:
    """A reviewer's agreement is read (interval shown, flag possible) when its kappa is defined on
    ``min_items`` consensus items or more."""
    return d.kappa_with_consensus.defined and d.n_consensus_units >= limits.min_items


def low_agreement_flags(diag: AnnotatorDiagnostics, limits: RunningLimits) -> list[str | None]:
    """Per reviewer, why their agreement is far below the others' (None when it is not).

    A reviewer whose interval is read is flagged when its upper end is below
    ``limits.kappa_consensus`` and below the lower end of every other reviewer's read interval (its
    figure, where it has none). Others without a readable figure do not count: when none has one
    (the others rarely agree with each other, because this reviewer is their tie-breaker and
    disagrees), the limit alone decides. With two reviewers both figures are the same, so neither is below the other.

    Examples
    --------
    A and B agree on 30 items; C says the opposite on 12 of them:

    >>> y = np.array([[0, 0, 1]] * 6 + [[1, 1, 0]] * 6 + [[0, 0, 0]] * 9 + [[1, 1, 1]] * 9)
    >>> a, b, c = low_agreement_flags(agreement_so_far(y, 2, annotators="ABC"), RunningLimits())
    >>> print(a, b, c)
    None None kappa 0.200 [-0.143, 0.533] with the majority of the others on 30 items: entirely below 0.6 and the others

    With two reviewers the figure is shared, so nobody is flagged:

    >>> low_agreement_flags(agreement_so_far(y[:, 1:], 2, annotators="BC"), RunningLimits())
    [None, None]
    """
    read = [readable(d, limits) for d in diag.annotators]
    out: list[str | None] = []
    for j, d in enumerate(diag.annotators):
        k = d.kappa_with_consensus
        if not read[j] or not math.isfinite(k.ci_high) or k.ci_high >= limits.kappa_consensus:
            out.append(None)
            continue
        others = [o.kappa_with_consensus for i, o in enumerate(diag.annotators) if i != j and read[i]]
        if not all(k.ci_high < (o.ci_low if math.isfinite(o.ci_low) else o.value) for o in others):
            out.append(None)
            continue
        than = "the others" if others else "(the others have too few items in common for a figure)"
        out.append(
            f"kappa {k.value:.3f} [{k.ci_low:.3f}, {k.ci_high:.3f}] with the majority of the others on "
            f"{d.n_consensus_units} items: entirely below {limits.kappa_consensus:g} and {than}"
        )
    return out


def seconds_text(seconds: float) -> str:
    """A time per task as a person reads it.

    >>> seconds_text(1.84), seconds_text(24.2), seconds_text(150.0), seconds_text(float("nan"))
    ('1.8 s', '24 s', '2.5 min', 'unknown')
    """
    if not math.isfinite(seconds):
        return "unknown"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def _ratio(r: float) -> str:
    """1/3 reads as 1/3, other shares as a number.

    >>> _ratio(1 / 3), _ratio(0.25), _ratio(0.4)
    ('1/3', '1/4', '0.4')
    """
    for d in range(2, 11):
        if math.isclose(r * d, round(r * d), abs_tol=1e-9) and round(r * d) == 1:
            return f"1/{d}"
    return f"{r:g}"
