"""LangGraph's checkpointer contract: the whole `langgraph-checkpoint-conformance` suite (PyPI) on the checkpointers
the project opens (`open_storage`, default configuration), on SQLite and PostgreSQL.

The suite drives the async API; the project's savers are sync, so `AsyncBridge` answers each async method
with the saver's sync one. A capability the saver does not implement (LangGraph's `SqliteSaver` has no
`prune`, neither saver `copy_thread` or `delete_for_runs`) is one the suite would skip for it as well.
"""

import asyncio
import importlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.conformance import checkpointer_test, validate

from graph.backends.storage import close_storage, open_storage

# The suite's optional capabilities and the sync method a saver implements each with.
OPTIONAL = {"delete_for_runs": "delete_for_runs", "copy_thread": "copy_thread", "prune": "prune"}


class AsyncBridge(BaseCheckpointSaver):
    """The async checkpointer API, answered by a sync saver."""

    def __init__(self, saver: BaseCheckpointSaver) -> None:
        super().__init__(serde=saver.serde)
        self.saver = saver

    async def aget_tuple(self, config: RunnableConfig) -> Any:
        """The saver's `get_tuple`."""
        return self.saver.get_tuple(config)

    async def alist(self, config: RunnableConfig | None, **kwargs: Any) -> AsyncIterator[Any]:
        """The saver's `list`, read whole before the first item (its cursor holds the saver's lock)."""
        for item in list(self.saver.list(config, **kwargs)):
            yield item

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        """The saver's `put`."""
        return self.saver.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        """The saver's `put_writes`."""
        self.saver.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """The saver's `delete_thread`."""
        self.saver.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """The saver's `delete_for_runs`."""
        self.saver.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """The saver's `copy_thread`."""
        self.saver.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """The saver's `prune`."""
        self.saver.prune(thread_ids, strategy=strategy)

    def get_next_version(self, current: Any, channel: Any) -> Any:
        """The saver's versions."""
        return self.saver.get_next_version(current, channel)


def unimplemented(saver_type: type[BaseCheckpointSaver]) -> set[str]:
    """The optional capabilities whose sync method `saver_type` leaves to `BaseCheckpointSaver`."""
    return {name for name, method in OPTIONAL.items() if getattr(saver_type, method) is getattr(BaseCheckpointSaver, method)}


def suite_tests(capability: str) -> list:
    """Every test the suite has for one capability."""
    module = importlib.import_module(f"langgraph.checkpoint.conformance.spec.test_{capability}")
    return getattr(module, f"ALL_{capability.upper()}_TESTS")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_project_checkpointers_pass_the_whole_conformance_suite(backend, request, tmp_path):
    if backend == "postgres":
        location = {"database_url": request.getfixturevalue("fresh_database")}
    else:
        location = {"data_dir": tmp_path / "data", "database_url": ""}
    saver, store = open_storage(**location)
    saver_type = type(saver)
    close_storage(saver, store)

    async def project_checkpointer():
        saver, store = open_storage(**location)
        try:
            yield AsyncBridge(saver)
        finally:
            close_storage(saver, store)

    registered = checkpointer_test(name=saver_type.__name__, skip_capabilities=unimplemented(saver_type))(
        project_checkpointer
    )
    report = asyncio.run(validate(registered))

    failures = [failure for result in report.results.values() for failure in result.failures]
    assert report.passed_all_base() and report.passed_all(), "\n".join(failures)
    passed = {name: result.tests_passed for name, result in report.results.items() if result.passed}
    assert passed == {name: len(suite_tests(name)) for name in set(report.results) - unimplemented(saver_type)}
