"""Readers for the tool output formats `annotate ingest` understands (one module per format)."""
