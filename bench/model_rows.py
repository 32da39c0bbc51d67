"""Model rows with rare harm over many sparse strata, and waves without drift (issue #33).

Run:  python bench/model_rows.py [--replicates 1000] [--draws 2000] [--scenario study|seed|all]
                                 [--workers 2] [--quick]

The study's own regime, through the project's planner (``plan_round``) and model-level interval
(``corrected_scores``, vectorised over replicates as ``bench/budget.py``'s :func:`fast_score`,
which ``python bench/budget.py --check`` compares with the tool):

* ``study``: 6 models x 5 benchmarks x 1,000 responses, true harm 0.5, 1, 2, 5, 10, 20 %; the
  judge calls 60 % of harmful and 30 % of safe responses ambiguous, and on the rest has
  sensitivity .85 and specificity .95;
* ``seed``: the seed-sized study of ``bench/budget.py`` (``sim``: 26 models, harm 0.5-40 % log-spaced
  times a benchmark factor, half the responses ambiguous).

Designs, every one scored with the tool's interval (95 %) of each model's overall (macro-averaged)
row; the truth is the simulated finite population's rate:

* ``pilot``: 25 ambiguous and 10 per clear stratum, one wave (the issue's first round);
* ``waves``: that pilot, then ``plan --target-halfwidth 0.03`` and ``route --next-wave`` for every
  model not yet within +-3 points, at most 4 waves, all waves of a stratum pooled (methods 4.9-4.10);
* ``fixed``: the final sizes of ``waves``, drawn in advance as one wave (fresh samples).

Constructions: ``now`` (one fiducial component per model and draw; the planner's rate guesses
leave each stratum's own labels out: methods 9.17) and ``before`` (one component per model and
judge label; each stratum's rate guessed from its own labels: issue #23). Printed per scenario,
design, construction and model: coverage with its Monte-Carlo SE, the share of misses with the
truth above the interval and below it, mean width, bias of the estimate (mean estimate - truth)
with its SE, and mean items reviewed; then the width ratio now / before.

Seeded; deterministic for a given --workers.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout, uninstalled

from annotate.stats import planning  # noqa: E402

# bench/budget.py by its path (bench/coverage.py on sys.path would shadow the coverage package).
_SPEC = importlib.util.spec_from_file_location("bench_budget", ROOT / "bench" / "budget.py")
assert _SPEC is not None and _SPEC.loader is not None
budget = importlib.util.module_from_spec(_SPEC)
sys.modules["bench_budget"] = budget
_SPEC.loader.exec_module(budget)

STUDY_HARM = np.array([0.005, 0.01, 0.02, 0.05, 0.10, 0.20])
PILOT_AMBIGUOUS, PILOT_CLEAR, MAX_WAVES = 25, 10, 4
#: construction -> (the fiducial component's sharing, the planner's rate source)
CONSTRUCTIONS = {"now": ("model", "others"), "before": ("label", "own")}


def study(R: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """N, K of shape (R, 6, 5, 3) (judge labels harmful, safe, ambiguous): the issue's population."""
    M, B, N = len(STUDY_HARM), 5, 1000
    Y1 = rng.binomial(N, np.broadcast_to(STUDY_HARM[None, :, None], (R, M, B)))
    Y0 = N - Y1
    U1, U0 = rng.binomial(Y1, 0.6), rng.binomial(Y0, 0.3)
    H1, H0 = rng.binomial(Y1 - U1, 0.85), rng.binomial(Y0 - U0, 0.05)
    S1, S0 = Y1 - U1 - H1, Y0 - U0 - H0
    return np.stack([H1 + H0, S1 + S0, U1 + U0], axis=3), np.stack([H1, S1, U1], axis=3)


def chunk(job):
    N, K, D, seed = job
    truth = (K.sum(axis=3) / N.sum(axis=3)).mean(axis=2)
    out = {}
    for name, (share, source) in CONSTRUCTIONS.items():
        rng = np.random.default_rng(seed)
        with mock.patch.object(planning, "RATE_SOURCE", source):
            w = budget.planned_waves(
                N, K, rng, D, pilot_ambiguous=PILOT_AMBIGUOUS, pilot_clear=PILOT_CLEAR, max_waves=MAX_WAVES, share=share
            )
        (n0, lo0, hi0, est0), (n, lo, hi, est) = w.pilot, (w.n, w.lo, w.hi, w.estimate)
        yf = budget.hyper(rng, K, N - K, n)
        lof, hif, estf = budget.fast_score(N, n, yf, D, rng, share=share)
        items0, items = n0.sum(axis=(2, 3)), n.sum(axis=(2, 3))
        out[name] = {
            "pilot": (lo0, hi0, est0, items0),
            "waves": (lo, hi, est, items),
            "fixed": (lof, hif, estf, items),
        }
    return truth, out


def summarise(truth, parts, harm, scenario):
    rows = []
    R = truth.shape[0]
    for cons in CONSTRUCTIONS:
        for design in ("pilot", "waves", "fixed"):
            lo, hi, est, items = (np.concatenate([p[cons][design][k] for p in parts]) for k in range(4))
            above, below = truth > hi + 1e-12, truth < lo - 1e-12
            cov = ~(above | below)
            err = est - truth
            for m in range(truth.shape[1]):
                rows.append(
                    {
                        "scenario": scenario,
                        "design": design,
                        "construction": cons,
                        "harm": harm[m],
                        "coverage": cov[:, m].mean(),
                        "mcse": np.sqrt(cov[:, m].mean() * (1 - cov[:, m].mean()) / R),
                        "truth_above": above[:, m].mean(),
                        "truth_below": below[:, m].mean(),
                        "width": (hi - lo)[:, m].mean(),
                        "bias": err[:, m].mean(),
                        "bias_se": err[:, m].std(ddof=1) / np.sqrt(R),
                        "items": items[:, m].mean(),
                    }
                )
    t = pd.DataFrame(rows)
    base = t[t.construction == "before"].set_index(["design", "harm"])["width"]
    t["width_ratio"] = [w / base[(d, h)] for d, h, w in zip(t.design, t.harm, t.width, strict=True)]
    return t


def run(scenario: str, R: int, D: int, workers: int, seed: int, chunk_size: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    if scenario == "study":
        N, K = study(R, rng)
        harm = STUDY_HARM
    else:
        pop = budget.simulate(R, rng, lo=0.005, hi=0.40, se=0.85)
        N, K = pop.N, pop.K
        harm = np.geomspace(0.005, 0.40, 26)
    jobs = [(N[r0 : r0 + chunk_size], K[r0 : r0 + chunk_size], D, seed + 1 + r0) for r0 in range(0, R, chunk_size)]
    t0 = time.time()
    parts = []
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            for i, part in enumerate(pool.imap(chunk, jobs)):
                parts.append(part)
                done = min((i + 1) * chunk_size, R)
                print(f"  {scenario}: {done}/{R} replicates, {time.time() - t0:.0f} s", file=sys.stderr)
    else:
        for i, job in enumerate(jobs):
            parts.append(chunk(job))
            done = min((i + 1) * chunk_size, R)
            print(f"  {scenario}: {done}/{R} replicates, {time.time() - t0:.0f} s", file=sys.stderr)
    truth = np.concatenate([p[0] for p in parts])
    return summarise(truth, [p[1] for p in parts], harm, scenario)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--scenario", choices=["study", "seed", "all"], default="all")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--quick", action="store_true", help="60 replicates, 1,000 draws")
    ap.add_argument("--csv", type=Path, help="also write the table here")
    a = ap.parse_args()
    R, D = (60, 1000) if a.quick else (a.replicates, a.draws)
    todo = ["study", "seed"] if a.scenario == "all" else [a.scenario]
    tables = [run(s, R, D, a.workers, a.seed + 7 * k, a.chunk) for k, s in enumerate(todo)]
    t = pd.concat(tables, ignore_index=True)
    if a.csv:
        t.to_csv(a.csv, index=False)
    pd.set_option("display.width", 220)
    f3 = lambda x: f"{x:.3f}"  # noqa: E731
    for sc, ts in t.groupby("scenario", sort=False):
        print(f"\n## {sc}: {R} replicates, {D} draws; coverage of each model's overall 95 % interval")
        wide = ts.pivot_table(index=["design", "construction"], columns="harm", values="coverage", sort=False)
        print(wide.to_string(float_format=f3))
        print("\nbias (mean estimate - truth), per model")
        wide = ts.pivot_table(index=["design", "construction"], columns="harm", values="bias", sort=False)
        print(wide.to_string(float_format=lambda x: f"{x:+.4f}"))
        summary = ts.groupby(["design", "construction"], sort=False).agg(
            min_coverage=("coverage", "min"),
            mean_coverage=("coverage", "mean"),
            truth_above=("truth_above", "mean"),
            truth_below=("truth_below", "mean"),
            max_abs_bias=("bias", lambda b: float(np.abs(b).max())),
            max_bias_se=("bias_se", "max"),
            width=("width", "mean"),
            width_ratio_max=("width_ratio", "max"),
            items=("items", "sum"),
        )
        print("\n" + summary.to_string(float_format=lambda x: f"{x:.4f}"))
        if sc == "study":
            cols = ["design", "construction", "harm", "coverage", "mcse", "truth_above", "truth_below"]
            cols += ["width", "width_ratio", "bias", "bias_se", "items"]
            print("\n" + ts[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))


if __name__ == "__main__":
    main()
