"""`annotate import-labels`: human labels a team already holds, recorded as a round of their own.

A table of labels (``annotate.ingest.label_table``) is matched to the stored responses by key;
each rater becomes a registered annotator (an e-mail given with ``--annotator COLUMN=EMAIL``, or
``<rater>@imported.invalid``: the reserved ``.invalid`` domain says it is no address) seen under
a pseudonym; the votes become that annotator's annotations in a file-mode project of a new round,
so ``agreement``, ``adjudicate``, ``judges``, ``score`` and ``export`` read them as they read a
pulled round.

The design is recorded as **given**: annotate did not choose which responses were labelled. Each
stratum (a cell's responses the routing judge gave one label) has N_h = the stored responses of
that stratum and n_h = those labelled; every labelled response weighs N_h / n_h as in a routed
round, which assumes the labelled ones stand for their stratum (missing at random within it). A
table that labels every response of its cells is a **census** and the round says so. The origin
(file, sha256, the column map, the design) is kept on the round (``review_round.origin``).

JailbreakBench's judge-comparison file (``annotate.ingest.formats.jbb_judges``) imports with no
option: its responses and four judges are ingested first (idempotently), then ``human1..3``.
"""

from __future__ import annotations

import csv
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.columns import CHANNEL_IMPORT, NO_JUDGE
from annotate.errors import InputError, StateError
from annotate.fileio import open_input
from annotate.ingest.formats import jbb_judges
from annotate.ingest.label_table import DEFAULT_VALUES, LabelRow, LabelSpec, read_label_table
from annotate.ingest.records import Problem, ReadContext, check_encoding, parse_names_option, renamed_note
from annotate.ingest.rubric import Rubric
from annotate.ingest.run import ingest_paths
from annotate.labelstudio.labelconfig import parse_label_config, round_label_config
from annotate.labelstudio.tasks import new_task_secret, task_ext_id
from annotate.pipeline._resolve import load_label_config

if TYPE_CHECKING:
    from annotate.pipeline.session import Session

MAX_PROBLEMS_SHOWN = 20
#: More raters than this in one table is refused unless ``--max-raters`` says so (issue #42: a 40 KB
#: table whose id column was read as raters registered 3,000 annotators).
MAX_RATERS = 100
IMPORTED_DOMAIN = "imported.invalid"


@dataclass
class ImportOutcome:
    round: str
    path: str
    sha256: str
    design: str  # census / given
    judge: str  # whose labels are the strata
    responses: int
    raters: dict[str, str]  # rater column or name -> pseudonym
    votes: int
    empty_cells: int
    already: bool = False
    ingested: list[dict[str, Any]] = field(default_factory=list)  # the responses ingested first (JBB)
    strata: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Items whose final label the file settled (``--final``), and who settled them (-> pseudonym).
    settled: int = 0
    settlers: dict[str, str] = field(default_factory=dict)


def parse_pairs(texts: Sequence[str], option: str) -> dict[str, str]:
    """``A=B,C=D`` (repeatable) as a dict; an entry without ``=`` is an InputError naming ``option``."""
    out: dict[str, str] = {}
    for text in texts:
        for part in str(text).split(","):
            if not part.strip():
                continue
            left, sep, right = part.partition("=")
            if not sep or not left.strip() or not right.strip():
                raise InputError(f"{option} takes NAME=VALUE entries separated by commas; got {part.strip()!r}")
            out[left.strip()] = right.strip()
    return out


def import_labels(
    s: Session,
    path: Path,
    *,
    round_name: str | None = None,
    key: Mapping[str, str] | None = None,
    raters: Sequence[str] = (),
    rater_column: str | None = None,
    label_column: str | None = None,
    values: Mapping[str, str] | None = None,
    annotators: Mapping[str, str] | None = None,
    model: str | None = None,
    benchmark: str | None = None,
    judge: str | None = None,
    rater_names: Mapping[str, str] | None = None,
    encoding: str | None = None,
    max_raters: int = MAX_RATERS,
    final: tuple[str, str | None] | None = None,
    names: Sequence[str] = (),
) -> ImportOutcome:
    """Validate the whole table, then record the round in one go (see the module docstring).

    ``rater_names``: a wide table's label column -> the column naming its rater on each row.
    ``encoding``: the file's text encoding when not UTF-8. ``max_raters``: more raters than this
    is refused before anything is written (a mislabelled column of names would register thousands).
    ``final``: (the column of the file's settled final label, the column naming who settled it or
    None): each settler is registered as an expert and each settled label is that expert's answer,
    which ``adjudicate`` keeps (method ``settled``).
    """
    if encoding is not None and (why := check_encoding(encoding)) is not None:
        raise InputError(why)
    value_names = parse_names_option(list(names))
    path = Path(path)
    with open_input(path) as source:
        head = source.stream.read(64 * 1024)
    jbb = jbb_judges.sniff(path, head)
    ingested: list[dict[str, Any]] = []
    if jbb:
        header = _csv_header(path)
        if not raters and rater_column is None:
            raters = jbb_judges.human_columns(header)
        key = key or {"prompt_id": "Index"}
        model = model or jbb_judges.DEFAULT_MODEL
        benchmark = benchmark or jbb_judges.DEFAULT_BENCHMARK
        outcomes = ingest_paths(
            s.store,
            [path],
            fmt=jbb_judges.NAME,
            rubric=Rubric.from_file(None),
            model=model if model != jbb_judges.DEFAULT_MODEL else None,
            benchmark=benchmark if benchmark != jbb_judges.DEFAULT_BENCHMARK else None,
            rejects_dir=s.ws.rejects_dir,
        )
        ingested = [o.to_dict() for o in outcomes]
    if key is None or "prompt_id" not in key:
        raise InputError(
            "--key must name the column of prompt_id (e.g. --key prompt_id=id); model, benchmark and "
            "epoch may be named too"
        )
    unknown = sorted(set(key) - {"prompt_id", "model", "benchmark", "epoch"})
    if unknown:
        raise InputError(
            f"--key: unknown field(s) {', '.join(unknown)}; the key fields are prompt_id, model, benchmark, epoch"
        )
    if bool(raters) == bool(rater_column and label_column):
        raise InputError(
            "name the raters' label columns (--raters human1,human2) or, for a long table, the rater "
            "and label columns (--long RATER_COLUMN,LABEL_COLUMN); one of the two"
        )
    if "model" not in key and model is None or "benchmark" not in key and benchmark is None:
        raise InputError(
            "the table's responses need a model and a benchmark: map their columns (--key "
            "model=COLUMN,benchmark=COLUMN) or pass --model and --benchmark"
        )
    unnamed = sorted(set(rater_names or {}) - set(raters))
    if unnamed:
        raise InputError(f"--raters: {', '.join(unnamed)} named with a rater column but not a label column")
    spec = LabelSpec(
        key=dict(key),
        raters=tuple(raters),
        rater_column=rater_column,
        label_column=label_column,
        values={**DEFAULT_VALUES, **{k.lower(): v for k, v in (values or {}).items()}},
        rater_names=dict(rater_names or {}),
        final_column=final[0] if final else None,
        final_by=final[1] if final else None,
    )
    matched: dict[str, dict[str, int]] = {}
    rows, sha, renamed = _read(path, spec, encoding=encoding, matched=matched, value_names=value_names)
    count = len({rater for r in rows for rater, _v, _raw in r.votes})
    if count > max_raters:
        raise InputError(
            f"{path}: the table names {count} raters, more than {max_raters}: is a column of names or ids read as "
            f"raters? If they are people, pass --max-raters {count}; nothing was imported"
        )
    pattern_notes = [
        f"--values {pattern}={spec.values[pattern]} matched "
        + ", ".join(f"{raw!r} ({n})" for raw, n in sorted(seen.items())[:12])
        + (f" and {len(seen) - 12} more" if len(seen) > 12 else "")
        for pattern, seen in matched.items()
    ]
    fixed = {"model": model, "benchmark": benchmark}
    keyed = [({**{k: v for k, v in fixed.items() if v is not None}, "epoch": 0, **r.key}, r) for r in rows]
    name = round_name or f"imported-{sha[:8]}"
    existing = s.store.get_round(name)
    if existing is not None:
        origin = json.loads(existing.get("origin") or "null") or {}
        if origin.get("sha256") == sha:
            return _again(s, existing, name, path, sha, ingested)
        raise StateError(
            f"round {name!r} exists already"
            + (f" (imported from {origin.get('file')})" if origin else " (routed by annotate)")
            + "; import into a new round with --round NAME"
        )
    outcome = _record(s, path, sha, name, spec, keyed, judge, ingested, annotators or {})
    outcome.notes[:0] = pattern_notes + ([renamed] if renamed else [])
    return outcome


def _csv_header(path: Path) -> list[str]:
    """The first line of a CSV as column names (the sniffer has claimed it: a judge-comparison file)."""
    with open_input(path) as source:
        first = source.stream.readline(1 << 20).decode("utf-8-sig", errors="replace")
    return [c.strip() for c in next(csv.reader([first]), [])]


def _read(
    path: Path,
    spec: LabelSpec,
    *,
    encoding: str | None = None,
    matched: dict[str, dict[str, int]] | None = None,
    value_names: dict[str, dict[str, str]] | None = None,
) -> tuple[list[LabelRow], str, str | None]:
    """Every row of the table, or InputError listing each bad row as FILE:LINE: ...; the sha256 read;
    and what ``--names`` renamed (a note, or None)."""
    problems: list[str] = []
    rows: list[LabelRow] = []
    with open_input(path) as source:
        ctx = ReadContext(source=source, encoding=encoding, value_names=dict(value_names or {}))
        for item in read_label_table(path, ctx, spec, matched):
            if isinstance(item, Problem):
                problems.append(f"{path}:{item.line}: {item.message}")
                if item.fatal:
                    break
                continue
            rows.append(item)
        sha = source.finish()
    seen: dict[tuple[Any, ...], int] = {}
    for r in rows:
        for rater, verdict, _raw in r.votes:
            k = (tuple(sorted(r.key.items())), rater)
            if k in seen and verdict is not None:
                problems.append(f"{path}:{r.line}: rater {rater!r} labels this response again (line {seen[k]})")
            seen.setdefault(k, r.line)
    finals: dict[tuple[Any, ...], tuple[int, tuple[str, str, str]]] = {}
    for r in rows:
        if r.final is None:
            continue
        first = finals.setdefault(tuple(sorted(r.key.items())), (r.line, r.final))
        if first[1][:2] != r.final[:2]:
            problems.append(
                f"{path}:{r.line}: final label {r.final[2]!r} by {r.final[0]!r}; line {first[0]} settled this "
                f"response as {first[1][2]!r} by {first[1][0]!r}"
            )
    if not rows and not problems:
        problems.append(f"{path}:1: the table holds no labels")
    if problems:
        shown = problems[:MAX_PROBLEMS_SHOWN]
        if len(problems) > len(shown):
            shown.append(f"... and {len(problems) - len(shown)} more")
        raise InputError("nothing was imported: fix the table (or its --key / --raters / --values).", shown)
    return rows, sha, renamed_note(ctx)


def _record(
    s: Session,
    path: Path,
    sha: str,
    name: str,
    spec: LabelSpec,
    keyed: list[tuple[dict[str, Any], LabelRow]],
    judge: str | None,
    ingested: list[dict[str, Any]],
    emails: Mapping[str, str],
) -> ImportOutcome:
    store = s.store
    stored = store.responses(["id", "model", "benchmark", "prompt_id", "epoch", "judge", "judge_label"])
    stored = stored.assign(prompt_id=stored.prompt_id.astype(str), epoch=stored.epoch.astype(int))
    keys = pd.DataFrame(
        [
            (k["model"], k["benchmark"], str(k["prompt_id"]), int(k.get("epoch", 0)), i)
            for i, (k, _) in enumerate(keyed)
        ],
        columns=["model", "benchmark", "prompt_id", "epoch", "row"],
    )
    hits = keys.merge(stored, on=["model", "benchmark", "prompt_id", "epoch"], how="left")
    missing = hits[hits.id.isna()]
    if len(missing):
        lines = [
            f"{path}:{keyed[int(r.row)][1].line}: no stored response of model {r.model!r}, benchmark "
            f"{r.benchmark!r}, prompt_id {r.prompt_id!r}, epoch {r.epoch}"
            for r in missing.drop_duplicates("row").itertuples()
        ]
        raise InputError(
            "nothing was imported: the labels name responses the store does not hold; ingest them first "
            "(annotate ingest FILE), or fix --key / --model / --benchmark.",
            lines[:MAX_PROBLEMS_SHOWN]
            + ([f"... and {len(lines) - MAX_PROBLEMS_SHOWN} more"] if len(lines) > MAX_PROBLEMS_SHOWN else []),
        )
    # A judge's labels make the strata; responses stored unjudged as well only when no judge labelled them.
    judges = sorted(set(hits.judge) - {NO_JUDGE}) or [NO_JUDGE]
    cells = hits[["model", "benchmark"]].drop_duplicates()
    notes: list[str] = []
    if judge is None:
        if len(judges) > 1:
            judge = judges[0]
            notes.append(
                f"the strata are judge {judge}'s labels (first of {', '.join(judges)} by name; --judge chooses)"
            )
        else:
            judge = judges[0]
    elif judge not in judges:
        raise InputError(f"--judge {judge}: no such judge of these responses (judges: {', '.join(judges)})")
    mine = hits[hits.judge == judge]
    if len(mine) < len(keys):
        raise InputError(
            f"judge {judge} did not label {len(keys) - len(mine)} of the table's responses; choose a judge that "
            f"labelled them all with --judge (judges: {', '.join(judges)})"
        )
    pop = stored[(stored.judge == judge)].merge(cells, on=["model", "benchmark"])
    population = pop.groupby(["model", "benchmark", "judge_label"]).size().rename("population")
    sample = mine.drop_duplicates("id").groupby(["model", "benchmark", "judge_label"]).size().rename("sample")
    strata = pd.concat([population, sample], axis=1).fillna(0).astype(int).reset_index()
    strata = strata.rename(columns={"judge_label": "stratum"})
    census = bool((strata.population == strata["sample"]).all())
    design = "census" if census else "given"
    if not census:
        notes.append(
            f"{int(strata.population.sum() - strata['sample'].sum())} stored responses of these cells have no "
            "imported label: each labelled response stands for its stratum (weight N_h / n_h), as if the labelled "
            "ones were a random sample of it; annotate did not choose them (design: given)"
        )
    strata = strata[strata["sample"] > 0].reset_index(drop=True)
    inc = {(r.model, r.benchmark, r.stratum): r["sample"] / r.population for _, r in strata.iterrows()}
    # One round item per response, however many rows (a long table: one per rater) label it.
    unique = mine.drop_duplicates("id").reset_index(drop=True)
    items = unique.assign(
        stratum=unique.judge_label,
        inclusion_prob=[
            inc[(m, b, h)] for m, b, h in zip(unique.model, unique.benchmark, unique.judge_label, strict=True)
        ],
        response_id=unique.id.astype(int),
        ext_id=[secrets.token_hex(8) for _ in range(len(unique))],
    )
    position = {int(r): i for i, r in enumerate(items.response_id)}
    item_of_row = {int(row): position[int(rid)] for row, rid in zip(mine.row, mine.id, strict=True)}
    # The raters: registered annotators (an e-mail given, else one under the reserved .invalid domain).
    rater_names: list[str] = []
    for _, r in keyed:
        for rater, _v, _raw in r.votes:
            if rater not in rater_names:
                rater_names.append(rater)
    settlers: list[str] = []
    for _, r in keyed:
        if r.final is not None and r.final[0] not in settlers:
            settlers.append(r.final[0])
    unknown = sorted(set(emails) - set(rater_names) - set(settlers))
    if unknown:
        raise InputError(f"--annotator names rater(s) the table does not have: {', '.join(unknown)}")
    address = {rater: emails.get(rater) or f"{_slug(rater)}@{IMPORTED_DOMAIN}" for rater in rater_names}
    # Two raters are two people only if their addresses differ (registration ignores case): "Alice"
    # and "alice", or "a.b" and "a-b", would be one annotator with both their votes.
    owner: dict[str, str] = {}
    for rater, email in address.items():
        other = owner.setdefault(email.lower(), rater)
        if other != rater:
            raise InputError(
                f"raters {other!r} and {rater!r} would be one annotator ({email}): give each an address with "
                f"--annotator {other}=EMAIL --annotator {rater}=EMAIL, or map their labels to one rater"
            )
    team = store.annotators()
    experts = set(team.email[team.role == "expert"].str.lower()) if len(team) else set()
    for email in address.values():
        if email.lower() in experts:
            raise InputError(f"{email} is registered as an expert; a rater of imported labels is an annotator")
    # Who settled the file's final labels: each an expert (a rater who also settled is registered twice,
    # once per role, as a routed round's expert is not one of its reviewers).
    settler_address = {who: emails.get(who) or f"{_slug(who)}.settled@{IMPORTED_DOMAIN}" for who in settlers}
    rater_addresses = set(team.email[team.role != "expert"].str.lower()) if len(team) else set()
    rater_addresses |= {a.lower() for a in address.values()}
    for who, email in settler_address.items():
        if email.lower() in rater_addresses:
            raise InputError(
                f"{email} (who settled the final labels, {who!r}) is a rater's address; an expert is registered "
                f"apart: give the settler another with --annotator {who}=EMAIL"
            )
    secret = new_task_secret()
    config = parse_label_config(
        round_label_config(load_label_config(s.ws).xml, dialogue=False, image=False), source="imported round"
    )
    origin = {
        "imported": True,
        "file": str(path),
        "sha256": sha,
        "design": design,
        "key": dict(spec.key),
        "raters": list(spec.raters) or None,
        "rater_names": dict(spec.rater_names) or None,
        "long": [spec.rater_column, spec.label_column] if spec.rater_column else None,
        "values": dict(sorted(spec.values.items())),
        "strata_judge": judge,
        "settled": {"column": spec.final_column, "by": spec.final_by} if spec.final_column else None,
    }
    counts = {"votes": 0, "empty": 0, "settled": 0}

    def build(
        pseudonyms: dict[str, str], settled_by: dict[str, str], annotator_id: dict[str, int]
    ) -> tuple[dict, list[dict]]:
        """The round's row and each rater's project, once the raters have pseudonyms (in the transaction)."""
        new_round = {
            "name": name,
            "kind": "review",
            "judge": judge,
            "seed": 0,
            "clear_per_cell": 0,
            "ambiguous": "all",
            "annotators": json.dumps([pseudonyms[r] for r in rater_names]),
            "label_config_sha": config.sha256,
            "label_config": config.xml,
            "task_secret": secret,
            "task_order": None,
            "origin": json.dumps(origin, sort_keys=True),
        }
        projects = []
        counts["votes"] = counts["empty"] = counts["settled"] = 0
        for rater in rater_names:
            pseud = pseudonyms[rater]
            tasks: dict[int, tuple[str, int]] = {}
            annotations = []
            for row_index, (_, r) in enumerate(keyed):
                i = item_of_row[row_index]
                for who, verdict, raw in r.votes:
                    if who != rater:
                        continue
                    tasks.setdefault(i, (task_ext_id(secret, pseud, str(items.ext_id[i])), len(tasks)))
                    if verdict is None:
                        counts["empty"] += 1
                        continue
                    counts["votes"] += 1
                    annotations.append(
                        {
                            "item": i,
                            "annotator_id": annotator_id[pseud],
                            "ls_annotation_id": r.line,
                            "verdict": verdict,
                            "skipped": False,
                            "deleted": False,
                            "result": json.dumps({"imported": {"file": path.name, "line": r.line, "value": raw}}),
                            "channel": CHANNEL_IMPORT,
                            "source_sha256": sha,
                        }
                    )
            projects.append(
                {
                    "annotator_id": annotator_id[pseud],
                    "title": f"imported: {path.name}",
                    "tasks": tasks,
                    "annotations": annotations,
                }
            )
        for who in settlers:
            pseud = settled_by[who]
            tasks, answers = {}, []
            for row_index, (_, r) in enumerate(keyed):
                if r.final is None or r.final[0] != who:
                    continue
                i = item_of_row[row_index]
                if i in tasks:
                    continue
                tasks[i] = (task_ext_id(secret, pseud, str(items.ext_id[i])), len(tasks))
                counts["settled"] += 1
                answers.append(
                    {
                        "item": i,
                        "annotator_id": annotator_id[pseud],
                        "ls_annotation_id": r.line,
                        "verdict": r.final[1],
                        "skipped": False,
                        "deleted": False,
                        "result": json.dumps(
                            {"imported": {"file": path.name, "line": r.line, "value": r.final[2], "final": True}}
                        ),
                        "channel": CHANNEL_IMPORT,
                        "source_sha256": sha,
                    }
                )
            projects.append(
                {
                    "annotator_id": annotator_id[pseud],
                    "title": f"imported final labels: {path.name}",
                    "tasks": tasks,
                    "annotations": answers,
                }
            )
        return new_round, projects

    _, pseudonyms, settled_by = store.record_imported_round(
        raters={rater: (email, rater) for rater, email in address.items()},
        experts={who: (email, who) for who, email in settler_address.items()},
        build=build,
        max_response_id=store.max_response_id(),
        items=items[["response_id", "stratum", "inclusion_prob", "ext_id"]],
        strata=strata[["model", "benchmark", "stratum", "population", "sample"]],
    )
    votes, empty = counts["votes"], counts["empty"]
    return ImportOutcome(
        round=name,
        path=str(path),
        sha256=sha,
        design=design,
        judge=judge,
        responses=len(items),
        raters={r: pseudonyms[r] for r in rater_names},
        votes=votes,
        empty_cells=empty,
        ingested=ingested,
        strata=strata.to_dict(orient="records"),
        notes=notes,
        settled=counts["settled"],
        settlers={who: settled_by[who] for who in settlers},
    )


def _again(
    s: Session, row: dict[str, Any], name: str, path: Path, sha: str, ingested: list[dict[str, Any]]
) -> ImportOutcome:
    """The same file imported into the same round before: nothing new (safe to run twice)."""
    origin = json.loads(row["origin"])
    round_id = int(row["id"])
    ann = s.store.annotations(round_id)
    team = s.store.annotators()
    names = dict(zip(team.pseudonym, team.name, strict=True))
    return ImportOutcome(
        round=name,
        path=str(path),
        sha256=sha,
        design=str(origin.get("design")),
        judge=str(row["judge"]),
        responses=int(ann.round_item_id.nunique()) if len(ann) else 0,
        raters={str(names.get(p) or p): str(p) for p in json.loads(row["annotators"])},
        votes=len(ann),
        empty_cells=0,
        already=True,
        ingested=ingested,
    )


def _slug(text: str) -> str:
    """A rater's name as the local part of an address: letters, digits, dot, dash, underscore.

    >>> _slug("Human 1/ß")
    'human-1--'
    """
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in text.lower())[:60] or "rater"
