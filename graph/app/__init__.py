"""The `maistro` command line: CLI, chat session and terminal loop, memory tables, and the scripted demo.

Public modules, imported where they are used (never here, so `maistro --help` loads none of the others):
`cli` (the console script, `main`, and its Typer `app`) and `session` (`ChatSession`: one conversation, a turn
at a time, for any front end). `terminal`, `tables`, `errors`, `demo` and `tutorial` serve the CLI; the demo plays
the tutorial with `testing.scripted_model`.
"""

__all__ = ["cli", "session"]
