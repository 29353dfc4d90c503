"""`.ci/run` runs what the README's "Tests" section tells a newcomer to run, so that CI proves the README."""

import re

from testing.langgraph_server import ROOT
from testing.llama_server import PREPARE
from testing.system_programs import INSTALL


def readme_test_commands() -> list[str]:
    """The commands of the README's "Tests" block, comments dropped."""
    section = (ROOT / "README.md").read_text().split("\n## Tests\n", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_ci_installs_as_the_readme_says_then_runs_exactly_its_test_command():
    ci = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines() if line.strip()]
    system, install, prepare, everything, _fast = readme_test_commands()
    assert system == INSTALL, "the tests' failure message names the README's install line"
    assert "apt-get install -y -qq chromium redis-server cmake g++ >/dev/null" in " ".join(ci)
    assert install.replace("pip install", "python -m pip install --quiet") in ci
    assert prepare == PREPARE and ci.index(prepare) == ci.index(install.replace("pip install", "python -m pip install --quiet")) + 1, (
        "the real-model tests fail with the README's prepare line, which CI runs right after installing the project"
    )
    assert ci[-1] == everything == "ruff check . && pytest"
