"""Operator settings and per-run settings."""
