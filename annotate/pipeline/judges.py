"""`annotate judges`: how far to trust each judge, several judges side by side (``audit.judges``).

The audit record of the rounds is built from the store (``pipeline.record``); the computation is
the one an export's judges.csv and judge_pairs.csv are re-derived with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from annotate.audit.judges import BY, estimand_statement, judges_from_record, judges_payload
from annotate.errors import InputError
from annotate.pipeline._resolve import rounds_to_score
from annotate.pipeline.record import record_from_store
from annotate.stats.judge_models import DEFAULT_FDR

if TYPE_CHECKING:
    from annotate.pipeline.session import Session

__all__ = ["BY", "judges"]


def judges(
    s: Session,
    *,
    round_names: tuple[str, ...] = (),
    by: str = "benchmark",
    draws: int = 4000,
    seed: int = 0,
    confidence: float = 0.95,
    fdr: float = DEFAULT_FDR,
    estimand: str = "responses",
) -> dict[str, Any]:
    """`annotate judges`: every judge's design-weighted figures on the rounds, ranked and compared.

    Raises ``InputError`` for an unknown grouping or round and for settings out of range.
    """
    if by not in BY:
        raise InputError(f"--by must be one of {', '.join(BY)}; it is {by!r}.")
    if draws < 0:
        raise InputError(f"--draws must be 0 or more; it is {draws}.")
    if not 0.5 <= confidence < 1:
        raise InputError(f"the confidence must be in [0.5, 1); it is {confidence}.")
    if not 0 < fdr < 1:
        raise InputError(f"--fdr must be between 0 and 1 (e.g. 0.10); it is {fdr}.")
    rounds = rounds_to_score(s.store, round_names)
    record = record_from_store(s.store, rounds)
    try:
        audit = judges_from_record(
            record, by=(by,), draws=draws, seed=seed, confidence=confidence, fdr=fdr, estimand=estimand
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    report = judges_payload(audit, rounds=rounds, by=(by,))
    # What the figures describe: these responses (finite; under a census nothing is left to draw)
    # or the judges on prompts like these.
    report["estimand"] = {"name": estimand, **estimand_statement(audit)}
    # What each judge's verdicts are about (schema v11): a quality judge's "harmful" is a failed grade, not harm.
    kinds = s.store.judge_kinds()
    named = {str(r["judge"]) for r in report.get("judges", [])}
    report["judge_kinds"] = {
        str(j): sorted(set(g.kind)) for j, g in kinds.groupby("judge", sort=True) if str(j) in named
    }
    return report
