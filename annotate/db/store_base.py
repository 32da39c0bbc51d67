"""The base every table component shares: one engine, its dialect, and the timestamp format."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine

from annotate.db.engine import db_timestamp


class Component:
    """A group of related queries over one engine. Each method opens and closes its own connection.

    Components never call each other: whatever they share is here.
    """

    engine: Engine
    dialect: str

    def db_timestamp(self, when: datetime) -> Any:
        """A timestamp as the raw DBAPI path must pass it (SQLAlchemy's SQLite text format)."""
        return db_timestamp(self.dialect, when)
