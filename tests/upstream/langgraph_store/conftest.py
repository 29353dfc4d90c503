"""What upstream's libs/checkpoint-postgres/tests/conftest.py gives its store tests, and the `halfvec` deselection
(see tests/upstream/langgraph_store/__init__.py)."""

import pytest

from tests.conftest import parameter_values
from tests.upstream.langgraph_store.upstream_embed_test_utils import CharacterEmbeddings

# Set to the test server's URL for each test of a module that uses it (the `upstream_server` fixture).
DEFAULT_URI = ""
VECTOR_TYPES = ["vector", "halfvec"]
__all__ = ["CharacterEmbeddings", "DEFAULT_URI", "VECTOR_TYPES"]
# The pgserver wheel's pgvector (0.6) has no halfvec type: these cases fail on it whatever the store.
UNSUPPORTED = "halfvec"


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    """Upstream's fake embeddings, 500 dimensions."""
    return CharacterEmbeddings(dims=500)


@pytest.fixture(autouse=True)
def upstream_server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point a PostgreSQL module's DEFAULT_URI at the test server (its tests create and drop databases of their own)."""
    if hasattr(request.module, "DEFAULT_URI"):
        monkeypatch.setattr(request.module, "DEFAULT_URI", request.getfixturevalue("postgres_url"))


def _uses_unsupported(item: pytest.Item) -> bool:
    return UNSUPPORTED in parameter_values(item)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the upstream PostgreSQL cases that need pgvector's halfvec type."""
    here = __file__.rsplit("/", 1)[0]
    dropped = [item for item in items if str(item.path).startswith(here) and _uses_unsupported(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]
