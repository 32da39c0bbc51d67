"""Benchmark the agreement on reviewers' hazard categories and severity (``route --ask-hazards``) against
the `krippendorff` package's point alphas on the same answers, in the same run.

Run:  python bench/hazard_agreement.py [--items 10000] [--repeats 3] [--boot 2000]

Data: 3 reviewers x ``--items`` items, AILuminate's 12 categories (each item has one true category;
a reviewer names it with probability 0.85, else another or none, and adds a second one with
probability 0.1), severity on the harmful third. ``annotate.stats.agreement.hazards.hazard_agreement``
gives 12 nominal alphas and one ordinal alpha, each with a ``--boot``-replicate unit-bootstrap
interval, the categories' joined with the posterior over unit patterns (``interval="joined"``, what
``annotate agreement`` and annotate-export/19 print); the limit beside it is 13 ``krippendorff.alpha``
calls (point estimates only, no interval) on the reliability matrices. The ratio is ours over the limit
(median of ``--repeats`` after a warm-up).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import krippendorff  # noqa: E402
from timing import median_time  # noqa: E402  (bench/timing.py)

from annotate.hazards import taxonomy  # noqa: E402
from annotate.labelstudio.labelconfig import SEVERITIES  # noqa: E402
from annotate.stats.agreement.hazards import hazard_agreement  # noqa: E402

REVIEWERS = 3


def simulate(items: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    codes = list(taxonomy().hazards)
    truth = rng.integers(0, len(codes), size=items)
    harmful = rng.random(items) < 1 / 3
    severity = rng.integers(0, len(SEVERITIES), size=items)
    rows = []
    for i in range(items):
        for r in range(REVIEWERS):
            u = rng.random()
            chosen = {codes[truth[i]]} if u < 0.85 else ({codes[rng.integers(0, len(codes))]} if u < 0.95 else set())
            if rng.random() < 0.1:
                chosen.add(codes[rng.integers(0, len(codes))])
            sev = None
            if harmful[i]:
                sev = SEVERITIES[int(np.clip(severity[i] + rng.integers(-1, 2), 0, len(SEVERITIES) - 1))]
            rows.append((i, f"A{r + 1}", sorted(chosen), sev))
    return pd.DataFrame(rows, columns=["round_item_id", "annotator", "hazards", "severity"])


def reference(answers: pd.DataFrame) -> list[float]:
    """The 13 point alphas from the krippendorff package (reviewers x items reliability matrices)."""
    items = answers["round_item_id"].to_numpy().reshape(-1, REVIEWERS)[:, 0]
    sets = answers["hazards"].to_numpy().reshape(-1, REVIEWERS)
    out = []
    for h in taxonomy().hazards:
        data = np.array([[float(h in s) for s in row] for row in sets]).T
        out.append(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    rank = {s: k for k, s in enumerate(SEVERITIES)}
    sev = answers["severity"].to_numpy().reshape(-1, REVIEWERS)
    data = np.array([[float(rank[s]) if isinstance(s, str) else np.nan for s in row] for row in sev]).T
    out.append(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]))
    assert len(items) == sets.shape[0]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=44)
    args = ap.parse_args()
    answers = simulate(args.items, args.seed)
    codes = list(taxonomy().hazards)
    ours = hazard_agreement(answers, codes, SEVERITIES, n_boot=args.boot, seed=0, interval="joined")
    ref = reference(answers)
    got = [r["alpha"] for r in ours["hazards"]] + [ours["severity"]["alpha"]]
    worst = max(abs(a - b) for a, b in zip(got, ref, strict=True))
    t_ours, _ = median_time(
        lambda: hazard_agreement(answers, codes, SEVERITIES, n_boot=args.boot, seed=0, interval="joined"),
        args.repeats,
    )
    t_point, _ = median_time(lambda: hazard_agreement(answers, codes, SEVERITIES, n_boot=0, seed=0), args.repeats)
    t_ref, _ = median_time(lambda: reference(answers), args.repeats)
    print(
        f"{REVIEWERS} reviewers x {args.items:,} items, 12 categories + severity; largest |alpha - package| {worst:.1e}"
    )
    print(f"ours, 13 alphas with {args.boot:,}-replicate intervals: {t_ours:8.2f} s")
    print(f"ours, 13 point alphas (no interval):          {t_point:8.2f} s")
    print(f"krippendorff package, 13 point alphas:        {t_ref:8.2f} s")
    print(
        f"ratio ours (with intervals) / package (points): {t_ours / t_ref:.2f}x; points / points {t_point / t_ref:.2f}x"
    )


if __name__ == "__main__":
    main()
