"""Do the grade's figures keep their promise? The ratio's interval and the straddle mark (issue #44).

Run:  python bench/grades.py [--replicates 400] [--draws 2000] [--quick]
      python bench/grades.py --speed    (the grade table's time next to the draws' quantiles)

Populations as bench/model_rows.py's ``study``: 6 models x 5 benchmarks x 1,000 responses; the judge
calls 60 % of harmful and 30 % of safe responses ambiguous, and on the rest has sensitivity .85 and
specificity .95. Two of the models are the references. Each replicate reviews a fresh sample of every
stratum (sizes per regime) and scores it with the tool's estimator (``budget.fast_score``: the
``corrected`` rows' draws, joint over the models), then grades it with ``annotate.stats.grades``
(AILuminate v1.0). The truth is the finite population's rate of each model (the fixed-prompt estimand)
and its grade under the same scheme. Figures:

* ``grade: ratio r interval``: coverage of the true r = u / u_ref by the printed interval (non-reference
  models; promise >= 0.95);
* ``grade: unmarked grade is the true grade``: among rows not marked as straddling, the share whose
  printed grade is the true grade (promise >= 0.95: an unmarked grade is what a certifier may quote);
* ``grade: P of the true grade``: the mean probability the posterior gives the true grade, beside the
  share of rows whose printed grade is the true one (a calibration reading, no promise of its own).

Regimes: the study's pilot (25 ambiguous and 10 per clear stratum: few reviews), a larger round (100
and 40), and rare harm (0.1-3 %: references at 2 and 3 %, the 0.1 % edge inside the range).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotate.stats.grades import grade_of, grade_table, load_scheme  # noqa: E402

_SPEC = importlib.util.spec_from_file_location("bench_budget", ROOT / "bench" / "budget.py")
assert _SPEC is not None and _SPEC.loader is not None
budget = importlib.util.module_from_spec(_SPEC)
sys.modules["bench_budget"] = budget
_SPEC.loader.exec_module(budget)

#: regime -> (true harm per model, the two references' indices, ambiguous per stratum, clear per stratum)
REGIMES = {
    "study pilot (few reviews)": ([0.005, 0.01, 0.02, 0.05, 0.10, 0.20], (3, 4), 25, 10),
    "study, larger round": ([0.005, 0.01, 0.02, 0.05, 0.10, 0.20], (3, 4), 100, 40),
    "rare harm (0.1-3 %)": ([0.0005, 0.001, 0.003, 0.01, 0.02, 0.03], (4, 5), 25, 10),
}


def population(R: int, harm: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """N, K of shape (R, M, 5, 3): judge-label strata (harmful, safe, ambiguous) and their harmful counts."""
    M, B, N = len(harm), 5, 1000
    Y1 = rng.binomial(N, np.broadcast_to(harm[None, :, None], (R, M, B)))
    Y0 = N - Y1
    U1, U0 = rng.binomial(Y1, 0.6), rng.binomial(Y0, 0.3)
    H1, H0 = rng.binomial(Y1 - U1, 0.85), rng.binomial(Y0 - U0, 0.05)
    S1, S0 = Y1 - U1 - H1, Y0 - U0 - H0
    return np.stack([H1 + H0, S1 + S0, U1 + U0], axis=3), np.stack([H1, S1, U1], axis=3)


def regime_rows(name: str, R: int, D: int, seed: int) -> list[dict]:
    harm_list, refs, amb, clear = REGIMES[name]
    harm = np.asarray(harm_list)
    rng = np.random.default_rng(seed)
    scheme = load_scheme("ailuminate-v1")
    N, K = population(R, harm, rng)
    n = np.minimum(N, np.array([clear, clear, amb])[None, None, None, :])
    y = budget.hyper(rng, K, N - K, n)
    M = len(harm)
    draws = np.empty((R, M, D))
    lo, hi, est = budget.fast_score(N, n, y, D, rng, out_draws=draws)
    truth = (K.sum(axis=3) / N.sum(axis=3)).mean(axis=2)  # (R, M): each model's macro-averaged rate
    models = [f"m{k}" for k in range(M)]
    ref_names = [models[k] for k in refs]
    covered, unmarked_right, unmarked, p_true, right = [], 0, 0, [], []
    for r in range(R):
        t = grade_table(models, est[r], draws[r], ref_names, scheme, u_ci=np.c_[lo[r], hi[r]])
        u_ref_true = truth[r, list(refs)].max()
        ratio_true = truth[r] / u_ref_true
        grade_true = grade_of(truth[r], ratio_true, scheme)
        for m in range(M):
            row = t.iloc[m]
            if models[m] not in ref_names:
                covered.append(row.ratio_ci_low <= ratio_true[m] + 1e-12 and ratio_true[m] <= row.ratio_ci_high + 1e-12)
            ok = row.grade == grade_true[m]
            right.append(ok)
            p_true.append(float(row[f"p_{grade_true[m]}"]))
            if not row.straddles:
                unmarked += 1
                unmarked_right += int(ok)
    c = float(np.mean(covered))
    u = unmarked_right / unmarked if unmarked else float("nan")
    base = {"regime": name, "replicates": R}
    return [
        {**base, "figure": "grade: ratio r interval", "measure": "coverage", "value": c, "n": len(covered),
         "promise": "coverage >= 0.95", "detail": f"non-reference models, {len(covered)} intervals"},
        {**base, "figure": "grade: unmarked grade is the true grade", "measure": "coverage" if unmarked else "none",
         "value": u, "n": unmarked, "promise": "share >= 0.95" if unmarked else "reading only",
         "detail": f"{unmarked} of {len(right)} rows unmarked" if unmarked else
         f"every one of {len(right)} grades straddles: the tool marks all, so none is quotable"},
        {**base, "figure": "grade: P of the true grade", "measure": "calibration", "value": float(np.mean(p_true)),
         "n": len(p_true), "promise": "reading only",
         "detail": f"printed grade is the true one in {np.mean(right):.3f} of rows"},
    ]  # fmt: skip


def validity_rows(replicates: int, draws: int = 2000, seed: int = 44, quick: bool = False) -> pd.DataFrame:
    """The grade's rows of the validity matrix (bench/validity.py); ``quick``: at most 40 replicates, 500 draws."""
    if quick:
        replicates, draws = min(replicates, 40), min(draws, 500)
    rows = []
    for k, name in enumerate(REGIMES):
        rows += regime_rows(name, replicates, draws, seed + k)
    return pd.DataFrame(rows)


def speed(models: int = 26, draws: int = 4000, repeats: int = 20) -> None:
    """The grade table's time next to the practical limit: the equal-tailed quantiles of the same draws
    (every interval needs at least that one pass over them), in one run."""
    import time

    rng = np.random.default_rng(0)
    D = rng.beta(2, 30, size=(models, draws))
    names = [f"m{k}" for k in range(models)]
    scheme = load_scheme("ailuminate-v1")
    u = D.mean(axis=1)

    def timed(fn) -> float:  # type: ignore[no-untyped-def]
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        return best

    ours = timed(lambda: grade_table(names, u, D, names[:2], scheme))
    limit = timed(
        lambda: (np.quantile(D, [0.025, 0.975], axis=1), np.quantile(D / D[:2].max(axis=0), [0.025, 0.975], axis=1))
    )
    print(f"grade table, {models} models x {draws} draws: {ours * 1000:.1f} ms; the draws' quantiles alone "
          f"(u and r): {limit * 1000:.1f} ms; ratio {ours / limit:.1f}x")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--speed", action="store_true", help="time the grade table next to the draws' quantiles")
    ap.add_argument("--replicates", type=int, default=400)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.speed:
        speed()
        return
    t = validity_rows(args.replicates, args.draws, args.seed, args.quick)
    t["mcse"] = np.sqrt(t.value * (1 - t.value) / t.n.clip(lower=1))
    with pd.option_context("display.width", 160, "display.max_colwidth", 60):
        print(t[["figure", "regime", "value", "mcse", "n", "promise", "detail"]].to_string(index=False))


if __name__ == "__main__":
    main()
