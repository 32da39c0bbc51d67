"""Database tables (SQLModel). Definitions only: every query lives in ``annotate.store``.

Schema version 1 (the foundation): ingested responses, the source files they came from, the
ingest runs, and the history of replaced responses.
"""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

# Unified judge labels: every format's raw verdict is mapped onto these by the rubric.
LABELS = ("harmful", "safe", "ambiguous")
# Why a response got its unified label.
LABEL_REASONS = ("mapped", "unparsed", "score-band", "missing")


class SchemaVersion(SQLModel, table=True):
    __tablename__ = "schema_version"

    version: int = Field(primary_key=True)
    description: str
    applied_at: datetime


class SourceFile(SQLModel, table=True):
    """One row per distinct ingested file content (sha256)."""

    __tablename__ = "source_file"

    id: Optional[int] = Field(default=None, primary_key=True)
    sha256: str = Field(index=True, unique=True, max_length=64)
    path: str
    format: str
    size_bytes: int
    first_ingested_at: datetime


class IngestRun(SQLModel, table=True):
    """One row per `annotate ingest` of one file that changed or confirmed the store."""

    __tablename__ = "ingest_run"

    id: Optional[int] = Field(default=None, primary_key=True)
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
    __table_args__ = (
        UniqueConstraint("benchmark", "model", "prompt_id", "epoch", "judge", name="uq_response_key"),
    )

    id: Optional[int] = Field(default=None, primary_key=True)
    benchmark: str
    model: str
    prompt_id: str
    epoch: int = 0
    judge: str
    category: Optional[str] = None
    prompt: str = Field(sa_column=Column(Text, nullable=False))
    response: str = Field(sa_column=Column(Text, nullable=False))
    judge_verdict: Optional[str] = Field(default=None, sa_column=Column(Text))  # raw, verbatim
    judge_score: Optional[float] = None
    judge_label: str  # harmful / safe / ambiguous
    label_reason: str  # mapped / unparsed / score-band / missing
    meta: Optional[str] = Field(default=None, sa_column=Column(Text))  # JSON object
    content_sha: str = Field(max_length=40)  # sha1 of prompt, response, verdict, score
    source_id: int = Field(foreign_key="source_file.id", index=True)
    ingested_at: datetime


class ResponseHistory(SQLModel, table=True):
    """The previous values of a response replaced by `annotate ingest --replace`."""

    __tablename__ = "response_history"

    id: Optional[int] = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="response.id", index=True)
    prompt: str = Field(sa_column=Column(Text, nullable=False))
    response: str = Field(sa_column=Column(Text, nullable=False))
    judge_verdict: Optional[str] = Field(default=None, sa_column=Column(Text))
    judge_score: Optional[float] = None
    judge_label: str
    label_reason: str
    category: Optional[str] = None
    meta: Optional[str] = Field(default=None, sa_column=Column(Text))
    content_sha: str
    source_id: int
    ingested_at: datetime
    replaced_at: datetime
    replaced_by_source_id: int
