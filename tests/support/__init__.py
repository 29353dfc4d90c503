"""Test support: stub servers, subprocess workers and helpers that the test modules share."""
