"""Benchmarks that print figures (model calls, prompt tokens, non-LLM overhead); not part of the test run."""
