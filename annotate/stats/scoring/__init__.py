"""Corrected harmful rates per (model, benchmark) cell: pure, vectorised statistics on strata counts.

Everything here works on a **long frame of strata** (docs/methods.md section 4). A cell is one
``(model, benchmark)`` pair; inside it the strata are arbitrary groups of responses, each with a
role given by the judge's label (``harmful`` H / ``safe`` S / ``ambiguous`` U). Usually there is
one stratum per judge label, but responses ingested after a round was routed form a new *wave*
with strata of their own, so the ``stratum`` column is an opaque key and several strata of a cell
may share a judge label. Per stratum h:

============  ==========================================================================
column        meaning
============  ==========================================================================
model         model name
benchmark     benchmark name
stratum       opaque stratum key, unique within the cell (e.g. ``"harmful"``, ``"safe|w2"``)
judge_label   ``harmful`` / ``safe`` / ``ambiguous`` (aliases ``H`` / ``S`` / ``U``)
population    N_h, responses in the stratum
reviewed      n_h, reviewed responses: resolved (a final human label) + unresolved
harmful       y_h, responses adjudicated harmful among the r_h = n_h - u_h resolved ones
unresolved    u_h, reviewed responses still without a final label (section 4.6)
harmful_ds    optional: y_h with Dawid-Skene labels instead of majority vote + expert
resolved_ds   optional: items with a Dawid-Skene label (default: ``reviewed``)
============  ==========================================================================

Notation: W_h = N_h / N (N = sum of N_h over the cell), r_h = n_h - u_h, ybar_h = y_h / r_h.

Where this differs from docs/methods.md section 4, issue #13 changed the method; each change says why.

Estimators (docs/methods.md 4.2-4.7)
-------------------------------
* point: p_hat = sum_h W_h ybar_h (Horvitz-Thompson / post-stratified; unresolved items missing
  at random within their stratum, i.e. the r_h resolved items are treated as the sample);
* V_fixed = sum_h W_h^2 (1 - r_h/N_h) s_h^2 / r_h with s_h^2 = r_h ybar_h (1 - ybar_h)/(r_h - 1)
  (0 when r_h <= 1; census strata contribute 0); V_general = V_fixed + p_hat (1 - p_hat) / N;
* fixed-prompt interval: **Polya with fiducial stratum rates** (changed from Polya-Jeffreys).
  theta_h is drawn from the binomial's fiducial distribution, the even mixture of
  Beta(y_h, r_h - y_h + 1) and Beta(y_h + 1, r_h - y_h) (Hannig 2009; the pair of priors behind
  Clopper-Pearson limits; a Beta with a zero parameter is a point mass), the harmful count among
  the N_h - r_h responses without a label is X_h ~ Binomial(N_h - r_h, theta_h), independently
  per stratum; p* = (1/N) sum_h (y_h + X_h); interval = the 2.5 % / 97.5 % quantiles of D draws
  (``method="inverted_cdf"``). Why: the Jeffreys prior imputes about 1/(2 (r_h + 1)) harm into a
  large stratum with no harmful item seen, so sparse cells (10 reviewed of 450) covered 0.86-0.93
  with every miss on the high side, and half of their estimates lay outside their intervals;
  the fiducial rates cover >= 0.94 in every documented scenario at 1.02-1.17x the width
  (bench/coverage.py, docs/methods.md 9.1);
* general-estimand interval: W* ~ Dirichlet(N_h + 1/2), theta*_h as above, p* = sum_h W*_h theta*_h;
* **partial identification over unresolved items** (new): where a cell has unresolved items,
  the interval of ``corrected`` (and of ``adjudicated_clear_trusted``) runs from the lower end of
  ``corrected_unresolved_safe``'s interval to the upper end of
  ``corrected_unresolved_harmful``'s; the estimate stays the MAR point (``estimate_kind``
  ``mar``). Why: escalated items are hard by construction, not missing at random; with 15 %
  unresolved, 70 % of them harmful, the MAR interval covered 14 % in the issue's simulation;
* **every estimate lies inside its own interval** (new): after the quantiles, each interval is
  extended to hold its estimate (``note`` says when; with the fiducial rates it is rare), in
  every treatment, the per-model averages and the ranks;
* never a Wald interval. ``se`` columns are sqrt(V) for reference only.

Estimability and transport (4.2, 4.4)
-------------------------------------
Every stratum with N_h > 0 needs r_h >= 1. A clear stratum is **under-reviewed** when
r_h < ``min_reviewed`` and it was not reviewed in full (n_h < N_h), or when r_h = 0. A cell with
an under-reviewed clear stratum is not a donor; one with r_h >= 1 keeps its own estimate and is
flagged ``low n``. Only a clear stratum with **no** resolved reviewed item (r_h = 0) is filled
by **Rogan-Gladen transport** (changed: the whole clear part of the cell was replaced before,
so one unresolved item in a reviewed stratum discarded the cell's own review). With the
donors' pooled Se', Sp' (the benchmark's cells without an under-reviewed clear stratum):

    q' = N_H / N_C,  pi = clip((q' + Sp' - 1)/(Se' + Sp' - 1), 0, 1)          (N_C = N_H + N_S)
    theta_H = pi Se' / q',  theta_S = pi (1 - Se') / (1 - q')                 (label shift)
    p_transport = sum_{own h} W_h ybar_h + sum_{filled h} W_h theta_{k(h)}

Pooling: per benchmark and clear label k, over the donor strata, ybar_k = sum N_h ybar_h /
sum N_h and Kish's effective size n_k = (sum N_h)^2 / sum (N_h^2 / r_h); T_k = N_k ybar_k,
F_k = N_k (1 - ybar_k); Se' = T_H / (T_H + T_S), Sp' = F_S / (F_S + F_H). Draws use
ybar_k* ~ Beta(ybar_k n_k + 1/2, (1 - ybar_k) n_k + 1/2): one prior on the pooled counts
(changed: a Jeffreys prior per donor stratum dragged Se' from 0.892 to 0.846, so the transported
interval was off-centre and covered 0.77-0.84 where transport was valid). A filled stratum's
fixed-prompt draws are X_h ~ Binomial(N_h, theta*); general-estimand draws use q* from the
Dirichlet shares. V_fixed = the own strata's terms + sum_filled W_h^2 theta (1 - theta) / N_h +
the delta-method terms of ybar_H, ybar_S (their Beta variances) through Se', Sp'.

Pooling needs the **label-shift test** first (changed: the earlier check compared P(Y | judge
label) across models, which differs under pure label shift, where Rogan-Gladen is unbiased, and
can agree when Se/Sp differ, where the borrowed estimate is biased). Rogan-Gladen transport
assumes the judge's Se and Sp are the same for every model of the benchmark (label shift:
Rogan & Gladen 1978; Lipton et al. 2018), which Leeflang et al. (2013) show need not hold when
prevalence varies, so it is tested: the likelihood-ratio test of the two-phase design (judge
labels on every response, human labels on a stratified sample) of one Se, Sp with a prevalence
per donor model against free (q, PPV, FOR) per model, chi^2 with 2 (M - 1) df
(:func:`.transport.label_shift_test`; EM fit). It runs where a cell needs a fill; if it rejects
at ``alpha_heterogeneity``, the benchmark does not pool and such cells are not estimable, with
the reason. With one donor model it cannot be run; pooling is then allowed and ``note`` says so.
The target cell's own membership (its unreviewed stratum) is an assumption the data cannot test.

Flags (carried in every output row)
-----------------------------------
``"ok"``; ``"transport"``; ``"low n: ..."`` (a clear stratum with 1 <= r_h < ``min_reviewed``:
its own estimate is kept); ``"not estimable: <reason>"`` (the estimate and every interval are
NaN). ``note`` holds the details (filled strata, donors, Se', Sp', the test; interval
extensions; missing intervals and why).

Randomness comes from one ``numpy.random.Generator`` per call, consumed in a fixed order over a
frame sorted by (model, benchmark, judge label, stratum): results do not depend on the input row
order. Draws are independent across strata, so the runs (MAR, the two bounds, Dawid-Skene) share
the draws of a stratum whose counts they agree on and the Dirichlet draws (common random
numbers); every run's own distribution is unchanged by this.

Modules (each stage a named function; this package re-exports the public API)
-----------------------------------------------------------------------------
``strata``      the strata frame: :func:`strata_table`, :func:`strata_from_responses`, validation
``estimator``   the stratified estimator's per-stratum terms (4.2, 4.3)
``transport``   donors' pooled rates, the label-shift test, fills, flags (4.4)
``posterior``   fiducial Polya, transport fills and Dirichlet draws (4.3, 4.4)
``run``         one run of the estimator: the stages above in order
``intervals``   Wilson and equal-tailed intervals, :func:`.intervals.enclose`
``treatments``  the sensitivity table's rows per cell (4.7), partial identification
``overall``     per-model macro-averages
``scores``      :func:`corrected_scores` and :class:`ScoreResult`
``checks``      :func:`check_scores`, the invariants of a scores table (for ``verify``)
``allocation``  :func:`plan_allocation`, Neyman allocation (4.8)
``tables``      :func:`score_tables`, scores and rankings from an export's audit tables;
                :func:`.tables.ppi_tables`, the PPI++ view beside them
``ppi``         stratified PPI++ with a judge's score or other judges' labels as the prediction
                (4.5): :func:`ppi_stratum` (ppi-python's figures), :func:`ppi_cells`, :func:`ppi_scores`
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from annotate.columns import CLEAR_LABELS, JUDGE_ONLY_TREATMENTS, TREATMENTS
from annotate.columns import HUMAN_LABELS as HUMAN_LABELS  # importable from here, as before the split
from annotate.columns import JUDGE_LABELS as LABELS
from annotate.stats._common import SeedLike as SeedLike  # importable from here, as before the split

if TYPE_CHECKING:
    from annotate.stats.scoring.allocation import plan_allocation
    from annotate.stats.scoring.checks import check_scores
    from annotate.stats.scoring.intervals import wilson_interval
    from annotate.stats.scoring.ppi import PPIResult, ppi_cells, ppi_scores, ppi_stratum
    from annotate.stats.scoring.scores import DEFAULT_DRAWS, ScoreResult, corrected_scores
    from annotate.stats.scoring.strata import strata_from_responses

#: Where each public name lives: the submodules are imported when a name is first used (PEP 562),
#: so that a command needing one of them (``judges``: the Wilson interval) does not load them all.
_SUBMODULE = {
    "plan_allocation": "allocation",
    "check_scores": "checks",
    "wilson_interval": "intervals",
    "PPIResult": "ppi",
    "ppi_cells": "ppi",
    "ppi_scores": "ppi",
    "ppi_stratum": "ppi",
    "DEFAULT_DRAWS": "scores",
    "ScoreResult": "scores",
    "corrected_scores": "scores",
    "strata_from_responses": "strata",
}


def __getattr__(name: str) -> Any:
    submodule = _SUBMODULE.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULE})


__all__ = [
    "CLEAR_LABELS",
    "DEFAULT_DRAWS",
    "JUDGE_ONLY_TREATMENTS",
    "LABELS",
    "TREATMENTS",
    "PPIResult",
    "ScoreResult",
    "check_scores",
    "corrected_scores",
    "plan_allocation",
    "ppi_cells",
    "ppi_scores",
    "ppi_stratum",
    "strata_from_responses",
    "wilson_interval",
]
