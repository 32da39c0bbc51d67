"""`annotate gold`: mark round items whose correct verdict is known (for annotator accuracy)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.columns import VERDICTS
from annotate.errors import InputError
from annotate.pipeline._resolve import resolve_round

if TYPE_CHECKING:
    from annotate.pipeline.session import Session


def set_gold(s: Session, round_name: str, path: Path) -> int:
    """Mark round items whose correct verdict is known (CSV: model, benchmark, prompt_id[, epoch], gold_label).

    Every row must match an item of the round and carry harmful / safe / unsure; otherwise
    nothing is written and every problem is listed.
    """
    store = s.store
    round_row = resolve_round(store, round_name)
    items = store.round_items(int(round_row["id"]))
    key = {
        (str(r.model), str(r.benchmark), str(r.prompt_id), int(r.epoch)): int(r.round_item_id)
        for r in items.itertuples()
    }
    problems: list[str] = []
    labels: dict[int, str] = {}
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            missing = [
                c for c in ("model", "benchmark", "prompt_id", "gold_label") if c not in (reader.fieldnames or [])
            ]
            if missing:
                raise InputError(f"{path}:1: missing column(s) {', '.join(missing)}")
            for row in reader:
                line = reader.line_num
                label = (row.get("gold_label") or "").strip().lower()
                if label not in VERDICTS:
                    problems.append(
                        f"{path}:{line}: gold_label {row.get('gold_label')!r} is not harmful, safe or unsure"
                    )
                    continue
                try:
                    epoch = int(row.get("epoch") or 0)
                except ValueError:
                    problems.append(f"{path}:{line}: epoch {row.get('epoch')!r} is not an integer")
                    continue
                item = key.get((row["model"], row["benchmark"], row["prompt_id"], epoch))
                if item is None:
                    problems.append(
                        f"{path}:{line}: ({row['model']}, {row['benchmark']}, {row['prompt_id']}, {epoch}) "
                        f"is not a response of round {round_row['name']!r}"
                    )
                    continue
                labels[item] = label
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    if problems:
        raise InputError(f"{path}: {len(problems)} problem(s); no gold label was set.", problems[:20])
    store.set_gold(int(round_row["id"]), labels)
    return len(labels)
