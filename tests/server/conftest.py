"""Server tests share one stub endpoint per module: its script and server outlive a single test."""

from collections.abc import Iterator

import pytest

from tests.support.openai_stub import OpenAIStub
from tests.support.stub_script import Script


@pytest.fixture(scope="module")
def script() -> Script:
    """The stub's replies, shared by every run of the module; each test queues what its runs need."""
    return Script()


@pytest.fixture(scope="module")
def stub(script: Script) -> Iterator[OpenAIStub]:
    """The OpenAI-compatible endpoint the server's model calls go to."""
    with OpenAIStub(script) as server:
        yield server
