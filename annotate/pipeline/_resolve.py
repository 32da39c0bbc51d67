"""What several commands resolve the same way: which round, judge, annotators and label config.

Each lives here once, so every command answers a missing or ambiguous choice with the same
message.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annotate.columns import describe_judges
from annotate.errors import InputError, StateError, WorkspaceError
from annotate.labelstudio import TECHNICAL, blinding
from annotate.labelstudio.labelconfig import parse_label_config
from annotate.stats.ordering import OrderDesign

if TYPE_CHECKING:
    import pandas as pd

    from annotate.config import Workspace
    from annotate.db import Store
    from annotate.labelstudio.labelconfig import LabelConfig


def resolve_judge(store: Store, judge: str | None) -> str:
    """The judge whose labels a command uses: the one given, or the store's only judge."""
    judges = store.judges()
    if not judges:
        raise StateError("the store holds no responses: run `annotate ingest` first.")
    if judge is None:
        if len(judges) > 1:
            raise InputError(
                f"the store holds verdicts of several judges ({', '.join(judges)}); choose one with --judge."
            )
        return judges[0]
    if judge not in judges:
        raise InputError(f"no responses judged by {judge!r}; judges: {', '.join(judges)}")
    return judge


@dataclass(frozen=True)
class RoutingJudges:
    """Whose labels a new round routes: one judge for every benchmark, or each benchmark's own.

    ``judge`` is the one judge's name, or for a round across suites ``describe_judges(judges)``
    ("B1=J1, B2=J2"); ``judges`` is then {benchmark: judge}. ``notes``: benchmarks left out and why.
    """

    judge: str
    judges: dict[str, str] | None = None
    notes: list[str] = field(default_factory=list)


#: Judges that are never a round's default (their failures are not harm); see ``Store.judge_kinds``.
NOT_ROUTED_BY_DEFAULT = ("quality",)


def resolve_routing_judges(store: Store, given: Sequence[str]) -> RoutingJudges:
    """The routing judge(s) of a new round from ``--judge`` values (none, ``JUDGE``, ``BENCHMARK=JUDGE``...).

    Without ``--judge``, each benchmark is routed on its only judge (quality judges aside); when
    every benchmark has the same one, that is a one-judge round exactly as before. ``JUDGE`` alone
    routes that judge's rows only (every benchmark it judged). ``BENCHMARK=JUDGE`` names the judge
    of one benchmark (repeat it); with a ``JUDGE`` beside it, that judge routes the others it judged.
    """
    pairs = store.judge_kinds()
    if not len(pairs):
        raise StateError("the store holds no responses: run `annotate ingest` first.")
    mixed = pairs[pairs.duplicated(["benchmark", "judge"], keep=False)]
    if len(mixed):
        b, j = str(mixed.benchmark.iloc[0]), str(mixed.judge.iloc[0])
        raise StateError(
            f"judge {j!r} of benchmark {b!r} has responses of several kinds ({', '.join(map(str, mixed.kind))}); "
            "re-ingest its files with one rubric (`annotate ingest --replace`) before routing."
        )
    known: dict[str, list[str]] = {}
    for b, j in zip(pairs.benchmark.astype(str), pairs.judge.astype(str), strict=True):
        known.setdefault(b, []).append(j)
    # Each (benchmark, judge)'s kind: safety, refusal or quality (``columns.JUDGE_KINDS``).
    kinds: dict[tuple[str, str], str] = {}
    for b, j, k in zip(pairs.benchmark.astype(str), pairs.judge.astype(str), pairs["kind"].astype(str), strict=True):
        kinds[(b, j)] = k
    plain: list[str] = []
    mapped: dict[str, str] = {}
    for value in given:
        bench, sep, name = value.partition("=")
        if sep and bench.strip() in known:
            bench, name = bench.strip(), name.strip()
            if bench in mapped and mapped[bench] != name:
                raise InputError(f"--judge {value!r}: benchmark {bench!r} is already routed on {mapped[bench]!r}.")
            if name not in known[bench]:
                raise InputError(
                    f"--judge {value!r}: no responses of benchmark {bench!r} judged by {name!r}; its judges: "
                    f"{', '.join(known[bench])}."
                )
            mapped[bench] = name
        else:
            plain.append(value)
    if len(plain) > 1:
        raise InputError(
            f"--judge given {len(plain)} judges ({', '.join(map(repr, plain))}) for every benchmark; give one, "
            f"and BENCHMARK=JUDGE for a benchmark's own (benchmarks: {', '.join(known)})."
        )
    if plain:
        one = resolve_judge(store, plain[0])
        if not mapped:
            left = sorted(b for b, js in known.items() if one not in js)
            notes = [f"benchmark(s) without verdicts of {one!r}, not in this round: {', '.join(left)}."] if left else []
            routed = {b: one for b, js in known.items() if one in js}
            return RoutingJudges(one, None, notes + _quality_notes(routed, kinds))
        for b, js in known.items():
            if b not in mapped and one in js:
                mapped[b] = one
    else:
        several = {}
        for b, js in known.items():
            if b in mapped:
                continue
            usable = [j for j in js if kinds.get((b, j), "safety") not in NOT_ROUTED_BY_DEFAULT]
            if len(usable) == 1:
                mapped[b] = usable[0]
            elif usable:
                several[b] = usable
        if several:
            first_b, first_js = next(iter(several.items()))
            listed = "; ".join(f"{b}: {', '.join(js)}" for b, js in several.items())
            raise InputError(
                f"benchmark(s) with verdicts of several judges ({listed}); choose the judge of each with "
                f"--judge BENCHMARK=JUDGE (e.g. --judge {first_b}={first_js[0]}), or one judge for all with "
                "--judge JUDGE."
            )
    notes = []
    left = sorted(set(known) - set(mapped))
    if left:
        why = "; ".join(f"{b} (judges {_judged(known[b], b, kinds)})" for b in left)
        notes.append(f"benchmark(s) not in this round: {why}. Name a judge with --judge BENCHMARK=JUDGE to route one.")
    if not mapped:
        raise InputError(f"no benchmark has a judge to route by; {notes[0] if notes else ''}".strip())
    notes += _quality_notes(mapped, kinds)
    only = next(iter(mapped.values()))
    if set(mapped.values()) == {only} and not any(only in known[b] for b in left):
        # Every routed benchmark on one judge, and no other rows of it: a one-judge round, as before.
        return RoutingJudges(only, None, notes)
    return RoutingJudges(describe_judges(mapped), dict(sorted(mapped.items())), notes)


def _quality_notes(routed: dict[str, str], kinds: dict[tuple[str, str], str]) -> list[str]:
    """What routing on a quality judge means (it was named: a default never is one)."""
    return [
        f"{j} of {b} is a quality judge (its failures are not harm): its labels only make the strata; reviewers "
        "judge harm as always."
        for b, j in sorted(routed.items())
        if kinds.get((b, j)) in NOT_ROUTED_BY_DEFAULT
    ]


def _judged(judges: list[str], benchmark: str, kinds: dict[tuple[str, str], str]) -> str:
    return ", ".join(f"{j} ({kinds.get((benchmark, j), 'safety')})" for j in judges)


def round_judges(round_row: dict[str, Any]) -> dict[str, str] | None:
    """A round's judge per benchmark ({benchmark: judge}, its ``judges`` column); None: ``judge`` for all."""
    value = round_row.get("judges")
    return None if not value else {str(b): str(j) for b, j in json.loads(value).items()}


def round_order(round_row: dict[str, Any]) -> OrderDesign | None:
    """How a round orders its reviewers' tasks (its ``task_order`` column); None: routed before orders were
    recorded (an independent order keyed by the items' ext_ids, which no export can re-derive)."""
    value = round_row.get("task_order")
    return None if not value else OrderDesign.from_record(json.loads(value))


def review_round_names(store: Store) -> list[str]:
    rounds = store.rounds()
    if not len(rounds):
        return []
    return [str(n) for n in rounds.loc[rounds.kind == "review", "name"]]


def resolve_round(store: Store, name: str | None) -> dict[str, Any]:
    """The round row for ``--round`` (or the only review round when it is omitted)."""
    if name is None:
        return resolve_rounds(store, ())[0]
    row = store.get_round(name)
    if row is None:
        known = ", ".join(review_round_names(store)) or "none"
        raise InputError(f"no round named {name!r} (rounds: {known})")
    return row


def resolve_rounds(store: Store, names: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    """The round rows for a repeatable ``--round`` (default: the only review round)."""
    known = review_round_names(store)
    if names:
        rows = []
        for n in names:
            row = store.get_round(n)
            if row is None or row.get("kind") != "review":
                raise InputError(f"no round named {n!r} (rounds: {', '.join(known) or 'none'})")
            rows.append(row)
        return rows
    if not known:
        raise StateError("no review round yet: route one with `annotate route --round NAME ...`.")
    if len(known) > 1:
        raise InputError(f"several rounds exist ({', '.join(known)}); choose one with --round.")
    row = store.get_round(known[0])
    assert row is not None
    return [row]


def rounds_to_score(store: Store, names: tuple[str, ...] | list[str]) -> list[str]:
    """The names of the rounds a score, judge audit or export covers (``--round``, default the only one)."""
    return [str(r["name"]) for r in resolve_rounds(store, names)]


def resolve_annotators(store: Store, names: list[str], *, role: str | None = None) -> pd.DataFrame:
    """The store's rows of the named annotators (pseudonyms or e-mails), in the order given."""
    import pandas as pd

    table = store.annotators()
    if table.empty:
        raise StateError("no annotators yet: add them with `annotate annotators add EMAIL`.")
    out = []
    for name in names:
        hit = table[(table.pseudonym == name) | (table.email.str.lower() == name.lower())]
        if hit.empty:
            raise InputError(f"unknown annotator {name!r}; known: {', '.join(table.pseudonym)}")
        out.append(hit.iloc[0])
    if len({a.pseudonym for a in out}) != len(out):
        raise InputError("an annotator is named twice")
    return pd.DataFrame(out).reset_index(drop=True)


def load_label_config(ws: Workspace) -> LabelConfig:
    """The workspace's label_config.xml, parsed and checked."""
    path = ws.label_config_path
    try:
        xml = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WorkspaceError(f"{path} is missing; `annotate init` restores the default.") from None
    return parse_label_config(xml, source=str(path))


def round_lock(store: Store, round_name: str) -> AbstractContextManager[None]:
    """The lock that keeps route, pull and adjudicate of one round from running at the same time.

    They all read and then add a round's projects, tasks and annotations; two at once could pin
    a user twice, import a task twice or write history twice.
    """
    return store.exclusive(
        f"round:{round_name}",
        message=f"another route, pull or adjudication of round {round_name} is running; try again when it has finished",
    )


def round_blinding(ws: Workspace, round_row: dict[str, Any] | None) -> str:
    """How a round sent to a server now is blinded: as recorded when it first reached one, else
    the workspace's way (``labelstudio.blinding``)."""
    recorded = round_row.get("blinding") if round_row is not None else None
    return str(recorded) if isinstance(recorded, str) and recorded else blinding(ws)


def blinded_owner(round_blinding: str, pseudonym: str) -> str | None:
    """Whose own server a person's project of a round so blinded lives on (None: the shared server)."""
    return pseudonym if round_blinding == TECHNICAL else None
