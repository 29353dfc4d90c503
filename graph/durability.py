"""LangGraph durability for the agent: each step's checkpoint is on disk before the next step starts.

A crash must never lose the routing step whose tool-call ids key the memories written after it, so the
agent runs with "sync" durability. LangGraph takes the mode per call (`graph.stream(..., durability=...)`),
but the tutorial's plain `graph.stream(input, config)` has to be durable too. The only way to give a
compiled graph a default mode is LangGraph's internal config key, which `Pregel.stream` reads when no mode
is passed and which subgraphs inherit. This module is the one place that uses it (named in
`graph.backends.langgraph_private`); tests/storage/test_durability.py fails if a LangGraph upgrade changes what it means.
"""

from langchain_core.runnables import RunnableConfig
from langgraph.types import Durability

from graph.backends.langgraph_private import CONFIG_KEY_DURABILITY


def durability_config(mode: Durability) -> RunnableConfig:
    """A config that makes `mode` the default durability of the runs (and subgraph runs) it is merged into."""
    return {"configurable": {CONFIG_KEY_DURABILITY: mode}}
