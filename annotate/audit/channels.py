"""How each label arrived, counted per round and person (annotate-export/13 on).

A label reaches the store by one of ``annotate.columns.CHANNELS``: pulled from a Label Studio
server, read from a Label Studio export file (``pull --from-file``), or imported from a table of
labels (``import-labels``); labels stored before the store recorded it (schema 15) are
``unrecorded``. The export says it twice, so that verify can hold one against the other:

* labels.csv's ``channels`` column, per row: every answer's channel, ``WHO=CHANNEL`` joined by
  ``;`` in the order of the row's answers (the round's reviewers in their column order, then the
  expert whose answer decided the item); empty when no answer is in. A skip is an answer (the
  reviewer's vote is in, without a label) and is counted.
* design.json's round ``channels``: per channel, ``answers`` (the round's total), ``by`` (per
  person), ``blinding`` (what the people who answered by it could see and whether they were kept
  apart, in words) and, for files and tables, ``sha256`` (the files the answers in force came
  from, sorted; not re-derivable, pinned by the manifest).

``channel_summary`` derives the round's ``channels`` from the rows' cells; verify re-derives it from
labels.csv (:func:`channel_problems`) and fails on any difference, and on a blinding statement
that is not the one its channel and the round's blinding give.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from annotate.columns import BLINDING_NOTES, CHANNEL_BLINDING, CHANNEL_SERVER, CHANNELS

if TYPE_CHECKING:
    import pandas as pd

    from annotate.audit.design import Design

__all__ = [
    "channel_blinding",
    "check_channels",
    "channel_cell",
    "channel_doc_problems",
    "channel_problems",
    "channel_summary",
    "parse_channel_cell",
]

#: An item's image in labels.csv: ``<sha256>.<ext>`` (annotate.ingest.media).
_IMAGE_NAME = re.compile(r"[0-9a-f]{64}\.(png|jpg|gif|webp)")
#: The channels whose answers come from a file (its sha256 listed).
_FILED = ("file", "import")


def channel_cell(answers: Iterable[tuple[str, str]]) -> str:
    """labels.csv's ``channels`` cell of one row: ``WHO=CHANNEL`` per answer, in order.

    >>> channel_cell([("A1", "server"), ("A2", "file")])
    'A1=server;A2=file'
    >>> channel_cell([])
    ''
    """
    return ";".join(f"{who}={channel}" for who, channel in answers)


def parse_channel_cell(text: str | None) -> list[tuple[str, str]] | str:
    """The (who, channel) answers of a ``channels`` cell, or why it is not one.

    >>> parse_channel_cell("A1=server;E1=file")
    [('A1', 'server'), ('E1', 'file')]
    >>> parse_channel_cell("A1=post")
    "channel 'post' of A1 is not one of server, file, import, unrecorded"
    """
    if text is None or text == "":
        return []
    out: list[tuple[str, str]] = []
    for part in text.split(";"):
        who, eq, channel = part.partition("=")
        if not eq or not who:
            return f"{part!r} is not WHO=CHANNEL"
        if channel not in CHANNELS:
            return f"channel {channel!r} of {who} is not one of {', '.join(CHANNELS)}"
        out.append((who, channel))
    return out


def channel_blinding(channel: str, round_blinding: str | None) -> str:
    """What the people who answered by ``channel`` could see and whether they were kept apart.

    A server's is the round's own blinding (``columns.BLINDING_NOTES``); a round never sent to a
    server has none to state.

    >>> channel_blinding("server", "technical").startswith("technical: every reviewer")
    True
    """
    if channel == CHANNEL_SERVER:
        if round_blinding in BLINDING_NOTES:
            return f"{round_blinding}: {BLINDING_NOTES[round_blinding]}"
        return "a Label Studio server; the round records no blinding"
    return CHANNEL_BLINDING[channel]


def channel_summary(
    cells: Iterable[str | None], round_blinding: str | None, files: Mapping[str, Iterable[str]] | None = None
) -> dict[str, dict[str, Any]]:
    """design.json's round ``channels`` from the round's labels.csv cells.

    Parameters
    ----------
    cells : iterable of str or None
        The round's ``channels`` cells (one per row).
    round_blinding : str or None
        The round's ``blinding``.
    files : mapping of channel to iterable of sha256, optional
        The files the answers in force came from (from the store; verify passes None and does not
        compare them).

    Returns
    -------
    dict
        ``{channel: {"answers": n, "by": {who: n}, "blinding": text[, "sha256": [...]]}}``, channels
        in ``CHANNELS`` order, people sorted; only channels with answers.

    >>> channel_summary(["A1=server;A2=file", "A1=server"], "technical")["server"]["by"]
    {'A1': 2}
    """
    by: dict[str, dict[str, int]] = {}
    for cell in cells:
        parsed = parse_channel_cell(cell)
        if isinstance(parsed, str):
            raise ValueError(parsed)
        for who, channel in parsed:
            counts = by.setdefault(channel, {})
            counts[who] = counts.get(who, 0) + 1
    out: dict[str, dict[str, Any]] = {}
    for channel in CHANNELS:
        if channel not in by:
            continue
        entry: dict[str, Any] = {
            "answers": sum(by[channel].values()),
            "by": dict(sorted(by[channel].items())),
            "blinding": channel_blinding(channel, round_blinding),
        }
        if channel in _FILED and files is not None:
            entry["sha256"] = sorted(set(files.get(channel, ())))
        out[channel] = entry
    return out


def channel_doc_problems(where: str, doc: Any) -> list[str]:
    """The form of a round's ``channels`` in design.json (its counts are checked against labels.csv)."""
    if not isinstance(doc, dict):
        return [f"{where}.channels must be an object of channel: counts."]
    problems: list[str] = []
    for channel, entry in doc.items():
        at = f"{where}.channels.{channel}"
        if channel not in CHANNELS:
            problems.append(f"{at}: not a channel ({', '.join(CHANNELS)}).")
            continue
        if not isinstance(entry, dict):
            problems.append(f"{at} must be an object.")
            continue
        answers, by = entry.get("answers"), entry.get("by")
        if type(answers) is not int or answers < 0:
            problems.append(f"{at}.answers must be a whole number.")
        if not isinstance(by, dict) or not all(type(n) is int and n > 0 for n in by.values()):
            problems.append(f"{at}.by must map each person to a positive count.")
        elif type(answers) is int and sum(by.values()) != answers:
            problems.append(f"{at}: by sums to {sum(by.values())}, answers says {answers}.")
        if not isinstance(entry.get("blinding"), str):
            problems.append(f"{at}.blinding must be text.")
        sha = entry.get("sha256")
        if sha is not None and not (
            isinstance(sha, list) and all(isinstance(x, str) and len(x) == 64 for x in sha) and sha == sorted(set(sha))
        ):
            problems.append(f"{at}.sha256 must be a sorted list of distinct sha256 digests.")
    return problems


def channel_problems(
    round_name: str,
    recorded: Mapping[str, Any] | None,
    cells: Sequence[str | None],
    answers: Sequence[Sequence[str]],
    lines: Sequence[int],
    round_blinding: str | None,
    *,
    imported: bool = False,
) -> list[str]:
    """Problems of one round's ``channels`` cells and design.json's summary of them (empty when consistent).

    ``answers``: per row, who has an answer in labels.csv (the reviewers' columns that are not empty,
    and the expert of an expert answer), in the cell's order. Each cell must name exactly them, and
    the summary re-derived from the cells must equal design.json's (answers, by, blinding). An
    imported round's answers all came from its table.
    """
    found: list[str] = []
    for cell, who, line in zip(cells, answers, lines, strict=True):
        parsed = parse_channel_cell(cell)
        if isinstance(parsed, str):
            found.append(f"labels.csv:{line}: channels {cell!r}: {parsed}.")
            continue
        named = [w for w, _ in parsed]
        if named != list(who):
            found.append(
                f"labels.csv:{line}: channels names {', '.join(named) or 'nobody'}; the row's answers are by "
                f"{', '.join(who) or 'nobody'}."
            )
        elif imported and any(channel != "import" for _, channel in parsed):
            found.append(f"labels.csv:{line}: channels {cell!r} in round {round_name}, whose labels were imported.")
    if found:
        return found
    again = channel_summary(cells, round_blinding)
    mine = {c: {k: v for k, v in e.items() if k != "sha256"} for c, e in dict(recorded or {}).items()}
    if mine != again:
        return [
            f"design.json: round {round_name}'s channels {_said(mine)}; labels.csv's channels give {_said(again)} "
            "(with each channel's blinding statement)."
        ]
    return []


def _said(summary: Mapping[str, Any]) -> str:
    if not summary:
        return "none"
    return ", ".join(
        f"{c} {e.get('answers')} ({', '.join(f'{w} {n}' for w, n in dict(e.get('by') or {}).items())})"
        for c, e in summary.items()
    )


def check_channels(labels: pd.DataFrame, lines: Sequence[int], design: Design) -> list[str]:
    """Problems of labels.csv's ``channels`` against its answers and design.json's ``channels`` (annotate-export/13).

    Every round's rows (``lines``: their line numbers) are checked by :func:`channel_problems`: a
    row's answers are its reviewers' non-empty columns in the round's order, then its ``expert``.
    The ``image`` column (same schema) names an item's image by its hash or is empty.
    """
    problems: list[str] = [
        f"labels.csv:{line}: image {name!r} is not <sha256>.<png|jpg|gif|webp> (the item's image by its hash)."
        for name, line in zip(labels["image"], lines, strict=False)
        if name is not None and not _IMAGE_NAME.fullmatch(str(name))
    ][:20]
    for rnd in design.rounds:
        mask = (labels["round"] == rnd.round).to_numpy()
        rows = labels.loc[mask]
        at = [line for line, keep in zip(lines, mask, strict=False) if keep]
        votes = rows[list(rnd.annotators)].to_numpy(dtype=object)  # (n, J): only the columns needed
        experts = rows["expert"].tolist()
        answers = [
            [a for a, v in zip(rnd.annotators, row, strict=True) if v is not None] + ([e] if e else [])
            for row, e in zip(votes, experts, strict=True)
        ]
        problems += channel_problems(
            rnd.round, rnd.channels, rows["channels"].tolist(), answers, at, rnd.blinding, imported=rnd.imported
        )
    return problems
