"""The database room: the only package that talks SQL (SQLAlchemy / SQLModel).

``open_store(url)`` gives a :class:`Store`; everything above reads and writes through its
methods, which take and return plain values and DataFrames.
"""

from annotate.db.store import SCHEMA_VERSION, Store, open_store

__all__ = ["SCHEMA_VERSION", "Store", "open_store"]
