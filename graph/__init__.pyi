# The public API of `graph`, listed once: type checkers read it here, and graph/__init__.py reads it to import each
# name from its module on first use (its `__all__` is these names, in this order).
from graph.agent import build_graph as build_graph
from graph.agent import close_graph as close_graph
from graph.agent import open_graph as open_graph
from graph.backends.model import ModelNotConfiguredError as ModelNotConfiguredError
from graph.backends.model import ensure_model_configured as ensure_model_configured
from graph.backends.model import load_chat_model as load_chat_model
from graph.backends.storage import close_storage as close_storage
from graph.backends.storage import default_data_dir as default_data_dir
from graph.backends.storage import open_storage as open_storage
from graph.backends.storage import open_store as open_store
from graph.memory.kinds import DEFAULT_MEMORY_KINDS as DEFAULT_MEMORY_KINDS
from graph.memory.kinds import MemoryKind as MemoryKind
from graph.run_context import RunContext as RunContext
from graph.settings import Settings as Settings
from graph.settings import SettingsError as SettingsError
from graph.settings import current_settings as current_settings
