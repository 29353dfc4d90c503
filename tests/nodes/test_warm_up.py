"""`build_graph` builds what a fresh process's first turn would otherwise pay for (`python -m bench.first_turn`)."""

import pytest

from graph import build_graph, close_graph
from graph.backends.model import load_chat_model
from graph.memory.kinds import DEFAULT_MEMORY_KINDS
from graph.nodes import extraction
from graph.nodes.update import extraction_options
from graph.run_context import RunContext
from graph.runtime import runtime_of


def test_build_graph_builds_each_kinds_extractor_for_the_default_model(stub, tmp_path, monkeypatch) -> None:
    """After `build_graph`, an update node finds its kind's trustcall extractor built: none is built in a turn."""
    agent = build_graph(tmp_path)
    try:
        def built_in_a_turn(*args, **kwargs):
            raise AssertionError("an extractor was built after build_graph")

        monkeypatch.setattr(extraction, "create_extractor", built_in_a_turn)
        model = load_chat_model(RunContext())
        for kind in DEFAULT_MEMORY_KINDS:
            assert extraction.cached_extractor(runtime_of(agent).extractors, model, kind.schema, **extraction_options(kind)) is not None
    finally:
        close_graph(agent)


def test_build_graph_without_an_endpoint_builds_no_extractor(tmp_path, monkeypatch) -> None:
    """Without a configured endpoint there is no default model to build extractors for, and no error."""
    monkeypatch.setattr(extraction, "create_extractor", pytest.fail)
    close_graph(build_graph(tmp_path))
