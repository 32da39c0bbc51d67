"""``annotate/db/tables.py`` (the Core image the queries use) is the schema ``models.py`` declares.

Three checks: the file is what the generator writes today (so a change to the declaration that was
not regenerated fails here, with the command to run); the two give the same DDL, table by table
and index by index, on SQLite and on PostgreSQL; and a value goes through each column type of
both the same way (the datetime type is a copy of SQLModel's, so its rules are compared).
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

from annotate.db import generate_tables, tables


def declared():
    from sqlmodel import SQLModel

    from annotate.db import models  # noqa: F401

    return SQLModel.metadata


def test_tables_py_is_what_the_generator_writes_from_the_declaration():
    assert generate_tables.TARGET.read_text(encoding="utf-8") == generate_tables.render(), (
        "annotate/db/tables.py is not the image of annotate/db/models.py: run python -m annotate.db.generate_tables"
    )


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.dialect()], ids=["sqlite", "postgresql"])
def test_the_image_gives_the_declarations_ddl(dialect):
    ours, theirs = tables.METADATA.tables, declared().tables
    assert list(ours) == list(theirs)
    for name, table in theirs.items():
        image = ours[name]
        assert str(CreateTable(image).compile(dialect=dialect)) == str(CreateTable(table).compile(dialect=dialect))
        indexes = sorted(str(CreateIndex(i).compile(dialect=dialect)) for i in image.indexes)
        assert indexes == sorted(str(CreateIndex(i).compile(dialect=dialect)) for i in table.indexes), name
        for column in table.columns:
            mine = image.c[column.name]
            assert (mine.nullable, mine.primary_key, mine.autoincrement) == (
                column.nullable,
                column.primary_key,
                column.autoincrement,
            )
            # Python-side defaults fill an insert that leaves the column out: they must agree.
            assert (mine.default.arg if mine.default is not None else None) == (
                column.default.arg if column.default is not None else None
            ), f"{name}.{column.name}"


def test_the_datetime_type_keeps_sqlmodels_rules():
    from sqlmodel.sql.sqltypes import UTCDateTime as Theirs

    ours, theirs = tables.UTCDateTime(), Theirs()
    for dialect in (sqlite.dialect(), postgresql.dialect()):
        assert ours.compile(dialect=dialect) == theirs.compile(dialect=dialect)
        east = datetime(2026, 12, 2, 12, 0, tzinfo=timezone(timedelta(hours=2)))
        for value in (None, east, datetime(2026, 12, 2, tzinfo=UTC)):
            assert ours.process_bind_param(value, dialect) == theirs.process_bind_param(value, dialect)
            assert ours.process_result_value(value, dialect) == theirs.process_result_value(value, dialect)
        naive = datetime(2026, 12, 2, 12, 0, tzinfo=UTC).replace(tzinfo=None)
        assert ours.process_result_value(naive, dialect) == theirs.process_result_value(naive, dialect)
        with pytest.raises(ValueError):
            theirs.process_bind_param(naive, dialect)
        with pytest.raises(ValueError):
            ours.process_bind_param(naive, dialect)


def test_an_everyday_command_loads_neither_sqlmodel_nor_pydantic(tmp_path):
    """The point of the image: `summary` on a store never imports the declaration."""
    from annotate.db.store import open_store

    url = f"sqlite:///{tmp_path / 'store.db'}"
    open_store(url).close()  # created (this process loads the declaration: a store is written)
    code = (
        "import sys; from annotate.db.store import open_store; "
        f"s = open_store({url!r}); s.label_counts(); s.close(); "
        "print(sorted(m for m in ('sqlmodel', 'pydantic', 'annotate.db.models') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
