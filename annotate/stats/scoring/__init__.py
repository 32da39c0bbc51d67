"""Corrected harmful rates per (model, benchmark) cell: pure, vectorised statistics on strata counts.

Everything here works on a **long frame of strata** (methods.md section 4). A cell is one
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

Estimators (methods.md 4.2-4.7)
-------------------------------
* point: p_hat = sum_h W_h ybar_h (Horvitz-Thompson / post-stratified; unresolved items missing
  at random within their stratum, i.e. the r_h resolved items are treated as the sample);
* V_fixed = sum_h W_h^2 (1 - r_h/N_h) s_h^2 / r_h with s_h^2 = r_h ybar_h (1 - ybar_h)/(r_h - 1)
  (0 when r_h <= 1; census strata contribute 0); V_general = V_fixed + p_hat (1 - p_hat) / N;
* fixed-prompt interval: **Polya-Jeffreys**. The harmful count among the N_h - r_h responses
  without a label is BetaBinomial(N_h - r_h, y_h + 1/2, r_h - y_h + 1/2), independently per
  stratum; p* = (1/N) sum_h (y_h + X_h); interval = the 2.5 % / 97.5 % quantiles of D draws
  (``method="inverted_cdf"``: the smallest drawn value with empirical CDF >= q);
* general-estimand interval: W* ~ Dirichlet(N_h + 1/2), theta*_h ~ Beta(y_h + 1/2, r_h - y_h + 1/2),
  p* = sum_h W*_h theta*_h;
* never a Wald interval. ``se`` columns are sqrt(V) for reference only.

Estimability and transport (4.2, 4.4)
-------------------------------------
Every stratum with N_h > 0 needs r_h >= 1. A clear stratum is **under-reviewed** when
r_h < ``min_reviewed`` and it was not reviewed in full (n_h < N_h), or when r_h = 0. A cell
with an under-reviewed clear stratum borrows the judge's clear-stratum sensitivity and
specificity pooled over the other models of the same benchmark (Rogan-Gladen transport):

    p_transport = (N_C/N) RG(q', Se', Sp') + sum_{U strata} W_h ybar_h,
    q' = N_H / N_C (N_C = N_H + N_S),  RG = clip((q' + Sp' - 1)/(Se' + Sp' - 1), 0, 1)

Donors are the benchmark's cells without an under-reviewed clear stratum. With donor totals
T_H = sum_{H strata} N_h ybar_h (true positives), T_S = sum_{S strata} N_h ybar_h (false
negatives), F_S = sum_S N_h (1 - ybar_h), F_H = sum_H N_h (1 - ybar_h):
Se' = T_H / (T_H + T_S), Sp' = F_S / (F_S + F_H), Var(T) = sum N_h^2 s_h^2 / r_h (no finite
population correction: Se and Sp are treated as properties of the judge, not of the donors'
prompts), Var(Se') = (T_S^2 Var T_H + T_H^2 Var T_S)/(T_H+T_S)^4, likewise Sp'. Then (delta
method, p = RG value, J = Se' + Sp' - 1)

    Var(RG) = [Var(q) + p^2 Var(Se') + (1 - p)^2 Var(Sp')] / J^2,
    Var(p_transport) = (N_C/N)^2 Var(RG) + sum_U W_h^2 (1 - r_h/N_h) s_h^2 / r_h,

with Var(q) = 0 for V_fixed and q'(1 - q')/N_C for V_general (methods.md 4.4 as written).
Posterior draws of a transported cell use theta*_h ~ Beta(y_h + 1/2, r_h - y_h + 1/2) for the
donor strata (giving Se*, Sp*), the Polya draws of its own ambiguous strata, and for the general
estimand a Dirichlet draw of its own W (hence of q).

Pooling needs a **heterogeneity check** first: within each clear judge label of the benchmark, a
likelihood-ratio test of logit Y ~ model, i.e. the per-model binomial log-likelihood of the
resolved items (all waves of that label summed) against the pooled binomial, chi^2 with
(models with resolved items - 1) df. If either label gives p < ``alpha_heterogeneity``, the
benchmark's cells are not pooled. Note the test compares P(Y | judge label), the quantity that
can be tested with the data at hand; it can also reject under pure label shift (where Se/Sp are
constant but prevalence differs), so it errs on the side of not pooling. With only one model
with resolved items the test cannot be run; pooling is then allowed and ``note`` says so.

Flags (carried in every output row)
-----------------------------------
``"ok"``; ``"transport"``; ``"low n: ..."`` (an under-reviewed clear stratum with r_h >= 1 and
transport not possible: the per-cell estimate is kept); ``"not estimable: <reason>"`` (the
estimate and every interval are NaN). ``note`` holds the details (donors, Se', Sp', p-values).

Randomness comes from one ``numpy.random.Generator`` per call, consumed in a fixed order over a
frame sorted by (model, benchmark, judge label, stratum): results do not depend on the input row
order. Draws are independent across strata, so two treatments may share the draws of a stratum
whose counts they agree on (the bounds and Dawid-Skene runs reuse the corrected run's draws
there; common random numbers), and the general-estimand theta*_h reuses the Polya step's theta
draws; every treatment's own posterior is unchanged by this.

Modules (each stage a named function; this package re-exports the public API)
-----------------------------------------------------------------------------
``strata``      the strata frame: :func:`strata_table`, :func:`strata_from_responses`, validation
``estimator``   the stratified estimator's per-stratum terms (4.2, 4.3)
``transport``   heterogeneity test, donors' Se'/Sp', transport points, flags (4.4)
``posterior``   Polya-Jeffreys, transport and Dirichlet x Beta draws (4.3, 4.4)
``run``         one run of the estimator: the stages above in order
``intervals``   Wilson and equal-tailed posterior intervals
``treatments``  the sensitivity table's rows per cell (4.7)
``overall``     per-model macro-averages
``scores``      :func:`corrected_scores` and :class:`ScoreResult`
``allocation``  :func:`plan_allocation`, Neyman allocation (4.8)
``tables``      :func:`score_tables`, scores and rankings from an export's audit tables
"""

from __future__ import annotations

from annotate.columns import CLEAR_LABELS, JUDGE_ONLY_TREATMENTS, TREATMENTS
from annotate.columns import HUMAN_LABELS as HUMAN_LABELS  # importable from here, as before the split
from annotate.columns import JUDGE_LABELS as LABELS
from annotate.stats._common import SeedLike as SeedLike  # importable from here, as before the split
from annotate.stats.scoring.allocation import plan_allocation
from annotate.stats.scoring.intervals import wilson_interval
from annotate.stats.scoring.scores import DEFAULT_DRAWS, ScoreResult, corrected_scores
from annotate.stats.scoring.strata import strata_from_responses

__all__ = [
    "CLEAR_LABELS",
    "DEFAULT_DRAWS",
    "JUDGE_ONLY_TREATMENTS",
    "LABELS",
    "TREATMENTS",
    "ScoreResult",
    "corrected_scores",
    "plan_allocation",
    "strata_from_responses",
    "wilson_interval",
]
