"""Human time is the budget (issue #25): reviews to reach +-3 points per model, and coverage.

Run:  python bench/budget.py [--replicates 1000] [--draws 1000] [--chunk 40] [--quick]
                             [--scenario sim|rare|xstest|all] [--pilot-ambiguous 25 --pilot-clear 10]
                             [--reviewer-accuracy 0.92]

For every scenario and replicate, a finite population is drawn (the simulated ones) or replayed
(XSTest), and four designs review it, each scored by this tool's own estimator
(``corrected_scores``: the fiducial Polya interval of the per-model macro-average, 95 %):

(a) today: the ambiguous census and 25 per clear stratum (``route --ambiguous all --clear-per-cell 25``);
(b) a simple random sample of each cell, n per cell from the true cell variances (normal theory)
    so that each model's half-width is 3 points;
(c) planned waves: a pilot (``route`` with ``--ambiguous`` and ``--clear-per-cell`` of the pilot),
    then ``plan --target-halfwidth 0.03`` and ``route --next-wave`` for the models whose interval
    is not yet within +-3 points (at most --max-waves waves); every wave of a stratum pooled into
    one sample (docs/methods.md 4.9-4.10); the planner is given t / rho, rho = the reported
    half-width over the planner's own for the reviews so far, clipped to [--rho-min, 2];
(d) the oracle: the planner with the true stratum rates, one wave and no pilot, scaled per model
    by the smallest of FACTORS at which AT_TARGET_SHARE of the replicates reach the target (one
    factor for every replicate: no replicate's own sample chooses its size); also unscaled.
    (b) is scaled the same way.

Reviews = items x reviewers (2) + items sent to an expert (XSTest: the share where its two
annotators disagree; simulations: none). Printed per scenario: mean reviews, the ratio to (d),
the share of models whose interval is within +-3 points (half-width = (high - low) / 2), the
largest half-width (mean over replicates of the worst model), coverage of the models' true
rates with its Monte-Carlo SE and the lowest coverage of one model over the replicates.

The intervals are the tool's own ``corrected`` model rows, computed by :func:`fast_score`, the
same computation as ``corrected_scores`` vectorised over replicates (``--check`` compares them).

Scenarios:

* ``sim``: the seed-sized study, 26 models x 5 benchmarks x 1,000 prompts; model harm rates
  log-spaced from 0.5 % to 40 % (times a benchmark factor exp(N(0, 0.3^2))); half the responses
  ambiguous (P(ambiguous | harmful) = .6, the rest so that the share is .5); among the others a
  judge with sensitivity .85 and specificity .95.
* ``rare``: the same with harm rates 0.2 % to 5 % and a judge of sensitivity .70.
* ``xstest``: the bundled XSTest v2 sample (5 models x 450 prompts; annotate/data/xstest) replayed:
  its GPT-4 labels are the strata (partial refusals and unparsed labels ambiguous), the truth is
  the final human label (harmful = full compliance with an unsafe prompt; a partial refusal is not
  harmful), and the two annotators' disagreement share is the expert share.

``--reviewer-accuracy a`` (issue #41): the simulated populations are labelled by two reviewers each
right with probability a and an expert (always right) on their disagreements; every response's
would-be final label is drawn once (:func:`reviewed_labels`, wrong with (1 - a)^2), the samples
come from those labels and the truth is their rate; the expert share is 2 a (1 - a).

Seeded; deterministic.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from annotate.columns import JUDGE_LABELS  # noqa: E402
from annotate.stats.planning import plan_round  # noqa: E402
from annotate.stats.scoring import corrected_scores  # noqa: E402

LABELS = JUDGE_LABELS  # harmful, safe, ambiguous: index 0, 1, 2
Z = 1.959963984540054
TARGET = 0.03
REVIEWERS = 2


@dataclass
class Population:
    """N_h and K_h (harmful) per (replicate, model, benchmark, label); the truth per (replicate, model)."""

    N: np.ndarray  # (R, M, B, 3)
    K: np.ndarray
    expert_share: float = 0.0

    @property
    def truth(self) -> np.ndarray:
        cell = self.K.sum(axis=3) / self.N.sum(axis=3)
        return cell.mean(axis=2)


def simulate(R: int, rng: np.random.Generator, *, lo: float, hi: float, se: float, sp: float = 0.95) -> Population:
    M, B, N = 26, 5, 1000
    base = np.geomspace(lo, hi, M)
    p = np.clip(base[None, :, None] * np.exp(rng.normal(0, 0.3, (R, M, B))), 0, 0.95)
    Y1 = rng.binomial(N, p)
    Y0 = N - Y1
    pa1 = 0.6
    pa0 = np.clip((0.5 - pa1 * p) / (1 - p), 0, 1)
    U1 = rng.binomial(Y1, pa1)
    U0 = rng.binomial(Y0, pa0)
    H1 = rng.binomial(Y1 - U1, se)
    H0 = rng.binomial(Y0 - U0, 1 - sp)
    S1, S0 = Y1 - U1 - H1, Y0 - U0 - H0
    NN = np.stack([H1 + H0, S1 + S0, U1 + U0], axis=3)
    KK = np.stack([H1, S1, U1], axis=3)
    return Population(NN, KK)


def xstest(R: int) -> Population:
    from annotate.pipeline.demo import sample_files, xstest_verdict

    Ns, Ks, agree, total = [], [], 0, 0
    for f in sample_files("gpteval"):
        d = pd.read_csv(f)

        def verdict(col: str, d: pd.DataFrame = d) -> pd.Series:
            out = []
            for lab, typ in zip(d[col], d["type"], strict=True):
                try:
                    out.append(xstest_verdict(lab, typ))
                except ValueError:
                    out.append("unsure")  # an unparsed judge answer
            return pd.Series(out)

        judge = verdict("gpt4_label").map({"harmful": 0, "safe": 1}).fillna(2).astype(int).to_numpy()
        y = (verdict("final_label") == "harmful").to_numpy()
        a1, a2 = verdict("annotation_1"), verdict("annotation_2")
        agree += int((a1 == a2).sum())
        total += len(d)
        Ns.append([int((judge == h).sum()) for h in range(3)])
        Ks.append([int(((judge == h) & y).sum()) for h in range(3)])
    N = np.array(Ns)[None, :, None, :].repeat(R, axis=0)
    K = np.array(Ks)[None, :, None, :].repeat(R, axis=0)
    return Population(N, K, expert_share=1 - agree / total)


def final_label_error(accuracy: float, expert_accuracy: float = 1.0) -> float:
    """P(a response's final label is wrong): two reviewers each right with ``accuracy``, an expert
    (right with ``expert_accuracy``) settling their disagreements. Both wrong: (1 - a)^2; a
    disagreement the expert gets wrong: 2 a (1 - a) (1 - x).

    >>> round(final_label_error(0.92), 4), round(final_label_error(0.92, 0.9), 5)
    (0.0064, 0.02112)
    """
    a, x = float(accuracy), float(expert_accuracy)
    if not (0 <= a <= 1 and 0 <= x <= 1):
        raise ValueError("accuracies must be in [0, 1].")
    return (1 - a) ** 2 + 2 * a * (1 - a) * (1 - x)


def expert_share(accuracy: float) -> float:
    """The share of items the two reviewers disagree on (sent to the expert): 2 a (1 - a)."""
    return 2 * float(accuracy) * (1 - float(accuracy))


def reviewed_labels(
    K: np.ndarray, N: np.ndarray, rng: np.random.Generator, accuracy: float, expert_accuracy: float = 1.0
) -> np.ndarray:
    """The harmful count of each stratum's *would-be reviewed* labels (issue #41).

    Every response's final label, the one the review process would give it if it were reviewed,
    is drawn once: a truly harmful response ends up labelled safe, and a truly safe one harmful,
    each with e = :func:`final_label_error` (reviewer errors independent of the response and of
    the judge's label). The result replaces K: the sample is drawn from these labels, and their
    finite-population rate is the fixed-prompt estimand (what the review would say of these
    prompts: methods 4.1, 9.20).
    """
    e = final_label_error(accuracy, expert_accuracy)
    if e == 0:
        return K.copy()
    K = np.asarray(K, dtype=np.int64)
    return K - rng.binomial(K, e) + rng.binomial(np.asarray(N, dtype=np.int64) - K, e)


def with_reviewer_error(pop: Population, rng: np.random.Generator, accuracy: float) -> Population:
    """The population whose harmful counts are the would-be reviewed labels' (:func:`reviewed_labels`);
    the expert share becomes the reviewers' disagreement share 2 a (1 - a)."""
    if accuracy >= 1:
        return pop
    return Population(pop.N, reviewed_labels(pop.K, pop.N, rng, accuracy), expert_share=expert_share(accuracy))


def hyper(rng: np.random.Generator, good: np.ndarray, bad: np.ndarray, n: np.ndarray) -> np.ndarray:
    """y ~ Hypergeometric(good, bad, n) elementwise (0 where n = 0)."""
    n = np.minimum(n, good + bad).astype(np.int64)
    out = np.zeros_like(n)
    ok = n > 0
    out[ok] = rng.hypergeometric(good[ok], bad[ok], n[ok])
    return out


# --------------------------------------------------------------------------------------------
# The tool's model-level interval, vectorised over replicates (checked against corrected_scores)
# --------------------------------------------------------------------------------------------


def fast_score(
    N: np.ndarray,
    r: np.ndarray,
    y: np.ndarray,
    D: int,
    rng: np.random.Generator,
    block: int = 16,
    share: str = "model",
    out_draws: np.ndarray | None = None,
):
    """(low, high, estimate) of every model's ``corrected`` row, shape (R, M): the tool's estimator.

    Strata arrays of shape (R, M, B, H), judge label = h mod 3 (index 0, 1, 2 = harmful, safe,
    ambiguous; H = 6 holds census strata of their own). Exactly the computation of
    ``corrected_scores`` for strata with r_h >= 1, nothing unresolved and no transport
    (``min_reviewed=0``): per model and draw one fair coin (the fiducial mixture's component,
    shared by the model's strata: methods 9.12, 9.17; ``share="label"``: one per model and judge
    label, the construction of issue #23); theta_h =
    G1 / (G1 + G0), G1 ~ Gamma(y_h + coin), G0 ~ Gamma(r_h - y_h + 1 - coin); X_h ~ Binomial(N_h
    - r_h, theta_h); the model's draw = (1/B) sum_b (1 / N_cell) sum_h (y_h + X_h); the interval =
    the inverted-CDF quantiles of the D draws (``equal_tailed``), extended to hold the estimate
    (``enclose``). Only the random numbers differ from the tool's (another consumption order);
    :func:`check_fast_score` compares the two. ``out_draws``, shape (R, M, D): filled with the draws
    (bench/grades.py reads the joint draws of the models).
    """
    from annotate.stats.scoring.intervals import enclose, equal_tailed

    if share not in ("model", "label"):
        raise ValueError(f"share must be 'model' or 'label'; got {share!r}.")
    per = 3 if share == "label" else 1
    R, M, B, H = N.shape
    Ncell = N.sum(axis=3, keepdims=True) if H == 3 else (N[..., :3] + N[..., 3:]).sum(axis=3, keepdims=True)
    Ncell = np.broadcast_to(Ncell, N.shape).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        est_h = np.where(r > 0, N / Ncell * y / np.where(r > 0, r, 1), 0.0)
    est = est_h.sum(axis=3).mean(axis=2)
    const = (np.where(N > 0, y, 0) / Ncell).sum(axis=3).mean(axis=2)
    lo = np.full((R, M), np.nan)
    hi = np.full((R, M), np.nan)
    label = np.arange(H) % 3
    for r0 in range(0, R, block):
        sl = slice(r0, min(R, r0 + block))
        Nb, rb, yb, Cb = N[sl], r[sl], y[sl], Ncell[sl]
        Rb = Nb.shape[0]
        coin = rng.random((Rb * M * per, D)) < 0.5
        act = np.flatnonzero(((Nb > rb) & (rb > 0)).ravel())
        flat = np.arange(Rb * M * B * H)
        mod = flat // (B * H)
        lab = label[flat % H]
        draws = np.tile(const[sl].reshape(-1, 1), (1, D))
        if len(act):
            comp = coin[mod[act] * per + (lab[act] if per == 3 else 0)].astype(float)
            yy, rr = yb.ravel()[act].astype(float), rb.ravel()[act].astype(float)
            g1 = rng.standard_gamma(yy[:, None] + comp)
            g0 = rng.standard_gamma((rr - yy)[:, None] + 1.0 - comp)
            theta = g1 / (g1 + g0)
            X = rng.binomial((Nb.ravel()[act] - rb.ravel()[act]).astype(np.int64)[:, None], theta)
            X = X / (Cb.ravel()[act] * B)[:, None]
            m_act = mod[act]
            starts = np.r_[0, np.flatnonzero(np.diff(m_act)) + 1]
            draws[m_act[starts]] += np.add.reduceat(X, starts, axis=0)
        low, high = equal_tailed(draws, 0.95)
        lo[sl], hi[sl] = low.reshape(Rb, M), high.reshape(Rb, M)
        if out_draws is not None:
            out_draws[sl] = draws.reshape(Rb, M, D)
    lo, hi, _ = enclose(est.ravel(), lo.ravel(), hi.ravel())
    return lo.reshape(R, M), hi.reshape(R, M), est


def tool_score(N: np.ndarray, r: np.ndarray, y: np.ndarray, D: int, seed: int):
    """The same through ``corrected_scores`` itself (slow): (low, high, estimate), shape (R, M)."""
    R, M, B, H = N.shape
    idx = np.indices(N.shape).reshape(4, -1)
    names = np.array([f"r{i}_m{m:02d}" for i in range(R) for m in range(M)])[idx[0] * M + idx[1]]
    df = pd.DataFrame(
        {
            "model": names,
            "benchmark": np.array([f"b{b}" for b in range(B)])[idx[2]],
            "stratum": [f"{LABELS[h % 3]}#{h // 3}" for h in idx[3]],
            "judge_label": [LABELS[h % 3] for h in idx[3]],
            "population": N.ravel(),
            "reviewed": r.ravel(),
            "harmful": y.ravel(),
            "unresolved": 0,
        }
    )
    res = corrected_scores(df[df.population > 0], draws=D, seed=seed, min_reviewed=0)
    o = res.overall[res.overall.treatment == "corrected"].set_index("model")
    o = o.reindex([f"r{i}_m{m:02d}" for i in range(R) for m in range(M)])
    return tuple(o[c].to_numpy().reshape(R, M) for c in ("ci_low", "ci_high", "estimate"))


def check_fast_score(R: int = 2, D: int = 40000, seed: int = 7) -> pd.DataFrame:
    """The fast path against ``corrected_scores`` on a check sample: estimates equal, ends within MC error.

    Two designs of the ``sim`` and ``rare`` populations (the census + 25 of (a); 3 per clear and 5
    ambiguous, sparse enough for the fiducial mixture to matter), and one with census strata of
    their own (H = 6, a conditional design). Returns the largest absolute differences.
    """
    rows = []
    rng = np.random.default_rng(seed)
    for name, pop in (
        ("sim", simulate(R, rng, lo=0.005, hi=0.4, se=0.85)),
        ("rare", simulate(R, rng, lo=0.002, hi=0.05, se=0.7)),
    ):
        N, K = pop.N, pop.K
        for design, n in (
            ("census+25", np.where(np.arange(3) == 2, N, np.minimum(N, 25))),
            ("sparse 3/5", np.minimum(N, np.where(np.arange(3) == 2, 5, 3))),
        ):
            y = hyper(rng, K, N - K, n)
            a = fast_score(N, n, y, D, np.random.default_rng(seed + 1))
            b = tool_score(N, n, y, D, seed + 2)
            c = tool_score(N, n, y, D, seed + 5)
            rows.append({"population": name, "design": design, **_diff(a, b), **_diff(c, b, "tool vs tool ")})
        p1 = np.minimum(N, 4)
        y1 = hyper(rng, K, N - K, p1)
        n2 = np.minimum(N - p1, 6)
        y2 = hyper(rng, K - y1, N - p1 - (K - y1), n2)
        N6, r6, y6 = np.concatenate([N - p1, p1], 3), np.concatenate([n2, p1], 3), np.concatenate([y2, y1], 3)
        keep = N6 > 0
        r6 = np.where(keep, np.maximum(r6, 0), 0)
        a = fast_score(N6, r6, y6, D, np.random.default_rng(seed + 3))
        b = tool_score(N6, r6, y6, D, seed + 4)
        c = tool_score(N6, r6, y6, D, seed + 6)
        rows.append(
            {"population": name, "design": "two waves, conditional", **_diff(a, b), **_diff(c, b, "tool vs tool ")}
        )
    return pd.DataFrame(rows)


def _diff(a, b, pre: str = "") -> dict[str, float]:
    ok = np.isfinite(b[0])
    out = {} if pre else {"models": int(ok.sum()), "max |estimate diff|": float(np.nanmax(np.abs(a[2] - b[2])[ok]))}
    out[pre + "max |low diff|"] = float(np.nanmax(np.abs(a[0] - b[0])[ok]))
    out[pre + "max |high diff|"] = float(np.nanmax(np.abs(a[1] - b[1])[ok]))
    out[pre + "mean |end diff|"] = float(np.mean(np.abs(np.r_[(a[0] - b[0])[ok], (a[1] - b[1])[ok]])))
    return out


# --------------------------------------------------------------------------------------------
# The designs
# --------------------------------------------------------------------------------------------


def plan_frame(N: np.ndarray, sampled: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    """(R, M, B, 3) arrays as one plan_round strata frame (a 'model' per replicate and model)."""
    R, M, B, H = N.shape
    idx = np.indices(N.shape).reshape(4, -1)
    return pd.DataFrame(
        {
            "model": idx[0] * M + idx[1],
            "benchmark": idx[2],
            "stratum": np.array(LABELS)[idx[3]],
            "judge_label": np.array(LABELS)[idx[3]],
            "population": N.ravel(),
            "sampled": sampled.ravel(),
            "resolved": sampled.ravel(),
            "harmful": y.ravel(),
        }
    )


def planned(N, sampled, y, targets, *, rates=None, min_new=5):
    """plan_round (pooled waves) for every replicate at once: (n per stratum, the planner's hw now)."""
    R, M, B, H = N.shape
    f = plan_frame(N, sampled, y)
    keep = f.population.to_numpy() > 0
    tg = {str(k): float(v) for k, v in enumerate(np.asarray(targets).ravel())}
    plan = plan_round(f[keep], tg, rates=None if rates is None else rates.ravel()[keep], min_new=min_new, reviewers=1)
    n = np.zeros(N.size, dtype=np.int64)
    n[keep] = plan.strata.n.to_numpy()
    hw_now = (
        plan.models.set_index("model").halfwidth_now.reindex([str(i) for i in range(R * M)]).to_numpy().reshape(R, M)
    )
    return n.reshape(N.shape), hw_now


@dataclass
class Waves:
    """The round of methods 4.10 on every replicate: final sizes, intervals and estimates, shape (R, M[, B, 3])."""

    n: np.ndarray  # items reviewed per stratum after the last wave
    y: np.ndarray  # harmful among them
    lo: np.ndarray
    hi: np.ndarray
    estimate: np.ndarray
    waves: np.ndarray  # waves per model
    pilot: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (n, lo, hi, estimate) after the pilot


def planned_waves(
    N: np.ndarray,
    K: np.ndarray,
    rng: np.random.Generator,
    D: int,
    *,
    pilot_ambiguous: int = 25,
    pilot_clear: int = 10,
    max_waves: int = 4,
    aim: float = 1.0,
    rho_min: float = 1.0,
    share: str = "model",
) -> Waves:
    """Design (c): a pilot (``route --ambiguous A --clear-per-cell C``), then ``plan --target-halfwidth``
    and ``route --next-wave`` for every model whose reported interval is wider than +-TARGET, at
    most ``max_waves`` waves, each stratum's waves pooled; the planner is given t / rho, rho = the
    reported half-width over its own for the reviews so far, clipped to [rho_min, 2]."""
    R, M = N.shape[:2]
    pilot = np.where(np.arange(3) == 2, pilot_ambiguous, pilot_clear)
    n_tot = np.minimum(N, np.maximum(pilot, 1))
    y_tot = hyper(rng, K, N - K, n_tot)
    lo, hi, est = fast_score(N, n_tot, y_tot, D, rng, share=share)
    first = (n_tot, lo, hi, est)  # never written in place: each wave makes new arrays
    waves = np.ones((R, M))
    for _wave in range(2, max_waves + 1):
        hw = (hi - lo) / 2
        todo = hw > TARGET + 1e-9
        if not todo.any():
            break
        _, hw_plan = planned(N, n_tot, y_tot, np.full((R, M), TARGET))
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.clip(np.where(hw_plan > 0, hw / hw_plan, 1.0), rho_min, 2.0)
        targets = np.where(todo, aim * TARGET / rho, 1.0)
        n_new, _ = planned(N, n_tot, y_tot, targets)
        n_new = np.where(todo[:, :, None, None], n_new, 0)
        y_new = hyper(rng, K - y_tot, (N - n_tot) - (K - y_tot), n_new)
        n_tot, y_tot = n_tot + n_new, y_tot + y_new
        waves += todo
        lo2, hi2, est2 = fast_score(N, n_tot, y_tot, D, rng, share=share)
        lo, hi, est = np.where(todo, lo2, lo), np.where(todo, hi2, hi), np.where(todo, est2, est)
    return Waves(n_tot, y_tot, lo, hi, est, waves, first)


def run_chunk(job: tuple) -> dict[str, dict[str, np.ndarray]]:
    """Every design on replicates [r0, r0 + R) of one population; per design arrays of shape (R, M)."""
    pop, r0, R, args, seed = job
    rng = np.random.default_rng(seed)
    N, K = pop.N[r0 : r0 + R], pop.K[r0 : r0 + R]
    _, M, B, _ = N.shape
    truth = pop.truth[r0 : r0 + R]
    D = args.draws
    out: dict[str, dict[str, np.ndarray]] = {}

    def record(name: str, lo, hi, items, **extra) -> None:
        out[name] = {
            "lo": lo,
            "hi": hi,
            "items": np.asarray(items, dtype=float),
            "cov": (lo <= truth + 1e-12) & (truth <= hi + 1e-12),
            **extra,
        }

    def model_items(n: np.ndarray) -> np.ndarray:
        return n.reshape(R, M, -1).sum(axis=2).astype(float)

    def scaled(name: str, n0: np.ndarray, KK: np.ndarray, NN: np.ndarray) -> None:
        for k, fac in enumerate(FACTORS):
            n = np.minimum(np.maximum(np.ceil(n0 * fac), np.minimum(NN, 1)), NN).astype(np.int64)
            y = hyper(rng, KK, NN - KK, n)
            lo, hi, _ = fast_score(NN, n, y, D, rng)
            record(f"{name}@{k}", lo, hi, model_items(n))

    # (a) today's census + 25 per clear stratum
    n_a = np.where(np.arange(3) == 2, N, np.minimum(N, 25))
    y_a = hyper(rng, K, N - K, n_a)
    lo, hi, _ = fast_score(N, n_a, y_a, D, rng)
    record("(a) census + 25", lo, hi, model_items(n_a))

    # (b) SRS per cell, n from the true cell variances (normal theory), then scaled
    Nc, Kc = N.sum(axis=3), K.sum(axis=3)
    s2 = Kc * (Nc - Kc) / (Nc * (Nc - 1.0))
    e2 = (TARGET / Z) ** 2
    S = (s2 / B**2).sum(axis=2)
    n_cell = np.ceil(S / (e2 + (s2 / (B**2 * Nc)).sum(axis=2)))[:, :, None] * np.ones((1, 1, B))
    n_cell = np.minimum(np.maximum(n_cell, 1), Nc)
    Nb3 = np.concatenate([Nc[..., None] * 0, Nc[..., None] * 0, Nc[..., None]], axis=3).astype(np.int64)
    Kb3 = np.concatenate([Kc[..., None] * 0, Kc[..., None] * 0, Kc[..., None]], axis=3).astype(np.int64)
    nb3 = np.concatenate([n_cell[..., None] * 0, n_cell[..., None] * 0, n_cell[..., None]], axis=3)
    scaled("(b) SRS per cell", nb3, Kb3, Nb3)

    # (d) oracle: the planner with the true stratum rates, one wave, no pilot
    rates = np.where(N > 0, K / np.maximum(N, 1), 0.0)
    n_d, _ = planned(N, np.zeros_like(N), np.zeros_like(N), np.full((R, M), TARGET), rates=rates, min_new=1)
    n_d = np.maximum(n_d, np.minimum(N, 1))
    scaled("(d) oracle", n_d, K, N)

    # (c) planned waves, pooled: a pilot, then plan + next wave until every model is at target
    w = planned_waves(
        N,
        K,
        rng,
        D,
        pilot_ambiguous=args.pilot_ambiguous,
        pilot_clear=args.pilot_clear,
        max_waves=args.max_waves,
        aim=args.aim,
        rho_min=args.rho_min,
    )
    lo, hi, n_tot, waves = w.lo, w.hi, w.n, w.waves
    record("(c) planned waves", lo, hi, model_items(n_tot), waves=waves)
    return out


FACTORS = (1.0, 1.15, 1.3, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0)
#: (b) and (d) are scaled per model (the same factor in every replicate: no replicate's own
#: sample chooses its size) to the smallest of FACTORS at which this share of replicates is at target.
AT_TARGET_SHARE = 0.9


def run(name: str, pop: Population, args: argparse.Namespace) -> pd.DataFrame:
    R = pop.N.shape[0]
    t0 = time.time()
    jobs = [(pop, r0, min(args.chunk, R - r0), args, args.seed + r0) for r0 in range(0, R, args.chunk)]
    parts = []
    if args.workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(args.workers) as pool:
            for i, part in enumerate(pool.imap(run_chunk, jobs)):
                parts.append(part)
                print(
                    f"  {name}: {min((i + 1) * args.chunk, R)}/{R} replicates, {time.time() - t0:.0f} s",
                    file=sys.stderr,
                )
    else:
        for i, job in enumerate(jobs):
            parts.append(run_chunk(job))
            print(f"  {name}: {min((i + 1) * args.chunk, R)}/{R} replicates, {time.time() - t0:.0f} s", file=sys.stderr)
    acc = {k: {f: np.concatenate([p[k][f] for p in parts]) for f in parts[0][k]} for k in parts[0]}
    hw_of = {k: (v["hi"] - v["lo"]) / 2 for k, v in acc.items()}
    designs: dict[str, dict[str, np.ndarray]] = {}
    factor: dict[str, np.ndarray] = {}
    for base in ("(b) SRS per cell", "(d) oracle"):
        keys = [f"{base}@{k}" for k in range(len(FACTORS))]
        share = np.stack([np.mean(hw_of[k] <= TARGET + 1e-9, axis=0) for k in keys])  # (F, M)
        ok = share >= AT_TARGET_SHARE
        pick = np.where(ok.any(axis=0), ok.argmax(axis=0), len(FACTORS) - 1)  # per model
        M = share.shape[1]
        designs[base] = {
            f: np.stack([acc[keys[pick[m]]][f][:, m] for m in range(M)], axis=1) for f in ("lo", "hi", "items", "cov")
        }
        factor[base] = np.array(FACTORS)[pick]
        designs[base + ", unscaled (normal theory)"] = acc[keys[0]]
    designs["(a) census + 25"] = acc["(a) census + 25"]
    designs["(c) planned waves"] = acc["(c) planned waves"]
    order = [
        "(a) census + 25",
        "(b) SRS per cell",
        "(b) SRS per cell, unscaled (normal theory)",
        "(c) planned waves",
        "(d) oracle",
        "(d) oracle, unscaled (normal theory)",
    ]
    per_item = REVIEWERS + pop.expert_share
    oracle = designs["(d) oracle"]["items"].sum(axis=1).mean() * per_item
    rows = []
    for k in order:
        v = designs[k]
        hw = (v["hi"] - v["lo"]) / 2
        cov = v["cov"].ravel()
        c = float(np.mean(cov))
        revs = float(v["items"].sum(axis=1).mean() * per_item)
        cm = v["cov"].mean(axis=0)
        rows.append(
            {
                "scenario": name,
                "design": k,
                "reviews": revs,
                "vs_oracle": revs / oracle,
                "models_at_target": float(np.mean(hw <= TARGET + 1e-9)),
                "worst_halfwidth": float(np.mean(np.nanmax(hw, axis=1))),
                "coverage": c,
                "mcse": float(np.sqrt(c * (1 - c) / len(cov))),
                "min_model_cov": float(cm.min()),
                "factor": float(np.mean(factor[k])) if k in factor else np.nan,
                "waves": float(np.mean(v["waves"])) if "waves" in v else np.nan,
                "intervals": len(cov),
            }
        )
    print(f"  {name}: done in {time.time() - t0:.0f} s", file=sys.stderr)
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=40)
    ap.add_argument("--seed", type=int, default=2025)
    ap.add_argument("--scenario", choices=["sim", "rare", "xstest", "all"], default="all")
    ap.add_argument("--pilot-ambiguous", type=int, default=25)
    ap.add_argument("--pilot-clear", type=int, default=10)
    ap.add_argument("--max-waves", type=int, default=4)
    ap.add_argument("--aim", type=float, default=1.0, help="plan each wave for aim x the target")
    ap.add_argument("--rho-min", type=float, default=1.0, help="least interval / normal-theory ratio used")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--reviewer-accuracy",
        type=float,
        help="two reviewers each right with this probability and an expert on their disagreements label the "
        "simulated populations (issue #41): the truth is the would-be reviewed labels' rate",
    )
    ap.add_argument("--check", action="store_true", help="the fast path against corrected_scores, then stop")
    ap.add_argument("--quick", action="store_true", help="40 replicates")
    args = ap.parse_args()
    if args.check:
        print(check_fast_score().to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        return
    R = 40 if args.quick else args.replicates
    tables = []
    todo = ["sim", "rare", "xstest"] if args.scenario == "all" else [args.scenario]
    for sc in todo:
        rng = np.random.default_rng(args.seed + len(sc))
        if sc == "sim":
            pop = simulate(R, rng, lo=0.005, hi=0.40, se=0.85)
        elif sc == "rare":
            pop = simulate(R, rng, lo=0.002, hi=0.05, se=0.70)
        else:
            pop = xstest(R)
        if args.reviewer_accuracy is not None and sc != "xstest":  # XSTest's labels are its reviewers' own
            pop = with_reviewer_error(pop, rng, args.reviewer_accuracy)
        tables.append(run(sc, pop, args))
    out = pd.concat(tables, ignore_index=True)
    print(out.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


if __name__ == "__main__":
    main()
