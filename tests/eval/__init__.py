"""The eval: its cases, scoring, endpoint runs and reports."""
