"""The judge audit's two estimands by simulation (issue #34): what each interval covers.

Run:  python bench/judge_estimand.py [--replicates 400] [--draws 1000] [--quick]

Judges with known error rates on a superpopulation of prompts: per response, a human label
(harmful with probability 0.37) and four judges' verdicts, each wrong with its own rates (false
positive / false negative, the JailbreakBench table's: 0.10 / 0.09, 0.116 / 0.055, 0.132 / 0.109,
0.268 / 0.127), the errors of the two best judges correlated (they share half their errors, as
judges built on related models do). Scenarios:

* C300: a census of 300 responses (JailbreakBench's judge-comparison table);
* C1000: a census of 1,000;
* S2000: 2,000 responses routed by the first judge's labels, 60 reviewed per stratum.

Per replicate it runs ``judge_audit`` under both estimands and prints, per figure, the coverage of
the nominal 95 % interval of the **superpopulation** value (the judge on prompts like these, the
question a reader of a judge comparison asks) with its Monte-Carlo SE, the mean width, and how
often P(better) of the two best judges exceeds 0.99 while their true balanced accuracies differ by
under a point. The responses estimand is also scored against its own target (the finite
population's value): a census is exact there, and its zero-width intervals cover it.

It times the two estimands' draws in the same run (the ratio is the prompts draws' cost against the
urn's).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotate.stats.judges import confusion_metrics, judge_audit  # noqa: E402

FPR = (0.10, 0.116, 0.132, 0.268)
FNR = (0.091, 0.055, 0.109, 0.127)
NAMES = ("gpt4", "llama3", "llamaguard2", "harmbench")
PREVALENCE = 0.37
FIGURES = ("agreement", "fpr", "fnr", "balanced_accuracy", "sensitivity", "specificity")


def truth() -> dict[str, dict[str, float]]:
    """The superpopulation value of every figure of every judge."""
    out = {}
    for name, fp, fn in zip(NAMES, FPR, FNR, strict=True):
        t = np.array(
            [[PREVALENCE * (1 - fn), PREVALENCE * fn, 0.0], [(1 - PREVALENCE) * fp, (1 - PREVALENCE) * (1 - fp), 0.0]]
        )
        m = confusion_metrics(t)
        out[name] = {f: float(m[f]) for f in FIGURES}
    return out


def population(n: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Human labels (0 harmful, 1 safe) and judge labels (n, 4): the two best judges share half their errors."""
    human = np.where(gen.random(n) < PREVALENCE, 0, 1)
    u = gen.random((n, 4))
    shared = gen.random(n)
    u[:, 1] = np.where(gen.random(n) < 0.5, shared, u[:, 1])
    u[:, 0] = np.where(gen.random(n) < 0.5, shared, u[:, 0])
    rate = np.where(human[:, None] == 0, np.array(FNR)[None, :], np.array(FPR)[None, :])
    wrong = u < rate
    labels = np.where(wrong, 1 - human[:, None], human[:, None])
    return human, labels


def frames(human: np.ndarray, labels: np.ndarray, reviewed: np.ndarray, strata_of: np.ndarray):
    names = ["harmful", "safe"]
    ids = np.flatnonzero(reviewed)
    units = pd.DataFrame(
        {
            "unit": ids,
            "model": "m",
            "benchmark": "b",
            "stratum": [names[s] for s in strata_of[ids]],
            "human": [names[h] for h in human[ids]],
        }
    )
    verdicts = pd.DataFrame(
        [(i, NAMES[j], names[labels[i, j]]) for i in ids for j in range(len(NAMES))],
        columns=["unit", "judge", "judge_label"],
    )
    strata = pd.DataFrame(
        [("m", "b", names[s], int((strata_of == s).sum()), int((reviewed & (strata_of == s)).sum())) for s in (0, 1)],
        columns=["model", "benchmark", "stratum", "population", "sample"],
    )
    return units, verdicts, strata


def scenario(name: str, n: int, per_stratum: int | None, reps: int, draws: int, seed: int) -> list[dict]:
    gen = np.random.default_rng(seed)
    want = truth()
    rows: list[dict] = []
    seconds = {"responses": 0.0, "prompts": 0.0}
    for rep in range(reps):
        human, labels = population(n, gen)
        strata_of = labels[:, 0]  # routed by the first judge
        if per_stratum is None:
            reviewed = np.ones(n, dtype=bool)
        else:
            reviewed = np.zeros(n, dtype=bool)
            for s in (0, 1):
                idx = np.flatnonzero(strata_of == s)
                reviewed[gen.choice(idx, size=min(per_stratum, len(idx)), replace=False)] = True
        finite = {}
        for j, judge in enumerate(NAMES):
            t = np.zeros((2, 3))
            np.add.at(t, (human, labels[:, j]), 1.0)
            m = confusion_metrics(t)
            finite[judge] = {f: float(m[f]) for f in FIGURES}
        units, verdicts, strata = frames(human, labels, reviewed, strata_of)
        for estimand in ("responses", "prompts"):
            t0 = time.perf_counter()
            audit = judge_audit(units, verdicts, strata, by=(), draws=draws, seed=seed + rep, estimand=estimand)
            seconds[estimand] += time.perf_counter() - t0
            pooled = audit.metrics.set_index("judge")
            pair = audit.pairs[(audit.pairs.judge_a == "gpt4") & (audit.pairs.judge_b == "llama3")].iloc[0]
            certain = max(pair.p_a_better, pair.p_b_better) > 0.99
            for judge in NAMES:
                for f in FIGURES:
                    lo, hi = pooled.loc[judge, f"{f}_ci_low"], pooled.loc[judge, f"{f}_ci_high"]
                    rows.append(
                        {
                            "scenario": name,
                            "estimand": estimand,
                            "judge": judge,
                            "figure": f,
                            "covers_prompts": lo <= want[judge][f] <= hi,
                            "covers_own": lo <= (want if estimand == "prompts" else finite)[judge][f] <= hi,
                            "width": hi - lo,
                            "certain_pair": certain,
                        }
                    )
    print(
        f"{name}: {reps} replicates; seconds per audit: responses {seconds['responses'] / reps:.3f}, "
        f"prompts {seconds['prompts'] / reps:.3f} (ratio {seconds['prompts'] / max(seconds['responses'], 1e-9):.2f})"
    )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--replicates", type=int, default=400)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--quick", action="store_true", help="60 replicates, 400 draws")
    args = ap.parse_args()
    reps, draws = (60, 400) if args.quick else (args.replicates, args.draws)
    rows: list[dict] = []
    for name, n, per in (("C300", 300, None), ("C1000", 1000, None), ("S2000", 2000, 60)):
        rows += scenario(name, n, per, reps, draws, args.seed)
    df = pd.DataFrame(rows)
    g = df.groupby(["scenario", "estimand", "figure"])
    out = g.agg(
        cover_prompts=("covers_prompts", "mean"),
        cover_own=("covers_own", "mean"),
        lowest_judge=("covers_prompts", lambda s: df.loc[s.index].groupby("judge").covers_prompts.mean().min()),
        width=("width", "mean"),
        certain=("certain_pair", "mean"),
    ).reset_index()
    n = df.groupby(["scenario", "estimand", "figure"]).size().iloc[0] // len(NAMES)
    out["mcse"] = np.sqrt(out.cover_prompts * (1 - out.cover_prompts) / (n * len(NAMES)))
    pd.set_option("display.width", 200)
    print(out.round(3).to_string(index=False))
    print(
        "cover_prompts: coverage of the superpopulation value (4 judges pooled); lowest_judge: the lowest judge's; "
        "cover_own: of the estimand's own target (responses: the finite population's value); certain: share of "
        "replicates with P(gpt4 vs llama3 better) > 0.99 (their true balanced accuracies differ by 0.9 points)."
    )


if __name__ == "__main__":
    main()
