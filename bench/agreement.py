"""Benchmark annotate.stats.agreement against one krippendorff.alpha call, in the same run.

Run:  python bench/agreement.py [--units 100000] [--repeats 5]

Data: 3 annotators x 100,000 units, 3 categories (harmful / safe / unsure), about 3 % of the
ratings missing, seeded. Every timing is the median of ``--repeats`` runs after one warm-up.
Targets (docs/performance.md): alpha with its 2,000-replicate bootstrap interval costs at most
5 single ``krippendorff.alpha`` calls; Dawid-Skene on 60,000 units x 3 annotators < 10 s (the fit
the pipeline runs: classes harmful and safe, unsure votes as missing, smoothed). The coefficients
of issue #13 (Brennan-Prediger, Conger, weighted kappa) are timed beside them, with their intervals.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import krippendorff  # noqa: E402
from timing import median_time  # noqa: E402  (bench/timing.py; the script's folder is on sys.path)

from annotate.stats import agreement as ag  # noqa: E402
from annotate.stats.aggregation import binary_codes, dawid_skene  # noqa: E402

CATEGORIES = ("harmful", "safe", "unsure")


def simulate(
    n_units: int,
    seed: int,
    accuracy: tuple[float, ...] = (0.92, 0.87, 0.80),
    prevalence: tuple[float, ...] = (0.30, 0.62, 0.08),
    missing: float = 0.03,
) -> np.ndarray:
    """Label matrix (U, J): truth ~ prevalence; annotator j right with prob accuracy[j], else a
    uniformly chosen other category; each rating missing (-1) with prob ``missing``."""
    rng = np.random.default_rng(seed)
    V = len(prevalence)
    truth = rng.choice(V, size=n_units, p=prevalence)
    right = rng.random((n_units, len(accuracy))) < np.asarray(accuracy)
    other = (truth[:, None] + rng.integers(1, V, size=(n_units, len(accuracy)))) % V
    labels = np.where(right, truth[:, None], other)
    labels[rng.random(labels.shape) < missing] = -1
    return labels


def _long(labels: np.ndarray) -> Any:
    """The label matrix as the store's long vote table (round_item_id, annotator, verdict)."""
    import pandas as pd

    U, J = labels.shape
    verdict = np.array(CATEGORIES + (None,), dtype=object)[labels]  # -1 picks None: no vote
    table = pd.DataFrame(
        {"round_item_id": np.repeat(np.arange(U), J), "annotator": np.tile([str(j) for j in range(J)], U)}
    )
    table["verdict"] = verdict.ravel()
    return table.loc[table.verdict.notna()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--ds-units", type=int, default=60_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-boot", type=int, default=2000)
    args = parser.parse_args()
    B, R = args.n_boot, args.repeats

    labels = simulate(args.units, seed=20240601)
    rel = labels.T.astype(float)  # (annotators, units), NaN = missing: krippendorff's layout
    rel[rel < 0] = np.nan
    counts = ag.counts_from_codes(labels, 3)

    rows: list[tuple[str, float]] = []
    t_kr, kr_value = median_time(lambda: krippendorff.alpha(reliability_data=rel, level_of_measurement="nominal"), R)
    rows.append(("krippendorff.alpha, nominal (1 call, no CI)", t_kr))

    t_counts, _ = median_time(lambda: ag.counts_from_reliability_data(rel, categories=[0.0, 1.0, 2.0]), R)
    rows.append(("counts from (J, U) reliability data", t_counts))
    t_point, point = median_time(lambda: ag.krippendorff_alpha(counts, n_boot=0), R)
    rows.append(("alpha point + jackknife SE", t_point))
    t_boot, alpha = median_time(lambda: ag.krippendorff_alpha(counts, n_boot=B, seed=0), R)
    rows.append((f"alpha + {B}-replicate bootstrap CI + jackknife + q", t_boot))
    t_ac1, ac1 = median_time(lambda: ag.gwet_ac1(counts, n_boot=B, seed=0), R)
    rows.append((f"AC1 + {B}-replicate bootstrap CI", t_ac1))
    t_fl, fl = median_time(lambda: ag.fleiss_kappa(counts, n_boot=B, seed=0), R)
    rows.append((f"Fleiss (complete units) + {B}-replicate CI", t_fl))
    t_bp, bp = median_time(lambda: ag.brennan_prediger(counts, n_boot=B, seed=0), R)
    rows.append((f"Brennan-Prediger + {B}-replicate CI", t_bp))
    t_cg, cg = median_time(lambda: ag.conger_kappa(labels, 3, n_boot=B, seed=0), R)
    rows.append((f"Conger (label matrix) + {B}-replicate CI", t_cg))
    t_wk, wk = median_time(lambda: ag.weighted_kappa(labels[:, 0], labels[:, 1], 3, "linear", n_boot=B, seed=0), R)
    rows.append((f"weighted kappa, 2 raters + {B}-replicate CI + analytic SE", t_wk))

    def headline() -> tuple[Any, ...]:
        n = ag.counts_from_reliability_data(rel, categories=[0.0, 1.0, 2.0])
        return (
            ag.krippendorff_alpha(n, n_boot=B, seed=0),
            ag.gwet_ac1(n, n_boot=B, seed=0),
            ag.fleiss_kappa(n, n_boot=B, seed=0),
        )

    t_all, _ = median_time(headline, R)
    rows.append(("counts + alpha/CI + AC1/CI + Fleiss/CI (one pass)", t_all))
    t_sum, summary = median_time(lambda: ag.agreement_summary(counts, CATEGORIES, n_boot=B, seed=0), R)
    rows.append(("agreement_summary (all coefficients, all CIs)", t_sum))
    t_sum_l, _ = median_time(
        lambda: ag.agreement_summary(counts, CATEGORIES, labels=labels, n_boot=B, seed=0), max(1, min(R, 3))
    )
    rows.append(("agreement_summary with the label matrix (+ pairwise, Conger)", t_sum_l))
    codes_bin, counts_bin, _, dropped = ag.vote_matrix_with_dropped(_long(labels), ("harmful", "safe"), ["0", "1", "2"])
    binary = ag.agreement_summary(counts_bin, ("harmful", "safe"), labels=codes_bin, dropped=dropped, n_boot=0)

    ds_labels = simulate(args.ds_units, seed=7)
    ds_binary = binary_codes(ds_labels, CATEGORIES)
    t_ds3, ds3 = median_time(lambda: dawid_skene(ds_labels, 3), max(1, min(R, 3)))
    rows.append((f"Dawid-Skene, 3 classes (as before), {args.ds_units:,} units x 3", t_ds3))
    t_ds, ds = median_time(lambda: dawid_skene(ds_binary, 2), max(1, min(R, 3)))
    rows.append((f"Dawid-Skene, harmful/safe, unsure missing, {args.ds_units:,} x 3", t_ds))

    width = max(len(name) for name, _ in rows)
    print(
        f"\nannotate.agreement benchmark: {args.units:,} units x 3 annotators, 3 categories, "
        f"{np.mean(labels < 0):.1%} missing; median of {R} runs"
    )
    print(f"{'step':<{width}}  {'time':>9}  {'x 1 kripp call':>14}")
    print(f"{'-' * width}  {'-' * 9}  {'-' * 14}")
    for name, t in rows:
        print(f"{name:<{width}}  {t * 1e3:7.1f} ms  {t / t_kr:14.2f}")

    print("\nchecks")
    print(f"  alpha: ours {point.value:.15f}  krippendorff {kr_value:.15f}  |diff| {abs(point.value - kr_value):.1e}")
    print(
        f"  alpha 95% CI ({alpha.ci_low:.4f}, {alpha.ci_high:.4f}); "
        f"SE boot {alpha.se:.5f} / jackknife {alpha.se_jackknife:.5f}; "
        f"q(.667) {alpha.q_below(0.667):.3f}, q(.800) {alpha.q_below(0.8):.3f}"
    )
    print(
        f"  AC1 {ac1.value:.4f} ({ac1.ci_low:.4f}, {ac1.ci_high:.4f}); Fleiss {fl.value:.4f} "
        f"({fl.ci_low:.4f}, {fl.ci_high:.4f}), {fl.n_excluded:,} incomplete units dropped"
    )
    print(
        f"  BP {bp.value:.4f} ({bp.ci_low:.4f}, {bp.ci_high:.4f}); Conger {cg.value:.4f} ({cg.ci_low:.4f}, "
        f"{cg.ci_high:.4f}); weighted kappa (A1, A2) {wk.value:.4f}, "
        f"SE boot {wk.se:.5f} / analytic {wk.se_analytic:.5f}"
    )
    print(
        f"  binary set: {binary.dropped.n_dropped:,} unsure votes dropped ({binary.dropped.share:.1%}), "
        f"{binary.dropped.n_units_unpairable:,} units no longer pairable; binary alpha {binary.alpha.value:.4f}"
    )
    for name, fit in (("3 classes", ds3), ("harmful/safe", ds)):
        print(
            f"  Dawid-Skene ({name}): {fit.n_iter} iterations, converged={fit.converged}; diag(confusion) per "
            "annotator: " + ", ".join(np.array2string(np.diag(c), precision=3) for c in fit.confusion)
        )
    ok_ratio = t_boot / t_kr <= 5
    print("\ntargets")
    print(f"  bootstrap interval <= 5 krippendorff calls: {t_boot / t_kr:.2f}x  -> {'OK' if ok_ratio else 'MISSED'}")
    print(f"  Dawid-Skene 60k x 3 < 10 s: {t_ds:.2f} s  -> {'OK' if t_ds < 10 else 'MISSED'}")
    _ = summary


if __name__ == "__main__":
    main()
