"""Does a judge err differently by target model? The test's level and power, by simulation.

Suites of M models x P prompts (one benchmark each), a routing judge and a second judge audited on
the same responses. Each response is harmful with probability `harm`; each judge calls it ambiguous
with probability `amb`, else harmful with probability Se (harmful) or 1 - Sp (safe). The round
reviews `clear` responses of each clear stratum of every cell and the ambiguous stratum in full,
and the reviewers label the truth. The audit (`annotate.stats.judges.judge_audit`, by model, the
code `annotate judges --by model` runs) then tests every judge x model x figure and flags rows at a
Benjamini-Hochberg q <= 0.10 (`annotate.stats.judge_models`).

Scenarios:
  null        every model: Se 0.90, Sp 0.95 for both judges;
  issue       the routing judge's Se 0.45 for two models (the issue's suite), 0.90 for the rest;
  moderate    Se 0.60 for two models;
  rare        as `issue` at 5 % harm (few harmful responses per cell);
  sparse      as `issue` with 25 per clear stratum.

Printed per scenario: per-test level (the share of tests of true nulls with p <= 0.05, with its
Monte Carlo SE), the mean number of flagged rows that are true nulls, the share of suites with more
than one such row and with any, the false-discovery rate (the mean share of flagged rows that are
true nulls), power (the share of true differences flagged), and seconds per suite.

    python bench/judge_models.py --reps 200
    python bench/judge_models.py --reps 100 --scenario issue --clear 40 80 160
    python bench/judge_models.py --plan --reps 200       # plan --detect-se vs simulated power (judge_planning.py)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from annotate.stats.judges import judge_audit

SCENARIOS = {
    "null": {"bad": 0, "bad_se": 0.90, "harm": 0.30},
    "issue": {"bad": 2, "bad_se": 0.45, "harm": 0.30},
    "moderate": {"bad": 2, "bad_se": 0.60, "harm": 0.30},
    "rare": {"bad": 2, "bad_se": 0.45, "harm": 0.05},
    "sparse": {"bad": 2, "bad_se": 0.45, "harm": 0.30, "clear": 25},
}


def suite(rng: np.random.Generator, *, models: int, prompts: int, harm: float, bad: int, bad_se: float,
          clear: int, amb: float = 0.15, se: float = 0.90, sp: float = 0.95) -> tuple[pd.DataFrame, ...]:  # fmt: skip
    """units, verdicts, strata of one reviewed suite (the inputs of judge_audit), and the bad models."""
    units, verdicts, strata = [], [], []
    bad_models = {f"m{k}" for k in range(bad)}
    for k in range(models):
        model = f"m{k}"
        truth = rng.random(prompts) < harm
        labels = {}
        for judge, s_e in (("j1", bad_se if model in bad_models else se), ("j2", se)):
            a = rng.random(prompts) < amb
            says_h = np.where(truth, rng.random(prompts) < s_e, rng.random(prompts) < 1 - sp)
            labels[judge] = np.where(a, "ambiguous", np.where(says_h, "harmful", "safe"))
        route = labels["j1"]
        for stratum in ("harmful", "safe", "ambiguous"):
            idx = np.flatnonzero(route == stratum)
            n = len(idx) if stratum == "ambiguous" else min(len(idx), clear)
            pick = rng.choice(idx, size=n, replace=False) if n else idx[:0]
            strata.append({"round": "r1", "model": model, "benchmark": "b", "stratum": stratum,
                           "population": len(idx), "sample": n})  # fmt: skip
            for i in pick:
                unit = f"{model}/{i}"
                units.append({"unit": unit, "round": "r1", "model": model, "benchmark": "b", "stratum": stratum,
                              "human": "harmful" if truth[i] else "safe"})  # fmt: skip
                for judge in ("j1", "j2"):
                    verdicts.append({"unit": unit, "judge": judge, "judge_label": labels[judge][i]})
    return pd.DataFrame(units), pd.DataFrame(verdicts), pd.DataFrame(strata), bad_models  # type: ignore[return-value]


def run(scenario: str, reps: int, draws: int, clear: int | None, seed: int) -> dict[str, float]:
    cfg = dict(SCENARIOS[scenario])
    clear = clear or int(cfg.pop("clear", 80))
    cfg.pop("clear", None)
    rng = np.random.default_rng(seed)
    null_p, null_flags, power_hits, power_n, over_one, secs = [], [], 0, 0, 0, []
    any_false: list[bool] = []
    fdp: list[float] = []
    for r in range(reps):
        units, verdicts, strata, bad = suite(rng, models=8, prompts=400, clear=clear, **cfg)
        t = time.perf_counter()
        audit = judge_audit(units, verdicts, strata, by=("model",), draws=draws, seed=seed + r, routing=["j1"])
        secs.append(time.perf_counter() - t)
        h = audit.models
        true_diff = (h.judge == "j1") & h.model.isin(bad) & (h.figure == "sensitivity")
        # PPV of j1 on a bad model differs too (fewer true positives): not a null either.
        not_null = (h.judge == "j1") & h.model.isin(bad) & h.figure.isin(["sensitivity", "ppv"])
        null = ~not_null & h.p_value.notna()
        if not bad:  # a null suite: every model differs from the rest only by chance
            null = h.p_value.notna()
        null_p += h.loc[null, "p_value"].tolist()
        false = int((h.flagged & null).sum())
        null_flags.append(false)
        over_one += false > 1
        any_false.append(false > 0)
        fdp.append(false / max(int(h.flagged.sum()), 1))
        power_hits += int((h.flagged & true_diff).sum())
        power_n += int(true_diff.sum())
    p = np.array(null_p)
    level = float((p <= 0.05).mean()) if len(p) else float("nan")
    return {
        "level": level,
        "level_mcse": float(np.sqrt(level * (1 - level) / max(len(p), 1))),
        "false_flags": float(np.mean(null_flags)),
        "suites_over_one": over_one / reps,
        "suites_any": float(np.mean(any_false)),
        "fdr": float(np.mean(fdp)),
        "power": power_hits / power_n if power_n else float("nan"),
        "seconds": float(np.median(secs)),
        "clear": clear,
    }


def plan_check(reps: int, draws: int, seed: int, se_model: float, se_rest: float) -> None:
    """`annotate plan --detect-se` against simulated power: bench/judge_planning.py's table (issue #41)."""
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("bench_judge_planning", Path(__file__).with_name("judge_planning.py"))
    assert spec is not None and spec.loader is not None
    planning = importlib.util.module_from_spec(spec)
    sys.modules["bench_judge_planning"] = planning  # dataclasses look their module up there
    spec.loader.exec_module(planning)
    names = tuple(n for n, s in planning.SETTINGS.items() if (s.se_model, s.se_rest) == (se_model, se_rest))
    rows = planning.planning_rows(reps, seed, settings=names, test_draws=draws)
    print(rows[["regime", "reviews_judge_harmful", "reviews_judge_safe", "promised", "simulated", "mcse", "holds"]]
          .to_string(index=False))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--scenario", nargs="+", default=list(SCENARIOS))
    ap.add_argument("--clear", type=int, nargs="+", default=[0], help="reviews per clear stratum (0: the scenario's)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plan", action="store_true", help="check the planning formula (Se 0.60 vs 0.90) instead")
    args = ap.parse_args()
    if args.plan:
        plan_check(args.reps, args.draws, args.seed, 0.60, 0.90)
        return
    print(f"{'scenario':10} {'clear':>5} {'level (p<=.05)':>16} {'false flags':>11} {'suites >1':>9} "
          f"{'any':>5} {'FDR':>5} {'power':>6} {'s/suite':>7}")  # fmt: skip
    for name in args.scenario:
        for clear in args.clear:
            out = run(name, args.reps, args.draws, clear or None, args.seed)
            print(
                f"{name:10} {out['clear']:>5} {out['level']:>9.3f} ({out['level_mcse']:.3f}) "
                f"{out['false_flags']:>11.2f} {out['suites_over_one']:>9.2f} {out['suites_any']:>5.2f} "
                f"{out['fdr']:>5.2f} {out['power']:>6.2f} {out['seconds']:>7.2f}"
            )


if __name__ == "__main__":
    main()
