"""`maistro demo`: the tutorial's conversation, replayed with a scripted model through the real graph,
real trustcall and a real SQLite store, so a first look needs no API key."""

from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from graph.agent import open_graph
from graph.app.session import ChatSession
from graph.app.tables import memory_view
from graph.app.terminal import print_turn
from graph.app.tutorial import USER, end_of_november, tutorial_turns
from graph.memory.admin import user_items
from graph.memory.kinds import DEFAULT_MEMORY_KINDS
from graph.run_context import RunContext
from testing.scripted_model import ScriptedChatModel

BANNER = (
    "Scripted demo: the assistant's words come from a script, not from an AI model. The LangGraph graph, "
    "trustcall's extraction and the SQLite store are real, and the tables at the end are read back from the store."
)
NEXT_STEP = "To chat with a real model, set OPENAI_API_KEY (or OPENAI_BASE_URL) and run `maistro chat`."


class DemoError(RuntimeError):
    """The demo cannot run as asked (its user already has memories in the data directory)."""


def run_demo(console: Console, data_dir: Path, *, temporary: bool = False) -> None:
    """Play the scripted tutorial conversation against a SQLite store in `data_dir`, then show the memories.

    Raises `DemoError` when the demo user already has memories there (the demo never overwrites them).
    """
    model = ScriptedChatModel()
    with open_graph(data_dir, database_url="", embeddings="", chat_model=lambda _settings: model) as graph:
        if user_items(graph.store, USER):
            raise DemoError(
                f"{USER} already has memories in {data_dir}; run the demo on another --data-dir "
                f"(or `maistro forget --user {USER} --data-dir {data_dir}` first)."
            )
        session = ChatSession(graph, USER)
        console.print(Panel(Text(BANNER), title="task-maistro demo", title_align="left", border_style="yellow"))
        console.print(f"Data directory: {data_dir}{' (temporary)' if temporary else ''}", markup=False)
        settings = RunContext()
        for turn in tutorial_turns(end_of_november(settings), settings.reply_timing):
            for node, replies in turn.replies.items():
                model.add(node, *replies)
            if turn.new_thread:
                new_thread = f"\n— a new thread ({session.new_thread()}): messages start afresh, memories stay —"
                console.print(Text(new_thread, style="bold"))
            console.print(Text.assemble(("\nyou › ", "bold cyan"), turn.message))
            print_turn(console, session.send(turn.message))
        console.print()
        for kind in DEFAULT_MEMORY_KINDS:
            console.print(memory_view(graph.store, kind, USER))
        console.print(NEXT_STEP, markup=False)
