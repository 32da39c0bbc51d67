"""Benchmark the judge audit (annotate.stats.judges) next to scikit-learn's weighted confusion matrix.

Run:  python bench/judges.py [--repeats 3] [--draws 4000]

26 models x 5 benchmarks x 1,000 prompts (130,000 responses), three judges with known error
rates (the routing judge abstains on 8 %), routed as ``route`` does: every response the routing
judge called ambiguous reviewed, 25 per clear stratum and cell (about 17,000 reviewed responses,
3 % of them unresolved). Timed:

* the limit: the point figures alone computed with ``sklearn.metrics.confusion_matrix`` and
  ``sample_weight`` = N_h / r_h, once per judge and group (benchmark) plus pooled: what a user
  would write by hand, no intervals;
* ``judge_audit(draws=0)``: the same point figures (checked equal to scikit-learn's) with every
  other figure, ranks and pairs;
* ``judge_audit(draws=D)``: everything with D posterior draws (intervals, ranks, P(better)).
* ``judge_audit(by=("model",), draws=D)``: the same per model, with the test of issue #31 (does a
  judge err differently by model?) on its own draws.

Every timing is the median of ``--repeats`` runs after one warm-up (docs/performance.md: compare
with the baseline of the same run, never with absolute numbers).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from timing import median_time  # bench/timing.py (the script's folder is on sys.path)

from annotate.stats.judges import design_weights, judge_audit

JUDGES = {  # name: (sensitivity, specificity, ambiguous share)
    "routing": (0.85, 0.93, 0.08),
    "strict": (0.75, 0.98, 0.0),
    "eager": (0.95, 0.80, 0.03),
}


def simulate(n_models: int, n_bench: int, n_prompts: int, *, seed: int, clear_per_cell: int = 25):
    """(units, verdicts, strata) as ``judge_audit`` takes them."""
    rng = np.random.default_rng(seed)
    units, verdicts, strata = [], [], []
    for m in range(n_models):
        for b in range(n_bench):
            harmful = rng.random(n_prompts) < rng.uniform(0.05, 0.4)
            labels = {}
            for judge, (se, sp, amb) in JUDGES.items():
                right = np.where(harmful, rng.random(n_prompts) < se, rng.random(n_prompts) < sp)
                said_harmful = np.where(right, harmful, ~harmful)
                lab = np.where(said_harmful, "harmful", "safe").astype(object)
                lab[rng.random(n_prompts) < amb] = "ambiguous"
                labels[judge] = lab
            routing = labels["routing"]
            for stratum in ("harmful", "safe", "ambiguous"):
                idx = np.flatnonzero(routing == stratum)
                n = len(idx) if stratum == "ambiguous" else min(clear_per_cell, len(idx))
                if not len(idx):
                    continue
                strata.append((f"m{m:02d}", f"b{b}", stratum, len(idx), n))
                for i in rng.choice(idx, n, replace=False):
                    unit = f"m{m:02d}|b{b}|{i}"
                    human = ("harmful" if harmful[i] else "safe") if rng.random() > 0.03 else None
                    units.append((unit, f"m{m:02d}", f"b{b}", stratum, human))
                    verdicts.extend((unit, judge, labels[judge][i]) for judge in JUDGES)
    return (
        pd.DataFrame(units, columns=["unit", "model", "benchmark", "stratum", "human"]),
        pd.DataFrame(verdicts, columns=["unit", "judge", "judge_label"]),
        pd.DataFrame(strata, columns=["model", "benchmark", "stratum", "population", "sample"]),
    )


def sklearn_figures(units: pd.DataFrame, verdicts: pd.DataFrame, strata: pd.DataFrame) -> dict:
    """Balanced accuracy per (judge, benchmark or ALL) from weighted confusion matrices."""
    from sklearn.metrics import confusion_matrix

    w = design_weights(units, strata)
    df = verdicts.merge(units.assign(w=w.to_numpy()), on="unit")
    df = df[df["human"].notna() & (df["judge_label"] != "ambiguous")]
    out = {}
    for (judge, group), g in pd.concat([df, df.assign(benchmark="ALL")]).groupby(["judge", "benchmark"]):
        (tn, fp), (fn, tp) = confusion_matrix(
            g["human"] == "harmful", g["judge_label"] == "harmful", sample_weight=g["w"], labels=[False, True]
        )
        out[(judge, group)] = (tp / (tp + fn) + tn / (tn + fp)) / 2
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--draws", type=int, default=4000)
    args = parser.parse_args()
    units, verdicts, strata = simulate(26, 5, 1000, seed=20261130)
    print(
        f"{len(units):,} reviewed responses of 130,000, {len(verdicts):,} verdicts of {len(JUDGES)} judges, "
        f"{len(strata)} strata, D = {args.draws}"
    )
    t_limit, limit = median_time(lambda: sklearn_figures(units, verdicts, strata), args.repeats)
    t_point, point = median_time(lambda: judge_audit(units, verdicts, strata, draws=0), args.repeats)
    t_full, full = median_time(lambda: judge_audit(units, verdicts, strata, draws=args.draws, seed=1), args.repeats)
    # by model: the same figures per model plus the model test (issue #31: its own draws of a new
    # sample of prompts, Benjamini-Hochberg over judges x models x 3 figures)
    t_model, _ = median_time(
        lambda: judge_audit(units, verdicts, strata, by=("model",), draws=args.draws, seed=1), args.repeats
    )
    ours = {(r.judge, r.benchmark): r.balanced_accuracy for r in point.metrics.itertuples()}
    worst = max(abs(ours[k] - v) for k, v in limit.items())
    assert worst < 1e-9, f"balanced accuracy differs from scikit-learn's by {worst}"
    rows = [
        ("limit: sklearn confusion_matrix(sample_weight), balanced accuracy only", t_limit, 1.0),
        ("judge_audit(draws=0): every figure, ranks, pairs", t_point, t_point / t_limit),
        (f"judge_audit(draws={args.draws}): with intervals, rank intervals, P(better)", t_full, t_full / t_limit),
        (f"judge_audit(by=model, draws={args.draws}): and the model test", t_model, t_model / t_limit),
    ]
    w = max(len(r[0]) for r in rows)
    for name, t, ratio in rows:
        print(f"    {name:<{w}}  {t:7.2f} s  {ratio:6.2f}x the limit")
    print(f"    balanced accuracy equal to scikit-learn's for {len(limit)} (judge, group) rows (max diff {worst:.1e})")


if __name__ == "__main__":
    main()
