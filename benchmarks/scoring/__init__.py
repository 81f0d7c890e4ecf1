"""Scoring recorded samples in the sandbox, against the authors' published verdicts and
tables, and what the scoring itself costs."""
