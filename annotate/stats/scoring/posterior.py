"""Draws of each cell's harmful rate (docs/methods.md 4.3, 4.4, as amended by issue #13).

* Stratum rates (:func:`fiducial_theta`): theta_h is drawn from the binomial's fiducial
  distribution, the even mixture of Beta(y_h, r_h - y_h + 1) and Beta(y_h + 1, r_h - y_h)
  (Hannig 2009), drawn as G_1 / (G_1 + G_0) with G_1 ~ Gamma(y_h + B), G_0 ~ Gamma(r_h - y_h +
  1 - B), B ~ Bernoulli(1/2) per draw (Gamma(0) = 0: a stratum with no harmful item gives
  theta = 0 in half the draws). Its two components are the prior pair behind Clopper-Pearson
  limits, so a large stratum with few reviewed items no longer imputes harm it has not seen
  (Jeffreys' Beta(y + 1/2, r - y + 1/2) imputes about 1/(2 (r + 1)) at y = 0).
* Fixed prompts, Polya (:func:`polya_draws`): the harmful count among the N_h - r_h responses of
  a stratum without a label is X_h ~ Binomial(N_h - r_h, theta_h); p* = (1/N) sum_h (y_h + X_h).
* Transported cells (:func:`transport_draws`): per benchmark, the donors' pooled rates
  ybar_k* ~ Beta(ybar_k n_k + 1/2, (1 - ybar_k) n_k + 1/2) (one prior on the pooled effective
  counts) give Se*, Sp*; each filled stratum draws X_h ~ Binomial(N_h, theta_k*) with theta_k*
  the label-shift rate of the cell (:func:`.transport.fill_rates`); the cell's own strata keep
  their Polya draws.
* General estimand (:func:`general_draws`): W* ~ Dirichlet(N_h + 1/2) per cell (normalised Gamma
  draws, shared by every run: common random numbers), theta*_h as above, p* = sum_h W*_h
  theta*_h (filled strata: theta* from q* = W*_H / (W*_H + W*_S)).

One ``numpy.random.Generator`` is consumed in a fixed order: stratum rates, Polya Binomial,
pooled-rate Beta, filled-stratum Binomial, Gamma. Draws are independent across strata, so a run
reuses another run's draws of the strata whose counts are the same (common random numbers);
every run's own distribution is unchanged by this.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotate.stats.scoring._arrays import group_sum
from annotate.stats.scoring.estimator import StratumTerms
from annotate.stats.scoring.strata import H_CODE, S_CODE, U_CODE, Strata
from annotate.stats.scoring.transport import Donors, TransportPoints, fill_rates

__all__ = [
    "GeneralDraws",
    "PolyaDraws",
    "Posterior",
    "TransportDraws",
    "fiducial_theta",
    "general_draws",
    "polya_draws",
    "posterior_draws",
    "shared_components",
    "transport_draws",
]


def _by_label(values: NDArray[np.float64], keys: NDArray[np.int64], C: int, D: int) -> NDArray[np.float64]:
    """Sums over (cell, judge label) groups, keys = 3 cell + label: (k, D) -> (C, 3, D)."""
    return group_sum(values, keys, 3 * C).reshape(C, 3, D)


def fiducial_theta(
    rng: np.random.Generator,
    y: NDArray[np.float64],
    r: NDArray[np.float64],
    D: int,
    component: NDArray[np.bool_] | None = None,
) -> NDArray[np.float64]:
    """D draws of each stratum's rate from the binomial fiducial distribution, shape (k, D).

    The even mixture of Beta(y, r - y + 1) and Beta(y + 1, r - y); Beta(0, b) is the point mass
    at 0 and Beta(a, 0) the point mass at 1. Consumes one uniform array (unless ``component``,
    shape (k, D), gives the mixture's component of each stratum and draw: True for
    Beta(y + 1, r - y)) and two Gamma arrays.

    >>> d = fiducial_theta(np.random.default_rng(0), np.array([0.0, 5.0]), np.array([10.0, 5.0]), 20000)
    >>> round(float((d[0] == 0).mean()), 1), round(float((d[1] == 1).mean()), 1)
    (0.5, 0.5)
    >>> # mean of the mixture: ((y / (r + 1)) + (y + 1) / (r + 1)) / 2 = (y + 1/2) / (r + 1)
    >>> abs(float(d[0].mean()) - 0.5 / 11) < 0.002
    True
    """
    k = len(y)
    half = (rng.random((k, D)) < 0.5 if component is None else component).astype(np.float64)
    a = y[:, None] + half
    b = (r - y)[:, None] + 1.0 - half
    g1 = rng.standard_gamma(a)
    g0 = rng.standard_gamma(b)
    return g1 / (g1 + g0)


#: Which strata share the fiducial mixture's component in a draw: ``"model"`` (every stratum of a
#: model: the default since issue #33), ``"label"`` (a model's strata of one judge label: issue
#: #23), ``"cell"`` or ``"stratum"`` (independent, as before issue #23).
SHARE_COMPONENT = "model"


def shared_components(st: Strata, rng: np.random.Generator, D: int, share: str | None = None) -> NDArray[np.bool_]:
    """The fiducial mixture's component of every stratum and draw, shape (S, D).

    One fair coin per draw and model (``share="model"``, the default :data:`SHARE_COMPONENT`),
    per draw, model and judge label, per cell, or per stratum; True picks Beta(y + 1, r - y).
    Consumes one uniform array.

    Why shared (docs/methods.md 9.12, 9.17): a model's overall row averages its cells, and with a
    component per stratum the mixture's centre (y + 1/2) / (r + 1), above y / r when y < r / 2,
    adds up over the model's sparse strata while the independent draws' spread shrinks: at 1 %
    harm, 10-80 reviews per stratum and 5 benchmarks the overall row covered 0.64-0.90. The lower
    end of the interval must come from draws in which every sparse stratum takes the lower
    component Beta(y, r - y + 1) (the Clopper-Pearson lower prior). With one coin per model
    those are half the draws, so the 2.5 % quantile is the 5 % quantile of the all-lower sum;
    with one coin per judge label (issue #23) the judge-safe and the sampled ambiguous strata
    had to fall low together, a quarter of the draws, the lower end sat near the 10 % quantile,
    and with 15 sparse strata per model (5 benchmarks, half ambiguous, rare harm) the row
    covered only 0.89-0.93 (issue #33). A cell's strata then share the coin too:
    its interval is the even mixture of the all-lower and all-upper convolutions, about 1.1 times
    the width with independent strata.

    >>> from annotate.stats.scoring.strata import prepare_strata
    >>> import pandas as pd
    >>> st = prepare_strata(pd.DataFrame({"model": ["a", "a", "a", "b"], "benchmark": ["x", "x", "y", "x"],
    ...     "stratum": ["harmful", "safe", "safe", "safe"], "judge_label": ["harmful", "safe", "safe", "safe"],
    ...     "population": 10, "reviewed": 5, "harmful": 1, "unresolved": 0}))
    >>> c = shared_components(st, np.random.default_rng(0), 1000)
    >>> bool((c[0] == c[1]).all() and (c[0] == c[2]).all()), bool((c[0] == c[3]).all())
    (True, False)
    >>> c = shared_components(st, np.random.default_rng(0), 1000, "label")
    >>> bool((c[1] == c[2]).all()), bool((c[0] == c[1]).all()), bool((c[1] == c[3]).all())
    (True, False, False)
    """
    share = SHARE_COMPONENT if share is None else share
    if share == "stratum":
        return rng.random((st.S, D)) < 0.5
    if share == "cell":
        return (rng.random((st.C, D)) < 0.5)[st.cell]
    if share == "label":
        codes, _ = pd.factorize(st.cells["model"])
        M = int(codes.max()) + 1 if len(codes) else 0
        return (rng.random((M * 3, D)) < 0.5)[codes[st.cell] * 3 + st.label]
    if share != "model":
        raise ValueError(f"share must be 'label', 'model', 'cell' or 'stratum'; got {share!r}.")
    codes, _ = pd.factorize(st.cells["model"])
    return (rng.random((int(codes.max()) + 1 if len(codes) else 0, D)) < 0.5)[codes[st.cell]]


@dataclass(frozen=True, eq=False)
class GeneralDraws:
    """General-estimand draws of one run.

    Attributes
    ----------
    total : ndarray of float64, shape (C, D)
        p* (NaN rows for cells that are not estimable).
    ambiguous : ndarray of float64, shape (C, D)
        The ambiguous part sum_U W*_h theta*_h (NaN rows where an ambiguous stratum has r_h = 0).
    shares : tuple of 3 ndarrays of float64, shape (C, D)
        The Dirichlet judge-label shares W*_H, W*_S, W*_U.
    gamma : ndarray of float64, shape (S, D)
        The unnormalised Dirichlet draws (shared with later runs).
    gamma_by_label : ndarray of float64, shape (C, 3, D)
        Their sums per cell and judge label.
    gamma_total : ndarray of float64, shape (C, D)
        Their sums per cell.
    """

    total: NDArray[np.float64]
    ambiguous: NDArray[np.float64]
    shares: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]
    gamma: NDArray[np.float64]
    gamma_by_label: NDArray[np.float64]
    gamma_total: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Posterior:
    """The draws of one run of the estimator.

    Attributes
    ----------
    fixed : ndarray of float64, shape (C, D)
        Fixed-prompt p* (NaN rows for cells that are not estimable).
    amb_fixed : ndarray of float64, shape (C, D)
        (1/N) sum_U (y_h + X_h), the ambiguous part (NaN where an ambiguous stratum has r_h = 0).
    y, r : ndarray of float64, shape (S,)
        The counts the draws were made from.
    has_theta : ndarray of bool, shape (S,)
        Strata with rate draws (those entering an estimate with their own counts).
    theta : ndarray of float64, shape (S, D)
        Their rate draws (0 in the other rows).
    drawn : ndarray of int64, shape (k,)
        Strata with Polya draws (own counts and N_h - r_h > 0).
    X : ndarray of float64, shape (k, D)
        Their unobserved harmful counts divided by the cell's N.
    general : GeneralDraws or None
        Only for runs asked for the general estimand.
    """

    fixed: NDArray[np.float64]
    amb_fixed: NDArray[np.float64]
    y: NDArray[np.float64]
    r: NDArray[np.float64]
    has_theta: NDArray[np.bool_]
    theta: NDArray[np.float64]
    drawn: NDArray[np.int64]
    X: NDArray[np.float64]
    general: GeneralDraws | None


# --------------------------------------------------------------------------------------------
# Fixed prompts: Polya
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PolyaDraws:
    """Polya draws of the strata that enter an estimate with their own counts.

    Attributes
    ----------
    theta : ndarray of float64, shape (S, D)
        Rate draws of the strata in ``uses_own`` (0 elsewhere).
    drawn : ndarray of int64, shape (k,)
        Strata drawn (used with their own counts and N_h - r_h > 0).
    X : ndarray of float64, shape (k, D)
        X_h / N per drawn stratum.
    fixed : ndarray of float64, shape (C, D)
        (1/N) sum_h (y_h + X_h) over the strata used (:func:`posterior_draws` then adds the
        filled strata of transported cells and blanks the not-estimable rows in place).
    amb_fixed : ndarray of float64, shape (C, D)
        The same over the ambiguous strata only.
    """

    theta: NDArray[np.float64]
    drawn: NDArray[np.int64]
    X: NDArray[np.float64]
    fixed: NDArray[np.float64]
    amb_fixed: NDArray[np.float64]


def polya_draws(
    st: Strata,
    y: NDArray[np.float64],
    r: NDArray[np.float64],
    uses_own: NDArray[np.bool_],
    rng: np.random.Generator,
    D: int,
    reuse: Posterior | None,
    component: NDArray[np.bool_] | None = None,
) -> PolyaDraws:
    """Fixed-prompt draws p* = (1/N) sum_h (y_h + X_h) over the strata in ``uses_own``.

    Parameters
    ----------
    st : Strata
    y, r : ndarray of float64, shape (S,)
        Harmful and resolved counts.
    uses_own : ndarray of bool, shape (S,)
        Strata that enter an estimate with their own counts (r_h > 0).
    rng : numpy.random.Generator
        Consumed: the fresh strata's rates (:func:`fiducial_theta`), then one Binomial array.
    D : int
        Draws per cell.
    reuse : Posterior, optional
        Another run's draws: strata drawn there with the same (y_h, r_h) keep their theta and X.
    component : ndarray of bool, shape (S, D), optional
        The fiducial mixture's component of each stratum and draw (:func:`shared_components`).

    Returns
    -------
    PolyaDraws
    """
    C, S, cell, N = st.C, st.S, st.cell, st.N
    Ncell_s = st.N_cell[cell]
    clear = st.label != U_CODE
    M = N - r
    want = np.flatnonzero(uses_own)
    theta = np.zeros((S, D))
    fresh_t = np.ones(len(want), dtype=bool)
    if reuse is not None and len(want):
        # Strata whose counts are the same as in the run being reused keep their draws (the
        # draws are independent across strata, so each run's distribution stays exact).
        same = reuse.has_theta[want] & (y[want] == reuse.y[want]) & (r[want] == reuse.r[want])
        theta[want[same]] = reuse.theta[want[same]]
        fresh_t = ~same
    if fresh_t.any():
        fi = want[fresh_t]
        theta[fi] = fiducial_theta(rng, y[fi], r[fi], D, None if component is None else component[fi])
    idx = np.flatnonzero(uses_own & (M > 0))
    X = np.empty((len(idx), D))
    fresh = np.ones(len(idx), dtype=bool)
    if reuse is not None and len(idx):
        pos = np.full(S, -1, dtype=np.int64)
        pos[reuse.drawn] = np.arange(len(reuse.drawn))
        same = (pos[idx] >= 0) & (y[idx] == reuse.y[idx]) & (r[idx] == reuse.r[idx])
        X[same] = reuse.X[pos[idx[same]]]
        fresh = ~same
    if fresh.any():
        fi = idx[fresh]
        X[fresh] = rng.binomial(M[fi, None].astype(np.int64), theta[fi]).astype(np.float64) / Ncell_s[fi, None]
    const = np.where(uses_own, y / Ncell_s, 0.0)
    const_clear = group_sum(np.where(clear, const, 0.0), cell, C)
    const_amb = group_sum(np.where(clear, 0.0, const), cell, C)
    Xk = _by_label(X, (cell * 3 + st.label)[idx], C, D)
    fixed_amb = Xk[:, U_CODE] + const_amb[:, None]
    fixed = Xk[:, H_CODE] + Xk[:, S_CODE]
    fixed += const_clear[:, None]
    fixed += fixed_amb
    return PolyaDraws(theta=theta, drawn=idx, X=X, fixed=fixed, amb_fixed=fixed_amb)


# --------------------------------------------------------------------------------------------
# Transported cells: the filled strata
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TransportDraws:
    """Draws for the T transported cells.

    Attributes
    ----------
    cells : ndarray of int64, shape (T,)
    sensitivity, specificity : ndarray of float64, shape (T, D)
        Se*, Sp* of each cell's benchmark.
    fill : ndarray of int64, shape (f,)
        The filled strata.
    fixed_part : ndarray of float64, shape (T, D)
        (1/N) sum over the cell's filled strata of X_h.
    """

    cells: NDArray[np.int64]
    sensitivity: NDArray[np.float64]
    specificity: NDArray[np.float64]
    fill: NDArray[np.int64]
    fixed_part: NDArray[np.float64]


def transport_draws(
    st: Strata,
    terms: StratumTerms,
    donors: Donors,
    tr: TransportPoints,
    use_tr: NDArray[np.bool_],
    rng: np.random.Generator,
    D: int,
) -> TransportDraws | None:
    """Draws of the transported cells' filled strata; None if no cell is transported.

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
        ``fill``: the strata to fill.
    donors : Donors
        The pooled rates, effective sizes and populations per benchmark.
    tr : TransportPoints
        q' of each cell.
    use_tr : ndarray of bool, shape (C,)
    rng : numpy.random.Generator
        Consumed: two Beta arrays (the transported benchmarks' pooled rates), one Binomial.
    D : int

    Returns
    -------
    TransportDraws or None
        ybar_k* ~ Beta(ybar_k n_k + 1/2, (1 - ybar_k) n_k + 1/2); Se* = N_H ybar_H* / (N_H ybar_H*
        + N_S ybar_S*), Sp* = N_S (1 - ybar_S*) / (N_S (1 - ybar_S*) + N_H (1 - ybar_H*)) with the
        donors' populations; X_h ~ Binomial(N_h - r_h, theta*) per filled stratum.
    """
    tcells = np.flatnonzero(use_tr)
    if not len(tcells):
        return None
    tb, tpos = np.unique(st.bench[tcells], return_inverse=True)
    rate = donors.rate[tb]
    n = donors.n_eff[tb]
    a = rate * n + 0.5
    b = (1.0 - rate) * n + 0.5
    thH = rng.beta(a[:, H_CODE, None], b[:, H_CODE, None], size=(len(tb), D))
    thS = rng.beta(a[:, S_CODE, None], b[:, S_CODE, None], size=(len(tb), D))
    NpH, NpS = donors.population[tb, H_CODE, None], donors.population[tb, S_CODE, None]
    Se = NpH * thH / (NpH * thH + NpS * thS)
    Sp = NpS * (1.0 - thS) / (NpS * (1.0 - thS) + NpH * (1.0 - thH))
    Se_c, Sp_c = Se[tpos], Sp[tpos]
    _, tH, tS, _ = fill_rates(tr.q[tcells, None], Se_c, Sp_c)
    pos = np.full(st.C, -1, dtype=np.int64)
    pos[tcells] = np.arange(len(tcells))
    fill = np.flatnonzero(terms.fill & use_tr[st.cell])
    fpos = pos[st.cell[fill]]
    theta = np.where((st.label[fill] == H_CODE)[:, None], tH[fpos], tS[fpos])
    M = (st.N - terms.r)[fill]
    X = rng.binomial(M[:, None].astype(np.int64), theta).astype(np.float64) / st.N_cell[st.cell[fill], None]
    return TransportDraws(
        cells=tcells,
        sensitivity=Se_c,
        specificity=Sp_c,
        fill=fill,
        fixed_part=group_sum(X, fpos, len(tcells)),
    )


# --------------------------------------------------------------------------------------------
# General estimand: Dirichlet x stratum rates
# --------------------------------------------------------------------------------------------


def general_draws(
    st: Strata,
    polya: PolyaDraws,
    td: TransportDraws | None,
    estimable: NDArray[np.bool_],
    amb_missing: NDArray[np.bool_],
    rng: np.random.Generator,
    D: int,
    shared: GeneralDraws | None,
) -> GeneralDraws:
    """General-estimand draws p* = sum_h W*_h theta*_h per cell.

    W* ~ Dirichlet(N_h + 1/2) per cell (normalised Gamma draws of every stratum: the judge-label
    shares W*_H, W*_S, W*_U are also the judge-only treatments' general draws); theta*_h are the
    Polya step's rate draws (the strata used with their own counts); a transported cell's filled
    strata use the label-shift rates at q* = W*_H / (W*_H + W*_S).

    Parameters
    ----------
    st : Strata
    polya : PolyaDraws
    td : TransportDraws or None
    estimable, amb_missing : ndarray of bool, shape (C,)
        Rows of ``total`` / ``ambiguous`` set to NaN where false / true.
    rng : numpy.random.Generator
        Consumed: one Gamma array (S, D) unless ``gamma`` is given.
    D : int
    shared : GeneralDraws, optional
        Another run's draws, whose Gamma (Dirichlet) draws are reused: they do not depend on
        the labels.

    Returns
    -------
    GeneralDraws
    """
    C = st.C
    key = st.cell * 3 + st.label
    if shared is None:
        G = rng.standard_gamma(st.N[:, None] + 0.5, size=(st.S, D))
        Gk = _by_label(G, key, C, D)
    else:
        G, Gk = shared.gamma, shared.gamma_by_label
    Tk = _by_label(G * polya.theta, key, C, D)
    GH, GS, GU = Gk[:, H_CODE], Gk[:, S_CODE], Gk[:, U_CODE]
    with np.errstate(divide="ignore", invalid="ignore"):
        if shared is None:
            Gsum = GH + GS + GU
            shares = (GH / Gsum, GS / Gsum, GU / Gsum)
        else:  # the same Dirichlet draws: the same shares
            shares, Gsum = shared.shares, shared.gamma_total
        amb_gen = Tk[:, U_CODE] / Gsum
        gen = (Tk[:, H_CODE] + Tk[:, S_CODE]) / Gsum + amb_gen
        if td is not None and len(td.fill):
            tc = td.cells
            GC = GH[tc] + GS[tc]
            qg = np.where(GC > 0, GH[tc] / GC, 0.0)
            _, tH, tS, _ = fill_rates(qg, td.sensitivity, td.specificity)
            pos = np.full(C, -1, dtype=np.int64)
            pos[tc] = np.arange(len(tc))
            fpos = pos[st.cell[td.fill]]
            theta = np.where((st.label[td.fill] == H_CODE)[:, None], tH[fpos], tS[fpos])
            gen[tc] += group_sum(G[td.fill] * theta, fpos, len(tc)) / Gsum[tc]
        gen[~estimable] = np.nan
        amb_gen[amb_missing] = np.nan
        return GeneralDraws(total=gen, ambiguous=amb_gen, shares=shares, gamma=G, gamma_by_label=Gk, gamma_total=Gsum)


# --------------------------------------------------------------------------------------------
# All draws of one run
# --------------------------------------------------------------------------------------------


def posterior_draws(
    st: Strata,
    terms: StratumTerms,
    donors: Donors,
    tr: TransportPoints,
    use_tr: NDArray[np.bool_],
    estimable: NDArray[np.bool_],
    *,
    rng: np.random.Generator,
    D: int,
    general: bool,
    reuse: Posterior | None = None,
    component: NDArray[np.bool_] | None = None,
) -> Posterior:
    """Fixed-prompt (and optionally general-estimand) draws of one run.

    Parameters
    ----------
    st : Strata
    terms : StratumTerms
        The run's counts and estimability masks.
    donors : Donors
    tr : TransportPoints
    use_tr, estimable : ndarray of bool, shape (C,)
        Transported and estimable cells.
    rng : numpy.random.Generator
    D : int
        Draws per cell.
    general : bool
        Also draw the general estimand.
    reuse : Posterior, optional
        See :func:`polya_draws`; its Dirichlet Gamma draws are reused too.
    component : ndarray of bool, shape (S, D), optional
        See :func:`polya_draws`.

    Returns
    -------
    Posterior
        Ambiguous strata are drawn whenever they are all resolved (the clear-trusted treatment
        needs them even where the clear part is not estimable); clear strata with r_h > 0 of
        estimable cells, transported ones included (a cell keeps its own reviewed items).
    """
    cell, y, r, clear, amb_missing = st.cell, terms.y, terms.r, terms.clear, terms.amb_missing
    uses_own = (r > 0) & np.where(clear, estimable[cell], ~amb_missing[cell])
    polya = polya_draws(st, y, r, uses_own, rng, D, reuse, component)
    fixed, fixed_amb = polya.fixed, polya.amb_fixed
    td = transport_draws(st, terms, donors, tr, use_tr, rng, D)
    if td is not None:
        fixed[td.cells] += td.fixed_part
    fixed[~estimable] = np.nan
    fixed_amb[amb_missing] = np.nan
    gen = None
    if general:
        gen = general_draws(st, polya, td, estimable, amb_missing, rng, D, reuse.general if reuse is not None else None)
    return Posterior(
        fixed=fixed,
        amb_fixed=fixed_amb,
        y=y,
        r=r,
        has_theta=uses_own,
        theta=polya.theta,
        drawn=polya.drawn,
        X=polya.X,
        general=gen,
    )
