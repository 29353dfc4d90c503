"""The docs run as written: every fenced block of README.md and docs/**/*.md is run, parsed or names the test that
covers it (docs/contributing/tests.md, "Docs tests", says how); the configuration tables are the code's; every link
resolves; the README stays short."""

import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from graph import settings_table
from graph.run_context import RunContext
from graph.settings import Settings
from testing.openai_stub import OpenAIStub, text_reply

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
README_LINES = 200
# Languages whose blocks the tests run or parse; every other block with one of CODE's languages must say what covers it.
RUN = {"bash", "python", "json"}
CODE = RUN | {"js", "sh", "shell", "console"}
MARKER = re.compile(r"<!-- docs-test: (?:not run, (?P<reason>[^;]+); covered by (?P<covered>\S+)|exits (?P<status>\d+)) -->")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
STUB_REPLY = "Noted."


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language (the info string's first word), its text and its marker."""

    page: Path
    line: int
    language: str
    text: str
    marker: re.Match | None

    @property
    def name(self) -> str:
        """The block's place, `docs/page.md:LINE`."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, each with the `docs-test` marker on the line above it, if any."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = re.match(r"^(\s*)(`{3,})(\S*)", lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, language = opening.groups()
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == fence)
        body = "\n".join(line.removeprefix(indent) for line in lines[index + 1 : end])
        above = lines[index - 1].strip() if index else ""
        found.append(Block(page, index + 1, language.lower(), body + "\n", MARKER.fullmatch(above)))
        index = end + 1
    return found


ALL_BLOCKS = [block for page in PAGES for block in blocks(page)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, fenced blocks left out."""
    text = page.read_text(encoding="utf-8")
    for block in blocks(page):
        text = text.replace(block.text.rstrip("\n"), "")
    return {slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def test_the_readme_stays_short():
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= README_LINES, f"README.md has {lines} lines; move what is not the quick start into docs/"


def test_the_configuration_tables_are_what_the_code_generates():
    page = (ROOT / "docs/operating/configuration.md").read_text(encoding="utf-8")
    assert settings_table.replaced(page) == page, (
        "docs/operating/configuration.md differs from Settings / RunContext: run "
        "`python -m graph.settings_table --write docs/operating/configuration.md`"
    )


def test_every_setting_says_what_it_does():
    assert [info.alias for info in Settings.model_fields.values() if not info.description] == []
    assert [name for name, field in RunContext.__dataclass_fields__.items() if not field.metadata.get("description")] == []


def test_the_generator_writes_the_tables_between_the_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"# Settings\n\n{settings_table.BEGIN}\nold\n{settings_table.END}\n\nAfter.\n")
    assert settings_table.main(["--write", str(page)]) == 0
    assert page.read_text() == f"# Settings\n\n{settings_table.BEGIN}\n{settings_table.tables()}{settings_table.END}\n\nAfter.\n"
    page.write_text("# No markers\n")
    assert settings_table.main(["--write", str(page)]) == 1


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_and_anchor_resolves(page):
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no file {linked}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_every_block_runs_or_names_the_test_that_covers_it():
    unexplained, missing = [], []
    for block in ALL_BLOCKS:
        covered = block.marker and block.marker["covered"]
        if block.language in CODE - RUN and not covered:
            unexplained.append(f"{block.name}: a {block.language} block the tests cannot run needs a docs-test marker")
        if covered:
            path, _, test = covered.partition("::")
            source = ROOT / path
            if not source.exists() or (test and f"def {test}(" not in source.read_text(encoding="utf-8")):
                missing.append(f"{block.name}: {covered} does not exist")
    assert not unexplained and not missing, "\n".join(unexplained + missing)


def test_json_blocks_parse():
    for block in ALL_BLOCKS:
        if block.language == "json" and not block.marker:
            json.loads(block.text)


def _responder(request: dict) -> dict:
    return text_reply(STUB_REPLY)


@pytest.fixture(scope="module")
def stub():
    with OpenAIStub(_responder) as server:
        yield server


@pytest.fixture
def docs_env(stub, tmp_path):
    """The environment a docs block runs in: a fresh data directory, the stub as the model, the project importable."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MAISTRO_", "OPENAI_"))}
    env |= {
        "MAISTRO_DATA_DIR": str(tmp_path / "data"),
        "OPENAI_BASE_URL": stub.base_url,
        "OPENAI_API_KEY": "docs-test",
        "MAISTRO_CALL_MODE": "tools",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(tmp_path), env.get("PYTHONPATH", "")])),
        "DOCS_PYPROJECT": str(ROOT / "pyproject.toml"),
    }
    return env


PIP_CHECK = '''import re, sys, tomllib
extras = set(tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"])
for argument in sys.argv[2:]:
    for named in re.findall(r"\\[([^\\]]+)\\]", argument):
        unknown = set(named.split(",")) - extras
        if unknown:
            sys.exit(f"pip install names extras pyproject.toml does not have: {sorted(unknown)}")
'''


def run_shell(block: Block, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """Run a bash block as written, `pip install` checked against pyproject.toml's extras instead of run."""
    (cwd / "pip_check.py").write_text(PIP_CHECK)
    prelude = 'set -eo pipefail\npip() { python "$DOCS_PIP_CHECK_SCRIPT" "$DOCS_PYPROJECT" "$@"; }\n'
    return subprocess.run(
        ["bash", "-c", prelude + block.text], cwd=cwd, env=env | {"DOCS_PIP_CHECK_SCRIPT": str(cwd / "pip_check.py")},
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )


SHELL_BLOCKS = [block for block in ALL_BLOCKS if block.language == "bash" and not (block.marker and block.marker["covered"])]


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda block: block.name)
def test_shell_blocks_run_as_written(block, docs_env, tmp_path):
    status = int(block.marker["status"]) if block.marker else 0
    done = run_shell(block, docs_env, tmp_path)
    assert done.returncode == status, f"{block.name} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


PYTHON_RUNNER = '''import json, re, sys, traceback
namespace = {"__name__": "__main__"}
for name, text in json.load(sys.stdin):
    written = re.match(r"# ([\\w/]+\\.py):", text)
    if written:
        open(written[1], "w").write(text)
        continue
    try:
        exec(compile(text, name, "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        sys.exit(f"the block at {name} failed")
'''


def python_pages() -> list[Path]:
    """The pages with Python blocks the tests run."""
    return [page for page in PAGES if any(block.language == "python" and not block.marker for block in blocks(page))]


@pytest.mark.parametrize("page", python_pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_python_blocks_run_in_order_as_one_session(page, docs_env, tmp_path):
    runnable = [(block.name, block.text) for block in blocks(page) if block.language == "python" and not block.marker]
    done = subprocess.run(
        [sys.executable, "-c", PYTHON_RUNNER], input=json.dumps(runnable), cwd=tmp_path, env=docs_env,
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"


def test_pip_install_lines_name_existing_extras():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for block in ALL_BLOCKS:
        for named in re.findall(r"pip install -e \"?\.\[([^\]]+)\]", block.text):
            assert set(named.split(",")) <= extras, f"{block.name}: pip install names an unknown extra {named}"
