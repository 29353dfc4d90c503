"""task-maistro: a LangGraph agent that remembers a user's profile, ToDo list and instructions.

Names are imported on first use, so that `import graph.<package>` (the CLI, the server's auth) loads only
what it needs; `from graph import build_graph` works as usual.
"""

import importlib
from typing import Any

_EXPORTS = {
    "build_graph": "graph.agent",
    "close_graph": "graph.agent",
    "create_builder": "graph.agent",
    "open_graph": "graph.agent",
    "Configuration": "graph.configuration",
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

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import an exported name from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'graph' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
