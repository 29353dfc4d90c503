"""The benchmarks' own parts (bench/), without running a benchmark."""
