"""task-maistro: a LangGraph agent that remembers a user's profile, ToDo list and instructions."""

from graph.agent import create_builder
from graph.configuration import Configuration
from graph.model import ModelNotConfiguredError, ensure_model_configured, load_chat_model
from graph.persistence import build_graph, close_graph, data_dir, open_postgres, open_sqlite, open_storage

__all__ = [
    "Configuration",
    "ModelNotConfiguredError",
    "build_graph",
    "close_graph",
    "create_builder",
    "data_dir",
    "ensure_model_configured",
    "load_chat_model",
    "open_postgres",
    "open_sqlite",
    "open_storage",
]
