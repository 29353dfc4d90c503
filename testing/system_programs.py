"""Programs the tests need from the system rather than from PyPI: Chromium for the browser tests, Redis for Aegra,
CMake and g++ for llama.cpp's server (testing/llama_server.py).

The README's "Tests" section installs them with one line, `INSTALL`; a test that needs one that is missing fails
with that line (never skips).
"""

import shutil

import pytest

INSTALL = "sudo apt-get update && sudo apt-get install -y chromium redis-server cmake g++"


def system_program(name: str) -> str:
    """The path of the program `name` on PATH; fails the test with the line that installs it when it is missing."""
    if found := shutil.which(name):
        return found
    pytest.fail(f"{name} is missing: {INSTALL} (README, Tests).")
