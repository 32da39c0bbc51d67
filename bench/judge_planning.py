"""Does `annotate plan --detect-se` keep its promise? The planned power against simulated power.

For each setting the plan (`annotate.stats.judge_planning.reviews_to_detect`, the code `annotate plan
--detect-se` runs) gives the reviews per judge-harmful and judge-safe stratum, or a census where no
number reaches the power, and the power it promises there. Suites of M models x N responses (one
benchmark) are then drawn as the plan assumes: each response harmful with probability `harm`; the
routing judge j1 calls it ambiguous with probability 0.15, else harmful with probability Se (Se_m on
model m0, Se_o on the others) or 1 - Sp (Sp 0.95); with two judges a second judge j2 (Se_o on every
model) is audited on the same reviews. The round reviews r_H of each judge-harmful and r_S of each
judge-safe stratum (all of a smaller one) and the ambiguous strata in full; the reviewers label the
truth. The audit (`judge_audit(..., by=("model",), draws=0, test_draws=T)`, the code of `annotate
judges --by model`) flags rows at a Benjamini-Hochberg q <= 0.10; the simulated power is the share
of suites in which j1's sensitivity on m0 is flagged. The promise is the plan's power at the
simulation's T test draws (the plan's binomial term for the draws; `annotate plan` assumes the
4,000 of `judges`).

    python bench/judge_planning.py --reps 200                 # the table of docs/methods.md 9.16
    python bench/judge_planning.py --reps 40 --settings default

`planning_rows(replicates, seed)` returns the table as a DataFrame (one row per setting) for the
validity matrix.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from annotate.stats.judge_planning import CALIBRATION, MIN_PER_STRATUM, detection_power, reviews_to_detect
from annotate.stats.judges import judge_audit

FDR = 0.10
AMBIGUOUS = 0.15
CENSUS = 10**9


@dataclass(frozen=True)
class Setting:
    name: str
    judges: int = 1
    harm: float = 0.30
    se_model: float = 0.60
    se_rest: float = 0.90
    models: int = 8
    responses: int = 400
    power: float = 0.80
    specificity: float = 0.95

    @property
    def regime(self) -> str:
        return (
            f"{self.name}: {self.judges} judge{'s' if self.judges > 1 else ''}, {self.models} models x "
            f"{self.responses}, {self.harm:.0%} harmful, Se {self.se_model:.2f} vs {self.se_rest:.2f}"
            + (f", Sp {self.specificity:.2f}" if self.specificity != 0.95 else "")
        )


SETTINGS = {
    "moderate-1j": Setting("moderate-1j"),
    "moderate-2j": Setting("moderate-2j", judges=2),
    "issue-1j": Setting("issue-1j", se_model=0.45),
    "issue-2j": Setting("issue-2j", judges=2, se_model=0.45),
    "rare-moderate-1j": Setting("rare-moderate-1j", harm=0.10),
    "rare-moderate-2j": Setting("rare-moderate-2j", judges=2, harm=0.10),
    "rare-issue-1j": Setting("rare-issue-1j", harm=0.10, se_model=0.45),
    "rare-issue-2j": Setting("rare-issue-2j", judges=2, harm=0.10, se_model=0.45),
    # the judge-harmful stratum exhausted, the judge-safe one takes up the rest
    "few-exhausted-1j": Setting("few-exhausted-1j", responses=150, harm=0.20, se_model=0.45),
    # no number of reviews reaches 80 %: a census, and the power it reaches
    "few-census-1j": Setting("few-census-1j", responses=100),
    "few-census-2j": Setting("few-census-2j", judges=2, responses=100),
    # beyond the grid: a judge better on one model, fewer models, more harm, a lower specificity
    "better-1j": Setting("better-1j", se_model=0.95, se_rest=0.75),
    "four-models-1j": Setting("four-models-1j", models=4),
    "harm50-1j": Setting("harm50-1j", harm=0.5, se_model=0.70),
    "sp80-1j": Setting("sp80-1j", specificity=0.80),
}
#: Cheap enough for the validity matrix (40 replicates in about 30 s on 2 cores, measured 2026-12-07): two judges
#: uncapped, a judge-harmful stratum exhausted, no reachable size (a census).
DEFAULT = ("moderate-2j", "few-exhausted-1j", "few-census-1j")


def plan_kw(s: Setting) -> dict[str, float]:
    """The assumptions `annotate plan --detect-se` is given for ``s`` (and the level of a first discovery)."""
    tests = s.judges * s.models * 2
    return {"prevalence": s.harm, "specificity": s.specificity, "ambiguous": AMBIGUOUS, "responses": s.responses,
            "models": s.models, "alpha": FDR / tests}  # fmt: skip


def plan_of(s: Setting, test_draws: int) -> dict[str, object]:
    """The plan `annotate plan --detect-se` gives (4,000 test draws), and its promise at ``test_draws``."""
    kw: dict[str, Any] = plan_kw(s)
    plan = reviews_to_detect(s.se_model, s.se_rest, power=s.power, **kw)
    r_h = plan["reviews_judge_harmful"] if plan["reachable"] else CENSUS
    r_s = plan["reviews_judge_safe"] if plan["reachable"] else CENSUS
    promised = float(detection_power(s.se_model, s.se_rest, r_h, r_s, test_draws=test_draws, **kw)["power"])
    return {**plan, "r_h": r_h, "r_s": r_s, "promised": promised, "tests": s.judges * s.models * 2}


def suite(rng: np.random.Generator, s: Setting, r_h: int, r_s: int) -> tuple[pd.DataFrame, ...]:
    """units, verdicts, strata of one reviewed suite (module docstring)."""
    judges = ["j1", "j2"][: s.judges]
    units, verdicts, strata = [], [], []
    labels = np.array(["harmful", "safe", "ambiguous"], dtype=object)
    for k in range(s.models):
        model = f"m{k}"
        truth = rng.random(s.responses) < s.harm
        codes = {}
        for j in judges:
            se = s.se_model if (k == 0 and j == "j1") else s.se_rest
            amb = rng.random(s.responses) < AMBIGUOUS
            says_h = np.where(truth, rng.random(s.responses) < se, rng.random(s.responses) < 1 - s.specificity)
            codes[j] = np.where(amb, 2, np.where(says_h, 0, 1))
        for code, cap in ((0, r_h), (1, r_s), (2, CENSUS)):
            idx = np.flatnonzero(codes["j1"] == code)
            n = min(len(idx), cap)
            pick = np.sort(rng.choice(idx, size=n, replace=False)) if n else idx[:0]
            strata.append(("r1", model, "b", labels[code], len(idx), n))
            ids = [f"{model}/{i}" for i in pick]
            human = np.where(truth[pick], "harmful", "safe")
            units.append(pd.DataFrame({"unit": ids, "round": "r1", "model": model, "benchmark": "b",
                                       "stratum": labels[code], "human": human}))  # fmt: skip
            for j in judges:
                verdicts.append(pd.DataFrame({"unit": ids, "judge": j, "judge_label": labels[codes[j][pick]]}))
    return (
        pd.concat(units, ignore_index=True),
        pd.concat(verdicts, ignore_index=True),
        pd.DataFrame(strata, columns=["round", "model", "benchmark", "stratum", "population", "sample"]),
    )


def run(
    s: Setting, r_h: int, r_s: int, replicates: int, seed: int, test_draws: int, stream: tuple[int, ...] = ()
) -> dict[str, list[float]]:
    """``replicates`` suites of ``s`` reviewed at r_H, r_S, each audited: was j1's sensitivity on m0 flagged?"""
    rng = np.random.default_rng([seed, *stream, sum(map(ord, s.name))])
    out: dict[str, list[float]] = {"flagged": [], "difference": [], "sd": [], "seconds": []}
    for rep in range(replicates):
        units, verdicts, strata = suite(rng, s, r_h, r_s)
        t = time.perf_counter()
        h = judge_audit(units, verdicts, strata, by=("model",), draws=0, test_draws=test_draws,
                        seed=seed * 100_003 + rep, routing=["j1"], fdr=FDR).models  # fmt: skip
        out["seconds"].append(time.perf_counter() - t)
        row = h[(h.judge == "j1") & (h.model == "m0") & (h.figure == "sensitivity")].iloc[0]
        right_way = np.sign(row.difference) == np.sign(s.se_model - s.se_rest)
        out["flagged"].append(float(bool(row.flagged) and bool(right_way)))
        out["difference"].append(float(row.difference))
        out["sd"].append(float(row.difference_ci_high - row.difference_ci_low) / (2 * 1.959964))
    return out


def simulate(s: Setting, replicates: int, seed: int, test_draws: int) -> dict[str, object]:
    """The plan of ``s`` and its simulated power over ``replicates`` suites."""
    plan = plan_of(s, test_draws)
    got = run(s, int(plan["r_h"]), int(plan["r_s"]), replicates, seed, test_draws)  # type: ignore[call-overload]
    sim = float(np.mean(got["flagged"]))
    mcse = float(np.sqrt(max(sim * (1 - sim), 1e-12) / replicates))
    promised = float(plan["promised"])  # type: ignore[arg-type]
    return {
        "regime": s.regime,
        "figure": "plan --detect-se",
        "promised": promised,
        "simulated": sim,
        "mcse": mcse,
        "replicates": replicates,
        "holds": sim >= promised - 2 * mcse,
        "reviews_judge_harmful": "all" if plan["r_h"] == CENSUS else plan["r_h"],
        "reviews_judge_safe": "all" if plan["r_s"] == CENSUS else plan["r_s"],
        "reachable": plan["reachable"],
        "promised_at_4000": float(plan["power_promised"]),  # type: ignore[arg-type]
        "test_draws": test_draws,
        # the variance model against the suites: Delta_hat's SD (sampling) and the draws' SD (posterior)
        "sd_sampling_planned": float(plan["se_difference_sampling"]),  # type: ignore[arg-type]
        "sd_sampling_simulated": float(np.std(got["difference"], ddof=1)) if replicates > 1 else float("nan"),
        "sd_posterior_planned": float(plan["se_difference"]),  # type: ignore[arg-type]
        "sd_posterior_simulated": float(np.mean(got["sd"])),
        "seconds_per_suite": float(np.median(got["seconds"])),
    }


def factor_needed(s: Setting, r_h: int, r_s: int, power: float, test_draws: int) -> float:
    """The CALIBRATION at which the plan's power at r_H, r_S is ``power`` (bisection; NaN at 0 or 1)."""
    if not 0 < power < 1:
        return float("nan")
    kw: dict[str, Any] = plan_kw(s)
    lo, hi = 0.2, 5.0
    for _ in range(40):
        mid = (lo + hi) / 2
        at = detection_power(s.se_model, s.se_rest, r_h, r_s, test_draws=test_draws, calibration=mid, **kw)
        lo, hi = (mid, hi) if float(at["power"]) > power else (lo, mid)
    return (lo + hi) / 2


def calibration_rows(
    replicates: int,
    seed: int = 0,
    settings: tuple[str, ...] = tuple(SETTINGS),
    factors: tuple[float, ...] = (0.8, 1.0, 1.25),
    test_draws: int = 1000,
) -> pd.DataFrame:
    """The factor each design needs: simulated power at the plan's sizes times ``factors`` (a census as is).

    ``factor_needed`` is the CALIBRATION at which the plan's power equals the simulated power;
    annotate.stats.judge_planning.CALIBRATION is the largest measured, rounded up.
    """
    rows = []
    for name in settings:
        s = SETTINGS[name]
        plan = plan_of(s, test_draws)
        r_h, r_s = int(plan["r_h"]), int(plan["r_s"])  # type: ignore[call-overload]
        designs = {(max(MIN_PER_STRATUM, round(r_h * f)), max(MIN_PER_STRATUM, round(r_s * f))) for f in factors}
        for d_h, d_s in sorted(designs) if plan["reachable"] else [(CENSUS, CENSUS)]:
            got = run(s, d_h, d_s, replicates, seed, test_draws, stream=(d_h % 100_003, d_s % 100_003))
            sim = float(np.mean(got["flagged"]))
            census = d_h == CENSUS
            rows.append({"setting": name, "reviews_judge_harmful": "all" if census else d_h,
                         "reviews_judge_safe": "all" if census else d_s, "simulated": sim,
                         "mcse": float(np.sqrt(sim * (1 - sim) / replicates)), "replicates": replicates,
                         "factor_needed": factor_needed(s, d_h, d_s, sim, test_draws)})  # fmt: skip
    return pd.DataFrame(rows)


def planning_rows(
    replicates: int, seed: int = 0, settings: tuple[str, ...] = DEFAULT, test_draws: int = 1000
) -> pd.DataFrame:
    """One row per setting: regime, figure, promised, simulated, mcse, replicates, holds (and the plan's sizes).

    ``holds``: the simulated power is at least the promise less 2 Monte Carlo SE. The default
    settings (:data:`DEFAULT`) take about 30 s at 40 replicates on 2 cores; ``settings=tuple(SETTINGS)``
    is the table of docs/methods.md 9.16 (200 replicates: about 20 minutes).
    """
    return pd.DataFrame([simulate(SETTINGS[name], replicates, seed, test_draws) for name in settings])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--test-draws", type=int, default=1000)
    ap.add_argument("--settings", nargs="+", default=["all"], help=f"names ({', '.join(SETTINGS)}), default, or all")
    ap.add_argument("--csv", default=None, help="also write the rows to this file")
    ap.add_argument("--calibrate", action="store_true", help="the factor each design needs (plan x 0.8, 1, 1.25)")
    args = ap.parse_args()
    names = {"all": list(SETTINGS), "default": list(DEFAULT)}.get(" ".join(args.settings), args.settings)
    if args.calibrate:
        table = calibration_rows(args.reps, args.seed, tuple(names), test_draws=args.test_draws)
        if args.csv:
            table.to_csv(args.csv, index=False)
        print(table.round(3).to_string(index=False))
        print(f"largest factor needed: {table.factor_needed.max():.3f} (CALIBRATION: {CALIBRATION})")
        return
    rows = []
    for name in names:
        row = simulate(SETTINGS[name], args.reps, args.seed, args.test_draws)
        rows.append(row)
        if args.csv:
            pd.DataFrame(rows).to_csv(args.csv, index=False)
        print(
            f"{name:17} r_H {row['reviews_judge_harmful']!s:>4} r_S {row['reviews_judge_safe']!s:>4} "
            f"promised {row['promised']:.3f} (at 4000 draws {row['promised_at_4000']:.3f}) "
            f"simulated {row['simulated']:.3f} ({row['mcse']:.3f}) holds {row['holds']!s:5} | "
            f"SD samp {row['sd_sampling_planned']:.4f}/{row['sd_sampling_simulated']:.4f} "
            f"post {row['sd_posterior_planned']:.4f}/{row['sd_posterior_simulated']:.4f} "
            f"{row['seconds_per_suite']:.2f} s/suite",
            flush=True,
        )


if __name__ == "__main__":
    main()
