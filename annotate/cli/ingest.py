"""`annotate ingest`: benchmark output into the store under one rubric."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from annotate.cli._format import WIDTH, wrapped
from annotate.cli._options import echo_json, open_session, workspace_options
from annotate.columns import EMPTY_AS, JUDGE_LABELS, NO_JUDGE

if TYPE_CHECKING:
    from annotate.ingest.outcome import IngestOutcome


def _ingest_epilog() -> str:
    return (
        "\b\nFormats (--format; auto-detected by default):\n"
        "  generic         .jsonl/.csv/.parquet: model, benchmark, prompt_id, prompt, response, judge_label\n"
        "  harmbench       HarmBench results/completions JSON\n"
        "  jailbreakbench  JailbreakBench attack artifacts and evaluation JSON\n"
        "  inspect         Inspect AI logs (.json, .eval)\n"
        "  lm-eval         lm-evaluation-harness samples_*.jsonl\n"
        "  promptfoo       promptfoo eval -o json export\n"
        "  garak           garak report .jsonl\n"
        "  xstest          XSTest completion CSVs (v2, v1)\n"
        "  strongreject    StrongREJECT evaluate_dataset output (.csv/.jsonl/.parquet)\n"
        "  ailuminate      AILuminate-shaped table (prompt file columns, SUT, Response, is_safe)\n"
        "\n\b\nRubric presets (--rubric-preset; chosen by themselves where the file names the scorer):\n"
        f"{_presets_help()}\n"
        "\n\b\nExamples:\n"
        "  annotate ingest runs/*.jsonl\n"
        "  annotate ingest results/                       # a results folder: every file a reader claims\n"
        "  annotate ingest results/llama-3-8b.json --format harmbench --model llama-3-8b\n"
        "  annotate ingest judged.csv --rubric rubric.toml --skip-invalid\n"
        "  annotate ingest logs/agentharm.eval --rubric-preset agentharm\n"
        "  annotate ingest runs.csv --map prompt=prompt_text,response=raw_response,judge_label=harmful \\\n"
        "                           --benchmark house-runner   # any table, its columns mapped\n"
        "  annotate ingest two_raters.csv --no-judge --map prompt_id=id --benchmark text   # human labels, no judge\n"
        "  annotate ingest multimodal.csv --map image=image_path   # each row's image, shown to reviewers\n"
        "  annotate ingest results/qwen.json --format harmbench --prompts harmbench_behaviors_text_all.csv\n"
        "                           # hazards from HarmBench's behaviours table (SemanticCategory)\n"
    )


def hazard_line(counts: Any) -> str:
    """``hazards: vcr 120, ncr 80, (own) misinformation_disinformation 12``: AILuminate's first, others marked."""
    from annotate.hazards import taxonomy

    tax = taxonomy()
    known = [(c, n) for c, n in counts.most_common() if c in tax.hazards or c in tax.subs]
    own = [(c, n) for c, n in counts.most_common() if not (c in tax.hazards or c in tax.subs)]
    parts = [f"{c} {n:,}" for c, n in known][:14] + [f"{c} {n:,} (not AILuminate's)" for c, n in own][:6]
    more = len(known) + len(own) - len(parts)
    return "hazards: " + ", ".join(parts) + (f", and {more} more" if more > 0 else "")


def _presets_help() -> str:
    from annotate.errors import InputError
    from annotate.ingest.rubric import load_preset, preset_names

    lines = []
    for name in preset_names():
        try:
            text = load_preset(name).description
        except InputError as exc:  # a broken preset must not break every command's help
            text = f"(unusable: {exc})"
        lines.append(f"  {name:18s}{text}")
    return "\n".join(lines)


class _IngestCommand(click.Command):
    """`annotate ingest`, whose epilog lists the rubric presets: read from their files only when the
    help is shown, not on every command's start (loading them took 0.05 s)."""

    _epilog: str | None = None

    @property
    def epilog(self) -> str:
        if self._epilog is None:
            self._epilog = _ingest_epilog()
        return self._epilog

    @epilog.setter
    def epilog(self, value: str | None) -> None:
        self._epilog = value


@click.command(cls=_IngestCommand)
# readable=False: the ingest itself says why a path cannot be read (a FIFO, a loop, permissions).
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, readable=False))
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    metavar="FORMAT",
    help="Input format (see below), or auto to detect it.",
)
@click.option("--benchmark", default=None, help="Benchmark name (overrides the file).")
@click.option("--model", default=None, help="Model name (overrides the file; needed where the file has none).")
@click.option("--judge", default=None, help="Judge name (overrides the file).")
@click.option(
    "--map",
    "column_map",
    multiple=True,
    metavar="FIELD=COLUMN,...",
    help="Read any table (CSV, JSONL, Parquet): the file's column that holds each field of the generic schema "
    "(model, benchmark, prompt_id, prompt, response, judge_label, judge, judge_score, category, epoch, messages, "
    "image), "
    "e.g. --map prompt=forbidden_prompt,response=answer; over [ingest.map] of annotate.toml. Without a prompt_id, "
    "one is made from the prompt's hash. A field made of several columns: --map prompt_id=case_id+prompt_type "
    "(their values joined with ':').",
)
@click.option(
    "--names",
    "names",
    multiple=True,
    metavar="FIELD:RAW=NAME,...",
    help="A model's or benchmark's name for an id the file holds, e.g. --names model:0=Llama-2-7b-chat-hf; "
    "what was renamed, and any id never seen, is said on the ingest line.",
)
@click.option(
    "--rubric",
    "rubric_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML file mapping raw verdicts to harmful/safe/ambiguous, over the defaults.",
)
@click.option(
    "--rubric-preset",
    "rubric_preset",
    default=None,
    metavar="NAME",
    help="A shipped rubric for a known scorer (listed below), instead of the one chosen from the file.",
)
@click.option(
    "--skip-invalid", is_flag=True, help="Ingest the valid rows; write the others, with reasons, to rejects/."
)
@click.option("--replace", is_flag=True, help="Overwrite rows whose key exists with other content (history is kept).")
@click.option(
    "--allow-written-back",
    is_flag=True,
    help="Read Inspect logs written by `annotate writeback` (refused otherwise): their human labels become "
    "the judge human-review:<judge>, never the judge's own verdicts.",
)
@click.option(
    "--max-values",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Parse JSON texts of up to N values each (keys included), for a genuine file over the bounds: by "
    "default 1,000,000 in a JSON Lines line, an archive's sample or a field holding JSON, and 10,000,000 in a "
    "whole document. Each value may take about 100 bytes of memory.",
)
@click.option(
    "--keep-degenerate",
    is_flag=True,
    help="Keep empty, whitespace-only and error-text responses as responses under the judge's verdict "
    "(recorded in the run); by default they are set aside, counted per model and kept in rejects/.",
)
@click.option(
    "--empty-as",
    "empty_as",
    type=click.Choice(EMPTY_AS),
    default=EMPTY_AS[0],
    show_default=True,
    help="Blank responses (empty or whitespace only): set aside and counted per model, or stored as safe whatever "
    "the judge said, each row journaled with the reason blank-as-safe (MLCommons AILuminate's rule, for comparison "
    "with its grades). Error texts are set aside either way.",
)
@click.option(
    "--encoding",
    default=None,
    metavar="NAME",
    help="The text encoding of the files when not UTF-8 (e.g. mac_roman for Excel on a Mac, cp1252, latin-1); "
    "recorded in the run.",
)
@click.option(
    "--no-judge",
    "no_judge",
    is_flag=True,
    help="No judge labelled the responses (a table of human labels, or completions): store them unjudged (review "
    "alone labels them; no judge is invented); a verdict column the file has is kept as metadata.",
)
@click.option(
    "--fetch-images",
    "fetch_images",
    is_flag=True,
    help="Download the items' images named by http(s) URL (the image field) into the workspace; without it a "
    "URL is refused (paths beside the file are always copied).",
)
@click.option(
    "--prompts",
    "prompts",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="TABLE",
    help="A table of the prompts' hazard, persona and locale by prompt id (HarmBench's behaviours CSV: BehaviorID, "
    "SemanticCategory; AILuminate's prompt file: Release_prompt_id, Hazard, Persona, Locale; or prompt_id, hazard, "
    "persona, locale): each response it lists takes them where the file gives none.",
)
@click.option(
    "--hazard-map",
    "hazard_map",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="FILE",
    help="A TOML [map] of category = hazard code over the shipped HarmBench and JailbreakBench tables and "
    "annotate.toml's [ingest.hazard_map] (docs/formats.md, Hazards).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@workspace_options
def ingest(
    ctx: click.Context,
    paths: tuple[Path, ...],
    fmt: str,
    benchmark: str | None,
    model: str | None,
    judge: str | None,
    rubric_path: Path | None,
    rubric_preset: str | None,
    skip_invalid: bool,
    replace: bool,
    allow_written_back: bool,
    as_json: bool,
    column_map: tuple[str, ...] = (),
    max_values: int | None = None,
    keep_degenerate: bool = False,
    encoding: str | None = None,
    names: tuple[str, ...] = (),
    no_judge: bool = False,
    fetch_images: bool = False,
    empty_as: str = "set-aside",
    prompts: Path | None = None,
    hazard_map: Path | None = None,
) -> None:
    """Read benchmark results into the store, mapping every verdict under one rubric.

    Each file is validated before anything is written; the command is all-or-nothing: a
    malformed row, a missing field, an unknown verdict or a conflicting key prints
    Error: FILE:LINE: ... for every problem and exits 2 with the store unchanged. Ingesting
    the same file twice adds nothing.
    """
    from annotate.pipeline.ingest import ingest as do_ingest

    if empty_as == "safe" and keep_degenerate:
        from annotate.errors import InputError

        raise InputError(
            "--empty-as safe and --keep-degenerate disagree on blank responses (safe, or under the judge's "
            "verdict); choose one."
        )

    if rubric_preset is not None:
        from annotate.errors import InputError
        from annotate.ingest.rubric import preset_path

        if rubric_path is not None:
            raise InputError(
                f"--rubric and --rubric-preset cannot be combined; to build on the preset, write "
                f'presets = ["{rubric_preset}"] at the top of {rubric_path} and pass --rubric alone.'
            )
        # The preset's own file: the rubric reads it as that preset in force (recorded as preset:NAME).
        rubric_path = preset_path(rubric_preset)

    bars: list[Any] = []
    skipped: list[tuple[Path, str]] = []

    def on_file(path: Path) -> Callable[[int], None] | None:
        for bar in bars:
            bar.render_finish()
        bars.clear()
        try:
            if not sys.stderr.isatty() or not path.is_file():
                return None
            size = path.stat().st_size
        except OSError:  # the ingest itself says what is wrong with the path
            return None
        bar = click.progressbar(
            length=size, label=_shown(path.name)[:40], file=sys.stderr, show_eta=True, show_percent=True
        )
        bars.append(bar)
        done = [0]

        def tick(nbytes: int) -> None:
            bar.update(nbytes - done[0])
            done[0] = nbytes

        return tick

    try:
        with open_session(ctx) as s:
            outcomes = do_ingest(
                s,
                list(paths),
                on_file=on_file,
                fmt=fmt,
                rubric_path=rubric_path,
                model=model,
                benchmark=benchmark,
                judge=judge,
                skip_invalid=skip_invalid,
                replace=replace,
                on_skip=lambda p, why: skipped.append((p, why)),
                allow_written_back=allow_written_back,
                column_map=column_map,
                max_values=max_values,
                keep_degenerate=keep_degenerate,
                encoding=encoding,
                names=names,
                no_judge=no_judge,
                fetch_images=fetch_images,
                empty_as=empty_as,
                prompts=prompts,
                hazard_map=hazard_map,
            )
    finally:
        for bar in bars:
            bar.render_finish()
    if as_json:
        echo_json([o.to_dict() for o in outcomes])
        return
    if any(p.is_dir() for p in paths):
        _describe_by_format(outcomes, skipped)
        return
    for o in outcomes:
        click.echo(_describe_outcome(o))


def _describe_by_format(outcomes: list[IngestOutcome], skipped: list[tuple[Path, str]]) -> None:
    """A results folder: one line per format, what was skipped, and the rubric notes per file."""
    from annotate.pipeline.ingest import totals_by_format

    for t in totals_by_format(outcomes):
        labels = ", ".join(f"{t.labels.get(k, 0)} {k}" for k in JUDGE_LABELS)
        parts = [f"[{t.format}] {t.files} file(s): {t.rows_read} rows read; {t.added} added"]
        if t.duplicates:
            parts.append(f"{t.duplicates} already present")
        if t.replaced:
            parts.append(f"{t.replaced} replaced (old values kept in history)")
        if t.rejected:
            parts.append(f"{t.rejected} rejected -> rejects/")
        if t.set_aside:
            parts.append(f"{t.set_aside} set aside -> rejects/")
        click.echo("; ".join(parts) + f".\n  labels: {labels}")
    for o in outcomes:
        notes = [*map(_shown, o.notes), *map(_shown, kind_lines(o.kinds)), *_rubric_lines(o)]
        if notes:
            click.echo(f"{_shown(o.path.name)}:" + "".join(f"\n  {text}" for text in notes))
    if skipped:
        names = ", ".join(_shown(str(p)) for p, _ in skipped[:5])
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        click.echo(f"{len(skipped)} file(s) skipped (not results, hidden, or links): {names}{more}.")


def _shown(text: str) -> str:
    """A file name for the terminal: control characters (an ANSI escape, a carriage return) escaped."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def _describe_outcome(o: IngestOutcome) -> str:
    labels = ", ".join(f"{o.labels.get(k, 0)} {k}" for k in JUDGE_LABELS)
    if o.kinds and all(kind == "quality" for kind, _ in o.kinds.values()):
        # A quality judge's harmful label is a failed grade, its safe label a passed one: not harm.
        labels = f"{o.labels.get('harmful', 0)} failed, {o.labels.get('safe', 0)} passed, " + (
            f"{o.labels.get('ambiguous', 0)} ambiguous (a quality judge's grades, not harm)"
        )
    # Every reason, so that they add up to the ambiguous count ("mapped": the rubric maps the verdict to ambiguous).
    extra = [
        f"{n} {'mapped to ambiguous' if r == 'mapped' else r}" for r, n in sorted(o.ambiguous_reasons.items()) if n
    ]
    parts = [f"{_shown(o.path.name)} [{o.format}]: {o.rows_read} rows read; {o.added} added"]
    if o.duplicates:
        parts.append(f"{o.duplicates} already present")
    if o.replaced:
        parts.append(f"{o.replaced} replaced (old values kept in history)")
    if o.rejected:
        parts.append(f"{o.rejected} rejected -> {_shown(str(o.rejects_path))}")
    if o.set_aside:
        parts.append(f"{o.set_aside} set aside -> {_shown(str(o.set_aside_path))}")
    line = "; ".join(parts) + "."
    if o.set_aside:
        line += f"\n  set aside: {set_aside_reasons(o)}"
    said = f"labels: {labels}" + (f" (ambiguous because: {', '.join(extra)})" if extra else "")
    line += "\n" + "\n".join(wrapped(said, "    ", first="  "))
    blank = o.reasons.get("blank-as-safe", 0)
    if blank:
        line += (
            f"\n  blank responses: {blank} stored as safe whatever the judge said (--empty-as safe, AILuminate's "
            "rule; each row's reason is blank-as-safe)"
        )
    if o.images:
        line += f"\n  images: {o.images} row(s) with an image, copied into media/ under the sha256 of its bytes"
    if o.hazards:
        line += f"\n  {_shown(hazard_line(o.hazards))}"
    if o.facets_filled:
        line += (
            f"\n  {o.facets_filled:,} response(s) already stored without their prompt's hazard, persona or locale "
            "took them from this file"
        )
    line += "".join(f"\n  {_shown(text)}" for text in o.notes)  # what the reader said about the file
    line += "".join(f"\n  {_shown(text)}" for text in kind_lines(o.kinds))
    line += "".join(f"\n  {text}" for text in _rubric_lines(o))
    if o.added == 0 and o.replaced == 0 and o.duplicates:
        line += "\n  nothing new: every row was already in the store."
    return line


def set_aside_reasons(o: IngestOutcome) -> str:
    """Why the file's rows were set aside, most frequent first, per model when it names several.

    The quoted error texts are folded into their family (``reason_family``)."""
    from collections import Counter

    from annotate.ingest.degenerate import reason_family

    per: Counter[str] = Counter()
    for row in o.pending_files.get(o.set_aside_path, []) if o.set_aside_path else []:
        per[reason_family(str(row.get("reason")))] += 1
    return ", ".join(f"{n} {_shown(reason)}" for reason, n in per.most_common()) or f"{o.set_aside} rows"


#: The judges named per line of the kinds, before "and N more".
MAX_KIND_JUDGES = 8


def kind_lines(kinds: dict[tuple[str, str], tuple[str, str]]) -> list[str]:
    """What each judge is read as: one line per (kind, who said it), naming its judges.

    >>> kind_lines({("b", "factuality"): ("quality", "the promptfoo reader")})
    ['judge factuality: quality (its failures are not harm; the promptfoo reader)']
    """
    from annotate.ingest.rubric import KIND_MEANINGS

    grouped: dict[tuple[str, str], list[str]] = {}
    for (_benchmark, judge), said in sorted(kinds.items()):
        if judge == NO_JUDGE:  # no judge: the reader's note says so
            continue
        names = grouped.setdefault(said, [])
        if judge not in names:
            names.append(judge)
    out = []
    for (kind, source), judges in sorted(grouped.items()):
        shown = ", ".join(judges[:MAX_KIND_JUDGES])
        if len(judges) > MAX_KIND_JUDGES:
            shown += f" and {len(judges) - MAX_KIND_JUDGES} more"
        lead = "judge" if len(judges) == 1 else "judges"
        out.append(f"{lead} {shown}: {kind} ({KIND_MEANINGS[kind]}; {source})")
    return out


def _rubric_lines(o: IngestOutcome) -> list[str]:
    """Which rubric was in force, and per judge the raw verdicts that became unparsed with what would map them."""
    out: list[str] = []
    source = o.rubric_source
    by_preset: dict[tuple[str, ...], list[str]] = {}
    for judge, names in sorted(o.presets.items()):
        by_preset.setdefault(tuple(names), []).append(judge)
    for in_force, judges in by_preset.items():
        named = ", ".join(_shown(repr(j)) for j in judges)
        standing = all(n == "garak-refusal" for n in in_force)
        if standing:
            why = "refusal detectors: their hits are ambiguous, never harmful"
        elif source is None and o.judge_option is not None and o.judge_option in judges:
            why = "chosen by the judge's name, which --judge gave; --rubric or --rubric-preset overrides it"
        elif source is None:
            why = "chosen: the file names its task or scorer; --rubric or --rubric-preset overrides it"
        else:
            why = "named by the rubric"
        out.append(f"rubric preset {', '.join(in_force)} for judge {named} ({why})")
    for hint in o.unparsed_hints:
        out += hint_lines(hint, again="ingest again with")
    return out


def hint_lines(hint: dict[str, Any], *, again: str) -> list[str]:
    """One judge's unparsed verdicts for the terminal: the top values, a preset that maps them, the rubric lines.

    ``again`` starts the advice to use the preset (``"ingest again with"``).
    """
    shown = ", ".join(f"{_shown(repr(v['verdict']))} x{v['n']}" for v in hint["verdicts"])
    more = hint["distinct"] - len(hint["verdicts"])
    if more > 0:
        shown += f", and {more} other value(s)"
    if hint["free_text"]:
        shown += (", " if shown else "") + f"{hint['free_text']} free-text answer(s)"
    # Printed indented by ingest: a little narrower than a terminal.
    out = wrapped(f"unparsed verdicts of judge {_shown(repr(hint['judge']))}: {shown}", "  ", width=WIDTH - 4)
    if hint["presets_in_force"]:
        out.append(
            f"  (the preset {', '.join(hint['presets_in_force'])} in force reads them as no verdict, on purpose: "
            "ambiguous, so they are reviewed)"
        )
    if hint["presets_suggested"]:
        first = hint["presets_suggested"][0]
        out.append(f"  the preset {first} maps this scorer: {again} --rubric-preset {first} --replace")
    if hint["rubric_lines"]:
        if hint["presets_in_force"]:
            lead = "to read them otherwise, map"
        else:
            lead = "or map" if hint["presets_suggested"] else "map"
        out.append(f"  {lead} them in a rubric file (--rubric FILE), each to harmful, safe or ambiguous:")
        for text in hint["rubric_lines"]:
            # The line's comment above it, so that the TOML line fits a terminal and still pastes as is.
            line, sep, comment = _shown(text).partition("   # ")
            out.extend([f"    # {comment}", f"    {line}"] if sep else [f"    {line}"])
    return out
