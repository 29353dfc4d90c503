"""The test harness itself: the OpenAI-compatible stub, the launchers, the fast tier's rules."""
