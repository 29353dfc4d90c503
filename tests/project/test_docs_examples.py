"""The docs' examples as a newcomer copies them: one user throughout, the demo's."""

import re
import tomllib
from pathlib import Path

import pytest

from graph import close_graph
from graph.app.demo import USER
from graph.app.tutorial import MESSAGES

ROOT = Path(__file__).resolve().parents[2]


def docs() -> dict[str, str]:
    """The README and every page under docs/, by path."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {str(page.relative_to(ROOT)): page.read_text() for page in pages}


def code_blocks(text: str) -> list[tuple[str, str]]:
    """The fenced code blocks of a Markdown text: (language, code)."""
    blocks, language, lines = [], None, []
    for line in text.splitlines():
        if line.startswith("```") and language is None:
            language, lines = line[3:].strip(), []
        elif line.startswith("```"):
            blocks.append((language, "\n".join(lines) + "\n"))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


def test_the_examples_use_the_demos_user():
    """`maistro demo` files its memories under Lance: an example that then reads them names the same user."""
    users = {
        (path, user)
        for path, text in docs().items()
        for _language, block in code_blocks(text)
        for user in re.findall(r"--user (\S+)|\"user_id\": \"([^\"]+)\"", block)
    }
    named = {(path, next(name for name in user if name)) for path, user in users}
    assert named, "the docs have examples that name a user"
    assert {(path, name) for path, name in named if name.split("-")[0] != USER} == set()


def test_serving_installs_the_server_extra_only():
    """The servers page serves with `pip install -e ".[server]"`: the LangGraph CLI with its in-memory runtime, without
    the test tools of the `dev` extra (which includes it)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {requirement.split(">")[0] for requirement in extras["server"]} == {"langgraph-cli[inmem]", "langgraph-sdk"}
    assert "task-maistro[postgres,semantic,server]" in extras["dev"]
    serving = next(
        block
        for _language, block in code_blocks(docs()["docs/operating/servers.md"])
        if "\nlanggraph dev" in f"\n{block}"
    )
    assert serving.startswith('pip install -e ".[server]"')


def python_example(page: str, marker: str) -> str:
    """The one Python code block of a docs page that holds `marker`."""
    (found,) = [
        block for language, block in code_blocks(docs()[page]) if language == "python" and marker in block
    ]
    return found


@pytest.mark.parametrize("reply_timing", ["first", "after_updates"])
def test_the_python_examples_run_offline_as_written(reply_timing, monkeypatch, capsys):
    """The Python API's examples, copied as they are with no key and no endpoint (the `no_real_model` fixture):
    the tutorial's loop prints the user's message and the reply (once, in either reply timing), the context
    manager runs a turn, the reply-first loop prints the reply's tokens."""
    monkeypatch.setenv("MAISTRO_REPLY_TIMING", reply_timing)
    namespace: dict = {}
    exec(python_example("README.md", "build_graph(chat_model=tutorial_model)"), namespace)
    printed = capsys.readouterr().out
    assert MESSAGES["profile"] in printed and printed.count("Nice to meet you, Lance! How can I help you today?") == 1

    exec(python_example("docs/learning/python.md", "swim = "), namespace)
    assert capsys.readouterr().out == 'I added "Book swim lessons for 1-year-old daughter." to your list.\n'
    exec(python_example("docs/learning/python.md", 'stream_mode=["messages", "custom"]'), namespace)
    printed = capsys.readouterr().out
    assert 'I added "Fix the jammed electric Yale lock on the door." and suggested a swim school' in printed
    assert "✎ ToDo added: Fix the jammed electric Yale lock on the door." in printed
    close_graph(namespace["graph"])
