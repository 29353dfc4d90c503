"""The Aegra virtualenv the tests run `aegra serve` from: found, or built once from any Python >= 3.12 there is.

Aegra needs Python >= 3.12 while the project runs on 3.11, so it lives in a virtualenv of its own with the
project's `[aegra]` extra. `$AEGRA_VENV` names a ready one, used as it is. Otherwise the tests use `.aegra-venv`
in the project folder and build it the first time it is needed (a few minutes of `pip install`), under a file
lock so that parallel sessions build it once, and again only when `pyproject.toml` changes. The Python comes
from wherever one is: this interpreter, `python3.12`, `python3.13`, ... on PATH (a pyenv shim with no version
selected refuses to run and is passed over), pyenv's versions, uv's, `/usr/local/bin`, `/usr/bin`.
`python -m testing.aegra_venv` builds it by hand and prints its path.
"""

import functools
import glob
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

ROOT = Path(__file__).resolve().parents[1]
VENV_VARIABLE = "AEGRA_VENV"
PROJECT_VENV = ROOT / ".aegra-venv"
LOCK = ROOT / ".aegra-venv.lock"
# Written last: a virtualenv without it (or with another pyproject.toml's digest) is built again.
STAMP = "maistro-pyproject.sha256"
BUILD_LOG = "maistro-build.log"
MINIMUM = (3, 12)
LOCK_WAIT_SECONDS = 1800
SYSTEM_FOLDERS = ("/usr/local/bin", "/usr/bin")
PROBE = "import sys, venv, ensurepip; print(*sys.version_info[:2])"


def candidate_pythons() -> Iterator[str]:
    """Interpreters that may be Python >= 3.12, in the order to try them; each is checked by `probe`."""
    yield sys.executable
    minors = range(MINIMUM[1], MINIMUM[1] + 8)
    for minor in minors:
        if found := shutil.which(f"python3.{minor}"):
            yield found
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    if pyenv := shutil.which("pyenv"):
        roots.insert(0, subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip())
    for root in filter(None, roots):
        for minor in minors:
            yield from sorted(glob.glob(f"{root}/versions/3.{minor}.*/bin/python"))
    if uv := shutil.which("uv"):
        found = subprocess.run([uv, "python", "find", f">={MINIMUM[0]}.{MINIMUM[1]}"], capture_output=True, text=True)
        if found.returncode == 0:
            yield found.stdout.strip()
    uv_pythons = os.environ.get("UV_PYTHON_INSTALL_DIR") or str(Path.home() / ".local/share/uv/python")
    for minor in minors:
        yield from sorted(glob.glob(f"{uv_pythons}/cpython-3.{minor}.*/bin/python3"))
        for folder in SYSTEM_FOLDERS:
            yield f"{folder}/python3.{minor}"


def probe(python: str) -> str:
    """Why `python` cannot build the virtualenv (a short reason), or "" when it can."""
    if not os.access(python, os.X_OK):
        return "not there"
    try:
        answer = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"does not run ({error})"
    if answer.returncode != 0:
        return (answer.stderr.strip().splitlines() or ["does not run"])[0][:120]
    version = tuple(int(part) for part in answer.stdout.split())
    return "" if version >= MINIMUM else f"is Python {'.'.join(map(str, version))}"


def find_python() -> str:
    """The first candidate interpreter that is Python >= 3.12 with venv and ensurepip; fails saying where it looked."""
    tried = {}
    for python in candidate_pythons():
        if python in tried:
            continue
        tried[python] = probe(python)
        if not tried[python]:
            return python
    looked = "; ".join(f"{python}: {reason}" for python, reason in tried.items() if reason != "not there")
    pytest.fail(f"Aegra needs Python >= 3.12 with venv and none was found ({looked}): install one (pyenv install 3.12, "
                f"uv python install 3.12, or apt-get install python3.12-venv), or set {VENV_VARIABLE}.")


def pyproject_digest() -> str:
    """The digest of pyproject.toml, which names the packages the virtualenv holds."""
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def runs(python: Path) -> bool:
    """Whether the virtualenv's interpreter still starts (its base Python may have been removed)."""
    try:
        return subprocess.run([str(python), "-c", "pass"], capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def is_current(venv: Path) -> bool:
    """Whether `venv` holds `aegra` for this pyproject.toml and its interpreter runs."""
    stamp = venv / STAMP
    return (venv / "bin" / "aegra").exists() and stamp.exists() and stamp.read_text() == pyproject_digest() and runs(
        venv / "bin" / "python")


def build(venv: Path) -> None:
    """Create `venv` (again, if its interpreter no longer runs) and install the project's `[aegra]` extra into it."""
    python = venv / "bin" / "python"
    if not runs(python):
        subprocess.run([find_python(), "-m", "venv", "--clear", str(venv)], check=True, capture_output=True)
    (venv / STAMP).unlink(missing_ok=True)
    log = venv / BUILD_LOG
    with log.open("wb") as output:
        installed = subprocess.run([str(python), "-m", "pip", "install", "-e", f"{ROOT}[aegra]"], cwd=ROOT,
                                   stdout=output, stderr=subprocess.STDOUT)
    if installed.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        pytest.fail(f'pip install -e ".[aegra]" into {venv} failed (log: {log}):\n{tail}')
    (venv / STAMP).write_text(pyproject_digest())


@functools.cache
def aegra_venv() -> Path:
    """The Aegra virtualenv: `$AEGRA_VENV` as it is, else `.aegra-venv` in the project folder, built if needed."""
    if given := os.environ.get(VENV_VARIABLE):
        venv = Path(given)
        if not (venv / "bin" / "aegra").exists():
            pytest.fail(f"{VENV_VARIABLE}={venv} has no bin/aegra: unset it and the tests build {PROJECT_VENV}, "
                        f'or run {venv}/bin/pip install -e ".[aegra]".')
        return venv
    try:
        with FileLock(LOCK, timeout=LOCK_WAIT_SECONDS):
            if not is_current(PROJECT_VENV):
                build(PROJECT_VENV)
    except Timeout:
        pytest.fail(f"another session has been building {PROJECT_VENV} for {LOCK_WAIT_SECONDS} s (lock: {LOCK}).")
    return PROJECT_VENV


if __name__ == "__main__":
    print(aegra_venv())
