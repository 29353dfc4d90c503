"""The `maistro` command: every subcommand, the chat terminal, real processes."""
