"""Whatever the OS refuses when `maistro` creates or opens the data directory, the command says so in one
sentence and exits with code 1: a name too long, a path the kernel will not create, broken links, a parent
that may not be entered (permissions bind root only without its capabilities, so those run unprivileged)."""

import os
from pathlib import Path

import pytest

from tests.cli.test_terminal_processes import run_maistro

CHOOSE = "choose another with --data-dir or MAISTRO_DATA_DIR.\n"


def fails_with_one_sentence(result, sentence: str) -> None:
    assert result.returncode == 1 and result.stdout == "", result.stderr
    assert result.stderr == sentence, result.stderr


@pytest.mark.parametrize("where", ["the directory", "a parent"])
def test_a_name_too_long_is_one_sentence(tmp_path, where):
    long_name = "x" * 300
    directory = tmp_path / long_name if where == "the directory" else tmp_path / long_name / "data"

    result = run_maistro("todos", "--data-dir", str(directory))

    fails_with_one_sentence(result, f"The data directory {directory} cannot be used (File name too long); {CHOOSE}")
    assert list(tmp_path.iterdir()) == []


def test_a_path_the_kernel_will_not_create_is_one_sentence():
    directory = Path(f"/proc/{os.getpid()}/maistro")  # procfs has no room for new directories

    result = run_maistro("export", "--user", "Lance", "--data-dir", str(directory))

    fails_with_one_sentence(result, f"The data directory {directory} cannot be used (No such file or directory); {CHOOSE}")


@pytest.mark.parametrize("link", ["dangling", "loop"])
@pytest.mark.parametrize("below", ["", "sub"])
def test_a_symbolic_link_to_no_directory_is_one_sentence(tmp_path, link, below):
    path = tmp_path / link
    path.symlink_to(tmp_path / "gone" / "data" if link == "dangling" else path)
    directory = path / below

    result = run_maistro("history", "--user", "Lance", "--data-dir", str(directory))

    fails_with_one_sentence(
        result, f"The data directory {directory} cannot be used: {path} is a symbolic link that leads to no directory; {CHOOSE}"
    )
    assert sorted(tmp_path.iterdir()) == [path]


def test_a_parent_that_may_not_be_entered_is_one_sentence(tmp_path):
    parent = tmp_path / "private"
    parent.mkdir(mode=0o000)
    directory = parent / "data"
    try:
        result = run_maistro("todos", "--data-dir", str(directory), unprivileged=True)
    finally:
        parent.chmod(0o755)

    fails_with_one_sentence(
        result,
        f"Cannot write to the data directory {directory} (Permission denied: {directory}): make it writable, or {CHOOSE}",
    )
    assert list(parent.iterdir()) == []
