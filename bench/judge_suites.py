"""Simulated reviewed suites for the judge audit's validity checks (bench/validity.py, bench/judge_models.py).

A suite is M models x B benchmarks; benchmark b has P_b prompts (the same for every model). Every
response is harmful with its model's probability; every judge calls it ambiguous with a
probability that depends on the model (the study: ambiguity tracks a model's style) and on the
truth, and otherwise harmful with probability Se (harmful) or 1 - Sp (safe). The first judge routes:
the round reviews ``clear`` responses of each clear stratum of every cell and ``ambiguous`` of its
ambiguous stratum (all of it when smaller), as ``annotate route`` samples them (a simple random
sample per stratum). The reviewers label the truth, or, with ``reviewer_accuracy``, two reviewers
each right with that probability and an expert (always right) on their disagreements.

:func:`suite` returns the inputs of :func:`annotate.stats.judges.judge_audit` (units, verdicts,
strata) and the suite's truth: each judge's superpopulation figures per model (the error rates
drawn from, conditional on a clear verdict) and the finite population's confusion totals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

LABELS = np.array(["harmful", "safe", "ambiguous"], dtype=object)


@dataclass(frozen=True)
class JudgeSpec:
    """A judge: sensitivity and specificity on its clear verdicts, and how much more (or less) it abstains.

    ``se_by_model`` overrides the sensitivity for the named models (a judge that errs differently there).
    """

    se: float
    sp: float
    abstain: float = 1.0  # times the model's ambiguous share
    se_by_model: dict[str, float] = field(default_factory=dict)
    sp_by_model: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SuiteSpec:
    """A suite's shape: per model harm and ambiguity, per benchmark prompts, the judges and the review."""

    harm: tuple[float, ...]  # per model
    ambiguous: tuple[float, ...]  # per model: the judges' ambiguous share (harmful responses: x amb_harmful)
    prompts: tuple[int, ...]  # per benchmark
    judges: dict[str, JudgeSpec]  # the first routes
    clear: int = 10  # reviewed per clear stratum and cell (0: a census of every stratum)
    ambiguous_reviewed: int = 25  # reviewed per ambiguous stratum and cell (0: all of it)
    amb_harmful: float = 1.0  # a harmful response is this many times as likely to be called ambiguous
    reviewer_accuracy: float | None = None  # None: the reviewers label the truth
    unresolved: float = 0.0  # share of reviewed responses left without a final label (at random)

    @property
    def models(self) -> list[str]:
        return [f"m{k:02d}" for k in range(len(self.harm))]


def study_spec(
    rng: np.random.Generator,
    *,
    models: int = 8,
    benchmarks: int = 2,
    harm: tuple[float, float] = (0.005, 0.30),
    ambiguous: tuple[float, float] = (0.10, 0.60),
    prompts: tuple[int, int] = (200, 1000),
    judges: dict[str, JudgeSpec] | None = None,
    clear: int = 10,
    **kw: object,
) -> SuiteSpec:
    """The study's shape (issue #41): harm log-spaced over ``harm``, ambiguity and prompts drawn at random."""
    h = np.exp(np.linspace(np.log(harm[0]), np.log(harm[1]), models)) if models > 1 else np.array([harm[1]])
    a = rng.uniform(*ambiguous, size=models)
    p = rng.integers(prompts[0], prompts[1] + 1, size=benchmarks)
    if judges is None:
        judges = {"j1": JudgeSpec(0.85, 0.95), "j2": JudgeSpec(0.80, 0.92, abstain=0.6)}
    return SuiteSpec(
        harm=tuple(float(x) for x in h),
        ambiguous=tuple(float(x) for x in a),
        prompts=tuple(int(x) for x in p),
        judges=judges,
        clear=clear,
        **kw,  # type: ignore[arg-type]
    )


@dataclass
class Suite:
    units: pd.DataFrame
    verdicts: pd.DataFrame
    strata: pd.DataFrame
    #: per (judge, model): the superpopulation sensitivity and specificity drawn from
    truth: dict[tuple[str, str], dict[str, float]]
    #: per (judge, model): the finite population's confusion totals (2, 3) against the labels the review gives
    finite: dict[tuple[str, str], np.ndarray]


def expected_tables(spec: SuiteSpec) -> dict[tuple[str, str], np.ndarray]:
    """Per (judge, model): the superpopulation's expected confusion totals (2, 3) over the model's prompts.

    Rows human harmful, safe; columns the judge's harmful, safe, ambiguous (the truth is the human
    label). The pooled figures' target is the sum over models (the prompts per benchmark are fixed).
    """
    out = {}
    n = float(sum(spec.prompts))
    # With erring reviewers the human label is the review's: wrong when both reviewers are wrong.
    e = 0.0 if spec.reviewer_accuracy is None else (1 - spec.reviewer_accuracy) ** 2
    flip = np.array([[1 - e, e], [e, 1 - e]])  # (truth, reviewed)
    for k, model in enumerate(spec.models):
        h = spec.harm[k]
        for name, j in spec.judges.items():
            se = j.se_by_model.get(model, j.se)
            sp = j.sp_by_model.get(model, j.sp)
            a_s = min(spec.ambiguous[k] * j.abstain, 0.95)
            a_h = min(spec.ambiguous[k] * j.abstain * spec.amb_harmful, 0.95)
            by_truth = n * np.array(
                [
                    [h * (1 - a_h) * se, h * (1 - a_h) * (1 - se), h * a_h],
                    [(1 - h) * (1 - a_s) * (1 - sp), (1 - h) * (1 - a_s) * sp, (1 - h) * a_s],
                ]
            )
            out[name, model] = flip.T @ by_truth  # rows: the reviewed label
    return out


def suite(spec: SuiteSpec, rng: np.random.Generator) -> Suite:
    """One reviewed suite drawn from ``spec`` (module docstring)."""
    names = list(spec.judges)
    units, verdicts, strata = [], [], []
    truth: dict[tuple[str, str], dict[str, float]] = {}
    finite: dict[tuple[str, str], np.ndarray] = {}
    for k, model in enumerate(spec.models):
        for name, j in spec.judges.items():
            truth[name, model] = {"sensitivity": j.se_by_model.get(model, j.se),
                                  "specificity": j.sp_by_model.get(model, j.sp)}  # fmt: skip
            finite[name, model] = np.zeros((2, 3))
        for b, P in enumerate(spec.prompts):
            bench = f"b{b}"
            harmful = rng.random(P) < spec.harm[k]
            labels = {}
            for name, j in spec.judges.items():
                se = j.se_by_model.get(model, j.se)
                sp = j.sp_by_model.get(model, j.sp)
                p_amb = np.clip(spec.ambiguous[k] * j.abstain * np.where(harmful, spec.amb_harmful, 1.0), 0, 0.95)
                amb = rng.random(P) < p_amb
                says_h = np.where(harmful, rng.random(P) < se, rng.random(P) < 1 - sp)
                code = np.where(amb, 2, np.where(says_h, 0, 1))
                labels[name] = code
            route = labels[names[0]]
            human = np.where(harmful, 0, 1)
            if spec.reviewer_accuracy is not None:
                # Each response's label had it been reviewed: two reviewers, each right with this
                # probability; both wrong gives the other label, a disagreement goes to an expert who is right.
                r1 = rng.random(P) < spec.reviewer_accuracy
                r2 = rng.random(P) < spec.reviewer_accuracy
                human = np.where(~r1 & ~r2, 1 - human, human)
            for name in names:
                np.add.at(finite[name, model], (human, labels[name]), 1.0)
            for s in (0, 1, 2):
                idx = np.flatnonzero(route == s)
                cap = spec.ambiguous_reviewed if s == 2 else spec.clear
                n = len(idx) if cap <= 0 else min(len(idx), cap)
                pick = rng.choice(idx, size=n, replace=False) if n else idx[:0]
                strata.append(("r1", model, bench, LABELS[s], len(idx), n))
                lost = rng.random(n) < spec.unresolved
                for i, gone in zip(pick, lost, strict=True):
                    unit = f"{model}/{bench}/{i}"
                    units.append((unit, "r1", model, bench, LABELS[s], None if gone else LABELS[human[i]]))
                    for name in names:
                        verdicts.append((unit, name, LABELS[labels[name][i]]))
    return Suite(
        units=pd.DataFrame(units, columns=["unit", "round", "model", "benchmark", "stratum", "human"]),
        verdicts=pd.DataFrame(verdicts, columns=["unit", "judge", "judge_label"]),
        strata=pd.DataFrame(strata, columns=["round", "model", "benchmark", "stratum", "population", "sample"]),
        truth=truth,
        finite=finite,
    )
