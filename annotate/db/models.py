"""Database tables (SQLModel). Definitions only: every query lives in the ``annotate.db`` components.

Schema version 1 (the foundation): ingested responses, the source files they came from, the
ingest runs, and the history of replaced responses.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import Column, Table, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


class SchemaVersion(SQLModel, table=True):
    __tablename__ = "schema_version"

    version: int = Field(primary_key=True)
    description: str
    applied_at: datetime


class SourceFile(SQLModel, table=True):
    """One row per distinct ingested file content (sha256)."""

    __tablename__ = "source_file"

    id: int | None = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, unique=True, max_length=64)
    path: str
    format: str
    size_bytes: int
    first_ingested_at: datetime


class IngestRun(SQLModel, table=True):
    """One row per `annotate ingest` of one file that changed or confirmed the store."""

    __tablename__ = "ingest_run"

    id: int | None = Field(default=None, primary_key=True)
    source_id: int = Field(foreign_key="source_file.id", index=True)
    started_at: datetime
    finished_at: datetime
    rows_read: int
    rows_added: int
    rows_duplicate: int
    rows_replaced: int
    rows_rejected: int
    rows_set_aside: int
    options: str = Field(sa_column=Column(Text, nullable=False))  # JSON: overrides, flags
    rubric: str = Field(sa_column=Column(Text, nullable=False))  # JSON: the rubric in force


class Response(SQLModel, table=True):
    """One judged model response. Unique per (benchmark, model, prompt_id, epoch, judge)."""

    __tablename__ = "response"
    __table_args__ = (UniqueConstraint("benchmark", "model", "prompt_id", "epoch", "judge", name="uq_response_key"),)

    id: int | None = Field(default=None, primary_key=True)
    benchmark: str
    model: str
    prompt_id: str
    epoch: int = 0
    judge: str
    category: str | None = None
    prompt: str = Field(sa_column=Column(Text, nullable=False))
    response: str = Field(sa_column=Column(Text, nullable=False))
    judge_verdict: str | None = Field(default=None, sa_column=Column(Text))  # raw, verbatim
    judge_score: float | None = None
    judge_label: str  # harmful / safe / ambiguous
    label_reason: str  # mapped / unparsed / score-band / missing
    # v11: safety / refusal / quality (annotate.columns.JUDGE_KINDS); earlier rows migrate to safety
    judge_kind: str = Field(default="safety", sa_column=Column(Text, nullable=False, server_default="safety"))
    meta: str | None = Field(default=None, sa_column=Column(Text))  # JSON object
    # sha1 of prompt, response, verdict, score, label (and the transcript when there is one)
    content_sha: str = Field(max_length=40)
    source_id: int = Field(foreign_key="source_file.id", index=True)
    ingested_at: datetime
    # v6: the whole conversation of a multi-turn or agentic sample (JSON list of turns, the
    # contract of ``annotate.ingest.records.transcript_problem``); None for a single-turn one.
    transcript: str | None = Field(default=None, sa_column=Column(Text))


class ResponseHistory(SQLModel, table=True):
    """The previous values of a response replaced by `annotate ingest --replace`."""

    __tablename__ = "response_history"

    id: int | None = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="response.id", index=True)
    prompt: str = Field(sa_column=Column(Text, nullable=False))
    response: str = Field(sa_column=Column(Text, nullable=False))
    judge_verdict: str | None = Field(default=None, sa_column=Column(Text))
    judge_score: float | None = None
    judge_label: str
    label_reason: str
    judge_kind: str | None = Field(default=None, sa_column=Column(Text))  # v10
    category: str | None = None
    meta: str | None = Field(default=None, sa_column=Column(Text))
    content_sha: str
    source_id: int
    ingested_at: datetime
    replaced_at: datetime
    replaced_by_source_id: int
    transcript: str | None = Field(default=None, sa_column=Column(Text))  # v6


# -- schema version 2: review rounds in Label Studio --------------------------------------------


class Annotator(SQLModel, table=True):
    """A reviewer. The e-mail stays in the store; every output uses the pseudonym."""

    __tablename__ = "annotator"

    id: int | None = Field(default=None, primary_key=True)
    pseudonym: str = Field(unique=True, index=True)  # A1, A2, ... (E1, ... for experts)
    email: str = Field(unique=True)
    name: str | None = None
    ls_user_id: int | None = None
    role: str = "annotator"  # annotator / expert
    created_at: datetime


class ReviewRound(SQLModel, table=True):
    __tablename__ = "review_round"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    kind: str = "review"  # review / adjudication
    judge: str
    seed: int
    clear_per_cell: int
    annotators: str  # JSON list of pseudonyms
    label_config_sha: str
    label_config: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime
    # v5: the key of the round's per-project task ids (hex; HMAC-SHA256, labelstudio.tasks.task_ext_id).
    # Never leaves the store.
    task_secret: str | None = None
    # v7: JSON list of the judges whose unanimity made the round's strata (`route --strata-from`);
    # None: the routing judge's own labels.
    strata_from: str | None = Field(default=None, sa_column=Column(Text))
    # v8: how the round's reviewers were kept apart, fixed when it is first sent to a server:
    # "technical" (every person's projects on a Label Studio of their own) or "instructions only"
    # (one server for everyone). None: never sent to a server (task files), or routed before v8.
    blinding: str | None = None
    # v9: JSON of the adjudication rules of the round's latest `annotate adjudicate` (and its policy):
    # the final labels in force follow from the votes, the expert's answers and these rules, which
    # an export records (design.json) so that verify re-derives every final label. None: never
    # adjudicated, or adjudicated before v9.
    adjudication: str | None = Field(default=None, sa_column=Column(Text))
    # v10: JSON object {benchmark: judge} of a round across suites whose benchmarks have judges of
    # their own (`route --judge BENCHMARK=JUDGE`); ``judge`` then reads "B1=J1, B2=J2". None: one
    # judge for every benchmark (``judge``).
    judges: str | None = Field(default=None, sa_column=Column(Text))
    # v12: how the round samples each cell's ambiguous (census) stratum (`route --ambiguous`): "all"
    # (every response), a whole number k (a simple random sample of min(N, k)) or a fraction f
    # (of ceil(f N)), as text. None: routed before v12, a census.
    ambiguous: str | None = None
    # v13: JSON of the order design of the reviewers' tasks (``stats.ordering.OrderDesign``:
    # {"design": "blocks", "block_size": 10} or {"design": "independent", "block_size": null}).
    # None: routed before v13 (an independent order keyed by the items' secret ext_ids).
    task_order: str | None = None


class RoundWave(SQLModel, table=True):
    """One routing of a round: the responses ingested up to ``max_response_id`` not yet in it."""

    __tablename__ = "round_wave"

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="review_round.id", index=True)
    wave: int
    max_response_id: int
    routed_at: datetime


class RoundStratum(SQLModel, table=True):
    """The design: population N_h and sample size n_h per (cell, stratum, wave)."""

    __tablename__ = "round_stratum"
    __table_args__ = (UniqueConstraint("round_id", "wave", "model", "benchmark", "stratum"),)

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="review_round.id", index=True)
    wave: int
    model: str
    benchmark: str
    stratum: str
    population: int
    sample: int
    # v12: a next wave's stratum (`route --next-wave`) draws from the not-yet-sampled remainder of
    # the stratum of wave ``of_wave``: ``population`` is that remainder R_h, ``sampled_before`` the
    # p_h responses earlier waves sampled from it. None for a wave of new responses.
    of_wave: int | None = None
    sampled_before: int | None = None


class RoundItem(SQLModel, table=True):
    """A response selected for review in a round, with its stratum and inclusion probability."""

    __tablename__ = "round_item"
    __table_args__ = (UniqueConstraint("round_id", "response_id"),)

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="review_round.id", index=True)
    response_id: int = Field(foreign_key="response.id", index=True)
    wave: int
    stratum: str
    inclusion_prob: float
    ext_id: str = Field(unique=True, index=True)  # opaque id carried by the Label Studio task
    gold_label: str | None = None
    # v13: the ambiguity priority the item was ordered by (``route --prioritize``), fixed when it
    # was first sent; None: sent without priorities.
    priority: float | None = None


class LsProject(SQLModel, table=True):
    """The Label Studio project holding one annotator's tasks of one round."""

    __tablename__ = "ls_project"
    __table_args__ = (UniqueConstraint("round_id", "annotator_id"),)

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="review_round.id", index=True)
    annotator_id: int = Field(foreign_key="annotator.id")
    project_id: int | None = None  # None in file mode
    title: str
    last_pulled_at: str | None = None  # server time of the last pull (ISO text, as LS gives it)
    created_at: datetime
    # v5: the one Label Studio user whose annotations count in this project (labelstudio.tasks.decide_pin).
    pinned_user_id: int | None = None
    # v8: where the project lives: "own" (its person's own embedded server) or "shared" / None
    # (the workspace's one shared server; every project before v8).
    server: str | None = None


class LsTask(SQLModel, table=True):
    """ext_id -> Label Studio task id, per annotator project.

    Since v5 the ext_id is the project's own (a keyed hash of project and item, never the
    round item's ext_id), and ``text_sha`` is the hash of the task's text as sent
    (``labelstudio.tasks.task_text_sha``), checked on every pull. Tasks of rounds routed before v5
    carry the item's ext_id and no hash.
    """

    __tablename__ = "ls_task"
    __table_args__ = (UniqueConstraint("ls_project_id", "ext_id"),)

    id: int | None = Field(default=None, primary_key=True)
    ls_project_id: int = Field(foreign_key="ls_project.id", index=True)
    round_item_id: int = Field(foreign_key="round_item.id", index=True)
    ext_id: str
    task_id: int | None = None  # None until imported (file mode: never)
    position: int  # the annotator's shuffled order
    imported_at: datetime | None = None
    text_sha: str | None = None  # v5: sha256 of the task's data as sent (without ext_id)
    prior_votes: str | None = Field(default=None, sa_column=Column(Text))  # v5: expert tasks: the votes as sent


class Annotation(SQLModel, table=True):
    """One Label Studio annotation as last pulled. Skips are kept but are not labels."""

    __tablename__ = "annotation"
    __table_args__ = (UniqueConstraint("ls_project_id", "ls_annotation_id"),)

    id: int | None = Field(default=None, primary_key=True)
    ls_project_id: int = Field(foreign_key="ls_project.id", index=True)
    round_item_id: int = Field(foreign_key="round_item.id", index=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    ls_annotation_id: int
    verdict: str | None = None
    refusal: str | None = None
    confidence: int | None = None
    rationale: str | None = Field(default=None, sa_column=Column(Text))
    skipped: bool = False
    deleted: bool = False
    lead_time: float | None = None
    created_at: str | None = None  # Label Studio's timestamps, verbatim
    updated_at: str | None = None
    result: str = Field(sa_column=Column(Text, nullable=False))  # JSON, verbatim
    pulled_at: datetime
    completed_by: int | None = None  # v5: the Label Studio user who made it (None: pulled before v5)


class AnnotationHistory(SQLModel, table=True):
    """Previous values of an annotation that changed or was deleted in Label Studio."""

    __tablename__ = "annotation_history"

    id: int | None = Field(default=None, primary_key=True)
    annotation_id: int = Field(foreign_key="annotation.id", index=True)
    verdict: str | None = None
    refusal: str | None = None
    confidence: int | None = None
    rationale: str | None = Field(default=None, sa_column=Column(Text))
    skipped: bool = False
    deleted: bool = False
    updated_at: str | None = None
    result: str = Field(sa_column=Column(Text, nullable=False))
    replaced_at: datetime
    change: str  # updated / deleted / restored


class Quarantine(SQLModel, table=True):
    """Pulled results that cannot be counted (no verdict, unknown choice, unknown task...)."""

    __tablename__ = "quarantine"
    __table_args__ = (UniqueConstraint("ls_project_id", "ls_annotation_id", "fingerprint"),)

    id: int | None = Field(default=None, primary_key=True)
    ls_project_id: int = Field(foreign_key="ls_project.id", index=True)
    ls_annotation_id: int | None = None
    task_id: int | None = None
    ext_id: str | None = None
    reason: str = Field(sa_column=Column(Text, nullable=False))
    payload: str = Field(sa_column=Column(Text, nullable=False))
    fingerprint: str  # sha1 of the payload: pulling twice quarantines once
    pulled_at: datetime


# -- schema version 3: adjudication -------------------------------------------------------------


class FinalLabel(SQLModel, table=True):
    """A decision on one reviewed response. Append-only: the latest row per item is in force."""

    __tablename__ = "final_label"

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="review_round.id", index=True)
    round_item_id: int = Field(foreign_key="round_item.id", index=True)
    status: str  # resolved / escalated / unresolved
    label: str | None = None  # harmful / safe when resolved
    method: str  # majority / expert / policy:<label> / pending
    adjudicator: str  # "majority vote", an expert pseudonym, "policy"
    reason: str = Field(sa_column=Column(Text, nullable=False))
    votes: str = Field(sa_column=Column(Text, nullable=False))  # JSON {pseudonym: verdict}
    policy: str
    decided_at: datetime


class Escalation(SQLModel, table=True):
    """An item sent to the expert: escalated by a rule, or drawn for the majority check."""

    __tablename__ = "escalation"
    __table_args__ = (UniqueConstraint("round_id", "round_item_id", "expert_id"),)

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="review_round.id", index=True)
    round_item_id: int = Field(foreign_key="round_item.id")
    expert_id: int = Field(foreign_key="annotator.id")
    kind: str  # escalated / check
    reason: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime


# -- schema version 4: ambiguity diagnostics ----------------------------------------------------


class ResponseFeature(SQLModel, table=True):
    """Text features of a response (annotate.stats.correlates), computed once."""

    __tablename__ = "response_feature"

    response_id: int = Field(primary_key=True, foreign_key="response.id")
    features: str = Field(sa_column=Column(Text, nullable=False))  # JSON {feature: value}
    version: str
    computed_at: datetime


class Diagnosis(SQLModel, table=True):
    """The result of one `annotate diagnose` run (JSON), for exports and route --prioritize."""

    __tablename__ = "diagnosis"

    id: int | None = Field(default=None, primary_key=True)
    judge: str
    result: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime


# -- typed handles on the tables ----------------------------------------------------------------
# SQLModel leaves ``__table__`` untyped; the queries in this package use these names instead.
SCHEMA_VERSION_T = cast(Table, SchemaVersion.__table__)  # type: ignore[attr-defined]
SOURCE_FILE = cast(Table, SourceFile.__table__)  # type: ignore[attr-defined]
INGEST_RUN = cast(Table, IngestRun.__table__)  # type: ignore[attr-defined]
RESPONSE = cast(Table, Response.__table__)  # type: ignore[attr-defined]
RESPONSE_HISTORY = cast(Table, ResponseHistory.__table__)  # type: ignore[attr-defined]
ANNOTATOR = cast(Table, Annotator.__table__)  # type: ignore[attr-defined]
REVIEW_ROUND = cast(Table, ReviewRound.__table__)  # type: ignore[attr-defined]
ROUND_WAVE = cast(Table, RoundWave.__table__)  # type: ignore[attr-defined]
ROUND_STRATUM = cast(Table, RoundStratum.__table__)  # type: ignore[attr-defined]
ROUND_ITEM = cast(Table, RoundItem.__table__)  # type: ignore[attr-defined]
LS_PROJECT = cast(Table, LsProject.__table__)  # type: ignore[attr-defined]
LS_TASK = cast(Table, LsTask.__table__)  # type: ignore[attr-defined]
ANNOTATION = cast(Table, Annotation.__table__)  # type: ignore[attr-defined]
ANNOTATION_HISTORY = cast(Table, AnnotationHistory.__table__)  # type: ignore[attr-defined]
QUARANTINE = cast(Table, Quarantine.__table__)  # type: ignore[attr-defined]
FINAL_LABEL = cast(Table, FinalLabel.__table__)  # type: ignore[attr-defined]
ESCALATION = cast(Table, Escalation.__table__)  # type: ignore[attr-defined]
RESPONSE_FEATURE = cast(Table, ResponseFeature.__table__)  # type: ignore[attr-defined]
DIAGNOSIS = cast(Table, Diagnosis.__table__)  # type: ignore[attr-defined]
