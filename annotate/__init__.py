"""annotate: human review of ambiguous AI-safety judge verdicts, with audited scores."""

__version__ = "0.1.0"
