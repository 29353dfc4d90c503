"""task-maistro: a LangGraph agent that remembers a user's profile, ToDo list and instructions.

`__all__` is the public API, listed once in `__init__.pyi`: type checkers read the names there (the package ships
`py.typed`), and this module reads the same file into `_EXPORTS` (each name → its module) to import a name on
first use, so that `import graph.<package>` (the CLI, the server's auth) loads only what it needs;
`from graph import build_graph` works as usual.
"""

import ast
import importlib
from pathlib import Path
from typing import Any

_EXPORTS = {
    alias.name: statement.module
    for statement in ast.parse(Path(__file__).with_suffix(".pyi").read_text()).body
    if isinstance(statement, ast.ImportFrom) and statement.module
    for alias in statement.names
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import an exported name from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'graph' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
