"""The `maistro` command line: CLI, chat session and terminal loop, memory tables, and the scripted demo."""
