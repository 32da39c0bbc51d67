"""`annotate ingest`: benchmark output files into the store under the workspace's rubric."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.ingest import reader_module
from annotate.ingest.rubric import Rubric
from annotate.ingest.run import IngestOutcome, check_name_option, ingest_paths

if TYPE_CHECKING:
    from annotate.pipeline.session import Session


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
) -> list[IngestOutcome]:
    """Validate and ingest the files all-or-nothing (see ``annotate.ingest.run.ingest_paths``).

    The rubric is ``--rubric``, else ``[rubric] file`` of annotate.toml (relative to the
    workspace), else the shipped defaults.
    """
    if fmt != "auto":
        reader_module(fmt)  # validates the name before anything else
    for option, value in (("--model", model), ("--benchmark", benchmark), ("--judge", judge)):
        check_name_option(option, value)
    rubric_file: Path | None = rubric_path
    if rubric_file is None and s.ws.setting("rubric", "file"):
        rubric_file = Path(s.ws.setting("rubric", "file"))
        if not rubric_file.is_absolute():
            rubric_file = s.ws.root / rubric_file
    return ingest_paths(
        s.store,
        list(paths),
        on_file=on_file,
        fmt=fmt,
        rubric=Rubric.from_file(rubric_file),
        model=model,
        benchmark=benchmark,
        judge=judge,
        skip_invalid=skip_invalid,
        replace=replace,
        rejects_dir=s.ws.rejects_dir,
    )
