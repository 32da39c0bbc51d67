"""`annotate route`: select a round's sample and send every item to every reviewer.

Independence on Label Studio Community (which has no roles): one project per annotator per
round, each holding the same tasks in the round's recorded order design
(:mod:`annotate.stats.ordering`: by default blocks of ten in one shared seeded order, shuffled
within each block per reviewer, so that items get every vote a sitting at a time; ``--order
independent`` for a seeded order per reviewer). The selection, strata
and inclusion probabilities (the design the corrected scores need) are recorded in the same
transaction as the round. Re-running resumes: only what is missing is imported, and responses
ingested since the last routing become a new wave.

A new round's name must be a name (``annotate.names``: it becomes ``tasks/<round>/``), and gets
a random secret: each task's ext_id is a keyed hash of annotator and item
(``labelstudio.tasks.task_ext_id``), so an export matches only its own project, and each task
records the hash of the text it shows (``ls_task.text_sha``), checked by every pull.

Whole transcripts: a new round whose population holds responses with a transcript records the
workspace's config with its dialogue, and every task of it carries ``dialogue``
(``labelstudio.tasks.task_dialogue``; a single-turn response's is its prompt and response);
any other round records the config without the dialogue
(``labelstudio.labelconfig.single_response_config``) and sends tasks as before. Label Studio
cannot show both kinds under one config. A config without a dialogue, for responses with
transcripts, is refused rather than hiding the conversations from the reviewers; so is a new
wave with transcripts for a round routed without dialogues.

Strata from several judges (``--strata-from J1,J2,...``): the routed responses are still one
judge's rows (``--judge`` when it is among the named judges, else the first named); each one's
stratum is ``harmful`` when every named judge says harmful on the same response, ``safe`` when
every one says safe, and the census stratum ``ambiguous`` otherwise
(:func:`annotate.stats.sampling.unanimity_strata`). The same response is the same key and the
same prompt and response text (``Store.strata_labels``). The round records its judges
(``review_round.strata_from``); later waves use them, and a route of the round with other
judges is refused.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from annotate.columns import PART_SEPARATOR
from annotate.errors import InputError, StateError
from annotate.ingest.media import image_uri
from annotate.labelstudio import INSTRUCTIONS_ONLY
from annotate.labelstudio.labelconfig import parse_label_config
from annotate.labelstudio.tasks import (
    DIALOGUE_INSTRUCTIONS,
    INSTRUCTIONS,
    new_task_secret,
    task_dialogue,
    task_ext_id,
    task_payload,
    task_text_sha,
)
from annotate.names import check_name
from annotate.pipeline._features import ambiguity_priority
from annotate.pipeline._planning import plan_target
from annotate.pipeline._population import hazard_parts, unanimity_population
from annotate.pipeline._projects import (
    ProjectSpec,
    check_own_account,
    ensure_project,
    sync_tasks,
    task_file_path,
    write_task_file,
)
from annotate.pipeline._resolve import (
    blinded_owner,
    load_label_config,
    resolve_annotators,
    resolve_routing_judges,
    round_blinding,
    round_judges,
    round_lock,
    round_order,
)
from annotate.pipeline._round_config import round_config
from annotate.pipeline.record import design_from_store
from annotate.stats.ordering import OrderDesign, item_key, review_order
from annotate.stats.sampling import ambiguous_rule, select_for_review, select_next_wave, task_order
from annotate.stats.scoring.strata import stratum_key

if TYPE_CHECKING:
    from annotate.db import Store
    from annotate.labelstudio import Gateway
    from annotate.labelstudio.labelconfig import LabelConfig
    from annotate.pipeline.session import Servers, Session

Progress = Callable[[int, int], None]

#: A new round's ambiguous strata without ``--ambiguous``: a census of each cell's ambiguous
#: responses up to 50, a simple random sample of 50 beyond. With half of a model's responses
#: ambiguous over five benchmarks, 50 per cell puts the model's rate within about +-3 points
#: (docs/methods.md 4.9), and a seed-sized workspace (26 models x 5 suites) becomes 6,500
#: ambiguous items instead of 65,000.
DEFAULT_AMBIGUOUS = "50"


def parse_ambiguous(text: str) -> int | float | None:
    """``--ambiguous`` read (:func:`annotate.stats.sampling.ambiguous_rule`), a bad value an InputError."""
    try:
        return ambiguous_rule(text)
    except ValueError:
        raise InputError(
            f"--ambiguous {text!r}: give all (every ambiguous response), a whole number (a simple random sample of "
            "that many per cell beyond it, e.g. 50) or a fraction between 0 and 1 (e.g. 0.2)."
        ) from None


def describe_ambiguous(text: str) -> str:
    """How a round samples its ambiguous strata, in words."""
    value = parse_ambiguous(text)
    if value is None:
        return "every ambiguous response (a census)"
    if isinstance(value, int):
        return f"every ambiguous response of a cell up to {value}, a simple random sample of {value} beyond"
    return f"a simple random sample of {value:.0%} of each cell's ambiguous responses (at least 1)"


@dataclass
class RouteOutcome:
    round: str
    judge: str
    new_wave: int | None
    strata: pd.DataFrame  # the new wave's design: model, benchmark, stratum, population, sample
    selected: int
    per_annotator: dict[str, dict[str, int]] = field(default_factory=dict)  # pseudonym -> counts
    files: list[Path] = field(default_factory=list)
    dry_run: bool = False
    prioritized: bool = False
    # Strata from several judges (None: the routing judge's own labels).
    strata_from: list[str] | None = None
    # Per cell of the new wave: harmful, safe, ambiguous (N_h of each), without_verdict.
    cells: pd.DataFrame | None = None
    # Per cell and named judge without a verdict on some of the cell's responses: responses, population.
    without_verdict: pd.DataFrame | None = None
    # How the round's reviewers are kept apart (labelstudio.TECHNICAL / INSTRUCTIONS_ONLY); None: task files.
    blinding: str | None = None
    # A round across suites: each benchmark's judge ({benchmark: judge}); None: ``judge`` for all.
    judges: dict[str, str] | None = None
    # Said about the choice of judges (benchmarks left out and why).
    notes: list[str] = field(default_factory=list)
    # How the round samples its ambiguous strata (``--ambiguous``: "all", "50", "0.2").
    ambiguous: str = "all"
    # ``--next-wave``: the new waves come from the strata's remainders (not from new responses).
    next_wave: bool = False
    # How the round orders its reviewers' tasks; None: routed before orders were recorded.
    order: OrderDesign | None = None


@dataclass(frozen=True)
class _Plan:
    """What one `route` run records and sends (computed before anything is written)."""

    round_name: str
    existing: dict[str, Any] | None
    judge: str
    seed: int
    clear_per_cell: int
    annotators: pd.DataFrame
    config: LabelConfig
    population: pd.DataFrame
    selected: pd.DataFrame
    strata: pd.DataFrame
    wave: int
    up_to: int
    strata_from: list[str] | None = None
    cells: pd.DataFrame | None = None
    without_verdict: pd.DataFrame | None = None
    judges: dict[str, str] | None = None
    notes: tuple[str, ...] = ()
    ambiguous: str = "all"
    # ``--next-wave``: (wave, selected, strata) per root wave whose strata's remainders it samples.
    next_waves: tuple[tuple[int, pd.DataFrame, pd.DataFrame], ...] = ()
    # The round's order design (a new round's, or the recorded one); None: routed before v13.
    order: OrderDesign | None = None


@dataclass(frozen=True)
class NextWave:
    """``route --next-wave``: the target (or budget) the next wave is planned for (``annotate plan``)."""

    target_halfwidth: float | None = None
    budget: float | None = None


def route(
    s: Session,
    *,
    round_name: str,
    annotator_names: list[str],
    clear_per_cell: int,
    seed: int,
    judge: str | Sequence[str] | None,
    dry_run: bool,
    to_file: bool,
    progress: Progress | None = None,
    prioritize: bool = False,
    strata_from: list[str] | None = None,
    ambiguous: str | None = None,
    next_wave: NextWave | None = None,
    order: OrderDesign | None = None,
    strata_by: str | None = None,
    ask_hazards: bool = False,
) -> RouteOutcome:
    """Select (or extend) a round's sample and send every item to every annotator's project.

    ``ask_hazards`` (``--ask-hazards``): a new round's reviewers also answer which hazard categories
    apply and how severe a harmful response is (``labelconfig.with_hazard_questions``); a routed round
    keeps the questions it was routed with.

    ``strata_by`` (``--strata-by hazard``): a new round cuts each judge label's stratum by the
    responses' hazard (``annotate.hazards.routing_part``), so every hazard gets its own sample; a
    routed round keeps what it was routed with.

    ``order``: how a new round orders each reviewer's tasks (None: blocks of
    :data:`~annotate.stats.ordering.DEFAULT_BLOCK_SIZE`); a routed round keeps its own.

    ``next_wave``: instead of the responses ingested since, draw the next wave the plan gives for
    its target from the not-yet-sampled remainder of each stratum (docs/methods.md 4.9).

    ``ambiguous``: how a new round samples each cell's ambiguous stratum (``all``, a size or a
    fraction; None: ``DEFAULT_AMBIGUOUS``); a routed round keeps what it was routed with.

    ``judge``: the ``--judge`` values (a judge for every benchmark, ``BENCHMARK=JUDGE`` for one
    benchmark's own; :func:`annotate.pipeline._resolve.resolve_routing_judges`); None or empty:
    each benchmark's only judge. ``strata_from``: the judges whose unanimity makes the strata
    (two at least; None: the routing judge's own labels).
    """
    judge = [judge] if isinstance(judge, str) else list(judge or [])
    if s.store.get_round(round_name) is None:
        check_name(round_name, "round name")  # before anything is created for it, a lock file included
    # A real route reads the round's state and extends it under one lock; a dry run writes nothing.
    with nullcontext() if dry_run else round_lock(s.store, round_name):
        return _route(
            s,
            round_name,
            annotator_names,
            clear_per_cell,
            seed,
            judge,
            dry_run,
            to_file,
            progress,
            prioritize,
            strata_from,
            ambiguous,
            next_wave,
            order,
            strata_by,
            ask_hazards,
        )


def _route(
    s: Session,
    round_name: str,
    annotator_names: list[str],
    clear_per_cell: int,
    seed: int,
    judge: list[str],
    dry_run: bool,
    to_file: bool,
    progress: Progress | None,
    prioritize: bool,
    strata_from: list[str] | None,
    ambiguous: str | None = None,
    next_wave: NextWave | None = None,
    order: OrderDesign | None = None,
    strata_by: str | None = None,
    ask_hazards: bool = False,
) -> RouteOutcome:
    plan = _plan(
        s,
        round_name,
        annotator_names,
        clear_per_cell,
        seed,
        judge,
        to_file=to_file and not dry_run,
        strata_from=strata_from,
        ambiguous=ambiguous,
        next_wave=next_wave,
        order=order,
        strata_by=strata_by,
        ask_hazards=ask_hazards,
    )
    outcome = RouteOutcome(
        round=round_name,
        judge=plan.judge,
        new_wave=plan.wave if len(plan.population) else None,
        strata=plan.strata,
        selected=len(plan.selected),
        dry_run=dry_run,
        strata_from=plan.strata_from,
        cells=plan.cells,
        without_verdict=plan.without_verdict,
        judges=plan.judges,
        notes=list(plan.notes),
        ambiguous=plan.ambiguous,
        next_wave=next_wave is not None,
        order=plan.order,
    )
    if dry_run:
        return outcome
    if to_file:
        return _record_and_send(s, None, plan, outcome, progress=progress, prioritize=prioritize)
    outcome.blinding = round_blinding(s.ws, plan.existing)
    # Check every server (reachable, token accepted, config valid) before recording anything, so
    # a failure leaves the store as it was.
    with s.servers() as servers:
        for owner in dict.fromkeys(blinded_owner(outcome.blinding, str(p)) for p in plan.annotators.pseudonym):
            servers.of(owner).validate_config(plan.config.xml)
        for person in plan.annotators.itertuples():
            owner = blinded_owner(outcome.blinding, str(person.pseudonym))
            if owner is not None:
                check_own_account(servers.of(owner), person)
        if outcome.blinding == INSTRUCTIONS_ONLY and s.notify is not None:
            s.notify(f"Warning: {SHARED_SERVER_WARNING}")
        return _record_and_send(s, servers, plan, outcome, progress=progress, prioritize=prioritize)


#: Said before a round goes to one server for everyone (an external server, or the shared embedded one).
SHARED_SERVER_WARNING = (
    "every reviewer's project goes to one Label Studio server. Label Studio Community has no roles, so each "
    "reviewer can open the others' projects (verdicts, rationales, e-mails) there; independence rests on their "
    "instructions, and the round is recorded as blinded by 'instructions only' (design.json, the report). For "
    "technical blinding, use the embedded servers (`annotate ls start`; one server per person)."
)


def _plan(
    s: Session,
    round_name: str,
    annotator_names: list[str],
    clear_per_cell: int,
    seed: int,
    judge_args: list[str],
    *,
    to_file: bool,
    strata_from: list[str] | None = None,
    ambiguous: str | None = None,
    next_wave: NextWave | None = None,
    order: OrderDesign | None = None,
    strata_by: str | None = None,
    ask_hazards: bool = False,
) -> _Plan:
    store = s.store
    if clear_per_cell < 0:
        raise InputError("--clear-per-cell must be 0 or more")
    if next_wave is not None and store.get_round(round_name) is None:
        raise InputError(
            f"--next-wave extends a routed round, and {round_name!r} is not one: route it first "
            f"(annotate route --round {round_name} --annotators ...), review and pull, then plan its next wave."
        )
    if next_wave is not None and (next_wave.target_halfwidth is None) == (next_wave.budget is None):
        raise InputError("--next-wave needs its target: --target-halfwidth H (e.g. 0.03) or --budget REVIEWS")
    if ambiguous is not None:
        parse_ambiguous(ambiguous)  # a bad value is refused before anything else
    if strata_from is not None:
        _check_judge_names(strata_from)
    workspace_config = load_label_config(s.ws)
    existing = store.get_round(round_name)
    if existing is None:
        check_name(round_name, "round name")
    annotators = resolve_annotators(store, annotator_names)
    if to_file:  # every file's path is checked before anything is recorded
        for pseudonym in annotators.pseudonym:
            task_file_path(s.ws, round_name, str(pseudonym))
    judges: dict[str, str] | None = None
    notes: list[str] = []
    if existing is not None:
        strata_by = _round_strata_by(store, round_name, existing, strata_by)
        strata_from = _round_strata_from(store, round_name, existing, strata_from)
        judge = str(existing["judge"])
        judges = round_judges(existing)
        if (seed, clear_per_cell) != (existing["seed"], existing["clear_per_cell"]):
            raise InputError(
                f"round {round_name!r} was routed with --seed {existing['seed']} and "
                f"--clear-per-cell {existing['clear_per_cell']}; a round keeps its design. "
                "Use those values, or start a new round."
            )
        recorded = existing.get("ambiguous") or "all"
        if ambiguous is not None and parse_ambiguous(ambiguous) != parse_ambiguous(recorded):
            raise InputError(
                f"round {round_name!r} was routed with --ambiguous {recorded}; a round keeps its design. "
                f"Route it with --ambiguous {recorded} (or without the option), or start a new round."
            )
        ambiguous = recorded
        kept = round_order(existing)
        if order is not None and order != kept:
            was = (
                "--order independent"
                if kept is not None and kept.design == "independent"
                else (f"--order blocks --block-size {kept.block_size}" if kept is not None else "the order of its time")
            )
            raise InputError(
                f"round {round_name!r} was routed with {was}; a round keeps its design. Route it without --order "
                "and --block-size, or start a new round."
            )
        order = kept
        if sorted(annotators.pseudonym) != sorted(json.loads(existing["annotators"])):
            raise InputError(
                f"round {round_name!r} goes to {', '.join(json.loads(existing['annotators']))}; "
                "a round keeps its annotators (start a new round for others)."
            )
    elif strata_from is not None:
        if len(judge_args) > 1 or any("=" in j and j.partition("=")[0] in _benchmarks(store) for j in judge_args):
            raise InputError(
                "--strata-from makes one set of strata from several judges; it does not take a judge per benchmark "
                "(--judge BENCHMARK=JUDGE). Route those benchmarks in a round of their own."
            )
        judge = _strata_judge(store, strata_from, judge_args[0] if judge_args else None)
    else:
        chosen = resolve_routing_judges(store, judge_args)
        judge, judges, notes = chosen.judge, chosen.judges, chosen.notes

    waves = store.round_waves(int(existing["id"])) if existing else None
    if existing is None:
        order = order or OrderDesign()
    if next_wave is not None and strata_by is not None:
        raise InputError(
            f"round {round_name!r} is routed by {strata_by}; --next-wave cannot draw from its strata yet. Route the "
            "responses ingested since (without --next-wave), or plan a new round."
        )
    if next_wave is not None and existing is not None and waves is not None:
        return _next_wave_plan(
            s, round_name, existing, waves, next_wave, judge, judges, strata_from, annotators, workspace_config,
            ask_hazards=ask_hazards,
        )  # fmt: skip
    after = int(waves.max_response_id.max()) if waves is not None and len(waves) else 0
    up_to = store.max_response_id()
    population, cells, without_verdict = _wave_population(store, judge, judges, strata_from, after, up_to)
    config = round_config(
        s,
        round_name,
        existing,
        workspace_config,
        transcripts=store.transcript_count(judge, after, up_to, judges),
        images=store.image_count(judge, after, up_to, judges),
        ask_hazards=ask_hazards,
    )
    ambiguous = DEFAULT_AMBIGUOUS if ambiguous is None else str(ambiguous).strip().lower()
    routed = population if strata_by is None else _cut_by_hazard(store, population)
    selected, strata = select_for_review(
        routed, clear_per_cell=clear_per_cell, seed=seed, ambiguous=parse_ambiguous(ambiguous)
    )
    wave = (int(waves.wave.max()) + 1) if waves is not None and len(waves) else 1
    return _Plan(
        round_name,
        existing,
        judge,
        seed,
        clear_per_cell,
        annotators,
        config,
        population,
        selected,
        strata,
        wave,
        up_to,
        strata_from,
        cells,
        without_verdict,
        judges,
        tuple(notes),
        ambiguous,
        order=order,
    )


def _cut_by_hazard(store: Store, population: pd.DataFrame) -> pd.DataFrame:
    """The population with each response's judge label cut by its hazard (``ambiguous|vcr``): the strata
    of a round routed with ``--strata-by hazard`` (``annotate.hazards.routing_part``; ``(none)`` without one)."""
    parts = hazard_parts(store, population["response_id"].astype(int))
    labels = [stratum_key(str(lab), 1, part) for lab, part in zip(population["judge_label"], parts, strict=True)]
    return population.assign(judge_label=labels)


def _round_strata_by(store: Store, round_name: str, existing: dict[str, Any], asked: str | None) -> str | None:
    """What a routed round's strata are cut by (its strata say it); asking for another is refused."""
    strata = store.round_strata(int(existing["id"]))
    recorded = (
        "hazard" if len(strata) and strata.stratum.astype(str).str.contains(PART_SEPARATOR, regex=False).any() else None
    )
    if asked is not None and asked != recorded:
        was = f"--strata-by {recorded}" if recorded else "strata by the judge's label alone"
        raise InputError(
            f"round {round_name!r} was routed with {was}; a round keeps its design. Route it without "
            "--strata-by, or start a new round."
        )
    return recorded


def _wave_population(
    store: Store,
    judge: str,
    judges: dict[str, str] | None,
    strata_from: list[str] | None,
    after: int,
    up_to: int,
) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame | None]:
    """A wave's population (the routed rows with after < id <= up_to), its labels the strata's.

    With ``strata_from`` the labels are the named judges' unanimity, and the cells and missing
    verdicts of :func:`annotate.pipeline._population.unanimity_population` come with it.
    """
    population = store.routing_population(judge, after, up_to, judges)
    if strata_from is None:
        return population, None, None
    return unanimity_population(store, population, judge, strata_from, after, up_to)


def _next_wave_plan(
    s: Session,
    round_name: str,
    existing: dict[str, Any],
    waves: pd.DataFrame,
    target: NextWave,
    judge: str,
    judges: dict[str, str] | None,
    strata_from: list[str] | None,
    annotators: pd.DataFrame,
    workspace_config: LabelConfig,
    *,
    ask_hazards: bool = False,
) -> _Plan:
    """The next wave of a routed round, from each stratum's remainder, as ``annotate plan`` gives it.

    One new wave per root wave drawn from (its strata continue that wave's population): n_h more of
    each stratum's hash order (:func:`annotate.stats.sampling.select_next_wave`), inclusion
    probability n_h / R_h fixed now; the wave records R_h and p_h (``of_wave``, ``sampled_before``);
    the estimators pool it into its stratum (``audit.design.pooled_strata``).
    Responses ingested since stay for an ordinary wave (``route`` without --next-wave).
    """
    store = s.store
    rid = int(existing["id"])
    planned = plan_target(store, (round_name,), target_halfwidth=target.target_halfwidth, budget=target.budget).strata
    design = design_from_store(store, [round_name]).round(round_name)
    by_key = {(st.model, st.benchmark, st.stratum): st for st in design.strata}
    want: dict[int, list[tuple[str, str, str, int]]] = {}
    for r in planned[planned["n"] > 0].itertuples():
        st = by_key[(str(r.model), str(r.benchmark), str(r.stratum).split("/", 1)[1])]
        want.setdefault(st.root_wave, []).append((st.model, st.benchmark, st.judge_label, int(r.n)))
    sampled = store.round_items(rid).response_id.astype(int)
    bounds = sorted((int(w.wave), int(w.max_response_id)) for w in waves.itertuples())
    wave = max(w for w, _ in bounds) + 1
    up_to = max(m for _, m in bounds)
    frames: list[tuple[int, pd.DataFrame, pd.DataFrame]] = []
    for root in sorted(want):
        top = dict(bounds)[root]
        after = max((m for w, m in bounds if m < top), default=0)
        population, _, _ = _wave_population(store, judge, judges, strata_from, after, top)
        rows = pd.DataFrame(want[root], columns=["model", "benchmark", "stratum", "n"])
        selected, strata = select_next_wave(population, sampled, rows, seed=int(existing["seed"]))
        frames.append((wave, selected, strata.assign(of_wave=root)))
        wave += 1
    config = round_config(s, round_name, existing, workspace_config, transcripts=0, ask_hazards=ask_hazards)
    selected_all = pd.concat([f[1] for f in frames], ignore_index=True) if frames else pd.DataFrame()
    strata_all = pd.concat([f[2].assign(wave=f[0]) for f in frames], ignore_index=True) if frames else pd.DataFrame()
    notes = (
        []
        if frames
        else [
            "the plan draws nothing more: every model is at its target, or cannot reach it with what the round has "
            f"left (annotate status --round {round_name} --target-halfwidth H says which)."
        ]
    )
    return _Plan(
        round_name=round_name,
        existing=existing,
        judge=judge,
        seed=int(existing["seed"]),
        clear_per_cell=int(existing["clear_per_cell"]),
        annotators=annotators,
        config=config,
        population=selected_all,  # what the next wave draws (nothing: no wave)
        selected=selected_all,
        strata=strata_all,
        wave=frames[0][0] if frames else wave,
        up_to=up_to,
        strata_from=strata_from,
        judges=judges,
        notes=tuple(notes),
        ambiguous=str(existing.get("ambiguous") or "all"),
        next_waves=tuple(frames),
        order=round_order(existing),
    )


def _benchmarks(store: Store) -> set[str]:
    return set(store.judge_kinds().benchmark.astype(str))


def _check_judge_names(names: list[str]) -> None:
    """``--strata-from``'s own checks: two judges at least, none named twice."""
    if len(names) < 2:
        raise InputError(
            f"--strata-from needs two judges at least (got {', '.join(names) or 'none'}); "
            "for one judge's labels use --judge alone."
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"--strata-from names {', '.join(twice)} more than once; name each judge once.")


def _strata_judge(store: Store, names: list[str], judge: str | None) -> str:
    """The routing judge of a new round with strata from ``names``: ``judge`` if given, else the first named."""
    known = store.judges()
    if not known:
        raise StateError("the store holds no responses: run `annotate ingest` first.")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(
            f"--strata-from: no responses judged by {', '.join(map(repr, unknown))}; judges: {', '.join(known)}."
        )
    if judge is None:
        return names[0]
    if judge not in names:
        raise InputError(
            f"--judge {judge} is not among the judges of --strata-from ({', '.join(names)}); the routed responses "
            "are one of those judges' rows: name it in --strata-from, or leave --judge out to route the first one's."
        )
    return judge


def _round_strata_from(
    store: Store, round_name: str, existing: dict[str, Any], given: list[str] | None
) -> list[str] | None:
    """The judges of a routed round's strata: the recorded ones; ``given`` must not differ."""
    recorded = store.round_strata_from(int(existing["id"]))
    if given is None or (recorded is not None and sorted(given) == sorted(recorded)):
        return recorded
    if recorded is None:
        raise InputError(
            f"round {round_name!r} was routed on the labels of judge {existing['judge']} alone; a round keeps its "
            "design. Route it without --strata-from, or start a new round."
        )
    raise InputError(
        f"round {round_name!r} was routed with --strata-from {','.join(recorded)}; a round keeps its design. "
        f"Route it with those judges (or without --strata-from), or start a new round."
    )


def _record_and_send(
    s: Session,
    servers: Servers | None,
    plan: _Plan,
    outcome: RouteOutcome,
    *,
    progress: Progress | None,
    prioritize: bool,
) -> RouteOutcome:
    store = s.store
    round_id = int(plan.existing["id"]) if plan.existing else None
    if len(plan.population):
        # The item's own id: internal, never sent (tasks carry per-project ids, task_ext_id).
        selected = plan.selected.assign(ext_id=[secrets.token_hex(8) for _ in range(len(plan.selected))])
        new_round = None
        if plan.existing is None:
            new_round = {
                "name": plan.round_name,
                "kind": "review",
                "judge": plan.judge,
                "seed": plan.seed,
                "clear_per_cell": plan.clear_per_cell,
                "ambiguous": plan.ambiguous,
                "annotators": json.dumps(list(plan.annotators.pseudonym)),
                "label_config_sha": plan.config.sha256,
                "label_config": plan.config.xml,
                "task_secret": new_task_secret(),
                "task_order": None if plan.order is None else json.dumps(plan.order.to_record()),
            }
        if plan.next_waves:
            assert plan.existing is not None
            for wave, chosen, strata in plan.next_waves:
                store.create_round_wave(
                    round_row=plan.existing,
                    new_round=None,
                    wave=wave,
                    max_response_id=plan.up_to,
                    items=chosen.assign(ext_id=[secrets.token_hex(8) for _ in range(len(chosen))]),
                    strata=strata,
                )
        else:
            round_id = store.create_round_wave(
                round_row=plan.existing,
                new_round=new_round,
                wave=plan.wave,
                max_response_id=plan.up_to,
                items=selected,
                strata=plan.strata,
                strata_from=plan.strata_from if plan.existing is None else None,
                judges=plan.judges if plan.existing is None else None,
            )
    elif plan.existing is None:
        raise StateError(f"no responses judged by {plan.judge!r} to route.")
    assert round_id is not None

    if servers is not None and outcome.blinding is not None:
        store.set_round_blinding(round_id, outcome.blinding)
    items = store.round_items(round_id)
    round_row = store.get_round(plan.round_name)
    assert round_row is not None
    priority: dict[int, float] | None = None
    if prioritize:
        # Review order only: which items were selected, and their inclusion probabilities, are
        # already fixed above.
        priority = {}
        judge_of_id = store.responses(["id", "judge"]).rename(columns={"id": "response_id"})
        routed = items[["response_id"]].merge(judge_of_id, on="response_id", how="left")
        for j, group in routed.groupby("judge", sort=True):  # each judge's own ambiguity model
            priority |= ambiguity_priority(store, str(j), group.response_id.astype(int).tolist(), seed=plan.seed)
        outcome.prioritized = True
        if plan.order is not None:
            # The priority an item is ordered by is fixed when it is first sent (an export re-derives
            # the order from it); items already sent to someone keep theirs, or none.
            fresh = items.loc[items.priority.isna() & ~items.round_item_id.isin(_sent_items(store, round_id))]
            by_response = dict(zip(fresh.response_id.astype(int), fresh.round_item_id.astype(int), strict=True))
            store.set_item_priorities(round_id, {by_response[r]: p for r, p in priority.items() if r in by_response})
            items = store.round_items(round_id)
    for ann in plan.annotators.itertuples():
        owner = blinded_owner(str(outcome.blinding), str(ann.pseudonym))
        gw = servers.of(owner) if servers is not None else None
        outcome.per_annotator[str(ann.pseudonym)] = _send_to_annotator(
            s,
            gw,
            round_row,
            ann,
            items,
            seed=plan.seed,
            progress=progress,
            outcome=outcome,
            priority=priority,
            own_server=owner is not None,
            order=plan.order,
        )
    return outcome


def _sent_items(store: Store, round_id: int) -> set[int]:
    """The round's items that some reviewer's project already holds (recorded, sent or not yet imported)."""
    sent: set[int] = set()
    for project_id in store.ls_projects(round_id).id.astype(int):
        sent |= set(store.ls_tasks(int(project_id)).round_item_id.astype(int))
    return sent


def _new_task_rows(
    store: Store,
    project_id: int,
    pseudonym: str,
    tasks: pd.DataFrame,
    items: pd.DataFrame,
    *,
    secret: str,
    seed: int,
    priority: dict[int, float] | None,
    dialogue: Shown,
    order_design: OrderDesign | None = None,
) -> list[dict[str, Any]]:
    """The round's items this project lacks, as task rows in the reviewer's place of the round's order.

    With an order design (every round since v13), the order is :func:`annotate.stats.ordering.review_order`
    of all the round's items (their waves and recorded priorities), and the missing ones keep their
    places in it, so a project that receives two waves at once holds them as one that received them
    in turn. Each row has the project's own ext_id of the item and the hash of the text it will show.
    """
    known = set(tasks.round_item_id.astype(int)) if len(tasks) else set()
    missing = items[~items.round_item_id.astype(int).isin(known)]
    if not len(missing):
        return []
    if order_design is not None:
        keys = [item_key(*k) for k in zip(items.model, items.benchmark, items.prompt_id, items.epoch, strict=True)]
        queue, _ = review_order(
            seed, pseudonym, keys, items.wave.to_numpy(), order_design, items.priority.astype(float).to_numpy()
        )
        rank = pd.Series(np.argsort(queue, kind="mergesort"), index=items.round_item_id.astype(int).to_numpy())
        order = np.argsort(rank.loc[missing.round_item_id.astype(int)].to_numpy(), kind="mergesort")
    else:  # a round routed before v13: the annotator's own order by the items' ext_ids, as then
        order = task_order(seed, pseudonym, missing.ext_id.reset_index(drop=True))
        if priority is not None:
            # Most likely ambiguous first; the seeded shuffle breaks ties (stable sort).
            p = missing.response_id.map(lambda r: priority.get(int(r), -1.0)).fillna(-1.0).to_numpy()
            order = order[np.argsort(-p[order], kind="mergesort")]
    start = int(tasks.position.max()) + 1 if len(tasks) else 0
    item_ids = [int(i) for i in missing.round_item_id.to_numpy()[order]]
    item_ext = missing.ext_id.to_numpy()[order]
    texts = store.item_texts(item_ids)
    rows = []
    for k, (i, e) in enumerate(zip(item_ids, item_ext, strict=True)):
        ext_id = task_ext_id(secret, pseudonym, str(e))
        rows.append(
            {
                "ls_project_id": project_id,
                "round_item_id": i,
                "ext_id": ext_id,
                "position": start + k,
                # The hash of the data as sent: the dialogue too, as bounded and blinded.
                "text_sha": task_text_sha(_payload(texts[i], ext_id, dialogue)["data"]),
            }
        )
    return rows


class Shown(NamedTuple):
    """What a round's tasks show besides the texts: the dialogue, the items' images (from ``media``)."""

    dialogue: bool
    media: Path | None = None  # the workspace's media/ when the round shows images

    @classmethod
    def of(cls, s: Session, config: LabelConfig) -> Shown:
        return cls(config.dialogue is not None, s.ws.media_dir if config.image is not None else None)


def _payload(text: tuple[str, str, str | None, str, str | None], ext_id: str, shown: Shown) -> dict[str, Any]:
    """One reviewer task from (prompt, response, transcript, model, image); the dialogue and the image when
    the round shows them."""
    prompt, response, transcript, model, image = text
    dialogue = task_dialogue(prompt, response, transcript, model) if shown.dialogue else None
    uri = image_uri(shown.media, image) if shown.media is not None else None
    return task_payload((prompt, response), ext_id, dialogue=dialogue, image=uri)


def _payload_builder(store: Store, dialogue: Shown) -> Callable[[pd.DataFrame], list[dict[str, Any]]]:
    def build(chunk: pd.DataFrame) -> list[dict[str, Any]]:
        texts = store.item_texts(chunk.round_item_id.tolist())
        return [_payload(texts[int(i)], e, dialogue) for i, e in zip(chunk.round_item_id, chunk.ext_id, strict=True)]

    return build


def _send_to_annotator(
    s: Session,
    gw: Gateway | None,
    round_row: dict[str, Any],
    ann: Any,
    items: pd.DataFrame,
    *,
    seed: int,
    progress: Progress | None,
    outcome: RouteOutcome,
    priority: dict[int, float] | None = None,
    own_server: bool = False,
    order: OrderDesign | None = None,
) -> dict[str, int]:
    store = s.store
    dialogue = Shown.of(s, parse_label_config(round_row["label_config"]))
    spec = ProjectSpec(
        round_id=int(round_row["id"]),
        annotator=ann,
        title=f"{round_row['name']} - {ann.pseudonym}",
        label_config=round_row["label_config"],
        instructions=INSTRUCTIONS + (DIALOGUE_INSTRUCTIONS if dialogue.dialogue else ""),
    )
    project = ensure_project(store, gw, spec, own_server=own_server)
    tasks = store.ls_tasks(int(project["id"]))
    new_rows = _new_task_rows(
        store,
        int(project["id"]),
        str(ann.pseudonym),
        tasks,
        items,
        secret=str(round_row["task_secret"]),
        seed=seed,
        priority=priority,
        dialogue=dialogue,
        order_design=order,
    )

    if gw is None:  # file mode: the whole task list, every time
        path = task_file_path(s.ws, round_row["name"], str(ann.pseudonym))
        store.add_ls_tasks(new_rows)
        tasks = store.ls_tasks(int(project["id"]))
        build = _payload_builder(store, dialogue)
        outcome.files.append(write_task_file(path, build(tasks)))
        return {"tasks": len(tasks), "imported": 0, "already": 0}

    # The new tasks' rows are written while Label Studio imports the first batch (their ext_ids
    # are already in the store with the round's items, which is what a resumed run matches on).
    registered = not new_rows

    def register() -> None:
        nonlocal registered
        if not registered:
            store.add_ls_tasks(new_rows)
            registered = True

    cols = ["ext_id", "round_item_id", "position"]
    waiting = tasks.loc[tasks.task_id.isna(), cols] if len(tasks) else pd.DataFrame(columns=cols)
    pending = pd.concat([waiting, pd.DataFrame(new_rows, columns=["ls_project_id", *cols])[cols]], ignore_index=True)
    imported, already = sync_tasks(
        store,
        gw,
        project,
        str(ann.pseudonym),
        pending,
        _payload_builder(store, dialogue),
        already=len(tasks) - len(waiting),
        command="annotate route",
        progress=progress,
        on_first_submit=register,
    )
    register()
    return {"tasks": len(tasks) + len(new_rows), "imported": imported, "already": already}
