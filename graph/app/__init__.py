"""The `maistro` command line: CLI, chat session and terminal loop, memory tables, and the scripted demo.

Public modules, imported where they are used (never here, so `maistro --help` loads none of the others):
`cli` (the console script, `main`, and its Typer `app`), `session` (`ChatSession`: one conversation, a turn
at a time, for any front end) and `scripted_model` (`ScriptedChatModel`: replies from a script, for tests and
the key-free demo). `terminal`, `tables`, `errors`, `demo` and `tutorial` serve the CLI.
"""

__all__ = ["cli", "scripted_model", "session"]
