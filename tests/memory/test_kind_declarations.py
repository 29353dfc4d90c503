"""What the ToDo list does differently is declared on its `MemoryKind`, so an added kind that declares the same
behaves the same: its closed documents expire, its extraction reads the user's instructions, the chat prompt shows
it in its own lines with its own count of what it leaves out, and the CLI draws it in its own columns."""

import time
from typing import Literal

import pytest
from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from graph import DEFAULT_MEMORY_KINDS, MemoryKind, build_graph, close_graph
from graph.app.tables import memory_view
from graph.memory.formats import Column
from graph.memory.kinds import INSTRUCTIONS
from graph.memory.store import namespace, read_kind
from testing.helpers import turn
from testing.scripted_model import calls, document, patch_where, replace, route, say


class Errand(BaseModel):
    """An errand the user has to run."""

    what: str = Field(description="The errand.")
    state: Literal["to do", "done", "dropped"] = Field("to do", description="Where the errand stands.")


ERRAND_INSTRUCTION = """Keep the user's errands up to date.

Follow the user's preferences for errands:
<instructions>
{instructions}
</instructions>

{language_rule}

Current date and time: {now}"""


def errand_lines(errands) -> str:
    """The errands as the chat prompt shows them."""
    return "\n".join(f"* {errand['what']} [{errand.get('state', 'to do')}]" for errand in errands)


ERRAND = MemoryKind(
    name="errand",
    schema=Errand,
    collection=True,
    description="errands the user has to run",
    instruction=ERRAND_INSTRUCTION,
    status_field="state",
    open_statuses=("to do",),
    expiring_statuses=("done", "dropped"),
    context_kinds=("instructions",),
    render=errand_lines,
    prompt_tokens=None,
    closed_name="done or dropped",
    columns=(Column("what", heading="Errand"), Column("state", default="to do", styles={"done": "green"})),
    plural="errands",
)
KINDS = [*DEFAULT_MEMORY_KINDS, ERRAND]


@pytest.fixture(params=["sqlite", "postgres"])
def errand_agent(request, model, tmp_path):
    """The agent with the errands besides the tutorial's memories, driven by the scripted model."""
    database_url = request.getfixturevalue("fresh_database") if request.param == "postgres" else None
    agent = build_graph(tmp_path / "data", database_url=database_url, chat_model=lambda _: model, memory_kinds=KINDS)
    yield agent
    close_graph(agent)


def errands(agent, user_id: str = "Lance") -> dict[str, dict]:
    """The user's errands, by what they are."""
    return {item.value["what"]: item.value for item in read_kind(agent.store, ERRAND, user_id)}


@pytest.fixture
def short_ttl(monkeypatch):
    """Closed documents live one second and the store sweeps four times a second (set before the agent is built)."""
    monkeypatch.setenv("MAISTRO_DONE_TODO_TTL_DAYS", str(1 / 24 / 60 / 60))
    monkeypatch.setenv("MAISTRO_TTL_SWEEP_MINUTES", str(1 / 60 / 4))


def test_closed_errands_expire_and_open_ones_never_do(short_ttl, errand_agent, model):
    agent = errand_agent
    model.add("task_maistro", route("errand"), say("Noted."), route("errand"), say("Done."))
    model.add("update_errand", calls(document("Errand", what="Post the letter"), document("Errand", what="Buy bread")),
              patch_where("bread", replace("/state", "done")))
    turn(agent, "I must post the letter and buy bread.")
    turn(agent, "I bought the bread.")

    deadline = time.monotonic() + 10
    while "Buy bread" in errands(agent) and time.monotonic() < deadline:
        time.sleep(0.2)

    assert list(errands(agent)) == ["Post the letter"]
    time.sleep(1.5)
    assert list(errands(agent)) == ["Post the letter"], "open errands never expire"


def test_the_errand_extraction_reads_the_users_instructions(model, tmp_path):
    agent = build_graph(tmp_path / "data", chat_model=lambda _: model, memory_kinds=KINDS)
    agent.store.put(namespace(INSTRUCTIONS, "Lance"), INSTRUCTIONS.key, {"memory": "Write errands in French."})
    model.add("task_maistro", route("errand"), say("Noted."))
    model.add("update_errand", calls(document("Errand", what="Poster la lettre")))
    turn(agent, "I must post the letter.")
    close_graph(agent)

    (extraction,) = model.calls_in("update_errand")
    assert "<instructions>\nWrite errands in French.\n</instructions>" in extraction.system


def test_the_prompt_shows_errands_in_their_own_lines_without_a_token_bound(model, tmp_path):
    agent = build_graph(tmp_path / "data", chat_model=lambda _: model, memory_kinds=KINDS)
    long = "Collect the parcel " + "and the rest of it " * 150  # past any collection's default token bound
    stored = {"a": {"what": f"{long} (a)", "state": "to do"}, "b": {"what": f"{long} (b)", "state": "to do"},
              "c": {"what": "Old errand", "state": "done"}, "d": {"what": "Other old errand", "state": "dropped"}}
    for key, value in stored.items():
        agent.store.put(namespace(ERRAND, "Lance"), key, value, index=False)
    model.add("task_maistro", say("Hello."))
    turn(agent, "Hello there.", collection_prompt_limit=2)
    close_graph(agent)

    prompt = model.calls_in("task_maistro")[0].system
    section = prompt[prompt.index("<errand>\n") + len("<errand>\n") : prompt.index("\n</errand>")]
    assert section.splitlines() == [
        f"* {long} (a) [to do]",
        f"* {long} (b) [to do]",
        "(Not shown: 0 more open and 2 done or dropped items. Items the user names are always shown.)",
    ]


def test_the_cli_draws_errands_in_their_declared_columns(tmp_path):
    agent = build_graph(tmp_path / "data", chat_model=lambda _: None, memory_kinds=KINDS)
    console = Console(record=True, width=80)
    console.print(memory_view(agent.store, ERRAND, "Lance"))
    agent.store.put(namespace(ERRAND, "Lance"), "a", {"what": "Post the letter"}, index=False)
    agent.store.put(namespace(ERRAND, "Lance"), "b", {"what": "Buy bread", "state": "done"}, index=False)
    table = memory_view(agent.store, ERRAND, "Lance")
    close_graph(agent)

    assert console.export_text().strip() == "No errands yet for Lance."
    assert isinstance(table, Table) and [column.header for column in table.columns] == ["Errand", "State"]
    cells = [[(cell.plain, str(cell.style)) for cell in column.cells] for column in table.columns]
    assert cells == [[("Post the letter", ""), ("Buy bread", "")], [("to do", ""), ("done", "green")]]
