"""The validity matrix: every interval and test the tool prints, in regimes it was not tuned on (issue #41).

Run:  python bench/validity.py [--replicates 200] [--draws 1000] [--part judges|tests|agreement|scores|planning|all]
                               [--quick] [--out validity.csv]

An interval or a test is a promise. Each row of the matrix is one printed figure in one regime: the
coverage of its 95 % interval (or a test's level, false-discovery rate or power) over simulated
replicates, with its Monte-Carlo SE, the promise, and whether it holds (within 2 MCSE). The
regimes include the study's own (26 models x 5 benchmarks, half the responses ambiguous, harm 0.5-40 %,
a pilot of 10 per clear stratum and 25 per ambiguous one, two judges with one routing and a
rare-error judge), few reviews, rare harm, labels no reviewed response carries (the rare-error judge),
census and sampled designs, and reviewers who err as real ones do (each right 92 % of the time, an
expert on their disagreements). ``--quick`` runs a small version of every part (the fast test lane
runs it: tests/test_validity_matrix.py).

Parts:

* ``judges``: every figure of ``annotate judges`` (sensitivity ... FNR) under both estimands, the
  pooled rows and the per-model rows: coverage of the finite population's value (``responses``)
  and of the superpopulation's (``prompts``), lowest over the judges and the mean; the share of
  zero-width intervals in sampled designs.
* ``tests``: the model test (``judges --by model``, ``score``): level of a true null (p <= 0.05 on
  sensitivity and specificity rows where no judge errs differently), the false-discovery rate at
  q <= 0.10 and the share of suites with any false flag; its power on issue #31's suite; the
  judge-pair test's level where two judges are equally accurate, in routed designs.
* ``agreement``: Krippendorff's alpha, Gwet's AC1, Cohen's kappa and percent agreement of two
  reviewers (binary), coverage where an interval is printed and how often one is.
* ``scores``: the model rows of ``annotate score`` (bench/model_rows.py's regimes).
* ``planning``: ``plan --detect-se``'s promised power against simulated power.

Seeded; the same arguments give the same matrix.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout, uninstalled
sys.path.insert(0, str(ROOT / "bench"))

from judge_suites import JudgeSpec, SuiteSpec, expected_tables, study_spec, suite  # noqa: E402

from annotate.stats.judges import METRICS, confusion_metrics, judge_audit  # noqa: E402

#: Replicates and draws of the small matrix the fast test lane runs (tests/test_validity_matrix.py).
QUICK = (24, 300)
#: The figure name of the model test's rows.
MODEL_TEST = "model test (sensitivity, specificity)"
#: Columns of the matrix.
COLUMNS = ("part", "figure", "regime", "measure", "value", "mcse", "promise", "holds", "detail", "replicates", "n")


def mcse(p: float, n: int) -> float:
    return float(np.sqrt(max(p * (1 - p), 0.0) / n)) if n else float("nan")


def row(part: str, figure: str, regime: str, measure: str, value: float, n: int, promise: str, **extra: Any) -> dict:
    """One row; ``holds`` by the promise: 'coverage >= .95' (within 2 MCSE), 'level <= .05', 'fdr <= .10', ..."""
    se = mcse(value, n) if measure in ("coverage", "level", "fdr", "any false flag", "power") else float("nan")
    kind, _, target = promise.partition(" ")
    op, _, num = target.partition(" ")
    goal = float(num) if num else float("nan")
    if not np.isfinite(value):
        holds = False
    elif op == ">=":
        holds = value + 2 * (se if np.isfinite(se) else 0.0) >= goal
    elif op == "<=":
        holds = value - 2 * (se if np.isfinite(se) else 0.0) <= goal
    else:
        holds = True
    return {
        "part": part,
        "figure": figure,
        "regime": regime,
        "measure": measure,
        "value": value,
        "mcse": se,
        "promise": promise,
        "holds": bool(holds),
        "detail": extra.get("detail", ""),
        "replicates": extra.get("replicates", n),
        "n": n,  # what the share is over (intervals, tests, suites): its MCSE's n
    }


# --------------------------------------------------------------------------------------------
# Regimes of reviewed suites
# --------------------------------------------------------------------------------------------

ROUTER = JudgeSpec(0.85, 0.95)
SECOND = JudgeSpec(0.80, 0.92, abstain=0.6)
RARE_ERRORS = JudgeSpec(0.97, 0.995, abstain=0.2)  # its errors are rarely among the reviewed: unseen labels


@dataclass(frozen=True)
class Regime:
    name: str
    make: Callable[[np.random.Generator], SuiteSpec]
    routing: str = "j1"


def _study(clear: int = 10, reviewers: float | None = None, models: int = 26, benchmarks: int = 5) -> Callable:
    def make(rng: np.random.Generator) -> SuiteSpec:
        return study_spec(
            rng,
            models=models,
            benchmarks=benchmarks,
            harm=(0.005, 0.40),
            ambiguous=(0.3, 0.7),
            judges={"j1": ROUTER, "j2": SECOND, "j3": RARE_ERRORS},
            clear=clear,
            amb_harmful=1.5,
            reviewer_accuracy=reviewers,
        )

    return make


def _issue_null(clear: int, harm: tuple[float, float] = (0.005, 0.30)) -> Callable:
    """The issue's null suites: 8 models, 0.5-30 % harm, 10-60 % ambiguous, 200-1,000 prompts, 2 benchmarks."""

    def make(rng: np.random.Generator) -> SuiteSpec:
        return study_spec(rng, models=8, benchmarks=2, harm=harm, ambiguous=(0.10, 0.60), clear=clear)

    return make


def _routed(per: int, equal: bool = False) -> Callable:
    """One cell of 2,000 responses routed by the first judge, ``per`` reviewed per stratum (issue #41's judges)."""
    judges = (
        {"a": JudgeSpec(0.80, 0.92), "b": JudgeSpec(0.80, 0.92)}
        if equal
        else {"a": JudgeSpec(0.80, 0.92), "b": JudgeSpec(0.92, 0.85), "c": JudgeSpec(0.65, 0.98)}
    )

    def make(rng: np.random.Generator) -> SuiteSpec:
        return SuiteSpec(
            harm=(0.37,), ambiguous=(0.1,), prompts=(2000,), judges=judges, clear=per, ambiguous_reviewed=per
        )

    return make


def _census(rng: np.random.Generator) -> SuiteSpec:
    """A census: 4 models x 300 responses, every one reviewed (a judge comparison table)."""
    return SuiteSpec(
        harm=(0.37, 0.37, 0.2, 0.5),
        ambiguous=(0.0, 0.05, 0.05, 0.0),
        prompts=(300,),
        judges={"j1": JudgeSpec(0.91, 0.90), "j2": JudgeSpec(0.945, 0.884), "j3": JudgeSpec(0.89, 0.87)},
        clear=0,
        ambiguous_reviewed=0,
    )


JUDGE_REGIMES = {
    "study (26 x 5, pilot 10/25)": Regime("study", _study()),
    "study, reviewers 92 % + expert": Regime("study-err", _study(reviewers=0.92)),
    "few reviews (8 x 2, 10 per clear stratum)": Regime("few", _issue_null(10)),
    "rare harm (8 x 2, 0.2-2 %, 20 per clear stratum)": Regime("rare", _issue_null(20, harm=(0.002, 0.02))),
    "census (4 x 300, every response)": Regime("census", _census),
    "routed 2,000, 20 per stratum": Regime("routed20", _routed(20), routing="a"),
    "routed 2,000, 60 per stratum": Regime("routed60", _routed(60), routing="a"),
}


# --------------------------------------------------------------------------------------------
# Part: judge figures under both estimands
# --------------------------------------------------------------------------------------------


def _covers(metrics: pd.DataFrame, truth: dict[tuple[str, str], dict[str, float]]) -> list[dict]:
    out = []
    for r in metrics.itertuples(index=False):
        want = truth.get((r.judge, r.model))
        if want is None or r.benchmark != "ALL":
            continue
        for m in METRICS:
            t = want[m]
            lo, hi = getattr(r, f"{m}_ci_low"), getattr(r, f"{m}_ci_high")
            if not np.isfinite(t) or not np.isfinite(getattr(r, m)):
                continue
            out.append(
                {
                    "judge": r.judge,
                    "group": "pooled" if r.model == "ALL" else "model",
                    "figure": m,
                    "covers": bool(lo <= t <= hi),
                    "zero": bool(hi - lo <= 1e-12),
                    "width": float(hi - lo),
                }
            )
    return out


def _truths(spec: SuiteSpec, s: Any) -> tuple[dict, dict]:
    """Per (judge, model or ALL): every figure's finite-population and superpopulation value."""
    sup = expected_tables(spec)
    finite, superpop = {}, {}
    for judge in spec.judges:
        pooled_f = sum(s.finite[judge, m] for m in spec.models)
        pooled_s = sum(sup[judge, m] for m in spec.models)
        for model, tf, ts in [("ALL", pooled_f, pooled_s)] + [
            (m, s.finite[judge, m], sup[judge, m]) for m in spec.models
        ]:
            finite[judge, model] = {k: float(v) for k, v in confusion_metrics(tf).items()}
            superpop[judge, model] = {k: float(v) for k, v in confusion_metrics(ts).items()}
    return finite, superpop


def part_judges(R: int, draws: int, seed: int, regimes: dict[str, Regime]) -> list[dict]:
    rows = []
    for label, reg in regimes.items():
        rng = np.random.default_rng([seed, len(label)])
        found: dict[str, list[dict]] = {"responses": [], "prompts": []}
        t0 = time.perf_counter()
        for rep in range(R):
            spec = reg.make(rng)
            s = suite(spec, rng)
            finite, superpop = _truths(spec, s)
            by = ("model",) if len(spec.models) > 1 else ()
            for estimand, truth in (("responses", finite), ("prompts", superpop)):
                a = judge_audit(
                    s.units,
                    s.verdicts,
                    s.strata,
                    by=by,
                    draws=draws,
                    seed=rep,
                    routing=[reg.routing],
                    estimand=estimand,
                    test_draws=0,
                )
                found[estimand] += _covers(a.metrics, truth)
        secs = (time.perf_counter() - t0) / max(R, 1)
        sampled = reg.name != "census"
        for estimand, cov in found.items():
            df = pd.DataFrame(cov)
            if df.empty:
                continue
            for (group, fig), g in df.groupby(["group", "figure"]):
                per_judge = g.groupby("judge").covers.agg(["mean", "size"])
                low = per_judge["mean"].idxmin()
                detail = f"mean {g.covers.mean():.3f}; width {g.width.mean():.3f}; {secs:.1f} s per replicate"
                if sampled:
                    detail += f"; zero width {g.zero.mean():.3f}"
                if estimand == "responses" and not sampled:
                    detail += "; a census is exact for these responses"
                rows.append(
                    row(
                        "judges",
                        f"judge {fig} ({estimand}, {group} rows)",
                        label,
                        "coverage",
                        float(per_judge.loc[low, "mean"]),
                        int(per_judge.loc[low, "size"]),
                        "coverage >= 0.95",
                        detail=f"lowest judge {low}; {detail}",
                        replicates=R,
                    )
                )
    return rows


# --------------------------------------------------------------------------------------------
# Part: the tests (model test, pair test)
# --------------------------------------------------------------------------------------------


def _bench_module(name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[f"bench_{name}"] = mod
    spec.loader.exec_module(mod)
    return mod


def _level_row(label: str, null_p: NDArray[np.float64], R: int, detail: str) -> dict:
    """The model test's level in a regime: the share of its true-null p-values at or below 0.05."""
    level = float((null_p <= 0.05).mean()) if len(null_p) else float("nan")
    return row("tests", MODEL_TEST, label, "level", level, len(null_p), "level <= 0.05", detail=detail, replicates=R)


def _fdr_row(label: str, fdp: list[float], R: int) -> dict:
    """The model test's false-discovery rate in a regime: the mean false-discovery proportion over R suites."""
    return row("tests", MODEL_TEST, label, "fdr", float(np.mean(fdp)), R, "fdr <= 0.10", replicates=R)


def _model_test(
    R: int, test_draws: int, seed: int, label: str, make: Callable, bad: Callable | None = None
) -> list[dict]:
    """Level, FDR and any-false-flag share of the model test over R suites (``bad``: the true differences)."""
    rng = np.random.default_rng([seed, 7, len(label)])
    null_p, fdp, any_false, hits = [], [], [], []
    for rep in range(R):
        spec = make(rng)
        s = suite(spec, rng)
        h = judge_audit(
            s.units, s.verdicts, s.strata, by=("model",), draws=0, seed=rep, routing=["j1"], test_draws=test_draws
        ).models
        true = bad(h) if bad is not None else np.zeros(len(h), dtype=bool)
        tested = h.p_value.notna()
        null = tested & ~true & h.figure.isin(["sensitivity", "specificity"])
        null_p += h.loc[null, "p_value"].tolist()
        false = int((h.flagged & null).sum())
        any_false.append(false > 0)
        fdp.append(false / max(int(h.flagged.sum()), 1))
        hits += h.loc[true, "flagged"].astype(bool).tolist()
    p = np.asarray(null_p)
    out = [
        _level_row(label, p, R, f"{len(p)} true-null tests"),
        _fdr_row(label, fdp, R),
        row(
            "tests",
            MODEL_TEST,
            label,
            "any false flag",
            float(np.mean(any_false)),
            R,
            "info",
            replicates=R,
        ),
    ]
    if hits:
        out.append(
            row(
                "tests",
                MODEL_TEST,
                label,
                "power",
                float(np.mean(hits)),
                len(hits),
                "power >= 0.90",
                detail="each bad model's sensitivity flagged",
                replicates=R,
            )
        )
    return out


def _issue31(rng: np.random.Generator, clear: int = 80, se_bad: float = 0.45) -> tuple[Any, set[str]]:
    jm = _bench_module("judge_models")
    units, verdicts, strata, bad = jm.suite(rng, models=8, prompts=400, harm=0.30, bad=2, bad_se=se_bad, clear=clear)
    return (units, verdicts, strata), bad


def _power(R: int, test_draws: int, seed: int, se_bad: float, label: str, promise: str) -> list[dict]:
    rng = np.random.default_rng([seed, 31])
    hits, fdp, null_p = [], [], []
    for rep in range(R):
        (units, verdicts, strata), bad = _issue31(rng, se_bad=se_bad)
        h = judge_audit(
            units, verdicts, strata, by=("model",), draws=0, seed=rep, routing=["j1"], test_draws=test_draws
        ).models
        true = (h.judge == "j1") & h.model.isin(bad) & (h.figure == "sensitivity")
        hits += h.loc[true, "flagged"].astype(bool).tolist()
        null = h.p_value.notna() & ~true
        null_p += h.loc[null, "p_value"].tolist()
        fdp.append(int((h.flagged & null).sum()) / max(int(h.flagged.sum()), 1))
    p = np.asarray(null_p)
    return [
        row(
            "tests",
            MODEL_TEST,
            label,
            "power",
            float(np.mean(hits)),
            len(hits),
            promise,
            detail="each bad model's sensitivity flagged at q <= 0.10",
            replicates=R,
        ),
        _level_row(label, p, R, "the rows that are true nulls"),
        _fdr_row(label, fdp, R),
    ]


def _pair_test(R: int, test_draws: int, seed: int, label: str, make: Callable, routing: str) -> list[dict]:
    """The pair test's level where the two judges have the same sensitivity and specificity (pooled rows)."""
    rng = np.random.default_rng([seed, 5, len(label)])
    p, mc = [], []
    for rep in range(R):
        spec = make(rng)
        s = suite(spec, rng)
        a = judge_audit(
            s.units, s.verdicts, s.strata, by=(), draws=0, seed=rep, routing=[routing], test_draws=test_draws
        )
        pair = a.pairs.iloc[0]
        p.append(pair.p_value)
        mc.append(pair.mcnemar_p)
    p_ = np.asarray(p, dtype=float)
    out = [
        row(
            "tests",
            "judge-pair test (equal balanced accuracy)",
            label,
            "level",
            float((p_ <= 0.05).mean()),
            len(p_),
            "level <= 0.05",
            replicates=R,
        )
    ]
    m = np.asarray(mc, dtype=float)
    if np.isfinite(m).any():
        out.append(
            row(
                "tests",
                "McNemar's exact test (shown)",
                label,
                "level",
                float((m[np.isfinite(m)] <= 0.05).mean()),
                int(np.isfinite(m).sum()),
                "level <= 0.05",
                replicates=R,
            )
        )
    return out


def _equal_study(rng: np.random.Generator) -> SuiteSpec:
    spec = _issue_null(10)(rng)
    return replace(spec, judges={"j1": JudgeSpec(0.85, 0.95), "j2": JudgeSpec(0.85, 0.95)})


def _equal_census(rng: np.random.Generator) -> SuiteSpec:
    return SuiteSpec(
        harm=(0.37,),
        ambiguous=(0.0,),
        prompts=(300,),
        judges={"j1": JudgeSpec(0.9, 0.9), "j2": JudgeSpec(0.9, 0.9)},
        clear=0,
        ambiguous_reviewed=0,
    )


def part_tests(R: int, test_draws: int, seed: int, quick: bool) -> list[dict]:
    rows = []
    nulls = {"few reviews (8 x 2, 10 per clear stratum)": _issue_null(10)}
    if not quick:
        nulls["few reviews (8 x 2, 20 per clear stratum)"] = _issue_null(20)
        nulls["rare harm (8 x 2, 0.2-2 %, 20 per clear stratum)"] = _issue_null(20, harm=(0.002, 0.02))
        nulls["study (26 x 5, pilot 10/25)"] = _study()
    for label, make in nulls.items():
        rows += _model_test(R, test_draws, seed, label, make)
    rows += _power(
        R, test_draws, seed, 0.45, "issue #31 (8 x 400, Se .45 on two models, 80 per clear stratum)", "power >= 0.90"
    )
    if not quick:
        rows += _power(
            R, test_draws, seed, 0.60, "moderate (8 x 400, Se .60 on two models, 80 per clear stratum)", "info"
        )
    pairs = {
        "routed 2,000, 20 per stratum, equal judges": (_routed(20, equal=True), "a"),
        "census of 300, equal judges": (_equal_census, "j1"),
    }
    if not quick:
        pairs["routed 2,000, 60 per stratum, equal judges"] = (_routed(60, equal=True), "a")
        pairs["few reviews (8 x 2, 10 per clear stratum), equal judges"] = (_equal_study, "j1")
    for label, (make, routing) in pairs.items():
        rows += _pair_test(R, test_draws, seed, label, make, routing)
    return rows


# --------------------------------------------------------------------------------------------
# Part: agreement coefficients
# --------------------------------------------------------------------------------------------


def _two_reviewers(units: int, acc: float, prev: float, rng: np.random.Generator) -> np.ndarray:
    """(units, 2) binary codes: two reviewers each right with probability ``acc``."""
    truth = rng.random(units) < prev
    right = rng.random((units, 2)) < acc
    return np.where(right, truth[:, None], ~truth[:, None]).astype(np.int64)


def part_agreement(R: int, n_boot: int, seed: int, quick: bool) -> list[dict]:
    from annotate.stats.agreement import cohen_kappa, counts_from_codes, gwet_ac1, krippendorff_alpha, percent_agreement

    regimes = {"few reviews (2 reviewers 92 %, 40 items)": (40, 0.92, 0.25)}
    if not quick:
        regimes["study (2 reviewers 92 %, 300 items, 25 % harmful)"] = (300, 0.92, 0.25)
        regimes["rare harm (2 reviewers 92 %, 300 items, 5 % harmful)"] = (300, 0.92, 0.05)
    coefs = {
        "alpha (binary)": lambda y, b, s: krippendorff_alpha(counts_from_codes(y, 2), n_boot=b, seed=s),
        "AC1 (binary)": lambda y, b, s: gwet_ac1(counts_from_codes(y, 2), n_boot=b, seed=s),
        "Cohen's kappa": lambda y, b, s: cohen_kappa(y[:, 0], y[:, 1], 2, n_boot=b, seed=s),
        "percent agreement": lambda y, b, s: percent_agreement(counts_from_codes(y, 2), n_boot=b, seed=s),
    }
    rows = []
    for label, (units, acc, prev) in regimes.items():
        big = _two_reviewers(400_000, acc, prev, np.random.default_rng(0))
        truth = {k: f(big, 0, 0).value for k, f in coefs.items()}
        rng = np.random.default_rng([seed, units, int(prev * 100)])
        hits: dict[str, list[bool]] = {k: [] for k in coefs}
        for rep in range(R):
            y = _two_reviewers(units, acc, prev, rng)
            for k, f in coefs.items():
                c = f(y, n_boot, rep)
                if np.isfinite(c.ci_low):
                    hits[k].append(bool(c.ci_low <= truth[k] <= c.ci_high))
        for k, h in hits.items():
            rows.append(
                row(
                    "agreement",
                    k,
                    label,
                    "coverage",
                    float(np.mean(h)) if h else float("nan"),
                    len(h),
                    "coverage >= 0.95",
                    detail=f"interval printed in {len(h)} of {R}; truth {truth[k]:.3f}",
                    replicates=R,
                )
            )
    return rows


def _hazard_answers(items: int, prev: float, rng: np.random.Generator, acc: float = 0.9) -> pd.DataFrame:
    """Three reviewers' answers to the hazard questions (``route --ask-hazards``): each item is in category
    ``vcr`` with probability ``prev``; a reviewer names it rightly with probability ``acc`` (else the other
    way); a harmful third has a true severity 0-3, which a reviewer gives exactly with probability 0.7, else
    one level off."""
    from annotate.hazards import SEVERITIES

    inside = rng.random(items) < prev
    harmful = rng.random(items) < 1 / 3
    level = rng.integers(0, len(SEVERITIES), size=items)
    rows = []
    for i in range(items):
        for r in range(3):
            named = inside[i] if rng.random() < acc else not inside[i]
            sev = None
            if harmful[i]:
                off = 0 if rng.random() < 0.7 else int(rng.choice([-1, 1]))
                sev = SEVERITIES[int(np.clip(level[i] + off, 0, len(SEVERITIES) - 1))]
            rows.append((i, f"A{r + 1}", ["vcr"] if named else [], sev))
    return pd.DataFrame(rows, columns=["round_item_id", "annotator", "hazards", "severity"])


def part_hazard_agreement(R: int, n_boot: int, seed: int, quick: bool) -> list[dict]:
    """The intervals `annotate agreement` prints for a round routed with --ask-hazards: a category's alpha
    (chosen or not, nominal; the bootstrap's interval joined with the posterior over unit patterns, as since
    annotate-export/19) and severity's (ordinal), as ``stats.agreement.hazards.hazard_agreement`` gives them."""
    from annotate.hazards import SEVERITIES
    from annotate.stats.agreement.hazards import hazard_agreement

    regimes = {"few reviews (3 reviewers, 24 items, category in 25 %)": (24, 0.25)}
    if not quick:
        regimes["study (3 reviewers, 96 items, category in 1 of 12)"] = (96, 1 / 12)
        regimes["rare category (3 reviewers, 96 items, category in 3 %)"] = (96, 0.03)
        regimes["rare category, few reviews (3 reviewers, 48 items, category in 3 %)"] = (48, 0.03)
        regimes["very rare category (3 reviewers, 96 items, category in 1 %)"] = (96, 0.01)
    rows = []
    for label, (items, prev) in regimes.items():
        big = hazard_agreement(_hazard_answers(20_000, prev, np.random.default_rng(0)), ["vcr"], SEVERITIES, n_boot=0)
        truth = {
            "alpha per hazard category": big["hazards"][0]["alpha"],
            "alpha of severity (ordinal)": big["severity"]["alpha"],
        }
        rng = np.random.default_rng([seed, items, int(prev * 1000)])
        hits: dict[str, list[bool]] = {k: [] for k in truth}
        for rep in range(R):
            out = hazard_agreement(
                _hazard_answers(items, prev, rng), ["vcr"], SEVERITIES, n_boot=n_boot, seed=rep, interval="joined"
            )
            for k, got in (
                ("alpha per hazard category", out["hazards"][0]),
                ("alpha of severity (ordinal)", out["severity"]),
            ):
                lo, hi = got["alpha_ci"]
                if lo is not None and np.isfinite(lo):
                    hits[k].append(bool(lo <= truth[k] <= hi))
        for k, h in hits.items():
            rows.append(
                row(
                    "agreement",
                    k,
                    label,
                    "coverage",
                    float(np.mean(h)) if h else float("nan"),
                    len(h),
                    "coverage >= 0.95",
                    detail=f"interval printed in {len(h)} of {R}; truth {truth[k]:.3f}",
                    replicates=R,
                )
            )
    return rows


# --------------------------------------------------------------------------------------------
# Parts from the other benches: model rows, planning
# --------------------------------------------------------------------------------------------


def part_scores(R: int, draws: int, seed: int, quick: bool) -> list[dict]:
    rows = []
    mr = _bench_module("model_rows")
    fn = getattr(mr, "validity_rows", None)
    if fn is None:
        return [
            row(
                "scores",
                "model rows",
                "-",
                "coverage",
                float("nan"),
                0,
                "coverage >= 0.95",
                detail="bench/model_rows.py has no validity_rows",
                replicates=0,
            )
        ]
    for r in fn(replicates=R, draws=draws, seed=seed, quick=quick).to_dict("records"):
        rows.append(
            row(
                "scores",
                str(r["figure"]),
                str(r["regime"]),
                "coverage",
                float(r["coverage"]),
                int(r["n"]),
                str(r.get("promise", "coverage >= 0.95")),
                detail=str(r.get("detail", "")),
                replicates=int(r["replicates"]),
            )
        )
    return rows


def part_planning(R: int, seed: int, quick: bool) -> list[dict]:
    try:
        jp = _bench_module("judge_planning")
    except FileNotFoundError:
        jp = _bench_module("judge_models")
    fn = getattr(jp, "planning_rows", None)
    if fn is None:
        return [
            row(
                "planning",
                "plan --detect-se",
                "-",
                "power",
                float("nan"),
                0,
                "power >= promised",
                detail="no planning_rows",
                replicates=0,
            )
        ]
    out = []
    for r in fn(R, seed=seed).to_dict("records"):
        n = int(r["replicates"])
        out.append(
            row(
                "planning",
                "plan --detect-se",
                str(r["regime"]),
                "power",
                float(r["simulated"]),
                n,
                f"power >= {float(r['promised']):.2f}",
                detail=f"promised {float(r['promised']):.2f}",
                replicates=n,
            )
        )
    return out


def part_grades(R: int, draws: int, seed: int, quick: bool) -> list[dict]:
    """The grade's figures (bench/grades.py): the ratio's interval, the unmarked grade, P of the true grade."""
    gr = _bench_module("grades")
    out = []
    for r in gr.validity_rows(R, draws, seed=seed + 3, quick=quick).to_dict("records"):
        n = int(r["n"])
        measure = "coverage" if str(r["measure"]) == "coverage" else "reading"
        out.append(
            row("grades", str(r["figure"]), str(r["regime"]), measure, float(r["value"]), n, str(r["promise"]),
                detail=str(r["detail"]), replicates=int(r["replicates"]))
        )  # fmt: skip
    return out


def part_hazards(R: int, draws: int, seed: int, quick: bool) -> list[dict]:
    """``score --by hazard`` (bench/hazards.py): the corrected interval per (model, hazard), rows not estimable."""
    hz = _bench_module("hazards")
    out = []
    for r in hz.validity_rows(R, min(draws, 1000), seed=seed + 5, quick=quick).to_dict("records"):
        measure = "coverage" if str(r["measure"]) == "coverage" else "reading"
        out.append(
            row("hazards", str(r["figure"]), str(r["regime"]), measure, float(r["value"]), int(r["n"]),
                str(r["promise"]), detail=str(r["detail"]), replicates=int(r["replicates"]))
        )  # fmt: skip
    return out


# --------------------------------------------------------------------------------------------


def matrix(
    *,
    replicates: int,
    draws: int,
    seed: int = 41,
    parts: tuple[str, ...] = ("all",),
    quick: bool = False,
    regimes_like: str | None = None,
) -> pd.DataFrame:
    """The matrix (:data:`COLUMNS`) of the asked parts (``regimes_like``: the judge regimes whose name holds it)."""
    every = "all" in parts
    rows: list[dict] = []
    regimes = JUDGE_REGIMES
    if quick:
        keep = ("few reviews", "census", "routed 2,000, 20")
        regimes = {k: v for k, v in JUDGE_REGIMES.items() if k.startswith(keep)}
    if regimes_like:
        regimes = {k: v for k, v in regimes.items() if regimes_like in k}
    if every or "judges" in parts:
        rows += part_judges(replicates, draws, seed, regimes)
    if every or "tests" in parts:
        rows += part_tests(replicates, max(draws, 400), seed, quick)
    if every or "agreement" in parts:
        rows += part_agreement(replicates, 400 if quick else 1000, seed, quick)
        rows += part_hazard_agreement(replicates, 400 if quick else 1000, seed, quick)
    if every or "scores" in parts:
        rows += part_scores(replicates, draws, seed, quick)
    if every or "planning" in parts:
        rows += part_planning(replicates, seed, quick)
    if every or "grades" in parts:
        rows += part_grades(replicates, draws, seed, quick)
    if every or "hazards" in parts:
        rows += part_hazards(min(replicates, 100), draws, seed, quick)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def markdown(df: pd.DataFrame) -> str:
    lines = ["| figure | regime | measure | value (MCSE) | promise | holds | detail |", "|---|---|---|---|---|---|---|"]
    for r in df.itertuples(index=False):
        value = f"{r.value:.3f}" + (f" ({r.mcse:.3f})" if np.isfinite(r.mcse) else "")
        lines.append(
            f"| {r.figure} | {r.regime} | {r.measure} | {value} | {r.promise} | {'yes' if r.holds else '**no**'} "
            f"| {r.detail} |"
        )
    return "\n".join(lines)


DOC_HEAD = """# The validity matrix

Every interval and test annotate prints is a promise: a 95 % interval covers the value it
estimates in 95 % of rounds, a test at level 0.05 rejects a true null in at most 5 %, the
model test's q <= 0.10 keeps the false-discovery rate at 0.10, `plan` reaches the power it
promises. This page is the measured record of those promises in regimes chosen to break them
(issue #41): the study's own shape, few reviews per stratum, rare harm, labels no reviewed
response carries, reviewers who err, a census, routed designs. How the figures are made is in
[methods.md](methods.md) (9.7, 9.16, 9.18, 9.19, 9.20); how the regimes are simulated is in
`bench/validity.py` and `bench/judge_suites.py`.

A row **holds** when its value is on the promised side within 2 Monte-Carlo SE (MCSE: the
binomial SE of the measured share over the rows counted). For a figure measured per model, the
value is the lowest judge's and the detail gives the mean over judges; `zero width` is the share
of intervals of width 0 (a census is exact for its own responses, so only sampled designs count).

Reproduce (two cores: about {minutes} minutes in all):

```
{commands}
python bench/validity.py --table {csvs} --doc docs/validity.md
```

What the rows that do not hold mean, and what a reader does about them, is in methods.md 9.19
("The run of ..."). The fast test lane runs a small version of the judges, tests and agreement parts with loose
bounds on every run (`tests/test_validity_matrix.py`).
"""


def document(df: pd.DataFrame, *, stamp: str, commands: list[str], csvs: list[str], minutes: int) -> str:
    """docs/validity.md from the matrix: the head, a summary per part and regime, what fails, every row."""
    out = [DOC_HEAD.format(minutes=minutes, commands="\n".join(commands), csvs=" ".join(csvs)), f"Run: {stamp}.\n"]
    out += [
        "## Summary",
        "",
        "| part | regime | rows | hold | lowest coverage | highest level or FDR |",
        "|---|---|---|---|---|---|",
    ]
    for (part, regime), g in df.groupby(["part", "regime"], sort=False):
        cov = g[g.measure == "coverage"].value
        lvl = g[g.measure.isin(["level", "fdr"])].value
        out.append(
            f"| {part} | {regime} | {len(g)} | {int(g.holds.sum())} | {f'{cov.min():.3f}' if len(cov) else '-'} "
            f"| {f'{lvl.max():.3f}' if len(lvl) else '-'} |"
        )
    fails = df[~df.holds & ~df.promise.str.startswith("info")]
    out += ["", "## Rows that do not hold", ""]
    if fails.empty:
        out.append("None.")
    for r in fails.itertuples(index=False):
        out.append(f"- {r.figure} in {r.regime}: {r.measure} {r.value:.3f} (MCSE {r.mcse:.3f}) against {r.promise}.")
    out += ["", "## Every row", "", markdown(df), ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument(
        "--part",
        nargs="+",
        default=["all"],
        choices=["judges", "tests", "agreement", "scores", "planning", "grades", "hazards", "all"],
    )
    ap.add_argument("--quick", action="store_true", help="the fast lane's small matrix (QUICK replicates and draws)")
    ap.add_argument("--out", type=Path, default=None, help="also write the matrix as CSV")
    ap.add_argument("--regimes", default=None, help="only the judge regimes whose name contains this")
    ap.add_argument("--table", type=Path, nargs="+", default=None, help="print the matrix of these CSVs and stop")
    ap.add_argument("--doc", type=Path, default=None, help="with --table: write docs/validity.md from the CSVs")
    ap.add_argument("--stamp", default="", help="with --doc: the run's date, replicates and draws, as one line")
    ap.add_argument("--commands", nargs="*", default=[], help="with --doc: the command lines that made the CSVs")
    ap.add_argument("--minutes", type=int, default=60, help="with --doc: how long the commands took in all")
    args = ap.parse_args()
    if args.table:
        df = pd.concat([pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in args.table], ignore_index=True)
        df["detail"] = df["detail"].fillna("")
        if args.doc:
            names = [p.name for p in args.table]
            text = document(df, stamp=args.stamp, commands=args.commands, csvs=names, minutes=args.minutes)
            args.doc.write_text(text, encoding="utf-8")
            return
        print(markdown(df))
        return
    R, D = QUICK if args.quick else (args.replicates, args.draws)
    t0 = time.perf_counter()
    df = matrix(
        replicates=R, draws=D, seed=args.seed, parts=tuple(args.part), quick=args.quick, regimes_like=args.regimes
    )
    print(
        f"Validity matrix, {datetime.now(UTC).date().isoformat()}: {R} replicates, {D} draws, seed {args.seed}; "
        f"{time.perf_counter() - t0:.0f} s"
    )
    print(markdown(df))
    fails = df[~df.holds & ~df.promise.str.startswith("info")]
    print(f"\n{len(df)} rows; {len(fails)} do not hold their promise" + (":" if len(fails) else "."))
    for r in fails.itertuples(index=False):
        print(f"  {r.figure} in {r.regime}: {r.measure} {r.value:.3f} against {r.promise}")
    if args.out:
        df.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
