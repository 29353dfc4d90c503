"""task-maistro: a LangGraph agent that remembers a user's profile, ToDo list and instructions.

`__all__` is the public API. Its names are imported on first use (`_EXPORTS` says from where), so that
`import graph.<package>` (the CLI, the server's auth) loads only what it needs; `from graph import build_graph`
works as usual, and type checkers read the same names from the imports under `TYPE_CHECKING` (the package ships
`py.typed`). tests/project/test_public_surface.py keeps the three in step.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.agent import build_graph, close_graph, create_builder, open_graph
    from graph.backends.model import ModelNotConfiguredError, ensure_model_configured, load_chat_model
    from graph.backends.storage import close_storage, default_data_dir, open_storage, open_store
    from graph.memory.kinds import DEFAULT_MEMORY_KINDS, MemoryKind
    from graph.run_context import RunContext
    from graph.settings import Settings, SettingsError, current_settings

_EXPORTS = {
    "build_graph": "graph.agent",
    "close_graph": "graph.agent",
    "create_builder": "graph.agent",
    "open_graph": "graph.agent",
    "RunContext": "graph.run_context",
    "DEFAULT_MEMORY_KINDS": "graph.memory.kinds",
    "MemoryKind": "graph.memory.kinds",
    "ModelNotConfiguredError": "graph.backends.model",
    "ensure_model_configured": "graph.backends.model",
    "load_chat_model": "graph.backends.model",
    "close_storage": "graph.backends.storage",
    "default_data_dir": "graph.backends.storage",
    "open_storage": "graph.backends.storage",
    "open_store": "graph.backends.storage",
    "Settings": "graph.settings",
    "SettingsError": "graph.settings",
    "current_settings": "graph.settings",
}

__all__ = [
    "DEFAULT_MEMORY_KINDS",
    "RunContext",
    "MemoryKind",
    "ModelNotConfiguredError",
    "Settings",
    "SettingsError",
    "build_graph",
    "close_graph",
    "close_storage",
    "create_builder",
    "current_settings",
    "default_data_dir",
    "ensure_model_configured",
    "load_chat_model",
    "open_graph",
    "open_storage",
    "open_store",
]


def __getattr__(name: str) -> Any:
    """Import an exported name from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'graph' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
