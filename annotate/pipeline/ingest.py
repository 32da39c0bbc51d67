"""`annotate ingest`: benchmark output files (and folders of them) into the store under the workspace's rubric.

A folder given on the command line is walked (``collect_files``): every file in it and its
subfolders, in sorted order, is offered to the readers, and the files a reader recognises are
ingested as if they had been named one by one. Files no reader recognises (an index such as
JailbreakBench's ``attack-info.json``, HarmBench's ``test_cases/``, logs, pictures) are
skipped and reported through ``on_skip`` with the reason; hidden files and folders (``.git``,
``.annotate``) and links to folders are not walked, and are reported the same way. A file named
on the command line is never skipped: it is ingested or refused, as before; so is a folder with
no results file in it.

Column maps (``--map`` and annotate.toml's ``[ingest.map]``, ``column_map.column_maps``) are read
and checked before any file is: a table no reader claims is read through the map in force for it,
in a walked folder too.
"""

from __future__ import annotations

import codecs
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.errors import InputError
from annotate.fileio import sha256_file
from annotate.hazards import default_lookup, table_entries
from annotate.hazards import read_table as read_hazard_table
from annotate.ingest import detect_file, reader_module
from annotate.ingest.formats.column_map import ColumnMaps, column_maps, parse_map_option
from annotate.ingest.media import ImageStore
from annotate.ingest.outcome import IngestOutcome
from annotate.ingest.prompt_facets import PromptFacets, read_prompts
from annotate.ingest.records import check_encoding, parse_names_option
from annotate.ingest.rubric import Rubric
from annotate.ingest.run import check_name_option, ingest_paths

if TYPE_CHECKING:
    from annotate.pipeline.session import Session

#: What ``on_skip`` is called with: the skipped path and why it was skipped (a full sentence).
SkipCallback = Callable[[Path, str], None]


@dataclass
class Collected:
    """The files to ingest from the command line's paths, and the entries of walked folders left out."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    walked: bool = False  # some path was a folder


def collect_files(paths: Iterable[Path], fmt: str = "auto", maps: ColumnMaps | None = None) -> Collected:
    """The files to ingest: each file as given, and the results files found in each folder.

    A folder's files are those a reader claims (``fmt``: only its reader's), and the tables a
    column map of ``maps`` is in force for; the others, hidden entries and links to folders are
    listed in ``skipped`` with why. A folder with no results file at all stays in ``files`` as it
    is, so that the ingest refuses it (all or nothing) with the other paths' problems.
    """
    collected = Collected()
    paths = [Path(p) for p in paths]
    # A file named on the command line is not taken a second time from a folder that holds it.
    seen = {Path(os.path.abspath(p)) for p in paths if not p.is_dir()}
    for path in paths:
        if not path.is_dir():
            collected.files.append(path)
            continue
        collected.walked = True
        found = 0
        for candidate, reason in _walk(path):
            if reason is not None:
                collected.skipped.append((candidate, reason))
                continue
            try:
                detect_file(candidate, fmt, mapped=_mapped(maps, candidate))
            except InputError as exc:
                collected.skipped.append((candidate, _reason(candidate, exc)))
                continue
            found += 1
            key = Path(os.path.abspath(candidate))
            if key in seen:  # a folder given twice, or a file named alone and inside a folder
                continue
            seen.add(key)
            collected.files.append(candidate)
        if not found:
            # Nothing to ingest from it, which is not what was asked: the folder itself goes on, to
            # be refused with the other paths' problems ("is a directory; pass the files in it").
            collected.files.append(path)
    return collected


def _mapped(maps: ColumnMaps | None, path: Path) -> bool:
    """Whether a column map is in force for the file (two maps matching it: yes, so that its ingest says so)."""
    if maps is None:
        return False
    try:
        return maps.for_path(path) is not None
    except InputError:
        return True


def _walk(root: Path) -> Iterable[tuple[Path, str | None]]:
    """(path, None) for every regular file under ``root`` in sorted order; (path, reason) for what is not walked."""
    unreadable: list[OSError] = []
    for folder, dirnames, filenames in os.walk(root, onerror=unreadable.append, followlinks=False):
        while unreadable:
            exc = unreadable.pop()
            yield Path(exc.filename or folder), f"a folder that cannot be read ({exc.strerror or exc})"
        base = Path(folder)
        kept = []
        for name in sorted(dirnames):
            sub = base / name
            if name.startswith("."):
                yield sub, "a hidden folder (not walked)"
            elif sub.is_symlink():
                yield sub, "a link to a folder (not followed; name the folder itself to ingest it)"
            else:
                kept.append(name)
        dirnames[:] = kept  # os.walk descends into these only, in this order
        for name in sorted(filenames):
            file = base / name
            if name.startswith("."):
                yield file, "a hidden file (not read)"
            else:
                yield file, None
    for exc in unreadable:
        yield Path(exc.filename or root), f"a folder that cannot be read ({exc.strerror or exc})"


def _reason(path: Path, exc: InputError) -> str:
    """The detection error without the path it starts with (the caller shows the path)."""
    message = str(exc)
    prefix = f"{path}: "
    return message[len(prefix) :] if message.startswith(prefix) else message


@dataclass
class FormatTotals:
    """One format's share of an ingest: its files and their rows, for a one-line summary."""

    format: str
    files: int = 0
    rows_read: int = 0
    added: int = 0
    duplicates: int = 0
    replaced: int = 0
    rejected: int = 0
    set_aside: int = 0
    labels: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "files": self.files,
            "rows_read": self.rows_read,
            "added": self.added,
            "duplicates": self.duplicates,
            "replaced": self.replaced,
            "rejected": self.rejected,
            "set_aside": self.set_aside,
            "labels": dict(self.labels),
        }


def totals_by_format(outcomes: Iterable[IngestOutcome]) -> list[FormatTotals]:
    """The outcomes added up per format, in the order the formats first appear."""
    by_format: dict[str, FormatTotals] = {}
    for o in outcomes:
        t = by_format.setdefault(o.format, FormatTotals(o.format))
        t.files += 1
        t.rows_read += o.rows_read
        t.added += o.added
        t.duplicates += o.duplicates
        t.replaced += o.replaced
        t.rejected += o.rejected
        t.set_aside += o.set_aside
        t.labels.update(o.labels)
    return list(by_format.values())


def ingest(
    s: Session,
    paths: list[Path],
    *,
    fmt: str = "auto",
    rubric_path: Path | None = None,
    model: str | None = None,
    benchmark: str | None = None,
    judge: str | None = None,
    skip_invalid: bool = False,
    replace: bool = False,
    on_file: Callable[[Path], Callable[[int], None] | None] | None = None,
    on_skip: SkipCallback | None = None,
    allow_written_back: bool = False,
    column_map: Iterable[str] = (),
    max_values: int | None = None,
    keep_degenerate: bool = False,
    encoding: str | None = None,
    names: Iterable[str] = (),
    empty_as: str = "set-aside",
    no_judge: bool = False,
    fetch_images: bool = False,
    prompts: Path | None = None,
    hazard_map: Path | None = None,
) -> list[IngestOutcome]:
    """Validate and ingest the files all-or-nothing (see ``annotate.ingest.run.ingest_paths``).

    A folder among ``paths`` stands for the results files in it (``collect_files``); each
    entry it leaves out is passed to ``on_skip(path, reason)`` before anything is ingested.
    The rubric is ``--rubric``, else ``[rubric] file`` of annotate.toml (relative to the
    workspace), else the shipped defaults. ``allow_written_back``: read Inspect logs that
    ``annotate writeback`` wrote (their human labels, as the judge ``human-review:<judge>``).
    ``column_map``: the texts of ``--map`` (``FIELD=COLUMN,...``), over annotate.toml's
    ``[ingest.map]``; both are checked before any file is read. ``max_values`` (``--max-values``):
    the most values one JSON text of the files may parse to (``annotate.json_bound``).
    ``keep_degenerate`` (``--keep-degenerate``): keep empty and error responses as responses
    (``annotate.ingest.degenerate``) instead of setting them aside; ``empty_as`` (``--empty-as``):
    ``safe`` stores blank ones as safe with the reason ``blank-as-safe`` (AILuminate's rule). ``names``: the texts of
    ``--names`` (``FIELD:RAW=NAME,...``): a model's or benchmark's name for an id the files hold.
    ``no_judge`` (``--no-judge``): the files' responses are stored unjudged (``annotate.columns.NO_JUDGE``),
    any verdict column kept as metadata (without it, a table with no verdict column is refused).
    ``fetch_images`` (``--fetch-images``): an ``image`` that is an http(s) URL is downloaded; the
    images are copied into the workspace's media/ folder (``annotate.ingest.media``).
    ``prompts`` (``--prompts``): a table of the prompts' hazard, persona and locale by prompt id
    (``annotate.ingest.prompt_facets``); ``hazard_map`` (``--hazard-map``): a table of category =
    hazard code over the shipped ones and annotate.toml's ``[ingest.hazard_map]`` (``annotate.hazards``).
    """
    value_names = parse_names_option(list(names))
    if fmt != "auto":
        reader_module(fmt)  # validates the name before anything else
    if encoding is not None:
        problem = check_encoding(encoding)
        if problem is not None:
            raise InputError(problem)
        encoding = None if codecs.lookup(encoding).name == "utf-8" else encoding
    for option, value in (("--model", model), ("--benchmark", benchmark), ("--judge", judge)):
        check_name_option(option, value)
    if no_judge and judge is not None:
        raise InputError("--judge names the judge of a file's verdicts and --no-judge says it has none: give one")
    rubric_file: Path | None = rubric_path
    if rubric_file is None and s.ws.setting("rubric", "file"):
        rubric_file = Path(s.ws.setting("rubric", "file"))
        if not rubric_file.is_absolute():
            rubric_file = s.ws.root / rubric_file
    rubric = Rubric.from_file(rubric_file)
    maps = column_maps(
        parse_map_option(list(column_map)), s.ws.settings.get("ingest"), config=s.ws.config_path, root=s.ws.root
    )
    facets = prompt_facets(s.ws.settings.get("ingest"), prompts, hazard_map, config=s.ws.config_path)
    collected = collect_files(paths, fmt, maps)
    if on_skip is not None:
        for path, reason in collected.skipped:
            on_skip(path, reason)
    return ingest_paths(
        s.store,
        collected.files,
        on_file=on_file,
        fmt=fmt,
        rubric=rubric,
        model=model,
        benchmark=benchmark,
        judge=judge,
        skip_invalid=skip_invalid,
        replace=replace,
        rejects_dir=s.ws.rejects_dir,
        allow_written_back=allow_written_back,
        column_maps=maps,
        max_values=max_values,
        keep_degenerate=keep_degenerate,
        encoding=encoding,
        value_names=value_names,
        empty_as=empty_as,
        no_judge=no_judge,
        images=ImageStore(s.ws.media_dir, fetch=fetch_images),
        facets=facets,
    )


def prompt_facets(ingest_settings: Any, prompts: Path | None, hazard_map: Path | None, *, config: Path) -> PromptFacets:
    """The hazard lookup (shipped tables, annotate.toml's ``[ingest.hazard_map]``, then ``--hazard-map``)
    and the prompts table, checked before any file is read."""
    own: dict[str, str] = {}
    section = ingest_settings.get("hazard_map") if isinstance(ingest_settings, dict) else None
    try:
        if section is not None:
            own.update(table_entries(section, f"{config}: [ingest.hazard_map]"))
        if hazard_map is not None:
            own.update(read_hazard_table(hazard_map))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    facets = PromptFacets(default_lookup(own), own=own)
    if prompts is not None:
        facets.prompts = read_prompts(prompts)
        facets.table = prompts
        facets.table_sha256 = sha256_file(prompts)
    return facets
