"""What several commands resolve the same way: which round, judge, annotators and label config.

Each lives here once, so every command answers a missing or ambiguous choice with the same
message.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from annotate.errors import InputError, StateError, WorkspaceError
from annotate.labelstudio import TECHNICAL, blinding
from annotate.labelstudio.labelconfig import parse_label_config

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
