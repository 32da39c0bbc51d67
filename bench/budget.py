"""Human time is the budget (issue #25): reviews to reach +-3 points per model, and coverage.

Run:  python bench/budget.py [--replicates 1000] [--draws 1000] [--chunk 40] [--quick]
                             [--scenario sim|rare|xstest|all] [--pilot-ambiguous 25 --pilot-clear 10]

For every scenario and replicate, a finite population is drawn (the simulated ones) or replayed
(XSTest), and four designs review it, each scored by this tool's own estimator
(``corrected_scores``: the fiducial Polya interval of the per-model macro-average, 95 %):

(a) today: the ambiguous census and 25 per clear stratum (``route --ambiguous all --clear-per-cell 25``);
(b) a simple random sample of each cell, n per cell from the true cell variances (normal theory)
    so that each model's half-width is 3 points;
(c) planned waves: a pilot (``route`` with ``--ambiguous`` and ``--clear-per-cell`` of the pilot),
    then ``plan --target-halfwidth 0.03`` and ``route --next-wave`` until every model's interval is
    at +-3 points (at most --max-waves waves). The planner takes the interval's own width per
    model into account (the ratio of the reported half-width to z SE at the last scoring);
    estimated with the conditional design (docs/methods.md 4.9: what earlier waves sampled is a
    census of its own, the last draw of each stratum an SRS of its remainder) and, on the same
    samples, pooled (every wave's sample of a stratum treated as one SRS);
(d) the oracle: the same planner with the true stratum rates, one wave and no pilot.

Reviews = items x reviewers (2) + items sent to an expert (XSTest: the share where its two
annotators disagree; simulations: none). Printed per scenario: mean reviews, the ratio to (d),
the share of models whose interval is within +-3 points (half-width = (high - low) / 2), the
largest half-width (mean over replicates of the worst model), and coverage of the models' true
rates with its Monte-Carlo SE.

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
#: Multiples of (b)'s and (d)'s normal-theory sizes tried, the smallest that reaches the target kept per model.
FACTORS = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0)
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


def hyper(rng: np.random.Generator, good: np.ndarray, bad: np.ndarray, n: np.ndarray) -> np.ndarray:
    """y ~ Hypergeometric(good, bad, n) elementwise (0 where n = 0)."""
    n = np.minimum(n, good + bad).astype(np.int64)
    out = np.zeros_like(n)
    ok = n > 0
    out[ok] = rng.hypergeometric(good[ok], bad[ok], n[ok])
    return out


def _frame(names: np.ndarray, bench: np.ndarray, labels: list[str], pop, rev, harm) -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "model": names,
            "benchmark": bench,
            "stratum": labels,
            "judge_label": [s.split("#")[0] for s in labels],
            "population": pop,
            "reviewed": rev,
            "harmful": harm,
            "unresolved": 0,
        }
    )
    return df[df.population > 0]


def frame_from(N: np.ndarray, n: np.ndarray, y: np.ndarray, census_n=None, census_y=None) -> pd.DataFrame:
    """The strata frame of arrays (R, M, B, 3); optional census strata (what earlier waves sampled)."""
    R, M, B, H = N.shape
    idx = np.indices(N.shape).reshape(4, -1)
    names = np.array([f"r{r}_m{m:02d}" for r in range(R) for m in range(M)])[idx[0] * M + idx[1]]
    bench = np.array([f"b{b}" for b in range(B)])[idx[2]]
    labs = [LABELS[h] for h in idx[3]]
    df = _frame(names, bench, labs, N.ravel(), n.ravel(), y.ravel())
    if census_n is not None:
        cn = census_n.ravel()
        extra = _frame(names, bench, [f"{lab}#past" for lab in labs], cn, cn, census_y.ravel())
        df = pd.concat([df, extra[extra.population > 0]], ignore_index=True)
    return df


def score(df: pd.DataFrame, R: int, M: int, D: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, se) of every model's corrected rate, shape (R, M)."""
    res = corrected_scores(df, draws=D, seed=seed, min_reviewed=0)
    o = res.overall[res.overall.treatment == "corrected"].set_index("model")
    keys = [f"r{r}_m{m:02d}" for r in range(R) for m in range(M)]
    o = o.reindex(keys)
    return (
        o.ci_low.to_numpy().reshape(R, M),
        o.ci_high.to_numpy().reshape(R, M),
        o.se.to_numpy().reshape(R, M),
    )


def plan_frame(N, sampled, y, keep_pop, keep_n) -> pd.DataFrame:
    """One replicate's (M, B, 3) arrays as plan_round's strata frame."""
    M, B, H = N.shape
    idx = np.indices(N.shape).reshape(3, -1)
    return pd.DataFrame(
        {
            "model": [f"m{m:02d}" for m in idx[0]],
            "benchmark": [f"b{b}" for b in idx[1]],
            "stratum": [LABELS[h] for h in idx[2]],
            "judge_label": [LABELS[h] for h in idx[2]],
            "population": N.ravel(),
            "sampled": sampled.ravel(),
            "resolved": sampled.ravel(),
            "harmful": y.ravel(),
            "keep_population": keep_pop.ravel(),
            "keep_resolved": keep_n.ravel(),
        }
    )


def run_chunk(pop: Population, r0: int, R: int, D: int, args: argparse.Namespace, seed: int) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    N, K = pop.N[r0 : r0 + R], pop.K[r0 : r0 + R]
    _, M, B, _ = N.shape
    truth = pop.truth[r0 : r0 + R]
    per_item = REVIEWERS + pop.expert_share
    out: dict[str, list] = {}

    def record(name: str, lo, hi, items) -> None:
        hw = (hi - lo) / 2
        cov = (lo <= truth + 1e-12) & (truth <= hi + 1e-12)
        out.setdefault(name, []).append(
            {
                "reviews": items * per_item,
                "at_target": float(np.mean(hw <= TARGET + 1e-9)),
                "worst": float(np.mean(np.nanmax(hw, axis=1))),
                "covered": cov.ravel(),
            }
        )

    def reviews(n: np.ndarray) -> np.ndarray:
        return n.reshape(R, -1).sum(axis=1).astype(float)

    def sized(name: str, n0: np.ndarray, KK: np.ndarray, NN: np.ndarray, make, sd: int) -> None:
        """The allocation n0 scaled by the smallest of FACTORS that brings each model to target."""
        best_lo = np.full((R, M), np.nan)
        best_hi = np.full((R, M), np.nan)
        items = np.zeros((R, M))
        done = np.zeros((R, M), dtype=bool)
        for k, fac in enumerate(FACTORS):
            n = np.minimum(np.ceil(n0 * fac), NN).astype(np.int64)
            y = hyper(rng, KK, NN - KK, n)
            lo, hi, _ = score(make(n, y), R, M, D, sd + 100 * k)
            if k == 0:
                first = (lo, hi)
            ok = ((hi - lo) / 2 <= TARGET + 1e-9) & ~done
            last = k == len(FACTORS) - 1
            take = ok | (~done & last)
            best_lo[take], best_hi[take] = lo[take], hi[take]
            items[take] = n.reshape(R, M, -1).sum(axis=2)[take]
            done |= take
        record(name, best_lo, best_hi, items.sum(axis=1))
        record(name + ", unscaled", *first, reviews(n0))

    # (a) today's census + 25 per clear stratum
    n_a = np.where(np.arange(3) == 2, N, np.minimum(N, 25))
    y_a = hyper(rng, K, N - K, n_a)
    lo, hi, _ = score(frame_from(N, n_a, y_a), R, M, D, seed + 1)
    record("(a) census + 25", lo, hi, reviews(n_a))

    # (b) SRS per cell from the true cell variances
    Nc, Kc = N.sum(axis=3), K.sum(axis=3)
    s2 = Kc * (Nc - Kc) / (Nc * (Nc - 1.0))
    e2 = (TARGET / Z) ** 2
    S = (s2 / B**2).sum(axis=2)
    n_cell = np.ceil(S / (e2 + (s2 / (B**2 * Nc)).sum(axis=2)))[:, :, None] * np.ones((1, 1, B))
    n_cell = np.minimum(np.maximum(n_cell, 1), Nc).astype(np.int64)

    def cell_frame(n: np.ndarray, y: np.ndarray) -> pd.DataFrame:
        fb = frame_from(Nc[..., None], n[..., None], y[..., None])
        fb["judge_label"] = "ambiguous"  # one stratum per cell (a census-type label: no clear-stratum rules)
        return fb

    sized("(b) SRS per cell", n_cell, Kc, Nc, cell_frame, seed + 2)

    # (d) oracle Neyman with the true stratum variances
    n_d = np.zeros_like(N)
    for r in range(R):
        rates = np.where(N[r] > 0, K[r] / np.maximum(N[r], 1), 0.0)
        z0 = np.zeros_like(N[r])
        f = plan_frame(N[r], z0, z0, N[r], z0)
        plan = plan_round(f, TARGET, rates=rates.ravel(), min_new=1, reviewers=1)
        n_d[r] = np.maximum(plan.strata.n.to_numpy().reshape(M, B, 3), np.minimum(N[r], 1))
    sized("(d) oracle Neyman", n_d, K, N, lambda n, y: frame_from(N, n, y), seed + 3)

    # (c) planned waves: pilot, then plan + next wave until every model is at target
    pilot = np.where(np.arange(3) == 2, args.pilot_ambiguous, args.pilot_clear)
    n_tot = np.minimum(N, pilot)
    y_tot = hyper(rng, K, N - K, n_tot)
    last_n, last_y = n_tot.copy(), y_tot.copy()  # the stratum's latest draw
    past_n, past_y = np.zeros_like(N), np.zeros_like(N)  # before the latest draw (a census)
    lo, hi, se = score(frame_from(N, n_tot, y_tot), R, M, D, seed + 4)
    waves = 1
    for w in range(2, args.max_waves + 1):
        hw = (hi - lo) / 2
        todo = hw > TARGET + 1e-9
        if not todo.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.clip(np.where(se > 0, hw / (Z * se), 1.0), 1.0, 2.0)
        n_new = np.zeros_like(N)
        for r in range(R):
            if not todo[r].any():
                continue
            f = plan_frame(N[r], n_tot[r], y_tot[r], N[r] - past_n[r], last_n[r])
            targets = {f"m{m:02d}": (TARGET / ratio[r, m] if todo[r, m] else 1.0) for m in range(M)}
            plan = plan_round(f, targets, min_new=5, reviewers=1)
            n_new[r] = plan.strata.n.to_numpy().reshape(M, B, 3)
        y_new = hyper(rng, K - y_tot, (N - n_tot) - (K - y_tot), n_new)
        drawn = n_new > 0
        past_n = np.where(drawn, n_tot, past_n)
        past_y = np.where(drawn, y_tot, past_y)
        last_n = np.where(drawn, n_new, last_n)
        last_y = np.where(drawn, y_new, last_y)
        n_tot, y_tot = n_tot + n_new, y_tot + y_new
        waves = w
        lo, hi, se = score(frame_from(N - past_n, last_n, last_y, past_n, past_y), R, M, D, seed + 4 + w)
    record("(c) planned waves", lo, hi, reviews(n_tot))
    out["(c) planned waves"][-1]["waves"] = waves
    lo, hi, _ = score(frame_from(N, n_tot, y_tot), R, M, D, seed + 20)
    record("(c') same waves, pooled", lo, hi, reviews(n_tot))
    return out


def run(name: str, pop: Population, args: argparse.Namespace) -> pd.DataFrame:
    R = pop.N.shape[0]
    acc: dict[str, list] = {}
    t0 = time.time()
    for r0 in range(0, R, args.chunk):
        part = run_chunk(pop, r0, min(args.chunk, R - r0), args.draws, args, seed=args.seed + r0)
        for k, v in part.items():
            acc.setdefault(k, []).extend(v)
        print(f"  {name}: {min(r0 + args.chunk, R)}/{R} replicates, {time.time() - t0:.0f} s", file=sys.stderr)
    rows = []
    oracle = np.mean(np.concatenate([x["reviews"] for x in acc["(d) oracle Neyman"]]))  # scaled to target
    for k, v in acc.items():
        cov = np.concatenate([x["covered"] for x in v])
        c = float(np.mean(cov))
        revs = float(np.mean(np.concatenate([x["reviews"] for x in v])))
        rows.append(
            {
                "scenario": name,
                "design": k,
                "reviews": revs,
                "vs_oracle": revs / oracle,
                "models_at_target": float(np.mean([x["at_target"] for x in v])),
                "worst_halfwidth": float(np.mean([x["worst"] for x in v])),
                "coverage": c,
                "mcse": float(np.sqrt(c * (1 - c) / len(cov))),
                "intervals": len(cov),
            }
        )
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
    ap.add_argument("--quick", action="store_true", help="40 replicates")
    args = ap.parse_args()
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
        tables.append(run(sc, pop, args))
    out = pd.concat(tables, ignore_index=True)
    print(out.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


if __name__ == "__main__":
    main()
