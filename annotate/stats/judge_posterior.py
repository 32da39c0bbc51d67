"""The judge audit's posterior of the population counts, every stratum at once (docs/methods.md 9.7).

Per stratum h of the design, the M_h = N_h - r_h responses without a final human label are drawn
from a Polya urn over the r_h resolved reviewed responses' *patterns* (the human label and every
judge's label, jointly: counts c_1 ... c_K) and one pseudo-response:

    pi ~ Dirichlet(a (c_1, ..., c_K, 1)),   a = max(r_h - 4, 1) / (r_h + 1)
    X  ~ Multinomial(M_h, pi);               population counts = observed counts + X

The pseudo-response is a copy of a reviewed response of the stratum drawn at random, with two
changes that give labels nobody saw in the sample prior mass:

* **its human label**: in a stratum whose reviewed responses all carry one human label, a fair
  coin (one coin per draw for every such stratum): harm may hide in a judge-safe stratum whose
  sample looks clean;
* **each judge's label** (issue #23): where that judge gave some of its labels to no reviewed
  response of the stratum with the pseudo-response's human label, the pseudo-response takes one
  of those unseen labels, chosen at random, in the draws where the judge's coin shows heads (one
  fair coin per judge and draw, shared by every stratum), and the copied label in the others.
  A judge's labels are the verdicts it gave anywhere in the reviewed data (a judge that never
  abstains gets no unseen ``ambiguous``); a judge that defines the strata (the routing judge, or
  each judge of a ``--strata-from`` unanimity) is never relabelled in the strata it defines, whose
  label is known for every response.

For one judge's label within (stratum, human label) this is the binomial's fiducial draw of 9.1
(no unseen label in half the draws, an unseen share of about Beta(1, r) in the other half); the
coin is shared across strata for the reason the human coin is: with a coin per stratum nearly
every draw of a design with many strata adds unseen errors somewhere, and the draws of a judge
that made no such error could not reach its own estimate. Before issue #23 the pseudo-response's
judge labels were always copies, so no draw could give a judge a label it never gave on a
stratum's reviewed responses: a non-routing judge with 20 false alarms among 975 unreviewed
judge-safe responses and a clean sample printed ``specificity 1.0000 [1.0000, 1.0000]`` against a
true 0.9806.

Vectorised over strata (before, one call per stratum: 390 at the scale benchmark's size): the
Gamma draws of every (stratum, pattern) pair at once, the multinomial as a sequence of binomials
over the pattern positions (the strata sorted by their number of patterns, so each step is a
slice), the census strata's few unlabelled responses ball by ball, the pseudo-responses and the
sums into groups by bincounts and one sparse product. The draws are exact (a moment-matched
Dirichlet without the multinomial step was a third faster but lost the urn's mass at zero for rare
patterns: the routing judge's sensitivity covered 0.915 instead of 0.95); the random numbers are
now the cost. Draws come in blocks that bound memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from annotate.stats._common import indicator_product

__all__ = ["UrnStrata", "urn_draws"]

#: Label codes: 0 harmful, 1 safe, 2 ambiguous, 3 no verdict (as in :mod:`annotate.stats.judges`).
NO_VERDICT = 3
#: Elements of one (patterns x draws) block.
_BLOCK = 3_000_000
#: Up to this many unlabelled responses a stratum's urn is drawn ball by ball.
BALLS_MAX = 16
#: The urn's concentration is r - CONC_OFFSET (2 gives the unbiased SRSWOR variance; 4 covers small strata).
CONC_OFFSET = 4.0
#: P(heads) of a judge's coin: the pseudo-response takes an unseen label of that judge.
UNSEEN_SHARE = 0.5


@dataclass(frozen=True)
class UrnStrata:
    """The strata to draw, in a fixed order, with their resolved reviewed responses.

    Attributes
    ----------
    human : ndarray of int64, shape (R,)
        Human label codes (0 harmful, 1 safe) of the resolved reviewed responses, stratum by
        stratum (contiguous).
    labels : ndarray of int64, shape (R, J)
        Their judges' label codes (0 harmful, 1 safe, 2 ambiguous, 3 no verdict).
    starts, sizes : ndarray of int64, shape (S,)
        Where each stratum's responses start and how many there are (r_h >= 1).
    unlabelled : ndarray of int64, shape (S,)
        M_h = N_h - r_h.
    groups : list of list of int, length S
        The groups (rows of the output) each stratum adds to.
    fixed : ndarray of bool, shape (S, J)
        Judges whose label is known on the whole stratum (never relabelled).
    label_sets : ndarray of bool, shape (J, 3)
        The verdicts each judge gave anywhere.
    """

    human: NDArray[np.int64]
    labels: NDArray[np.int64]
    starts: NDArray[np.int64]
    sizes: NDArray[np.int64]
    unlabelled: NDArray[np.int64]
    groups: list[list[int]]
    fixed: NDArray[np.bool_]
    label_sets: NDArray[np.bool_]


def _patterns(st: UrnStrata) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """Distinct (human, labels) rows per stratum: (stratum of each, human, labels (L, J), counts)."""
    R, J = st.labels.shape
    stratum = np.repeat(np.arange(len(st.sizes)), st.sizes)
    code = st.human.astype(np.int64)
    for j in range(J):
        code = code * 4 + st.labels[:, j]
    span = 2 * 4**J
    keys, counts = np.unique(stratum * span + code, return_counts=True)
    h = keys // span
    rest = keys % span
    labs = np.empty((len(keys), J), dtype=np.int64)
    for j in range(J - 1, -1, -1):
        labs[:, j] = rest % 4
        rest //= 4
    return h.astype(np.int64), rest.astype(np.int64), labs, counts.astype(np.float64)


def urn_draws(
    st: UrnStrata,
    G: int,
    draws: int,
    gen: np.random.Generator,
    coin: NDArray[np.integer[Any]],
    judge_coin: NDArray[np.bool_],
) -> NDArray[np.float64]:
    """The drawn counts X of the unlabelled responses, summed into groups.

    Parameters
    ----------
    st : UrnStrata
        S strata with M_h > 0.
    G : int
        Groups (rows of the output).
    draws : int
        D.
    gen : numpy.random.Generator
        Consumed per block of draws: for the strata with more than :data:`BALLS_MAX` unlabelled
        responses the Gamma draws of their patterns and pseudo-responses and the binomials
        (pseudo-response first, then the patterns by position); for the others the urn's balls;
        then the pick of the copied response and of an unseen label.
    coin : ndarray of int, shape (D,)
        The human label code of the pseudo-response in strata that saw one human label.
    judge_coin : ndarray of bool, shape (D, J)
        Per draw and judge: the pseudo-response takes an unseen label of that judge.

    Returns
    -------
    ndarray of float64, shape (G, D, J, 2, 3)
        Per group, draw and judge, X[y, a] summed over the group's strata (a judge's "no verdict"
        counts nowhere).
    """
    S = len(st.sizes)
    J = st.labels.shape[1]
    D = int(draws)
    out = np.zeros((G, D, J, 6))
    if S == 0 or D == 0:
        return out.reshape(G, D, J, 2, 3)
    ph, py, plab, pcount = _patterns(st)
    L = len(ph)
    r = st.sizes.astype(np.float64)
    scale = np.maximum(r - CONC_OFFSET, 1.0) / (r + 1.0)
    single = np.array([(st.human[a : a + n] == st.human[a]).all() for a, n in zip(st.starts, st.sizes, strict=True)])
    # Which verdicts of each judge no reviewed response of (stratum, human label) carries.
    seen = np.zeros((S, 2, J, 3), dtype=bool)
    for j in range(J):
        ok = plab[:, j] < NO_VERDICT
        seen[ph[ok], py[ok], j, plab[ok, j]] = True
    unseen = st.label_sets[None, None, :, :] & ~seen
    n_unseen = unseen.sum(axis=3)  # (S, 2, J)
    order = np.argsort(~unseen, axis=3, kind="stable")  # the unseen labels first, in code order
    # The map from the patterns' cells to (group, judge, cell) rows (an indicator matrix).
    rows, cols = [], []
    memb_h = np.repeat(np.arange(S), [len(g) for g in st.groups])
    memb_g = np.array([g for gs in st.groups for g in gs], dtype=np.int64)
    for j in range(J):
        ok = plab[:, j] < NO_VERDICT
        cell = py * 3 + plab[:, j]
        # every membership (stratum, group) x every pattern of that stratum
        pat_of = np.flatnonzero(ok)
        pos = np.searchsorted(ph[pat_of], memb_h, side="left")
        end = np.searchsorted(ph[pat_of], memb_h, side="right")
        counts = end - pos
        take = np.concatenate([np.arange(a, b) for a, b in zip(pos, end, strict=True)]) if len(pos) else pos
        l_idx = pat_of[take]
        g_idx = np.repeat(memb_g, counts)
        rows.append((g_idx * J + j) * 6 + cell[l_idx])
        cols.append(l_idx)
    a_rows, a_cols, a_shape = np.concatenate(rows), np.concatenate(cols), (G * J * 6, L)
    pat_start = np.searchsorted(ph, np.arange(S), side="left")
    M = st.unlabelled.astype(np.int64)
    # Many unlabelled responses: Gamma draws and the multinomial as binomials over the pattern
    # positions; few (a census with some unresolved): the urn itself, ball by ball (cheaper).
    big = M > BALLS_MAX
    exact = np.flatnonzero(~big)
    brows = np.flatnonzero(big[ph])  # the big strata's patterns, in stratum order
    bs = np.flatnonzero(big)
    K = np.bincount(ph, minlength=S)
    bs = bs[np.argsort(-K[bs], kind="stable")]  # the big strata by decreasing number of patterns
    Kb = K[bs]
    k_max = int(Kb.max()) if len(bs) else 0
    rank_b = np.empty(S, dtype=np.int64)
    rank_b[bs] = np.arange(len(bs))
    pos_b = brows - pat_start[ph[brows]]  # position of each big stratum's pattern
    row_b = rank_b[ph[brows]]  # its big stratum (in the sorted order)
    need = [int((Kb > k + 1).sum()) for k in range(k_max)]  # a binomial: the prefix of the sorted strata
    ends = [int((Kb > k).sum()) for k in range(k_max)]  # the rest of the prefix takes what is left
    b_start = np.searchsorted(ph[brows], np.sort(bs), side="left")
    b_order = np.searchsorted(np.sort(bs), bs)  # sorted-by-id stratum -> its place in bs
    # each reviewed response's pattern row (the ball-by-ball urn draws responses, then counts patterns)
    resp_stratum = np.repeat(np.arange(S), st.sizes)
    code = st.human.astype(np.int64)
    for j in range(J):
        code = code * 4 + st.labels[:, j]
    pat_code = py.astype(np.int64)
    for j in range(J):
        pat_code = pat_code * 4 + plab[:, j]
    span = 2 * 4**J
    resp_pattern = np.searchsorted(ph * span + pat_code, resp_stratum * span + code)
    block = max(1, min(D, _BLOCK // max(L + S * J * 6, 1)))
    n_unseen_flat = n_unseen.reshape(-1)
    order_flat = order.reshape(-1)
    can_relabel = ~st.fixed
    max_groups = max((len(g) for g in st.groups), default=0)
    group_at = [np.array([g[i] if i < len(g) else -1 for g in st.groups], dtype=np.int64) for i in range(max_groups)]
    has_group = [ga >= 0 for ga in group_at]
    for d0 in range(0, D, block):
        b = min(block, D - d0)
        x_obs = np.zeros((L, b))
        x_ps = np.zeros((S, b))
        if len(bs):
            g_obs = gen.standard_gamma(np.broadcast_to((pcount[brows] * scale[ph[brows]])[:, None], (len(brows), b)))
            g_ps = gen.standard_gamma(np.broadcast_to(scale[bs, None], (len(bs), b)))
            total = (np.add.reduceat(g_obs, b_start, axis=0))[b_order] + g_ps  # (big strata in bs order, b)
            shares = np.zeros((k_max, len(bs), b))
            shares[pos_b, row_b] = g_obs / total[row_b]
            left = np.broadcast_to(M[bs, None], (len(bs), b)).copy()
            p_ps = g_ps / total
            x = gen.binomial(left, np.clip(p_ps, 0.0, 1.0))
            x_ps[bs] = x
            left -= x
            p_left = 1.0 - p_ps
            xb = np.zeros((k_max, len(bs), b))
            for k in range(k_max):
                m, e = need[k], ends[k]
                if m:
                    with np.errstate(divide="ignore", invalid="ignore"):
                        ratio = np.clip(shares[k, :m] / p_left[:m], 0.0, 1.0)
                    ratio[~np.isfinite(ratio)] = 1.0
                    x = gen.binomial(left[:m], ratio)
                    xb[k, :m] = x
                    left[:m] -= x
                    p_left[:m] -= shares[k, :m]
                xb[k, m:e] = left[m:e]  # the last pattern takes what is left
            x_obs[brows] = xb[pos_b, row_b]
        if len(exact):
            picks = _urn_picks(gen, st.sizes[exact], scale[exact], M[exact], b)  # (E, b, m): response or r (pseudo)
            use = np.arange(picks.shape[2])[None, None, :] < M[exact, None, None]
            is_ps = picks == st.sizes[exact, None, None]
            x_ps[exact] = (use & is_ps).sum(axis=2)
            take = use & ~is_ps
            rows = resp_pattern[np.minimum(st.starts[exact, None, None] + picks, len(resp_pattern) - 1)]
            dd = np.broadcast_to(np.arange(b)[None, :, None], picks.shape)
            x_obs += np.bincount(rows[take] * b + dd[take], minlength=L * b).reshape(L, b)
        cell_sums = indicator_product(a_rows, a_cols, a_shape, x_obs).reshape(G, J, 6, b)
        # the pseudo-response of each stratum and draw
        picked = st.starts[:, None] + np.floor(gen.random((S, b)) * r[:, None]).astype(np.int64)
        y = np.where(single[:, None], np.asarray(coin[d0 : d0 + b], dtype=np.int64)[None, :], st.human[picked])
        a = st.labels[picked]  # (S, b, J)
        hy = ((np.arange(S)[:, None] * 2 + y) * J)[:, :, None] + np.arange(J)  # (S, b, J): flat (h, y, j)
        k_unseen = n_unseen_flat[hy]
        pick = np.minimum(np.floor(gen.random((S, b, J)) * k_unseen).astype(np.int64), 2)
        relabel = judge_coin[d0 : d0 + b][None, :, :] & (a < NO_VERDICT) & can_relabel[:, None, :] & (k_unseen > 0)
        a = np.where(relabel, order_flat[hy * 3 + pick], a)
        cell = y[:, :, None] * 3 + a  # (S, b, J)
        keep = a < NO_VERDICT
        base = (np.arange(J) * 6)[None, None, :] + cell  # (S, b, J)
        dd = np.arange(b)[None, :, None]
        ps_sums = np.zeros(G * J * 6 * b)
        for gi in range(max_groups):  # each stratum's first, second, ... group
            hs = has_group[gi]
            g = group_at[gi][hs]
            idx = ((g[:, None, None] * (J * 6) + base[hs]) * b + dd)[keep[hs]]
            ps_sums += np.bincount(
                idx, weights=np.broadcast_to(x_ps[hs][:, :, None], keep[hs].shape)[keep[hs]], minlength=G * J * 6 * b
            )
        out[:, d0 : d0 + b] = np.moveaxis(cell_sums + ps_sums.reshape(G, J, 6, b), 3, 1)
    return out.reshape(G, D, J, 2, 3)


def _urn_picks(
    gen: np.random.Generator, r: NDArray[np.int64], a: NDArray[np.float64], M: NDArray[np.int64], b: int
) -> NDArray[np.int64]:
    """b runs of a Polya urn per stratum: M_e balls drawn from r_e responses and a pseudo-response.

    Every response and the pseudo-response (index r_e) start with weight a_e; each drawn ball
    adds weight 1 to what it copies. Exactly Dirichlet-multinomial(M_e; a_e, ..., a_e) counts,
    ball by ball (few balls: the census strata with some unresolved responses). Returns (E, b, m)
    with m = max M_e (picks past a stratum's M_e are to be ignored).
    """
    E = len(r)
    m = int(M.max()) if E else 0
    picks = np.zeros((E, b, m), dtype=np.int64)
    start = (a * (r + 1.0))[:, None]
    for k in range(m):
        v = gen.random((E, b)) * (start + k)
        fresh = v < start
        idx = np.minimum(np.floor(v / a[:, None]).astype(np.int64), r[:, None])
        if k:
            earlier = np.minimum(np.floor(v - start).astype(np.int64), k - 1).clip(0)
            idx = np.where(fresh, idx, np.take_along_axis(picks[:, :, :k], earlier[:, :, None], axis=2)[:, :, 0])
        picks[:, :, k] = idx
    return picks
