"""Where the tests find a Python >= 3.12 for Aegra's virtualenv (testing/aegra_venv.py)."""

import sys
from pathlib import Path

import pytest

from testing import aegra_venv
from testing.aegra_venv import find_python


def interpreter(path: Path, script: str) -> Path:
    """A stand-in interpreter at `path`: a shell script that answers the version probe with `script`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def test_a_pyenv_shim_with_no_version_selected_is_passed_over_for_pyenvs_own_312(tmp_path, monkeypatch):
    shims = tmp_path / "shims"
    interpreter(shims / "python3.12", "echo 'pyenv: python3.12: command not found' >&2; exit 127")
    pyenv_312 = interpreter(tmp_path / "pyenv" / "versions" / "3.12.7" / "bin" / "python", "echo 3 12")
    monkeypatch.setattr(sys, "executable", str(interpreter(shims / "python3.11", "echo 3 11")))
    monkeypatch.setenv("PATH", str(shims))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(aegra_venv, "SYSTEM_FOLDERS", ())
    assert find_python() == str(pyenv_312)


def test_without_any_312_the_failure_says_where_it_looked_and_what_to_install(tmp_path, monkeypatch):
    shims = tmp_path / "shims"
    interpreter(shims / "python3.12", "echo 'pyenv: python3.12: command not found' >&2; exit 127")
    monkeypatch.setattr(sys, "executable", str(interpreter(shims / "python3.11", "echo 3 11")))
    monkeypatch.setenv("PATH", str(shims))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(aegra_venv, "SYSTEM_FOLDERS", (str(tmp_path / "usr" / "bin"),))
    with pytest.raises(pytest.fail.Exception) as failure:
        find_python()
    message = str(failure.value)
    assert "python3.12: pyenv: python3.12: command not found" in message
    assert "is Python 3.11" in message
    assert "pyenv install 3.12" in message
