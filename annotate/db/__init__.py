"""The database room: the only package that talks SQL (SQLAlchemy / SQLModel).

``open_store(url)`` gives a :class:`Store`; everything above reads and writes through its
methods, which take and return plain values and DataFrames. ``check_url`` refuses an
unsupported database before anything is created; ``store_files`` names a SQLite store's files
(for the permission check); ``store_error`` turns a database exception that concurrency
explains into the user's error, for the command line's last line of defence.
"""

from annotate.db.store import (
    SCHEMA_VERSION,
    Store,
    check_url,
    open_store,
    store_error,
    store_exists,
    store_files,
)

__all__ = ["SCHEMA_VERSION", "Store", "check_url", "open_store", "store_error", "store_exists", "store_files"]
