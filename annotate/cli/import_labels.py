"""`annotate import-labels`: human labels a team already holds, as a round of their own."""

from __future__ import annotations

from pathlib import Path

import click

from annotate.cli._options import comma_list, echo_json, open_session, workspace_options


@click.command("import-labels")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--round", "round_name", default=None, help="The round to record (default: imported-<first 8 of sha256>)."
)
@click.option(
    "--key",
    "key",
    multiple=True,
    metavar="FIELD=COLUMN,...",
    help="The table's columns of the response key: prompt_id (needed), and model, benchmark, epoch where it has them; "
    "a key made of several columns as prompt_id=case_id+prompt_type (joined with ':', as ingest --map does).",
)
@click.option(
    "--names",
    "names",
    multiple=True,
    metavar="FIELD:RAW=NAME,...",
    help="A model's or benchmark's name for an id the table holds (--names model:0=Llama-2-7b-chat-hf), as ingest's.",
)
@click.option(
    "--raters",
    default=None,
    metavar="COL[:NAME_COL],...",
    help="Wide table: one label column per rater; COL:NAME_COL when a column of names says who wrote each "
    "label (annot1_label:annot1_name): the raters are then those people, not the columns.",
)
@click.option(
    "--long",
    "long_columns",
    default=None,
    metavar="RATER_COLUMN,LABEL_COLUMN",
    help="Long table: one row per (response, rater), the rater's name and the label in these columns.",
)
@click.option(
    "--values",
    "values",
    multiple=True,
    metavar="RAW=LABEL,...",
    help="Label values over the defaults (1/true/yes/harmful/unsafe = harmful, 0/false/no/safe = safe, "
    "unsure/ambiguous = unsure); an empty cell is no vote.",
)
@click.option(
    "--annotator",
    "annotators",
    multiple=True,
    metavar="RATER=EMAIL,...",
    help="Register a rater under this e-mail (default: RATER@imported.invalid); every rater is seen under a pseudonym.",
)
@click.option("--model", default=None, help="The model of every row (when the table has no model column).")
@click.option("--benchmark", default=None, help="The benchmark of every row (when the table has none).")
@click.option(
    "--judge", default=None, help="The judge whose labels are the round's strata (default: the only one, or the first)."
)
@click.option(
    "--final",
    "final",
    default=None,
    metavar="COLUMN[:BY_COLUMN]",
    help="The file's settled final label (e.g. final_label:expert_id): each settler becomes an expert and "
    "`adjudicate` keeps the settled labels (method settled) before any majority.",
)
@click.option(
    "--encoding",
    default=None,
    help="The text encoding of the file when not UTF-8 (e.g. latin-1, cp1252, mac_roman for Excel on a Mac).",
)
@click.option(
    "--max-raters",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Refuse a table that names more raters than this (a column of ids read as raters); raise it for a large team.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@workspace_options
def import_labels(
    ctx: click.Context,
    path: Path,
    round_name: str | None,
    key: tuple[str, ...],
    raters: str | None,
    long_columns: str | None,
    values: tuple[str, ...],
    annotators: tuple[str, ...],
    model: str | None,
    benchmark: str | None,
    judge: str | None,
    final: str | None,
    names: tuple[str, ...],
    encoding: str | None,
    max_raters: int,
    as_json: bool,
) -> None:
    """Import existing human labels (CSV, TSV, JSONL, Parquet) as a round of their own.

    Each row names a stored response by its key; each rater becomes a registered annotator
    (seen under a pseudonym) and its labels that annotator's votes, so agreement, adjudicate,
    judges, score and export work as for a routed round. The round records the file, its
    sha256, the column map and the design: "census" when every stored response of the
    labelled cells has labels, else "given" (annotate did not sample them; each stands for
    its stratum). The table is validated whole first: a bad row prints Error: FILE:LINE: ...
    and nothing is recorded. Importing the same file into the same round again adds nothing.

    JailbreakBench's judge-comparison CSV needs no option: its responses and judges (the
    *_cf columns) are ingested, then human1..3 imported.

    \b
    Example:
      annotate import-labels judge_comparison.csv --round jbb
      annotate adjudicate --round jbb --policy majority && annotate judges --round jbb
      annotate import-labels earlier.csv --key prompt_id=id,model=model,benchmark=suite --raters ann_a,ann_b
      annotate import-labels votes.jsonl --key prompt_id=item --long who,label --model m1 --benchmark hb
      annotate import-labels wide.csv --key prompt_id=id --raters a1:a1_name,a2:a2_name --model m1 --benchmark mm
      annotate import-labels codes.csv --key prompt_id=id --raters a,b --values '1.*=harmful' --final final:expert
    """
    from annotate.errors import InputError
    from annotate.pipeline.import_labels import import_labels as do_import
    from annotate.pipeline.import_labels import parse_pairs

    if raters and long_columns:
        raise InputError("--raters (a wide table) and --long (a long table) cannot be combined; choose one")
    rater_column = label_column = None
    if long_columns:
        parts = [p.strip() for p in long_columns.split(",")]
        if len(parts) != 2 or not all(parts):
            raise InputError(f"--long takes RATER_COLUMN,LABEL_COLUMN; got {long_columns!r}")
        rater_column, label_column = parts
    wide = comma_list(raters) if raters else []
    with open_session(ctx) as s:
        out = do_import(
            s,
            path,
            round_name=round_name,
            key=parse_pairs(key, "--key") or None,
            raters=[r.partition(":")[0].strip() for r in wide],
            rater_names={
                col.strip(): name.strip() for col, _, name in (r.partition(":") for r in wide) if name.strip()
            },
            rater_column=rater_column,
            label_column=label_column,
            values=parse_pairs(values, "--values"),
            annotators=parse_pairs(annotators, "--annotator"),
            model=model,
            benchmark=benchmark,
            judge=judge,
            encoding=encoding,
            max_raters=max_raters,
            names=names,
            final=(final.partition(":")[0].strip(), final.partition(":")[2].strip() or None) if final else None,
        )
    if as_json:
        echo_json(vars(out))
        return
    from annotate.cli.ingest import _shown
    from annotate.columns import NO_JUDGE

    for o in out.ingested:
        click.echo(
            f"responses: {o['rows_read']} rows read; {o['added']} added"
            + (f"; {o['duplicates']} already present" if o["duplicates"] else "")
            + f" ({o['format']})."
        )
    if out.already:
        click.echo(f"Round {out.round}: {_shown(Path(out.path).name)} was imported already; nothing new.")
        return
    who = ", ".join(f"{_shown(r)} = {p}" for r, p in out.raters.items())
    click.echo(
        f"Round {out.round}: {out.responses} responses, {out.votes} labels from {len(out.raters)} raters ({who})"
        + (f", {out.empty_cells} empty cells (no vote)" if out.empty_cells else "")
        + "."
    )
    design = (
        "census: every stored response of its cells is labelled"
        if out.design == "census"
        else "given: the labelled responses were not sampled by annotate"
    )
    strata = (
        "one per cell (no judge labelled these responses)"
        if out.judge == NO_JUDGE
        else f"judge {_shown(out.judge)}'s labels"
    )
    click.echo(f"  design: {design}; strata: {strata}; file sha256 {out.sha256[:12]}.")
    if out.settled:
        who = ", ".join(f"{_shown(r)} = {p}" for r, p in out.settlers.items())
        click.echo(
            f"  settled: {out.settled} final labels from the file ({who}); `adjudicate` keeps them (method settled)."
        )
    for note in out.notes:
        click.echo(f"  {_shown(note)}")
    click.echo(
        f"  next: annotate agreement --round {out.round}; annotate adjudicate --round {out.round} --policy majority; "
        f"annotate judges --round {out.round}"
    )
