"""Do the rates per hazard keep their promise? ``score --by hazard``'s intervals (issue #44).

Run:  python bench/hazards.py [--replicates 100] [--draws 1000] [--quick]
      python bench/hazards.py --speed   (one domain run next to the overall run on the same round)

A suite of 4 models x 12 hazards on one benchmark; the judge calls half of the responses ambiguous and
on the rest has sensitivity .85 and a false-alarm rate that differs by hazard (2 % to 40 %). The round is
routed as the tool routes it, by the judge's label only (not by hazard): per model, the ambiguous stratum
and each clear one are sampled at the regime's sizes, and the reviews return the truth. Each replicate
scores every hazard with the tool's own function (``annotate.stats.scoring.domains.domain_outputs``:
the cut strata N_hd, n_hd, then ``score_tables``); the truth is each model's finite-population rate in
the hazard (the fixed-prompt estimand). Figures, per regime:

* ``score --by hazard: corrected interval``: coverage of the true rate by the printed 95 % interval,
  over every (model, hazard) row with an estimate (promise >= 0.95);
* ``score --by hazard: rows not estimable``: the share of rows that print no estimate and say why
  (a reading: a row that cannot keep the promise must say so rather than print).

Regimes: routed by judge label as usual, the study's few reviews (25 ambiguous and 10 per clear stratum
per model: many cut strata with no reviewed item), a larger round (100 and 40), and rare harm (0.2-2 %, 25
and 10); routed by hazard (``route --strata-by hazard``: every (label, hazard) stratum sampled, 4 ambiguous
and 2 per clear stratum of each hazard: at most 96 reviews per model, about twice the few-reviews round's
45), at the study's rates and with rare harm.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotate.stats.scoring.domains import domain_outputs  # noqa: E402

HAZARDS = ("vcr", "src", "cse", "ssh", "iwp", "ipv", "dfm", "ncr", "hte", "prv", "spc", "sxc")
#: The judge's false-alarm rate on safe responses, per hazard: its errors differ by hazard.
FALSE_ALARM = dict(zip(HAZARDS, np.linspace(0.02, 0.40, len(HAZARDS)), strict=True))
#: regime -> (true harm per model, responses per (model, hazard), ambiguous sampled, clear sampled per stratum,
#: routed by hazard: each judge label's stratum cut by hazard, the sizes then per hazard)
REGIMES = {
    "study, few reviews": ((0.02, 0.05, 0.10, 0.20), 100, 25, 10, False),
    "study, larger round": ((0.02, 0.05, 0.10, 0.20), 100, 100, 40, False),
    "rare harm (0.2-2 %)": ((0.002, 0.005, 0.01, 0.02), 100, 25, 10, False),
    "routed by hazard, few reviews (4 ambiguous, 2 per clear stratum per hazard)": (
        (0.02, 0.05, 0.10, 0.20),
        100,
        4,
        2,
        True,
    ),
    "routed by hazard, rare harm (0.2-2 %; 4 and 2 per hazard)": ((0.002, 0.005, 0.01, 0.02), 100, 4, 2, True),
}


def replicate(
    harm: tuple[float, ...], per: int, amb: int, clear: int, rng: np.random.Generator, by_hazard: bool = False
):
    """One round: (labels with domain, design strata, population counts per domain, truth per (model, hazard)).

    ``by_hazard``: the round is routed as ``route --strata-by hazard`` routes it (strata ``label|hazard``)."""
    label_rows, strata_rows, pop_rows, truth = [], [], [], {}
    for m, rate in enumerate(harm):
        model = f"m{m}"
        hazard = np.repeat(np.array(HAZARDS), per)
        y = rng.random(hazard.size) < rate
        fa = np.array([FALSE_ALARM[h] for h in hazard])
        says = np.where(y, rng.random(y.size) < 0.85, rng.random(y.size) < fa)
        label = np.where(rng.random(y.size) < 0.5, "ambiguous", np.where(says, "harmful", "safe"))
        for h in HAZARDS:
            truth[(model, h)] = float(y[hazard == h].mean())
        cuts = [(lab, h) for lab in ("harmful", "safe", "ambiguous") for h in (HAZARDS if by_hazard else (None,))]
        for judge_label, part in cuts:
            idx = np.flatnonzero((label == judge_label) & ((hazard == part) if part else True))
            if idx.size == 0:
                continue
            stratum = judge_label if part is None else f"{judge_label}|{part}"
            n = min(idx.size, amb if judge_label == "ambiguous" else clear)
            chosen = rng.choice(idx, size=n, replace=False)
            strata_rows.append(("r", model, "b", judge_label, 1, stratum, idx.size, n))
            for h, count in zip(*np.unique(hazard[idx], return_counts=True), strict=True):
                pop_rows.append(("r", model, "b", stratum, str(h), int(count)))
            for i in chosen:
                final = "harmful" if y[i] else "safe"
                label_rows.append(("r", model, "b", stratum, f"p{i}", 0, final, final, str(hazard[i])))
    labels = pd.DataFrame(
        label_rows,
        columns=["round", "model", "benchmark", "stratum", "prompt_id", "epoch", "final_label", "ds_label", "domain"],
    )
    strata = pd.DataFrame(
        strata_rows, columns=["round", "model", "benchmark", "judge_label", "wave", "stratum", "population", "sample"]
    )
    population = pd.DataFrame(pop_rows, columns=["round", "model", "benchmark", "stratum", "domain", "population"])
    return labels, strata, population, truth


def regime_rows(name: str, R: int, D: int, seed: int) -> list[dict]:
    harm, per, amb, clear, by_hazard = REGIMES[name]
    rng = np.random.default_rng(seed)
    covered, rows, not_estimable = [], 0, 0
    for _ in range(R):
        labels, strata, population, truth = replicate(harm, per, amb, clear, rng, by_hazard)
        outputs = domain_outputs(labels, strata, population, draws=D, seed=int(rng.integers(2**31)))
        for hazard, out in outputs.items():
            if isinstance(out, str):
                not_estimable += len(harm)
                rows += len(harm)
                continue
            s = out.scores[(out.scores.benchmark == "ALL") & (out.scores.treatment == "corrected")]
            for r in s.itertuples():
                rows += 1
                if pd.isna(r.estimate) or pd.isna(r.ci_low):
                    not_estimable += 1
                    continue
                covered.append(r.ci_low - 1e-12 <= truth[(r.model, hazard)] <= r.ci_high + 1e-12)
    base = {"regime": name, "replicates": R}
    cov = float(np.mean(covered)) if covered else float("nan")
    return [
        {**base, "figure": "score --by hazard: corrected interval", "measure": "coverage", "value": cov,
         "n": len(covered), "promise": "coverage >= 0.95",
         "detail": f"{len(covered)} (model, hazard) intervals over {R} rounds, 4 models x 12 hazards each"},
        {**base, "figure": "score --by hazard: rows not estimable", "measure": "reading",
         "value": not_estimable / max(rows, 1), "n": rows, "promise": "reading only",
         "detail": "rows that print no estimate and say why"},
    ]  # fmt: skip


def validity_rows(replicates: int, draws: int = 1000, seed: int = 46, quick: bool = False) -> pd.DataFrame:
    """The rows of the validity matrix (bench/validity.py); ``quick``: at most 8 replicates, 400 draws."""
    if quick:
        replicates, draws = min(replicates, 8), min(draws, 400)
    rows = []
    for k, name in enumerate(REGIMES):
        rows += regime_rows(name, replicates, draws, seed + k)
    return pd.DataFrame(rows)


def speed(draws: int = 4000, repeats: int = 5) -> None:
    """Twelve hazards' runs next to the practical limit: the same estimator run once on the whole round
    (a run per hazard cannot cost less than its share of one run over the same items), in one run."""
    import time

    from annotate.stats.scoring.tables import score_tables

    rng = np.random.default_rng(0)
    labels, strata, population, _ = replicate((0.02, 0.05, 0.10, 0.20), 100, 25, 10, rng)

    def timed(fn) -> float:  # type: ignore[no-untyped-def]
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        return best

    ours = timed(lambda: domain_outputs(labels, strata, population, draws=draws))
    whole = timed(lambda: score_tables(labels.drop(columns="domain"), strata, draws=draws))
    print(f"score --by hazard, 4 models x 12 hazards, {draws} draws: {ours * 1000:.0f} ms; one run over the whole "
          f"round: {whole * 1000:.0f} ms; ratio {ours / whole:.1f}x (12 runs: the floor is about 12x "
          "a run's fixed cost)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--speed", action="store_true")
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.speed:
        speed()
        return
    t = validity_rows(args.replicates, args.draws, args.seed, args.quick)
    t["mcse"] = np.sqrt(t.value * (1 - t.value) / t.n.clip(lower=1))
    with pd.option_context("display.width", 160, "display.max_colwidth", 70):
        print(t[["figure", "regime", "value", "mcse", "n", "promise", "detail"]].to_string(index=False))


if __name__ == "__main__":
    main()
