"""Server tests share one stub endpoint per module: its script and server outlive a single test."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from testing.openai_stub import OpenAIStub
from testing.stub_script import Script
from testing.system_programs import system_program


@pytest.fixture(scope="module")
def script() -> Script:
    """The stub's replies, shared by every run of the module; each test queues what its runs need."""
    return Script()


@pytest.fixture(scope="module")
def stub(script: Script) -> Iterator[OpenAIStub]:
    """The OpenAI-compatible endpoint the server's model calls go to."""
    with OpenAIStub(script) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's headless Chromium, driven by Playwright (its own browser download cannot reach the internet)."""
    chromium = system_program("chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium)
        yield launched
        launched.close()
