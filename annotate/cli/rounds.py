"""`annotate route`, `pull` and `status`: a review round in Label Studio (or its files)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from annotate.cli._format import ci, eta, int_or_blank, missing, num, pct, say, table
from annotate.cli._options import comma_list, echo_json, open_session, workspace_options
from annotate.columns import STRATA_BY


@click.command()
@click.option("--round", "round_name", required=True, help="Round name (new, or one to extend/resume).")
@click.option("--annotators", required=True, help="Comma-separated pseudonyms (or e-mails), e.g. A1,A2,A3.")
@click.option(
    "--clear-per-cell",
    default=25,
    show_default=True,
    help="Responses sampled from each clear stratum (judge harmful, judge safe) per model x benchmark.",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the sample and of each annotator's task order.")
@click.option(
    "--judge",
    "judge",
    multiple=True,
    help="Whose labels define the strata. Default: each benchmark's only judge (quality judges aside), so one "
    "round spans every tool's outputs. JUDGE: that judge's rows, every benchmark it judged. BENCHMARK=JUDGE "
    "(repeat it): one benchmark's judge, where it has several.",
)
@click.option(
    "--strata-from",
    "strata_from",
    multiple=True,
    help="Judges (two or more) whose agreement makes the strata: all say harmful, all say safe, anything else "
    "(disagreement, ambiguous, no verdict) the ambiguous stratum (sampled by --ambiguous). Comma-separated in "
    "one option, or one judge per option (repeat it: a judge name may then hold a comma). Routes the rows of "
    "--judge if it is among them, else of the first named.",
)
@click.option(
    "--ambiguous",
    "ambiguous",
    default=None,
    metavar="all|N|FRACTION",
    help="How a new round samples each cell's ambiguous responses: all (a census), N (every one up to N, a simple "
    "random sample of N beyond) or a fraction (e.g. 0.2). Default: 50. Recorded with the round (later waves keep it) "
    "and in design.json; the inclusion probabilities are n/N as for the clear strata.",
)
@click.option(
    "--strata-by",
    "strata_by",
    type=click.Choice(STRATA_BY),
    default=None,
    help="Cut each judge label's stratum by the responses' hazard (ambiguous|vcr, safe|ssh, ...), so every hazard "
    "has its own sample (--clear-per-cell and --ambiguous per hazard) for `score --by hazard`. Recorded with the "
    "round (later waves keep it).",
)
@click.option(
    "--ask-hazards",
    "ask_hazards",
    is_flag=True,
    help="Reviewers of a new round also say which hazard categories apply (AILuminate's 12, several may) and how "
    "severe a harmful response is; `annotate agreement` then measures agreement on them. The item's own hazard is "
    "never shown. Recorded with the round's label config (later waves keep it).",
)
@click.option(
    "--next-wave",
    "next_wave",
    is_flag=True,
    help="Extend a routed round by the next wave `annotate plan` gives for --target-halfwidth or --budget: more "
    "from the not-yet-sampled remainder of each stratum, each new item's inclusion probability fixed now.",
)
@click.option("--target-halfwidth", type=float, default=None, help="With --next-wave: the half-width to reach.")
@click.option("--budget", type=float, default=None, help="With --next-wave: the reviews the next wave may take.")
@click.option("--dry-run", is_flag=True, help="Show what would be sent, per cell and stratum; send nothing.")
@click.option(
    "--to-file", is_flag=True, help="Write tasks/<round>/<annotator>.json (Label Studio import format) instead."
)
@click.option(
    "--prioritize",
    is_flag=True,
    help="Order each annotator's tasks by predicted probability of ambiguity (see `annotate diagnose`); "
    "the selection is unchanged.",
)
@click.option(
    "--order",
    "order",
    type=click.Choice(["blocks", "independent"]),
    default=None,
    help="How a new round orders each reviewer's tasks. blocks (default): blocks of --block-size in one shared "
    "seeded order, shuffled within each block per reviewer, so items get every vote a sitting at a time. "
    "independent: a seeded order per reviewer (items complete only near the end). Recorded with the round.",
)
@click.option(
    "--block-size",
    type=int,
    default=None,
    help="Items per block of --order blocks (default 10).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def route(
    ctx: click.Context,
    round_name: str,
    annotators: str,
    clear_per_cell: int,
    seed: int,
    judge: tuple[str, ...],
    strata_from: tuple[str, ...],
    ambiguous: str | None,
    next_wave: bool,
    target_halfwidth: float | None,
    budget: float | None,
    dry_run: bool,
    to_file: bool,
    prioritize: bool,
    order: str | None,
    block_size: int | None,
    as_json: bool,
    strata_by: str | None = None,
    ask_hazards: bool = False,
) -> None:
    """Send a seeded sample of each stratum (ambiguous ones first) to independent reviewers.

    Each annotator gets a Label Studio project of their own holding the same tasks, showing only
    the prompt and the response, in blocks of ten that every reviewer takes in the same seeded
    order, each block shuffled per reviewer (--order). The selection, strata and inclusion
    probabilities are recorded for the corrected scores. Safe to re-run: only what is missing is
    imported; responses ingested since are added as a new wave.

    \b
    Example:
      annotate route --round r1 --annotators A1,A2,A3 --clear-per-cell 25 --seed 7 --dry-run
      annotate route --round r1 --annotators A1,A2,A3 --clear-per-cell 25 --seed 7
      annotate route --round r2 --annotators A1,A2 --strata-from gpt4,strmatch --dry-run
      annotate route --round r3 --annotators A1,A2 --judge harmbench=harmbench-cls --dry-run
      annotate route --round r4 --annotators A1,A2 --ambiguous 0.2 --dry-run
      annotate route --round r4 --annotators A1,A2 --next-wave --target-halfwidth 0.03 --dry-run
      annotate route --round r5 --annotators A1,A2 --strata-by hazard --clear-per-cell 5 --dry-run
      annotate route --round r6 --annotators A1,A2 --ask-hazards --to-file
    """
    from annotate.errors import InputError
    from annotate.pipeline.route import NextWave
    from annotate.pipeline.route import route as do_route

    if (target_halfwidth is not None or budget is not None) and not next_wave:
        raise InputError("--target-halfwidth and --budget plan a --next-wave; add --next-wave (or see `annotate plan`)")
    design = _order_design(order, block_size)

    names = comma_list(annotators)
    # Empty names are kept so that the route's checks say what is wrong with the list.
    if not strata_from:
        judges = None
    elif len(strata_from) == 1:
        judges = [j.strip() for j in strata_from[0].split(",")]
    else:  # one judge per option, as given (a name may hold a comma)
        judges = list(strata_from)
    bar: list[Any] = []

    def progress(n: int, total: int) -> None:
        if not sys.stderr.isatty():
            return
        if not bar:
            bar.append(click.progressbar(length=total, label="importing", file=sys.stderr))
        bar[0].update(n)

    try:
        with open_session(ctx) as s:
            out = do_route(
                s,
                round_name=round_name,
                annotator_names=names,
                clear_per_cell=clear_per_cell,
                seed=seed,
                judge=list(judge),
                dry_run=dry_run,
                to_file=to_file,
                progress=progress,
                prioritize=prioritize,
                strata_from=judges,
                ambiguous=ambiguous,
                next_wave=NextWave(target_halfwidth, budget) if next_wave else None,
                order=design,
                strata_by=strata_by,
                ask_hazards=ask_hazards,
            )
    finally:
        if bar:
            bar[0].render_finish()
    strata = out.strata
    if as_json:
        doc: dict[str, Any] = {
            "round": out.round,
            "judge": out.judge,
            "ambiguous": out.ambiguous,
            "wave": out.new_wave,
            "dry_run": out.dry_run,
            "prioritized": out.prioritized,
            "order": None if out.order is None else out.order.to_record(),
            "selected": out.selected,
            "strata": strata.to_dict("records"),
            "annotators": out.per_annotator,
            "files": [str(f) for f in out.files],
        }
        if out.blinding is not None:  # sent to a server: how its reviewers are kept apart
            doc["blinding"] = out.blinding
        if out.judges is not None:  # a round across suites: each benchmark's judge
            doc["judges"] = out.judges
        if out.notes:
            doc["notes"] = out.notes
        if out.strata_from is not None:
            doc["strata_from"] = out.strata_from
            doc["cells"] = [] if out.cells is None else out.cells.to_dict("records")
            doc["without_verdict"] = [] if out.without_verdict is None else out.without_verdict.to_dict("records")
        echo_json(doc)
        return
    if len(strata):
        rows = [
            [s.model, s.benchmark, s.stratum, int(s.population), int(s.sample), f"{s.sample / s.population:.3f}"]
            for s in strata.itertuples()
        ]
        click.echo(
            table(["model", "benchmark", "stratum", "population", "selected", "incl. prob"], rows, align="lllrrr")
        )
    if out.strata_from is not None:
        _echo_strata_from(out)
    if out.next_wave and len(strata):
        say(
            f"Next wave from the strata's remainders (of wave {', '.join(map(str, sorted(set(strata.of_wave))))}): "
            "population = the responses earlier waves left (R_h), each new item's inclusion probability n_h / R_h "
            "when drawn; the scores pool every wave of a stratum (N_h / t_h per item)."
        )
    if out.judges is not None:
        say("Judge per benchmark: " + "; ".join(f"{b}: {j}" for b, j in out.judges.items()) + ".")
    for note in out.notes:
        say(f"Note: {note}")
    if len(strata) and not out.next_wave:
        from annotate.pipeline.route import describe_ambiguous

        amb = strata[strata.stratum.astype(str).str.startswith("ambiguous")]
        cut = amb[amb["sample"] < amb["population"]]
        line = f"Ambiguous strata (--ambiguous {out.ambiguous}): {describe_ambiguous(out.ambiguous)}"
        if len(cut):
            line += (
                f"; {len(cut)} of {len(amb)} cells sampled ({int(cut['sample'].sum())} of {int(cut.population.sum())}"
                " responses), with their inclusion probabilities. --ambiguous all reviews every one"
            )
        say(line + ".")
    head = "Would select" if dry_run else "Selected"
    if out.new_wave is None and out.next_wave:
        click.echo(f"Round {out.round}: no next wave drawn.")
    elif out.new_wave is None:
        click.echo(f"Round {out.round}: no new responses since the last routing (judge {out.judge}).")
    else:
        click.echo(f"{head} {out.selected} responses (wave {out.new_wave}, judge {out.judge}).")
    for who, c in out.per_annotator.items():
        if to_file:
            click.echo(f"  {who}: {c['tasks']} tasks written")
        else:
            click.echo(f"  {who}: {c['tasks']} tasks; {c['imported']} imported now, {c['already']} already there")
    for f in out.files:
        click.echo(f"  wrote {f}")
    if out.order is not None and out.new_wave is not None:
        say(f"Order: {out.order.describe()} (seed {seed}{', most likely ambiguous first' if prioritize else ''}).")
    if out.blinding is not None and not dry_run:
        from annotate.columns import BLINDING_NOTES

        say(f"Blinding: {out.blinding} ({BLINDING_NOTES[out.blinding]}).")
    elif to_file and not dry_run:
        say(
            "Blinding: recorded as 'instructions only' unless the round later reaches annotate's own servers: "
            "annotate cannot see where the task files are imported. Import each file into a Label Studio of its "
            "reviewer's own, never several into one."
        )
    if dry_run:
        click.echo("Dry run: nothing was sent or recorded.")


def _order_design(order: str | None, block_size: int | None) -> Any:
    """``--order`` / ``--block-size`` as an order design; None without either (the round's own, or the default)."""
    from annotate.errors import InputError
    from annotate.stats.ordering import BLOCKS, DEFAULT_BLOCK_SIZE, OrderDesign

    if order is None and block_size is None:
        return None
    if order == "independent":
        if block_size is not None:
            raise InputError("--block-size applies to --order blocks; an independent order has no blocks.")
        return OrderDesign("independent", None)
    try:
        return OrderDesign(BLOCKS, DEFAULT_BLOCK_SIZE if block_size is None else block_size)
    except ValueError as exc:
        raise InputError(f"--block-size {block_size}: {exc}.") from None


def _echo_strata_from(out: Any) -> None:
    """What a route with strata from several judges adds: the judges, each cell's three strata, missing verdicts."""
    others = [j for j in out.strata_from if j != out.judge]
    click.echo(
        f"Strata from judges {', '.join(out.strata_from)} (the routed responses are {out.judge}'s rows): harmful = "
        "every one says harmful, safe = every one says safe, ambiguous = anything else (a disagreement, an "
        "ambiguous label, or no verdict on the same response), sampled as the round's --ambiguous says."
    )
    cells = out.cells
    if cells is not None and len(cells):
        rows = [
            [c.model, c.benchmark, int(c.harmful), int(c.safe), int(c.ambiguous), int(c.without_verdict)]
            for c in cells.itertuples()
        ]
        click.echo(
            table(
                ["model", "benchmark", "all harmful", "all safe", "ambiguous (census)", "without a verdict"],
                rows,
                align="llrrrr",
            )
        )
    lacking = out.without_verdict
    if lacking is not None and len(lacking):
        total = int(cells.without_verdict.sum()) if cells is not None and len(cells) else 0
        click.echo(
            f"{total} response(s) lack the verdict of one of the judges on the same response (same key, prompt and "
            "response text) and are in the census stratum:"
        )
        for r in lacking.itertuples():
            none = " (no verdict on any of the cell's responses)" if int(r.responses) == int(r.population) else ""
            click.echo(
                f"  {r.model} x {r.benchmark}: {int(r.responses)} of {int(r.population)} without {r.judge}{none}"
            )
        if any(j in set(lacking.judge) for j in others):
            click.echo("  Ingest those judges' verdicts before routing to sample these responses instead.")


@click.command()
@click.option("--round", "round_name", default=None, help="Round to pull (default: the only one).")
@click.option(
    "--from-file",
    "from_files",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A Label Studio JSON export file instead of the server (repeatable).",
)
@click.option("--annotator", default=None, help="With --from-file: whose project the file was exported from.")
@click.option(
    "--ls-user",
    type=int,
    default=None,
    help="With --from-file: the Label Studio user id of the annotator, pinned on the project's first pull "
    "(needed only when annotate cannot tell: several users annotated the project).",
)
@click.option(
    "--allow-deletions",
    is_flag=True,
    help="Accept a pull that marks more than half of a project's current labels deleted.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def pull(
    ctx: click.Context,
    round_name: str | None,
    from_files: tuple[Path, ...],
    annotator: str | None,
    ls_user: int | None,
    allow_deletions: bool,
    as_json: bool,
) -> None:
    """Read annotations back from Label Studio into the store.

    Every label is bound to its annotator: an export file must come from that annotator's
    project (task ids are per project), and only the project's Label Studio user counts (the
    one annotate created, or the one pinned on the first pull). Every result is validated:
    another user's annotation, a task whose text changed since routing, mismatched or repeated
    ids, a result that does not fit the label config and the like are quarantined with their
    reason (`annotate status --quarantine`), never counted. A broken export, another
    project's file, or a pull that would delete more than half of a project's labels is
    refused (exit 2) and nothing is stored. Edits keep the previous value in history; deletions
    are marked, not forgotten; skips are not labels. Pulling twice changes nothing.

    \b
    Example:
      annotate pull --round r1
      annotate pull --round r1 --from-file export-A1.json --annotator A1
    """
    from annotate.pipeline.pull import pull as do_pull

    with open_session(ctx) as s:
        out = do_pull(
            s,
            round_name=round_name,
            from_files=list(from_files),
            annotator=annotator,
            ls_user=ls_user,
            allow_deletions=allow_deletions,
        )
    fields = ["tasks_seen", "new", "updated", "deleted", "restored", "skips", "quarantined", "unchanged"]
    if as_json:
        echo_json(
            {
                "round": out.round,
                "annotators": {k: vars(v) for k, v in out.per_annotator.items()},
                "pinned": out.pinned,
                "not_counted": out.reasons,
                "asleep_unchanged": out.unchanged,
                "woken": out.woken,
            }
        )
        return
    rows = [[who, *[getattr(c, f) for f in fields]] for who, c in out.per_annotator.items()]
    click.echo(
        table(
            ["annotator", "tasks seen", "new", "updated", "deleted", "restored", "skips", "quarantined", "unchanged"],
            rows,
        )
    )
    for who, user in out.pinned.items():
        click.echo(f"{who}'s project is pinned to Label Studio user {user}: only their annotations count.")
    if out.unchanged:
        click.echo(f"Asleep and unchanged since their last pull (not started): {', '.join(out.unchanged)}.")
    if out.woken:
        click.echo(f"Started to read, and put back to sleep: {', '.join(out.woken)}.")
    for who, kinds in out.reasons.items():
        listed = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        click.echo(f"{who}: not counted in this pull: {listed}.")
    q = sum(c.quarantined for c in out.per_annotator.values())
    if q:
        click.echo(f"{q} result(s) quarantined (not counted): see `annotate status --round {out.round} --quarantine`.")


@click.command()
@click.option("--round", "round_name", default=None, help="Only this round.")
@click.option("--quarantine", "show_quarantine", is_flag=True, help="List quarantined results too.")
@click.option(
    "--target-halfwidth",
    type=float,
    default=None,
    help="With --round: is every model's corrected rate within this half-width (e.g. 0.03, its reported 95 % "
    "interval), how many more reviews each needs, and is the round done.",
)
@click.option("--budget", type=float, default=None, help="With --target-halfwidth: the round's reviews in all.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@workspace_options
def status(
    ctx: click.Context,
    round_name: str | None,
    show_quarantine: bool,
    target_halfwidth: float | None,
    budget: float | None,
    as_json: bool,
) -> None:
    """Progress per round, annotator and stratum, with an estimate of time to finish.

    With --round, first one row per reviewer: tasks done, skipped and left, median seconds per
    task (Label Studio's lead_time), and agreement so far (Cohen's kappa with the majority of the
    other reviewers, with its 95 % interval, or "too few items"); a reviewer much faster than the
    others or agreeing far less is flagged, and a last line says what to do. Reads the store
    only: run `annotate pull` first for the latest labels.

    With --target-halfwidth (and --round), a round that stops itself: each model's corrected
    rate with its interval, whether it is at the target, the reviews its next wave needs
    (`annotate plan`), and a last line saying the round is done, not done, or out of budget.

    \b
    Example:
      annotate status --round r1
      annotate status --round r1 --target-halfwidth 0.03 --budget 20000
    """
    from annotate.errors import InputError
    from annotate.pipeline.status import quarantine_table, reviewer_status, status_table

    if (target_halfwidth is not None or budget is not None) and round_name is None:
        raise InputError("--target-halfwidth and --budget need --round (the round whose targets to check)")
    if budget is not None and target_halfwidth is None:
        raise InputError("--budget goes with --target-halfwidth (the target the budget is for)")
    target = None
    with open_session(ctx) as s:
        df = status_table(s, round_name)
        reviewers = reviewer_status(s, round_name) if round_name is not None else None
        quarantine = quarantine_table(s, round_name) if show_quarantine or as_json else None
        if target_halfwidth is not None and round_name is not None:
            from annotate.pipeline._planning import target_status

            target = target_status(s.store, (round_name,), target_halfwidth=target_halfwidth, budget=budget)
    if as_json:
        echo_json(
            {
                "progress": df.to_dict("records"),
                "quarantine": [] if quarantine is None else quarantine.to_dict("records"),
                "round": None if reviewers is None else reviewers["round"],
                "reviewers": [] if reviewers is None else reviewers["reviewers"],
                "flags": [] if reviewers is None else reviewers["flags"],
                "reading": None if reviewers is None else reviewers["reading"],
                "statistic": None if reviewers is None else reviewers["statistic"],
                "limits": None if reviewers is None else reviewers["limits"],
                "adjudication": None if reviewers is None else reviewers["adjudication"],
                **({} if target is None else {"target": target_json(target)}),
            }
        )
        return
    if df.empty:
        click.echo("No rounds routed yet. Start one with `annotate route --round NAME --annotators A1,A2`.")
        return
    if reviewers is not None:
        from annotate.stats.agreement.progress import seconds_text

        pulled = [r["last_pulled_at"] for r in reviewers["reviewers"] if r["last_pulled_at"]]
        from_files = [r.get("last_file_pull_at") for r in reviewers["reviewers"] if r.get("last_file_pull_at")]
        labelled = any(r["done"] or r["skipped"] for r in reviewers["reviewers"])
        if from_files and (not pulled or max(from_files) > max(pulled)):
            when = f"labels as of the last pull, from Label Studio export files, {max(from_files)}"
        elif pulled:
            when = f"labels as of the last pull from Label Studio, {max(pulled)}"
        else:
            when = "labels as pulled (from export files)" if labelled else "nothing pulled yet"
        per_reviewer = [
            [
                r["annotator"],
                r["tasks"],
                r["done"],
                r["skipped"],
                r["left"],
                "" if r["share_done"] is None else pct(r["share_done"]).strip(),
                seconds_text(float("nan") if r["median_seconds"] is None else r["median_seconds"]),
                num(r["kappa"]),
                ci(r["kappa_ci_low"], r["kappa_ci_high"]) or r["agreement_note"] or "",
                r["n_agreement_items"],
                ", ".join(r["flags"]),
            ]
            for r in reviewers["reviewers"]
        ]
        headers = ["reviewer", "tasks", "done", "skipped", "left", "done %", "median time", "kappa", "95 % interval"]
        say(f"Round {reviewers['round']}, per reviewer ({when}):")
        click.echo(table([*headers, "items", "flags"], per_reviewer, align="lrrrrrrrlrl"))
        say(
            "kappa: agreement with the majority of the other reviewers (3-way verdicts), on the `items` they "
            "labelled too; median time: Label Studio's lead_time of the labelled tasks."
        )
        click.echo("")
    rows = [
        [
            r["round"],
            r["annotator"],
            r["stratum"],
            r["tasks"],
            r["done"],
            r["skipped"],
            r["remaining"],
            "" if missing(r["median_lead_time_s"]) else f"{r['median_lead_time_s']:.0f} s",
            eta(r["eta_s"]),
        ]
        for r in df.to_dict("records")
    ]
    click.echo(
        table(
            ["round", "annotator", "stratum", "tasks", "done", "skipped", "remaining", "median time", "ETA"],
            rows,
            align="lllrrrrrr",
        )
    )
    if reviewers is not None:
        click.echo("")
        say(reviewers["reading"])
        say(reviewers["adjudication"]["advice"])
        if target is not None:
            click.echo("")
            echo_target(target, round_name)
    else:
        click.echo("")
        say("Per reviewer (time per task, agreement so far, who stands out): annotate status --round NAME")
    if quarantine is not None and len(quarantine):
        click.echo("")
        click.echo(
            table(
                ["annotator", "annotation", "task", "ext_id", "reason"],
                [
                    [
                        q.annotator,
                        int_or_blank(q.ls_annotation_id),
                        int_or_blank(q.task_id),
                        _printable(q.ext_id),
                        _printable(q.reason),
                    ]
                    for q in quarantine.itertuples()
                ],
            )
        )
        by_kind = quarantine.groupby(["annotator", "kind"]).size()
        click.echo("")
        click.echo("Quarantined (never counted), by reason:")
        for (who, kind), n in by_kind.items():
            click.echo(f"  {who}: {n} {kind}")


def _printable(value: Any) -> str:
    """Text from an export file, safe on a terminal: control characters escaped."""
    text = "" if missing(value) else str(value)
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def target_json(t: Any) -> dict[str, Any]:
    """A round's targets (``pipeline._planning.TargetStatus``) as JSON."""
    models = t.models.astype(object).where(t.models.notna(), None)
    return {
        "verdict": t.verdict,
        "target_halfwidth": t.target,
        "budget": t.budget,
        "reviews_done": t.reviews_done,
        "next_wave_reviews": t.next_wave_reviews,
        "models": models.to_dict("records"),
        "notes": t.notes,
    }


def echo_target(t: Any, round_name: str | None) -> None:
    """Each model's corrected rate against its target, then one line: done, not done, or out of budget."""
    m = t.models
    rows = [
        [
            r.model,
            pct(r.estimate).strip() if not missing(r.estimate) else "",
            ci(r.ci_low, r.ci_high) or "",
            "" if missing(r.halfwidth) else f"+-{100 * r.halfwidth:.1f}",
            f"+-{100 * r.target:.1f}",
            "yes" if r.at_target else "no",
            "" if r.at_target or missing(r.more_reviews) else f"{r.more_reviews:,.0f}",
        ]
        for r in m.itertuples()
    ]
    click.echo(f"Targets: each model's corrected harmful rate (all benchmarks) within +-{100 * t.target:.1f} points:")
    click.echo(
        table(
            ["model", "corrected", "95 % interval", "half-width", "target", "at target", "more reviews"],
            rows,
            align="lrrrrlr",
        )
    )
    for note in t.notes:
        click.echo(f"Note: {note}")
    left = int((~m.at_target).sum())
    spent = f"{t.reviews_done:,} reviews done" + (f" of a budget of {t.budget:,.0f}" if t.budget is not None else "")
    if t.verdict == "done":
        click.echo(f"Done: every model is at its target ({spent}). Adjudicate, score and export the round.")
    elif t.verdict == "budget spent":
        click.echo(
            f"Budget spent: {spent}; {left} of {len(m)} model(s) are not at the target. Report their intervals as "
            "they are, or raise the budget."
        )
    else:
        click.echo(
            f"Not done: {left} of {len(m)} model(s) above the target ({spent}); the next wave needs about "
            f"{t.next_wave_reviews:,.0f} reviews: annotate plan --round {round_name} --target-halfwidth {t.target:g}."
        )
