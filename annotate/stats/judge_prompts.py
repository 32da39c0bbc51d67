"""The judge audit under the **prompts** estimand: the judge on prompts like these (pure).

The default estimand (``responses``) describes the ingested responses: a finite population, whose
unreviewed part the posterior of :mod:`annotate.stats.judge_posterior` draws. Under a census
(every response reviewed) nothing is unknown and every interval has zero width, which is right
for those responses and wrong for the judge: two judges that differ on 21 of 300 responses
(10 against 11 right) would be ranked with certainty.

The prompts estimand treats the reviewed responses of each stratum as a sample from the
distribution their prompts come from (docs/methods.md 9.18), by a stratified Bayesian bootstrap:
per draw d,

    V_hd ~ Gamma(N_h + 1/2)                       the stratum's share (as the scores' general
                                                  estimand: Dirichlet(N_h + 1/2) over strata)
    E_id ~ Gamma(a_h), a_h = max(r_h - 4, 1) / (r_h + 1), for each of its r_h resolved reviewed
           responses (Exp(1), the plain Bayesian bootstrap, fell to .93 coverage with 60 reviewed
           per stratum; a_h is the urn's concentration of judge_posterior, about r_h - 4 in all)
    w_id = V_hd E_id / sum_(i in h) E_id

and the confusion totals T[y, a] = sum_i w_id [Y_i = y][A_ij = a] of every judge j use the same
weights, so every comparison is paired: two judges' figures move together on the responses they
agree on and apart only on those they do not (the McNemar view). Every figure of
:mod:`annotate.stats.judges` is a ratio of such totals, so the scale of V does not matter.

Beside P(better), :func:`mcnemar` gives the exact McNemar test of two judges' accuracy on the
reviewed responses both labelled clearly (unweighted: under a census or within one stratum it is
the textbook test; across strata of unequal weights it is a check, not the design's test).

A Bayesian bootstrap cannot put weight on a pattern no reviewed response shows: a judge with no
false alarm among the reviewed safe responses gets specificity 1 in every draw. The coverage of
this construction, measured by simulation, is in docs/methods.md 9.18.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from annotate.stats.judge_posterior import CONC_OFFSET

__all__ = ["ESTIMANDS", "mcnemar", "prompt_draws"]

#: What a judge figure describes: ``responses`` (these responses, finite) or ``prompts`` (the judge
#: on prompts like these: the reviewed ones a sample of them).
ESTIMANDS = ("responses", "prompts")
#: Draws per block (bounds memory: units x block floats per block).
_BLOCK_ELEMENTS = 4_000_000


def prompt_draws(
    human: NDArray[np.int64],
    labels: NDArray[np.int64],
    strata: Sequence[tuple[NDArray[np.int64], int, Sequence[int]]],
    G: int,
    draws: int,
    gen: np.random.Generator,
) -> NDArray[np.float64]:
    """Confusion totals of every group, draw and judge under the prompts estimand.

    Parameters
    ----------
    human : ndarray of int64, shape (U,)
        Human label codes: 0 harmful, 1 safe, negative for none.
    labels : ndarray of int64, shape (U, J)
        Judge label codes: 0 harmful, 1 safe, 2 ambiguous, 3 (or more) no verdict.
    strata : sequence of (sel, N_h, groups)
        Per stratum with a resolved reviewed response: the indices of those responses, its
        population N_h and the groups (rows of the output) it adds to.
    G, draws : int
    gen : numpy.random.Generator
        Consumed stratum by stratum, block by block of draws.

    Returns
    -------
    ndarray of float64, shape (G, D, J, 2, 3)

    Examples
    --------
    A census of 4 responses, one judge right on 3: every draw's totals sum to V of the stratum.

    >>> t = prompt_draws(np.array([0, 0, 1, 1]), np.array([[0], [1], [1], [1]]),
    ...                  [(np.arange(4), 4, [0])], 1, 3, np.random.default_rng(0))
    >>> t.shape, bool((t[0, :, 0, 1, 0] == 0).all())  # no false alarm in any draw
    ((1, 3, 1, 2, 3), True)
    """
    U, J = labels.shape
    D = int(draws)
    out = np.zeros((G, D, J, 6))
    if D == 0 or not strata:
        return out.reshape(G, D, J, 2, 3)
    cells = np.where((human[:, None] >= 0) & (labels < 3), human[:, None] * 3 + labels, -1)  # (U, J)
    block = max(1, min(D, _BLOCK_ELEMENTS // max(U, 1)))
    for d0 in range(0, D, block):
        b = min(block, D - d0)
        for sel, N, groups in strata:
            r = len(sel)
            # Gamma(a), a = max(r - 4, 1) / (r + 1): the urn's concentration (judge_posterior.CONC_OFFSET),
            # whose extra variance covers small strata where the plain Bayesian bootstrap falls short.
            e = gen.standard_gamma(max(r - CONC_OFFSET, 1.0) / (r + 1.0), size=(r, b))
            v = gen.standard_gamma(N + 0.5, size=b)
            w = e * (v / e.sum(axis=0))[None, :]  # (r_h, b)
            for j in range(J):
                c = cells[sel, j]
                ok = c >= 0
                if not ok.any():
                    continue
                onehot = np.zeros((int(ok.sum()), 6))
                onehot[np.arange(int(ok.sum())), c[ok]] = 1.0
                t = w[ok].T @ onehot  # (b, 6)
                for g in groups:
                    out[g, d0 : d0 + b, j] += t
    return out.reshape(G, D, J, 2, 3)


def mcnemar(right_a: NDArray[np.bool_], right_b: NDArray[np.bool_]) -> tuple[int, int, float]:
    """The exact McNemar test of two judges' accuracy on the same responses.

    ``b``: responses A got right and B wrong; ``c``: the reverse. Under H0 (equal accuracy) b is
    Binomial(b + c, 1/2); the two-sided p-value is min(1, 2 P(X <= min(b, c))).

    >>> mcnemar(np.array([True] * 11 + [False] * 10), np.array([False] * 11 + [True] * 10))
    (11, 10, 1.0)
    >>> b, c, p = mcnemar(np.array([True] * 10), np.array([False] * 10))
    >>> (b, c, round(p, 6))
    (10, 0, 0.001953)
    """
    a = np.asarray(right_a, dtype=bool)
    bb = np.asarray(right_b, dtype=bool)
    b = int((a & ~bb).sum())
    c = int((~a & bb).sum())
    n = b + c
    if n == 0:
        return b, c, 1.0
    k = min(b, c)
    log_half = n * math.log(2.0)
    tail = sum(
        math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - log_half) for i in range(k + 1)
    )
    return b, c, float(min(1.0, 2.0 * tail))
