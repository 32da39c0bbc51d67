"""The audit record and everything derived from it: a pure room (no database, HTTP, command line or clock).

The record is three tables, ``labels.csv``, ``judge_labels.csv`` and ``design.json``
(:class:`~annotate.audit.record.AuditRecord`); every score, judge audit, agreement table, export
file and verification is a function of it (and of the settings the manifest records). The store
produces it (``pipeline.record``), an export folder holds it, ``verify`` reads it back.

* ``design``: design.json as types (``Design``, ``RoundDesign``, ``Stratum``), checked;
* ``labels``: labels.csv and judge_labels.csv: columns, vote table, Dawid-Skene label, checks;
* ``record``: the record itself, to and from an export's files;
* ``schema``: the export schemas, one row per version;
* ``scores``, ``agreement``, ``judges``: the derived views (and what ``--json`` prints of them);
* ``derive``: every derived file of an export, as bytes;
* ``verify``: what an export proves, file by file;
* ``sign``: Ed25519 signatures of the manifest;
* ``safecsv``: spreadsheet-safe CSV, written and read.
"""
