"""What the tests and the benchmarks run against: the scripted chat model (which `maistro demo` plays too), the
OpenAI-compatible stub and its scripts, launchers for PostgreSQL, Redis and Aegra, `langgraph dev` and
llama-server, subprocess workers, and shared helpers and corpora. Nothing here imports `tests` or `bench`."""
