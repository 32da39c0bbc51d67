"""Model rows with rare harm over many sparse strata, and waves without drift (issue #33).

Run:  python bench/model_rows.py [--replicates 1000] [--draws 2000] [--scenario study|seed|all]
                                 [--workers 2] [--quick] [--reviewer-accuracy 0.92] [--routings 1]
                                 [--constructions now,before]

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

Reviewers who err (issue #41; methods 9.20): ``--reviewer-accuracy 0.92`` has two reviewers, each
right with that probability, and an expert (always right) on their disagreements label every
response: a response's final label is wrong with e = (1 - a)^2 (0.0064 at .92). Each response's
would-be reviewed label is drawn once (``budget.reviewed_labels``); the samples are drawn from
those labels, and the truth is their finite population's rate (the fixed-prompt estimand: what the
review process would say of these prompts). Also printed: the coverage of the expected reviewed
rate p (1 - e) + (1 - p) e (p the finite population's true rate; it differs from the truth by the
flips' own noise, sd about sqrt(e / 5000) = 0.0011 per model) and of the true harm p, which the
interval does not claim. ``--routings k`` reviews each population k times (k routing seeds): the
coverage given the population (design-based), per population and model.

:func:`reviewer_error_coverage` is the entry point of a validity matrix: the coverage of the model
rows in the reviewer-error regime at a given number of replicates, as a small DataFrame.

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


def model_rate(K: np.ndarray, N: np.ndarray) -> np.ndarray:
    """(R, M): each model's macro-averaged rate over its benchmarks, from (R, M, B, 3) counts."""
    return (K.sum(axis=3) / N.sum(axis=3)).mean(axis=2)


def truths(N: np.ndarray, K: np.ndarray, K_true: np.ndarray | None, e: float) -> dict[str, np.ndarray]:
    """The rates a model row is scored against, shape (R, M): ``reviewed`` (the finite population's
    would-be reviewed labels: the estimand), and with reviewer error ``expected`` (p (1 - e) + (1 -
    p) e per cell) and ``harm`` (the true rate p)."""
    out = {"reviewed": model_rate(K, N)}
    if K_true is not None:
        out["expected"] = model_rate(K_true * (1 - 2 * e) + N * e, N)
        out["harm"] = model_rate(K_true, N)
    return out


def chunk(job):
    N, K, D, seed, constructions, K_true, e = job
    truth = truths(N, K, K_true, e)
    out = {}
    for name in constructions:
        share, source = CONSTRUCTIONS[name]
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


def covers(lo: np.ndarray, hi: np.ndarray, truth: np.ndarray) -> np.ndarray:
    return (lo <= truth + 1e-12) & (truth <= hi + 1e-12)


def summarise(truth, parts, harm, scenario, constructions=tuple(CONSTRUCTIONS), population=None):
    """One row per (design, construction, model); ``truth`` maps a name to (R, M) rates (``reviewed``
    first: the estimand). ``population``: the population of each replicate (``--routings``), for
    the lowest coverage given a population."""
    rows = []
    ref = truth["reviewed"]
    R = ref.shape[0]
    for cons in constructions:
        for design in ("pilot", "waves", "fixed"):
            lo, hi, est, items = (np.concatenate([p[cons][design][k] for p in parts]) for k in range(4))
            above, below = ref > hi + 1e-12, ref < lo - 1e-12
            cov = ~(above | below)
            err = est - ref
            others = {f"coverage_{k}": covers(lo, hi, v) for k, v in truth.items() if k != "reviewed"}
            for m in range(ref.shape[1]):
                row = {
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
                row.update({k: v[:, m].mean() for k, v in others.items()})
                if population is not None:
                    row["lowest_given_population"] = min(cov[population == p, m].mean() for p in np.unique(population))
                rows.append(row)
    t = pd.DataFrame(rows)
    if "before" in constructions:
        base = t[t.construction == "before"].set_index(["design", "harm"])["width"]
        t["width_ratio"] = [w / base[(d, h)] for d, h, w in zip(t.design, t.harm, t.width, strict=True)]
    else:
        t["width_ratio"] = np.nan
    return t


def run(
    scenario: str,
    R: int,
    D: int,
    workers: int,
    seed: int,
    chunk_size: int,
    *,
    accuracy: float | None = None,
    routings: int = 1,
    constructions: tuple[str, ...] = tuple(CONSTRUCTIONS),
    quiet: bool = False,
) -> pd.DataFrame:
    """The table of :func:`summarise` for one scenario: R replicates (R / routings populations,
    each reviewed ``routings`` times); ``accuracy``: reviewers who err (module docstring)."""
    rng = np.random.default_rng(seed)
    P = -(-R // routings)
    if scenario == "study":
        N, K = study(P, rng)
        harm = STUDY_HARM
    else:
        pop = budget.simulate(P, rng, lo=0.005, hi=0.40, se=0.85)
        N, K = pop.N, pop.K
        harm = np.geomspace(0.005, 0.40, 26)
    K_true, e = None, 0.0
    if accuracy is not None:
        e = budget.final_label_error(accuracy)
        K_true, K = K, budget.reviewed_labels(K, N, rng, accuracy)
    population = None
    if routings > 1:
        population = np.repeat(np.arange(P), routings)[:R]
        N, K = N[population], K[population]
        K_true = None if K_true is None else K_true[population]
    jobs = [
        (
            N[r0 : r0 + chunk_size],
            K[r0 : r0 + chunk_size],
            D,
            seed + 1 + r0,
            constructions,
            None if K_true is None else K_true[r0 : r0 + chunk_size],
            e,
        )
        for r0 in range(0, R, chunk_size)
    ]
    t0 = time.time()
    parts = []

    def progress(i: int) -> None:
        if not quiet:
            done = min((i + 1) * chunk_size, R)
            print(f"  {scenario}: {done}/{R} replicates, {time.time() - t0:.0f} s", file=sys.stderr)

    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            for i, part in enumerate(pool.imap(chunk, jobs)):
                parts.append(part)
                progress(i)
    else:
        for i, job in enumerate(jobs):
            parts.append(chunk(job))
            progress(i)
    truth = {k: np.concatenate([p[0][k] for p in parts]) for k in parts[0][0]}
    return summarise(truth, [p[1] for p in parts], harm, scenario, constructions, population)


def coverage_row(
    replicates: int,
    *,
    accuracy: float | None = None,
    draws: int = 2000,
    design: str = "waves",
    scenario: str = "seed",
    workers: int = 1,
    seed: int = 41,
    chunk_size: int = 20,
) -> pd.DataFrame:
    """The coverage of the model rows in one regime, as one row (see :func:`reviewer_error_coverage`).

    ``accuracy`` None: the reviewers label the truth (methods 9.17's regime); else two reviewers
    each right with that probability and an expert on their disagreements (9.20).
    """
    if design not in ("pilot", "waves", "fixed"):
        raise ValueError(f"design must be 'pilot', 'waves' or 'fixed'; got {design!r}.")
    if scenario not in ("seed", "study"):
        raise ValueError(f"scenario must be 'seed' or 'study'; got {scenario!r}.")
    t = run(
        scenario, replicates, draws, workers, seed, chunk_size, accuracy=accuracy, constructions=("now",), quiet=True
    )
    t = t[t.design == design]
    rows = replicates * len(t)
    c = float(t.coverage.mean())
    low = t.loc[t.coverage.idxmin()]
    who = (
        "reviewers label the truth" if accuracy is None else f"reviewers {accuracy:.0%} right, expert on disagreements"
    )
    size = "seed-sized (26 models)" if scenario == "seed" else "study (6 models)"
    plan = {"waves": "waves to +-0.03", "pilot": "pilot", "fixed": "fixed final sizes"}[design]
    return pd.DataFrame(
        [
            {
                "regime": f"{who}; {size}, {plan}",
                "figure": "model row",
                "coverage": c,
                "mcse": float(np.sqrt(c * (1 - c) / rows)),
                "lowest_model_coverage": float(low.coverage),
                "replicates": replicates,
                "n": rows,
                "promise": "coverage >= 0.95",
                "truth_below": float(t.truth_below.mean()),
                "truth_above": float(t.truth_above.mean()),
                "width": float(t.width.mean()),
                "detail": (
                    f"lowest model {float(low.coverage):.3f} (harm {float(low.harm):.3f}); misses with the truth "
                    f"below / above {float(t.truth_below.mean()):.3f} / {float(t.truth_above.mean()):.4f}; "
                    f"mean width {float(t.width.mean()):.3f}"
                ),
            }
        ]
    )


def reviewer_error_coverage(
    replicates: int,
    *,
    accuracy: float = 0.92,
    draws: int = 2000,
    design: str = "waves",
    scenario: str = "seed",
    workers: int = 1,
    seed: int = 41,
    chunk_size: int = 20,
) -> pd.DataFrame:
    """The coverage of the model rows with reviewers who err, for a validity matrix (issue #41; methods 9.20).

    ``replicates`` rounds of ``scenario`` (``"seed"``: bench/budget.py's ``sim``, 26 models;
    ``"study"``: 6 models), labelled by two reviewers each right with ``accuracy`` and an expert
    (always right) on their disagreements, reviewed by ``design`` (``"waves"``: the pilot, then
    planned to +-3 points, at most 4 waves, pooled; ``"pilot"``; ``"fixed"``: the waves' final
    sizes in one wave) and scored by the tool's interval (95 %) of each model's overall row. The
    truth is the finite population's would-be reviewed labels' rate (the fixed-prompt estimand).

    Returns one row: ``regime, figure`` ('model row'), ``coverage`` (over every model row of every
    replicate), ``mcse`` (sqrt(c (1 - c) / n)), ``lowest_model_coverage`` (the model whose rows
    cover least, over the replicates), ``replicates``; also ``n`` (rows), ``promise``,
    ``truth_below`` / ``truth_above`` (shares of the rows missed on each side), ``width`` (mean)
    and ``detail``. Nothing runs at import; a seed-sized round takes about 1-2 s per replicate on
    one core (2026-12-07, 2 cores, 24 GiB).
    """
    return coverage_row(
        replicates,
        accuracy=accuracy,
        draws=draws,
        design=design,
        scenario=scenario,
        workers=workers,
        seed=seed,
        chunk_size=chunk_size,
    )


def validity_rows(
    replicates: int, draws: int = 2000, seed: int = 41, quick: bool = False, workers: int = 1
) -> pd.DataFrame:
    """The model rows' rows of the validity matrix (bench/validity.py): the seed-sized round planned in
    waves to +-3 points, with reviewers who label the truth and with reviewers 92 % right and an
    expert on their disagreements (:func:`coverage_row`). ``quick``: at most 10 replicates and 1,000
    draws."""
    if quick:
        replicates, draws = min(replicates, 10), min(draws, 1000)
    return pd.concat(
        [
            coverage_row(replicates, accuracy=acc, draws=draws, seed=seed + k, workers=workers)
            for k, acc in enumerate((None, 0.92))
        ],
        ignore_index=True,
    )


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
    ap.add_argument(
        "--reviewer-accuracy",
        type=float,
        help="two reviewers each right with this probability, an expert on their disagreements (issue #41)",
    )
    ap.add_argument("--routings", type=int, default=1, help="review each population this many times")
    ap.add_argument("--constructions", default="now,before", help="comma-separated: now, before")
    a = ap.parse_args()
    R, D = (60, 1000) if a.quick else (a.replicates, a.draws)
    todo = ["study", "seed"] if a.scenario == "all" else [a.scenario]
    cons = tuple(c.strip() for c in a.constructions.split(",") if c.strip())
    if not cons or set(cons) - set(CONSTRUCTIONS):
        ap.error(f"--constructions: a comma-separated subset of {sorted(CONSTRUCTIONS)}")
    tables = [
        run(
            s,
            R,
            D,
            a.workers,
            a.seed + 7 * k,
            a.chunk,
            accuracy=a.reviewer_accuracy,
            routings=a.routings,
            constructions=cons,
        )
        for k, s in enumerate(todo)
    ]
    t = pd.concat(tables, ignore_index=True)
    if a.csv:
        t.to_csv(a.csv, index=False)
    pd.set_option("display.width", 220)
    f3 = lambda x: f"{x:.3f}"  # noqa: E731
    regime = "" if a.reviewer_accuracy is None else f"; reviewers {a.reviewer_accuracy} right + an expert"
    for sc, ts in t.groupby("scenario", sort=False):
        print(f"\n## {sc}: {R} replicates, {D} draws{regime}; coverage of each model's overall 95 % interval")
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
            **{
                f"min_{c}": (c, "min")
                for c in ("coverage_expected", "coverage_harm", "lowest_given_population")
                if c in ts
            },
        )
        print("\n" + summary.to_string(float_format=lambda x: f"{x:.4f}"))
        if sc == "study" or a.reviewer_accuracy is not None:
            cols = ["design", "construction", "harm", "coverage", "mcse", "truth_above", "truth_below"]
            cols += ["width", "width_ratio", "bias", "bias_se", "items"]
            cols += [c for c in ("coverage_expected", "coverage_harm", "lowest_given_population") if c in ts]
            print("\n" + ts[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))


if __name__ == "__main__":
    main()
