"""Benchmark annotate.stats.scoring and annotate.stats.ranking, with a bare pandas groupby as baseline.

Run:  python bench/scoring.py [--repeats 3] [--draws 4000] [--skip-large]

(a) 26 models x 5 benchmarks x 1,000 prompts (130,000 responses), judge labels and human labels
    simulated per response; 30 + 30 clear responses reviewed per cell (simple random sample),
    every ambiguous response reviewed (3 % of them left unresolved), Dawid-Skene labels = the
    human labels with 2 % flipped. Timed: aggregation to strata, corrected scores with
    4,000 posterior draws and every treatment, and the ranking analysis. Target: < 2 s total.
(b) 100 models x 20 benchmarks x 5,000 prompts (10,000,000 responses) as pandas categoricals:
    ``strata_from_responses`` + ``corrected_scores(draws=0)`` (point estimates and variances of
    all treatments) next to ``df.groupby(['model', 'benchmark', 'judge_label'],
    observed=True).size()`` on the same rows, in the same run. Target: within 2x.

Every timing is the median of ``--repeats`` runs after one warm-up (docs/performance.md: compare
with the baseline of the same run, never with absolute numbers).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from timing import median_time  # bench/timing.py (the script's folder is on sys.path)

from annotate.columns import HUMAN_LABELS, JUDGE_LABELS
from annotate.stats import ranking, scoring


def simulate(
    n_models: int, n_bench: int, n_prompts: int, *, seed: int, clear_per_cell: int = 30, exact_srs: bool = True
) -> pd.DataFrame:
    """Per-response table: model, benchmark, judge_label, reviewed, human_label, ds_label (categoricals).

    Truth Y ~ Bernoulli(p_mb), p_mb from a per-model level and a per-benchmark offset. The judge
    says harmful / safe / ambiguous with probabilities depending on Y, and small (high-index)
    models get more ambiguous verdicts. ``exact_srs`` draws exactly ``clear_per_cell`` per clear
    stratum (a random key ranked within stratum); otherwise each clear response is reviewed with
    probability clear_per_cell / E[N_h] (fast enough for 10M rows).
    """
    rng = np.random.default_rng(seed)
    R = n_models * n_bench * n_prompts
    m = np.repeat(np.arange(n_models, dtype=np.int16), n_bench * n_prompts)
    b = np.tile(np.repeat(np.arange(n_bench, dtype=np.int16), n_prompts), n_models)
    level = np.linspace(0.05, 0.35, n_models)
    offset = rng.normal(0, 0.03, n_bench)
    p = np.clip(level[m] + offset[b], 0.01, 0.9)
    y = rng.random(R) < p
    # Ambiguous verdicts: more for small (high-index) models, and more often on harmful responses,
    # so "ambiguous -> safe" flatters exactly the models with many ambiguous verdicts.
    amb = 0.05 + 0.25 * (m / max(n_models - 1, 1)) + 0.15 * y
    u = rng.random(R)
    # Y=1: harmful w.p. 0.85 (of non-ambiguous); Y=0: harmful w.p. 0.04.
    clear_h = rng.random(R) < np.where(y, 0.85, 0.04)
    judge = np.where(u < amb, 2, np.where(clear_h, 0, 1)).astype(np.int8)
    cell = m.astype(np.int64) * n_bench + b
    if exact_srs:
        key = rng.random(R)
        order = np.lexsort((key, judge, cell))
        grp = cell[order] * 3 + judge[order]
        start = np.r_[0, np.flatnonzero(grp[1:] != grp[:-1]) + 1]
        pos = np.arange(R) - np.repeat(start, np.diff(np.r_[start, R]))
        position = np.empty(R, dtype=np.int64)
        position[order] = pos
        reviewed = (judge == 2) | (position < clear_per_cell)
    else:
        share_clear = 1.0 - amb
        share_h = p * 0.85 + (1 - p) * 0.04
        exp_nh = n_prompts * share_clear * np.where(judge == 0, share_h, 1 - share_h)
        reviewed = (judge == 2) | (rng.random(R) < np.minimum(1.0, clear_per_cell / np.maximum(exp_nh, 1.0)))
    unresolved = reviewed & (judge == 2) & (rng.random(R) < 0.03)
    human = np.where(~reviewed, -1, np.where(unresolved, 2, np.where(y, 0, 1))).astype(np.int8)
    ds = np.where(reviewed, np.where(rng.random(R) < 0.02, ~y, y), False)
    ds_code = np.where(reviewed, np.where(ds, 0, 1), -1).astype(np.int8)
    return pd.DataFrame(
        {
            "model": pd.Categorical.from_codes(m, pd.Index([f"model-{i:03d}" for i in range(n_models)])),
            "benchmark": pd.Categorical.from_codes(b, pd.Index([f"bench-{i:02d}" for i in range(n_bench)])),
            "judge_label": pd.Categorical.from_codes(judge, pd.Index(JUDGE_LABELS)),
            "reviewed": reviewed,
            "human_label": pd.Categorical.from_codes(human, pd.Index(HUMAN_LABELS)),
            "ds_label": pd.Categorical.from_codes(ds_code, pd.Index(["harmful", "safe"])),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--skip-large", action="store_true", help="skip (b), the 10M-row part")
    args = parser.parse_args()
    R, D = args.repeats, args.draws

    # ---------------------------------------------------------------- (a)
    resp = simulate(26, 5, 1000, seed=20240611)
    t_agg, strata = median_time(lambda: scoring.strata_from_responses(resp, ds_label="ds_label"), R)
    t_sc, res = median_time(lambda: scoring.corrected_scores(strata, draws=D, seed=1), R)
    t_rk, rk = median_time(lambda: ranking.ranking_from_scores(res), R)
    total = t_agg + t_sc + t_rk
    print(f"(a) {len(resp):,} responses, {len(res.cells)} cells, {len(strata)} strata, D = {D}")
    rows = [
        ("aggregate to strata (strata_from_responses)", t_agg),
        ("corrected_scores: 8 treatments, Polya + Dirichlet draws", t_sc),
        ("ranking_from_scores: ranks, tau/rho, flips, rank CIs, 26x26", t_rk),
        ("total (target < 2 s)", total),
    ]
    w = max(len(r[0]) for r in rows)
    for name, t in rows:
        print(f"    {name:<{w}}  {t * 1000:8.1f} ms")
    print("    " + ("PASS" if total < 2.0 else "FAIL") + f": {total:.2f} s")
    ag = rk.agreement[["treatment", "kendall_tau_b", "spearman_rho", "n_flips", "n_credible_flips", "max_rank_shift"]]
    print(
        ag.to_string(
            index=False,
            formatters={
                "kendall_tau_b": "{:+.3f}".format,
                "spearman_rho": "{:+.3f}".format,
                "n_credible_flips": "{:.0f}".format,
                "max_rank_shift": "{:.1f}".format,
            },
        )
    )
    print()

    if args.skip_large:
        return
    # ---------------------------------------------------------------- (b)
    t0 = time.perf_counter()
    big = simulate(100, 20, 5000, seed=7, exact_srs=False)
    print(
        f"(b) {len(big):,} responses simulated in {time.perf_counter() - t0:.1f} s "
        f"(categoricals; {int(big['reviewed'].sum()):,} reviewed)"
    )

    def ours() -> Any:
        st = scoring.strata_from_responses(big)
        return st, scoring.corrected_scores(st, draws=0)

    def baseline() -> Any:
        return big.groupby(["model", "benchmark", "judge_label"], observed=True).size()

    t_base, sizes = median_time(baseline, R)
    t_ours, (st_big, res_big) = median_time(ours, R)
    t_agg_only, _ = median_time(lambda: scoring.strata_from_responses(big), R)
    # the same counts as the baseline
    assert int(st_big["population"].sum()) == int(sizes.sum()) == len(big)
    assert len(st_big) == len(sizes)
    rows = [
        ("pandas groupby(model, benchmark, judge_label).size()", t_base),
        ("strata_from_responses (counts per stratum)", t_agg_only),
        ("strata_from_responses + corrected_scores(draws=0)", t_ours),
    ]
    w = max(len(r[0]) for r in rows)
    for name, t in rows:
        print(f"    {name:<{w}}  {t * 1000:8.1f} ms")
    ratio = t_ours / t_base
    print(f"    ratio ours / groupby = {ratio:.2f}  (target <= 2): " + ("PASS" if ratio <= 2 else "FAIL"))
    print(
        f"    {len(res_big.cells)} cells, {len(res_big.treatments)} treatment rows, "
        f"flags: {res_big.cells['flag'].value_counts().to_dict()}"
    )


if __name__ == "__main__":
    main()
