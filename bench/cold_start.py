"""Cold start: CPU seconds of each entry point in a fresh process, as a ratio over importing typer and rich.

`python -m bench.cold_start` (also run by `python -m bench.run`). Each command runs REPEATS times and the
median of user + system CPU time is reported, measured through `getrusage(RUSAGE_CHILDREN)`; the baseline,
`python -c "import typer, rich.console, rich.table"`, is measured in the same run. `maistro` is the real console
script; `maistro todos` reads an empty user from a SQLite database created before timing (so table setup is
not counted). Leaves out: disk cache effects of a machine's first run (one warm-up run each is discarded).
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPEATS = 5
BASELINE = [sys.executable, "-c", "import typer, rich.console, rich.table"]
MAISTRO = str(Path(sys.executable).with_name("maistro"))


def cpu_seconds(command: list[str], environment: dict[str, str]) -> float:
    """Median user + system CPU seconds of running `command` (after one discarded warm-up run)."""
    subprocess.run(command, env=environment, check=True, capture_output=True)
    samples = []
    for _ in range(REPEATS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command, env=environment, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(samples)


def measure() -> list[tuple[str, float, float, float | None]]:
    """(entry point, CPU seconds, ratio over the baseline, target ratio) for each entry point."""
    data = tempfile.mkdtemp(prefix="maistro-cold-start-")
    environment = {**os.environ, "MAISTRO_DATA_DIR": data}
    environment.pop("MAISTRO_DATABASE_URL", None)
    entry_points = [
        ("maistro --help", [MAISTRO, "--help"], 2.5),
        ("maistro todos", [MAISTRO, "todos", "--user", "bench"], 7.0),
        ("import graph.server.auth", [sys.executable, "-c", "import graph.server.auth"], 3.0),
        (
            "import graph.server.auth + its Auth object (imports langgraph_sdk, already loaded in the server)",
            [sys.executable, "-c", "import graph.server.auth as module; module.auth"],
            None,
        ),
    ]
    baseline = cpu_seconds(BASELINE, environment)
    rows = [("python -c 'import typer, rich.console, rich.table' (baseline)", baseline, 1.0, None)]
    for name, command, target in entry_points:
        seconds = cpu_seconds(command, environment)
        rows.append((name, seconds, seconds / baseline, target))
    return rows


def print_cold_start() -> None:
    """Print the cold-start table with targets."""
    print("| entry point | CPU s | × baseline | target |")
    print("|---|---|---|---|")
    for name, seconds, ratio, target in measure():
        verdict = "" if target is None else f"≤ {target}x: {'met' if ratio <= target else 'MISSED'}"
        print(f"| {name} | {seconds:.2f} | {ratio:.1f}x | {verdict} |")


if __name__ == "__main__":
    print_cold_start()
