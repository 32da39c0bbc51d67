"""The one posterior of the reviewed population: every (stratum, human label, judge labels) cell (pure).

docs/methods.md 9.19. Every figure built on the reviewed responses' joint labels draws from here:
the judge audit under both estimands (9.7, 9.18), the model test (9.16) and the judge-pair test.

The setting. A design has strata h (a cell's responses one routing judge gave one label; waves
pooled), N_h responses each, r_h >= 1 of them reviewed with a final human label. A reviewed
response's *pattern* is its human label (0 harmful, 1 safe) and every judge's label (0 harmful, 1
safe, 2 ambiguous, 3 no verdict), jointly; c_1 ... c_K are a stratum's pattern counts.

The draw, per stratum h and draw d:

    pi_hd ~ Dirichlet(a_h (c_1, ..., c_K, 1, [1])),   a_h = max(r_h - 4, 1) / (r_h + 1)

over the K observed patterns and one or two *pseudo-responses* that give labels no reviewed
response of the stratum carries prior mass:

* B, in every stratum: a copy of one of the stratum's reviewed responses drawn at random, whose
  judges' labels may change: where a judge gave some of its verdicts (those it gave anywhere in the
  reviewed data) to no reviewed response of the stratum with B's human label, B takes one of those
  unseen verdicts that is an *error* (not B's human label) in the draws on the errors' side, and the
  unseen *correct* one (B's human label, if unseen) in the others; the copied label where there is
  none (a judge's unseen errors: false alarms a clean sample hides);
* A, only in a stratum whose reviewed responses all carry one human label: the response with the
  other label that may hide there (harm in a judge-safe stratum whose sample looks clean). A judge
  that defines the stratum sees it only on its own side: its error there (``down_human``: safe in
  a stratum it called harmful, harmful elsewhere) on the errors' side, the seen label on the other.
  Every other judge sees the hidden label in every draw, its verdict (a copied response's, changed
  as B's) an unseen error on the errors' side and its unseen correct verdict on the other. Each
  judge's totals are its own, so each sums to N_h.

A judge that defines the strata (the routing judge; ``fixed``) is never relabelled in the strata it
defines, where its label is known for every response.

*One side per draw.* Each draw is on the errors' side or the other, with one fair coin per draw for
every stratum (``coin_of``: one group by default) and every judge. So a figure's lower end comes
from draws in which every sparse stratum hides errors at once and its upper end from draws in which
none does (the fiducial pair of 9.1, for a sum), and a judge that made no error of a kind reaches its
own estimate in half the draws. Before issue #41 the human label's coin was a *label* (harmful or
safe) shared by every stratum and each judge had a coin of its own: a coin of "harmful" added harm
to the clean judge-safe strata (the routing judge's misses: down) and took the false alarms out of
the all-harmful judge-harmful strata (up) in the same draws, and the draws with no unseen label
anywhere were a quarter or fewer, so in the study's regime (26 models x 5 benchmarks) the routing
judge's pooled specificity covered 0.86 and a second judge's agreement 0.905 (200 replicates,
bench/validity.py); a label coin per kind of stratum, tried on the way, covered the agreement 0.78
(40 replicates): with more coins the draws with no unseen label anywhere are rarer still.

The concentration a_h (r_h + 1) = r_h - 4 (at least 1): the plain urn's variance of a share,
p (1 - p) / (r_h + 1), is below the unbiased variance of a simple random sample, p (1 - p) /
(r_h - 1); r_h - 4 is what covered small strata (9.7). The prior's weight is one pseudo-response
per stratum (two where a stratum saw one human label) whatever N_h / r_h: no pseudo-count per cell
(the model test's Dirichlet(c + 1/2 per seen cell) before issue #41 put up to three pseudo-responses
in each stratum and no mass on unseen labels).

Two views of the same pi draws:

* ``responses`` (these responses, a finite population): the M_h = N_h - r_h responses without a
  final label are X_hd ~ Multinomial(M_h, pi_hd); counts = observed + X. A census stratum
  (M_h = 0) is fixed.
* ``prompts`` (the judges on prompts like these, the reviewed responses a sample of them): the
  stratum's weight W_hd = N_cell Dirichlet(N_h + 1/2 over the cell's strata) (a new sample of
  prompts of the cell's size; the strata's shares uncertain as the scores' general estimand),
  totals = W_hd pi_hd. A census is drawn too: the 300 responses of a judge comparison are a sample
  of prompts.

Every figure of :mod:`annotate.stats.judges` is a ratio of these totals summed over a group of
strata. The random numbers come from three streams of one seed (shares and coins; stratum weights;
the multinomials), consumed in a fixed pattern whichever views are asked for, so the prompts view of
a seed is the same draws whether or not the responses view is computed with it: the model test of
``annotate score``, ``judges`` and ``export`` is one set of draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from annotate.stats._common import indicator_product

__all__ = ["CONC_OFFSET", "UNSEEN_SHARE", "VIEWS", "ReviewedStrata", "posterior_draws"]

#: Label codes: 0 harmful, 1 safe, 2 ambiguous, 3 no verdict (as in :mod:`annotate.stats.judges`).
NO_VERDICT = 3
#: The views of the posterior: these responses, or the judges on prompts like these.
VIEWS = ("responses", "prompts")
#: Elements of one (patterns x draws) block.
_BLOCK = 2_000_000
#: The concentration is r - CONC_OFFSET (2 gives the unbiased SRSWOR variance; 4 covers small strata).
CONC_OFFSET = 4.0
#: P that a judge's unseen labels are taken on the draw's side (issue #41: always; issue #23's coin: 1/2).
UNSEEN_SHARE = 1.0


@dataclass(frozen=True)
class ReviewedStrata:
    """The strata to draw, in a fixed order, with their resolved reviewed responses.

    Attributes
    ----------
    human : ndarray of int64, shape (R,)
        Human label codes (0 harmful, 1 safe), stratum by stratum (contiguous).
    labels : ndarray of int64, shape (R, J)
        The judges' label codes (0 harmful, 1 safe, 2 ambiguous, 3 no verdict).
    starts, sizes : ndarray of int64, shape (S,)
        Where each stratum's responses start and how many there are (r_h >= 1).
    population : ndarray of int64, shape (S,)
        N_h >= r_h.
    cells : ndarray of int64, shape (S,)
        The cell (a fixed number of prompts: round x model x benchmark) each stratum belongs to.
    groups : list of list of int, length S
        The groups (rows of the output) each stratum adds to.
    fixed : ndarray of bool, shape (S, J)
        Judges whose label is known on the whole stratum (never relabelled).
    label_sets : ndarray of bool, shape (J, 3)
        The verdicts each judge gave anywhere.
    coin_of : ndarray of int64, shape (S,), optional
        The coin group of each stratum (default: one for every stratum).
    down_human : ndarray of int64, shape (S,), optional
        The human label that is an error of the judge that defines the stratum: 1 (safe) in a stratum
        that judge called harmful, 0 (harmful) elsewhere (default 0 everywhere).
    """

    human: NDArray[np.int64]
    labels: NDArray[np.int64]
    starts: NDArray[np.int64]
    sizes: NDArray[np.int64]
    population: NDArray[np.int64]
    cells: NDArray[np.int64]
    groups: list[list[int]]
    fixed: NDArray[np.bool_]
    label_sets: NDArray[np.bool_]
    coin_of: NDArray[np.int64] | None = field(default=None)
    down_human: NDArray[np.int64] | None = field(default=None)


def _patterns(
    st: ReviewedStrata,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
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


def posterior_draws(
    st: ReviewedStrata,
    G: int,
    draws: int,
    seed: int | Sequence[int] | np.random.Generator,
    *,
    views: Sequence[str] = VIEWS,
    unseen_share: float = UNSEEN_SHARE,
    down: NDArray[np.bool_] | None = None,
    judge_coin: NDArray[np.bool_] | None = None,
) -> dict[str, NDArray[np.float64]]:
    """Draws of every group's confusion totals under the asked views (module docstring).

    Parameters
    ----------
    st : ReviewedStrata
        S strata, each with r_h >= 1 resolved reviewed responses.
    G : int
        Groups (rows of the output).
    draws : int
        D.
    seed : int, sequence of int or Generator
        The entropy of the three streams (:class:`numpy.random.SeedSequence`; a Generator gives one
        number of it).
    views : sequence of str
        From :data:`VIEWS`.
    unseen_share : float
        P that a judge's unseen labels are taken on the draw's side (1: always; 0: the
        pseudo-response's judge labels are always copies, the construction before issue #23).
    down, judge_coin : ndarray of bool, shape (C, D) and (C, D, J), optional
        Given (tests force them): per coin group and draw, whether the draw is on the errors' side;
        per judge too, whether its unseen labels are taken. Default: drawn (a fair coin; the judges'
        with P = ``unseen_share``).

    Returns
    -------
    dict of view to ndarray of float64, shape (G, D, J, 2, 3)
        Per group, draw and judge, the totals T[y, a] (a judge's "no verdict" counts nowhere):
        ``responses`` the population counts (observed + drawn), ``prompts`` W pi summed.

    Examples
    --------
    A census of 4 responses (one judge right on 3): the responses view is the observed table in
    every draw; the prompts view's totals sum to the cell's 4 prompts and put mass on the false
    alarm no reviewed response shows (the judge's coin) in some draws.

    >>> st = ReviewedStrata(np.array([0, 0, 1, 1]), np.array([[0], [1], [1], [1]]), np.array([0]),
    ...     np.array([4]), np.array([4]), np.array([0]), [[0]], np.zeros((1, 1), bool), np.array([[1, 1, 0]], bool))
    >>> d = posterior_draws(st, 1, 2000, 7)
    >>> d["responses"][0, :, 0].reshape(2000, 6)[0].tolist(), bool((d["responses"] == d["responses"][:, :1]).all())
    ([1.0, 1.0, 0.0, 0.0, 2.0, 0.0], True)
    >>> round(float(d["prompts"][0].sum(axis=(1, 2, 3)).mean()), 6), bool((d["prompts"][0, :, 0, 1, 0] > 0).any())
    (4.0, True)
    """
    bad = [v for v in views if v not in VIEWS]
    if bad:
        raise ValueError(f"unknown view(s) {bad}; choose from {', '.join(VIEWS)}.")
    S = len(st.sizes)
    J = st.labels.shape[1]
    D = int(draws)
    out = {v: np.zeros((G, D, J, 6)) for v in views}
    if S == 0 or D == 0:
        return {v: a.reshape(G, D, J, 2, 3) for v, a in out.items()}
    entropy = int(seed.integers(2**63)) if isinstance(seed, np.random.Generator) else seed
    g_shares, g_weights, g_counts = (np.random.default_rng(s) for s in np.random.SeedSequence(entropy).spawn(3))
    coin_of = np.zeros(S, dtype=np.int64) if st.coin_of is None else np.asarray(st.coin_of, dtype=np.int64)
    C = int(coin_of.max()) + 1
    drawn_down = g_shares.random((C, D)) < 0.5
    drawn_heads = g_shares.random((C, D, J)) < unseen_share
    down = drawn_down if down is None else np.asarray(down, dtype=bool).reshape(C, D)
    judge_coin = drawn_heads if judge_coin is None else np.asarray(judge_coin, dtype=bool).reshape(C, D, J)
    down_human = np.zeros(S, dtype=np.int64) if st.down_human is None else np.asarray(st.down_human, dtype=np.int64)

    ph, py, plab, pcount = _patterns(st)
    L = len(ph)
    r = st.sizes.astype(np.float64)
    M = (st.population - st.sizes).astype(np.int64)
    if (M < 0).any():
        raise ValueError("a stratum has more reviewed responses than responses.")
    scale = np.maximum(r - CONC_OFFSET, 1.0) / (r + 1.0)
    single = np.array([(st.human[a : a + n] == st.human[a]).all() for a, n in zip(st.starts, st.sizes, strict=True)])
    # Which verdicts of each judge no reviewed response of (stratum, human label) carries.
    seen = np.zeros((S, 2, J, 3), dtype=bool)
    for j in range(J):
        ok = plab[:, j] < NO_VERDICT
        seen[ph[ok], py[ok], j, plab[ok, j]] = True
    unseen = st.label_sets[None, None, :, :] & ~seen
    # Per (stratum, human label y, judge): the unseen labels that are errors (not y) and whether the
    # correct one (y) is unseen.
    correct = np.zeros((2, 3), dtype=bool)
    correct[0, 0] = correct[1, 1] = True  # harmful called harmful, safe called safe
    unseen_err = unseen & ~correct[None, :, None, :]
    n_err_flat = unseen_err.sum(axis=3).reshape(-1)  # (S * 2 * J)
    order_err_flat = np.argsort(~unseen_err, axis=3, kind="stable").reshape(-1)  # unseen errors first
    unseen_ok_flat = (unseen & correct[None, :, None, :]).any(axis=3).reshape(-1)
    can_relabel = ~np.asarray(st.fixed, dtype=bool)
    with_ps = np.stack([np.ones(S, dtype=bool), single])  # (2, S): pseudo-response B everywhere, A where one label

    # The map from the patterns' cells to (group, judge, cell) rows (an indicator matrix).
    rows, cols = [], []
    memb_h = np.repeat(np.arange(S), [len(g) for g in st.groups])
    memb_g = np.array([g for gs in st.groups for g in gs], dtype=np.int64)
    for j in range(J):
        ok = plab[:, j] < NO_VERDICT
        pat_of = np.flatnonzero(ok)
        pos = np.searchsorted(ph[pat_of], memb_h, side="left")
        end = np.searchsorted(ph[pat_of], memb_h, side="right")
        take = np.concatenate([np.arange(a, b) for a, b in zip(pos, end, strict=True)]) if len(pos) else pos
        rows.append((np.repeat(memb_g, end - pos) * J + j) * 6 + (py * 3 + plab[:, j])[pat_of[take]])
        cols.append(pat_of[take])
    a_rows, a_cols, a_shape = np.concatenate(rows), np.concatenate(cols), (G * J * 6, L)
    max_groups = max((len(g) for g in st.groups), default=0)
    group_at = [np.array([g[i] if i < len(g) else -1 for g in st.groups], dtype=np.int64) for i in range(max_groups)]

    # The multinomial as binomials over the pattern positions, pseudo-response first, for the
    # strata with responses to draw (sorted by their number of patterns, so each step is a prefix).
    pat_start = np.searchsorted(ph, np.arange(S), side="left")
    K = np.bincount(ph, minlength=S)
    drawn = np.flatnonzero(M > 0)
    drawn = drawn[np.argsort(-K[drawn], kind="stable")]
    rank = np.full(S, -1, dtype=np.int64)
    rank[drawn] = np.arange(len(drawn))
    k_max = int(K[drawn].max()) if len(drawn) else 0
    in_drawn = rank[ph] >= 0
    pos_d = np.arange(L)[in_drawn] - pat_start[ph[in_drawn]]
    row_d = rank[ph[in_drawn]]
    need = [int((K[drawn] > k + 1).sum()) for k in range(k_max)]
    ends = [int((K[drawn] > k).sum()) for k in range(k_max)]
    observed = pcount[:, None]  # (L, 1)

    cells = np.asarray(st.cells, dtype=np.int64)
    n_cells = int(cells.max()) + 1
    cell_total = np.bincount(cells, weights=st.population.astype(np.float64), minlength=n_cells)

    block = max(1, min(D, _BLOCK // max(L + S * J * 6, 1)))
    for d0 in range(0, D, block):
        b = min(block, D - d0)
        # pi: the Gamma draws of every pattern and pseudo-response, normalised per stratum: pseudo-response
        # B in every stratum, pseudo-response A where the stratum saw one human label.
        g_obs = g_shares.standard_gamma(np.broadcast_to((pcount * scale[ph])[:, None], (L, b)))
        g_ps = g_shares.standard_gamma(np.broadcast_to(scale[:, None], (2, S, b))) * with_ps[:, :, None]
        total = np.add.reduceat(g_obs, pat_start, axis=0) + g_ps.sum(axis=0)  # (S, b)
        share_obs = g_obs / total[ph]
        share_ps = g_ps / total[None]  # (2, S, b)
        dn = down[coin_of, d0 : d0 + b]  # (S, b): the draw on the errors' side
        # A's human label, per judge: for a judge that defines the stratum, the label that is its error on
        # the errors' side and the other on the other side (its miss hidden in a clean judge-safe stratum, or
        # none); for every other judge, the label no reviewed response of the stratum carries, in every draw,
        # with its verdict an error on the errors' side and correct on the other (the hidden response that
        # judge would have missed or caught). Each judge's totals are its own, so each sums to N_h.
        side = np.where(dn, down_human[:, None], 1 - down_human[:, None])  # (S, b)
        hidden = (1 - st.human[st.starts])[:, None, None]  # (S, 1, 1)
        y_hidden = np.where(can_relabel[:, None, :], hidden, side[:, :, None])  # (S, b, J)
        heads = judge_coin[coin_of, d0 : d0 + b]  # (S, b, J)
        ps_cell = np.zeros((2, S, b, J), dtype=np.int64)
        ps_keep = np.zeros((2, S, b, J), dtype=bool)
        for slot in (0, 1):
            # a copy of a reviewed response of the stratum (B keeps its human label, A takes the side's)
            picked = st.starts[:, None] + np.minimum(
                np.floor(g_shares.random((S, b)) * r[:, None]), r[:, None] - 1
            ).astype(np.int64)
            y = np.broadcast_to(st.human[picked][:, :, None], (S, b, J)) if slot == 0 else y_hidden
            a = st.labels[picked]  # (S, b, J)
            hy = (np.arange(S)[:, None, None] * 2 + y) * J + np.arange(J)  # flat (h, y, j)
            k_err = n_err_flat[hy]
            pick = np.minimum(np.floor(g_shares.random((S, b, J)) * k_err).astype(np.int64), 2)
            ok = heads & (a < NO_VERDICT) & can_relabel[:, None, :]
            to_err = ok & dn[:, :, None] & (k_err > 0)
            to_right = ok & ~dn[:, :, None] & unseen_ok_flat[hy]
            a = np.where(to_err, order_err_flat[hy * 3 + pick], np.where(to_right, y, a))
            ps_cell[slot] = (np.arange(J) * 6)[None, None, :] + y * 3 + a
            ps_keep[slot] = (a < NO_VERDICT) & with_ps[slot][:, None, None]
        # The stratum weights of a new sample of prompts (drawn whichever views are asked for).
        gw = g_weights.standard_gamma(np.broadcast_to(st.population[:, None] + 0.5, (S, b)))
        cell_sum = np.zeros((n_cells, b))
        np.add.at(cell_sum, cells, gw)
        w = gw / cell_sum[cells] * cell_total[cells][:, None]
        # The multinomial draws of the unlabelled responses (drawn whichever views are asked for).
        x_obs = np.zeros((L, b))
        x_ps = np.zeros((2, S, b))
        if len(drawn):
            left = np.broadcast_to(M[drawn, None], (len(drawn), b)).copy()
            p_left = np.ones((len(drawn), b))
            for slot in (0, 1):  # the pseudo-responses first
                p_ps = share_ps[slot, drawn]
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.clip(p_ps / p_left, 0.0, 1.0)
                ratio[~np.isfinite(ratio)] = 0.0
                x = g_counts.binomial(left, ratio)
                x_ps[slot, drawn] = x
                left -= x
                p_left = p_left - p_ps
            shares = np.zeros((k_max, len(drawn), b))
            shares[pos_d, row_d] = share_obs[in_drawn]
            xb = np.zeros((k_max, len(drawn), b))
            for k in range(k_max):
                m, e = need[k], ends[k]
                if m:
                    with np.errstate(divide="ignore", invalid="ignore"):
                        ratio = np.clip(shares[k, :m] / p_left[:m], 0.0, 1.0)
                    ratio[~np.isfinite(ratio)] = 1.0
                    x = g_counts.binomial(left[:m], ratio)
                    xb[k, :m] = x
                    left[:m] -= x
                    p_left[:m] -= shares[k, :m]
                xb[k, m:e] = left[m:e]  # the last pattern takes what is left
            x_obs[in_drawn] = xb[pos_d, row_d]
        for view in views:
            if view == "prompts":
                v_obs, v_ps = w[ph] * share_obs, w[None] * share_ps
            else:
                v_obs, v_ps = observed + x_obs, x_ps
            sums = indicator_product(a_rows, a_cols, a_shape, v_obs).reshape(G, J, 6, b)
            ps_sums = np.zeros(G * J * 6 * b)
            dd = np.arange(b)[None, :, None]
            for slot in (0, 1):
                for gi in range(max_groups):  # each stratum's first, second, ... group
                    has = group_at[gi] >= 0
                    g = group_at[gi][has]
                    keep = ps_keep[slot][has]
                    idx = ((g[:, None, None] * (J * 6) + ps_cell[slot][has]) * b + dd)[keep]
                    ps_sums += np.bincount(
                        idx,
                        weights=np.broadcast_to(v_ps[slot][has][:, :, None], keep.shape)[keep],
                        minlength=G * J * 6 * b,
                    )
            out[view][:, d0 : d0 + b] = np.moveaxis(sums + ps_sums.reshape(G, J, 6, b), 3, 1)
    return {v: a.reshape(G, D, J, 2, 3) for v, a in out.items()}
