"""Test package: unit, graph-level, end-to-end and server tests (support code in tests/support)."""
