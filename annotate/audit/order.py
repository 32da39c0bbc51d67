"""order.csv: the order each reviewer was given the round's tasks in (annotate-export/8 on).

One row per (round, reviewer, reviewed response): its ``position`` in the reviewer's queue (1 is
the first task they saw), its ``block`` (the design's block, 1, 2, ... in the shared order;
empty in an independent order), the response's key and the ambiguity ``priority`` it was ordered
by (empty without ``route --prioritize``). It is part of the audit record: what each reviewer was
shown when, so that order effects can be studied and the design's promise (independent orders
within a block, the same blocks for everyone) is checked.

:func:`check_order` checks the table against labels.csv and design.json and re-derives every
position and block of a round that records its order design (``stats.ordering.review_order`` of
the round's seed, the items' keys and waves, and the priorities), so an order that is not the
design's fails. A round routed before orders were recorded (design.json ``order`` null) is
checked for its form only: each reviewer's positions a permutation of 1..n over the round's items.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.audit.safecsv import parse_csv
from annotate.audit.schema import listed
from annotate.stats.ordering import OrderDesign, item_key, review_order

if TYPE_CHECKING:
    from annotate.audit.design import Design

__all__ = ["ORDER_COLUMNS", "check_order", "empty_order", "order_rows", "read_order"]

#: order.csv's columns.
ORDER_COLUMNS = ("round", "annotator", "position", "block", "model", "benchmark", "prompt_id", "epoch", "priority")
_KEY = ("model", "benchmark", "prompt_id", "epoch")


def empty_order() -> pd.DataFrame:
    return pd.DataFrame(columns=list(ORDER_COLUMNS))


def read_order(data: bytes) -> tuple[pd.DataFrame, list[int]]:
    """order.csv as a frame of text cells (empty cells None) and each row's line number."""
    table = parse_csv(data, "order.csv")
    frame = table.frame()
    return frame.where(frame != "", None), table.lines


def _whole(value: Any) -> int | None:
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return None
    return number if str(number) == str(value).strip() else None


def _priority(value: Any) -> float | None:
    """A priority cell: None when empty, NaN when it is no number."""
    if value is None:
        return None
    try:
        number = float(str(value))
    except ValueError:
        return math.nan
    return number if math.isfinite(number) else math.nan


def check_order(order: pd.DataFrame, lines: list[int], labels: pd.DataFrame, design: Design) -> list[str]:
    """Problems of order.csv against labels.csv and design.json (empty when it is the design's order).

    Checks: exactly :data:`ORDER_COLUMNS`; one row per (round, reviewer of the round in
    design.json, response of the round in labels.csv) and no other; positions 1..n per reviewer;
    one priority per response, a number or empty, the same for every reviewer; and, in every round
    whose ``order`` design.json records, every position and block re-derived from the design.
    """
    if list(order.columns) != list(ORDER_COLUMNS):
        return [
            f"order.csv: the columns are {', '.join(map(str, order.columns)) or '(none)'}; an export has "
            f"{', '.join(ORDER_COLUMNS)}."
        ]

    def line(i: int) -> str:
        return f"order.csv:{lines[i]}" if i < len(lines) else "order.csv"

    found: list[str] = []
    rounds = {r.round: r for r in design.rounds}
    items: dict[str, dict[tuple[str, ...], int]] = {}  # round -> key -> wave
    for rnd, *cells, wave in zip(labels["round"], *(labels[c] for c in _KEY), labels["wave"], strict=True):
        items.setdefault(str(rnd), {})[tuple(str(c) for c in cells)] = _whole(wave) or 0
    rows: dict[tuple[str, str], dict[tuple[str, ...], tuple[int, int | None, int | None, float | None]]] = {}
    for i, rec in enumerate(order.to_dict("records")):
        rnd, who = str(rec["round"]), str(rec["annotator"])
        key = tuple(str(rec[c]) for c in _KEY)
        what = f"{key[0]} x {key[1]}, prompt {key[2]!r}, epoch {key[3]}"
        if rnd not in rounds:
            found.append(f"{line(i)}: round {rnd!r} is not in design.json.")
            continue
        if who not in rounds[rnd].annotators:
            found.append(f"{line(i)}: {who!r} is not a reviewer of round {rnd} (design.json's annotators).")
            continue
        if key not in items.get(rnd, {}):
            found.append(f"{line(i)}: {what} is not a reviewed response of round {rnd} in labels.csv.")
            continue
        position, block = _whole(rec["position"]), _whole(rec["block"]) if rec["block"] is not None else None
        if position is None or position < 1:
            found.append(f"{line(i)}: position {rec['position']!r} is not a whole number from 1.")
            continue
        if rec["block"] is not None and (block is None or block < 1):
            found.append(f"{line(i)}: block {rec['block']!r} is not a whole number from 1 (or empty).")
            continue
        priority = _priority(rec["priority"])
        if priority is not None and math.isnan(priority):
            found.append(f"{line(i)}: priority {rec['priority']!r} is not a number (or empty).")
            continue
        mine = rows.setdefault((rnd, who), {})
        if key in mine:
            found.append(f"{line(i)}: {who} has {what} of round {rnd} twice.")
            continue
        mine[key] = (position, block, i, priority)
    problems: list[str] = []
    listed(problems, found, "rows of order.csv that do not fit labels.csv and design.json")
    if problems:
        return problems
    for rnd in design.rounds:
        keys = sorted(items.get(rnd.round, {}))
        for who in rnd.annotators:
            mine = rows.get((rnd.round, who), {})
            # A routed round gives every response to every reviewer; an imported one gives each rater
            # the items the file has them rate (its own pairing: rotating pairs of a team).
            if not rnd.imported and len(mine) != len(keys):
                found.append(
                    f"order.csv: {who} has {len(mine)} task(s) of round {rnd.round}; labels.csv has {len(keys)} "
                    "reviewed responses, each given to every reviewer."
                )
                continue
            positions = sorted(v[0] for v in mine.values())
            if positions != list(range(1, len(mine) + 1)):
                found.append(f"order.csv: {who}'s positions in round {rnd.round} are not 1 to {len(mine)}, each once.")
        if rnd.imported:
            rated = {k for who in rnd.annotators for k in rows.get((rnd.round, who), {})}
            unrated = [k for k in keys if k not in rated]
            if unrated:
                k = unrated[0]
                found.append(
                    f"order.csv: {k[0]} x {k[1]}, prompt {k[2]!r} of imported round {rnd.round} is nobody's task "
                    f"({len(unrated)} response(s) so); each came in with its raters."
                )
        priorities: dict[tuple[str, ...], set[float | None]] = {}
        for who in rnd.annotators:
            for k, (_, _, _, p) in rows.get((rnd.round, who), {}).items():
                priorities.setdefault(k, set()).add(p)
        differ = [k for k, ps in priorities.items() if len(ps) > 1]
        if differ:
            k = differ[0]
            found.append(
                f"order.csv: {k[0]} x {k[1]}, prompt {k[2]!r} of round {rnd.round} has different priorities for its "
                f"reviewers ({len(differ)} response(s) so); an item is ordered by one priority."
            )
        if found or rnd.order is None:
            if rnd.order is None:
                blocked = [v for who in rnd.annotators for v in rows.get((rnd.round, who), {}).values() if v[1]]
                if blocked:
                    found.append(
                        f"order.csv: round {rnd.round} records no order design, but {len(blocked)} row(s) name a block."
                    )
            continue
        found += _rederive(rnd.round, rnd.seed, OrderDesign.from_record(rnd.order), keys, items, rows, rnd, line)
    listed(problems, found, "problems of order.csv")
    return problems


def _rederive(
    name: str,
    seed: int,
    design: OrderDesign,
    keys: list[tuple[str, ...]],
    items: dict[str, dict[tuple[str, ...], int]],
    rows: dict[tuple[str, str], dict[tuple[str, ...], tuple[int, int | None, int | None, float | None]]],
    rnd: Any,
    line: Any,
) -> list[str]:
    """Each reviewer's positions and blocks of one round against :func:`review_order` of its design."""
    found: list[str] = []
    text = [item_key(*k) for k in keys]
    waves = np.array([items[name][k] for k in keys], dtype=np.int64)
    first = rows[(name, rnd.annotators[0])] if rnd.annotators else {}
    priority = np.array([np.nan if first[k][3] is None else first[k][3] for k in keys], dtype=np.float64)
    for who in rnd.annotators:
        mine = rows[(name, who)]
        queue, block = review_order(seed, who, text, waves, design, priority)
        wrong = 0
        for place, j in enumerate(queue.tolist(), start=1):
            position, got_block, i, _ = mine[keys[j]]
            want_block = int(block[j]) or None
            if position != place or got_block != want_block:
                if wrong < 3:
                    k = keys[j]
                    found.append(
                        f"{line(i)}: {who}'s task {k[0]} x {k[1]}, prompt {k[2]!r} is at position {position}"
                        f"{'' if got_block is None else f', block {got_block}'}; round {name}'s order design "
                        f"({design.describe()}, seed {seed}) puts it at {place}"
                        f"{'' if want_block is None else f', block {want_block}'}."
                    )
                wrong += 1
        if wrong > 3:
            found.append(
                f"order.csv: ... {wrong - 3} more of {who}'s tasks in round {name} are out of the design's order."
            )
    return found


def order_rows(round_name: str, reviewer: str, tasks: pd.DataFrame, block_of: dict[int, int] | None) -> pd.DataFrame:
    """order.csv's rows of one reviewer's project: ``tasks`` (round_item_id, position, model, benchmark,
    prompt_id, epoch, priority) ranked by their stored position; ``block_of``: round_item_id -> block."""
    ranked = tasks.sort_values("position", kind="mergesort").reset_index(drop=True)
    return pd.DataFrame(
        {
            "round": round_name,
            "annotator": reviewer,
            "position": np.arange(1, len(ranked) + 1),
            "block": [None if block_of is None else block_of.get(int(i)) for i in ranked.round_item_id],
            "model": ranked.model.to_numpy(),
            "benchmark": ranked.benchmark.to_numpy(),
            "prompt_id": ranked.prompt_id.to_numpy(),
            "epoch": ranked.epoch.to_numpy(),
            "priority": [None if p is None or p != p else float(p) for p in ranked.priority],
        }
    )
