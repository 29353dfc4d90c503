"""`maistro import` is bounded in bytes, items, text length and depth, and refuses duplicate keys and numbers that
are not finite: each with one sentence from the import's own checks (graph/memory/export_file.py), nothing written
(issue 31.6). Each limit is pinned at its edge: the limit passes, one more is refused."""

import json
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graph import open_store
from graph.app.cli import app
from graph.memory.admin import EXPORT_FORMAT, InvalidExportError, import_memories, user_items
from graph.memory.export_file import MAX_IMPORT_DEPTH, MAX_IMPORT_TEXT_CHARACTERS
from graph.memory.store import HISTORY
from testing.helpers import SWIM_ITEM
from testing.stored_names import TODO

NOTES = "notes"  # a kind not declared: its documents are any JSON objects, stored as they are


def export_file(path: Path, sections: dict) -> Path:
    """An export holding `sections`, written compactly to `path`."""
    path.write_text(json.dumps({"format": EXPORT_FORMAT, **sections}, separators=(",", ":")), "utf-8")
    return path


def run_import(path: Path, user: str, data_dir: Path):
    return CliRunner().invoke(app, ["import", str(path), "--user", user, "--data-dir", str(data_dir)])


def stored(data_dir: Path, user: str) -> list:
    with open_store(data_dir) as store:
        return user_items(store, user)


def refusal(result, path: Path) -> str:
    """The one sentence a refused import printed, without the file name."""
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Cannot import {path}: "), result.output
    return lines[0].removeprefix(f"Cannot import {path}: ")


def nested(levels: int) -> object:
    """A value nesting `levels` levels deep, as the limits count (a scalar is 0, `[1]` is 1)."""
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


def test_a_file_of_the_byte_limit_imports_and_one_byte_more_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = export_file(tmp_path / "export.json", {TODO: {"swim": SWIM_ITEM}})
    size = path.stat().st_size

    monkeypatch.setenv("MAISTRO_IMPORT_MAX_BYTES", str(size))
    at_limit = run_import(path, "Ann", tmp_path / "data")
    monkeypatch.setenv("MAISTRO_IMPORT_MAX_BYTES", str(size - 1))
    over = run_import(path, "Bob", tmp_path / "data")

    assert at_limit.exit_code == 0, at_limit.output
    assert refusal(over, path) == (
        f"the file is {size:,} bytes; an import reads at most {size - 1:,} (MAISTRO_IMPORT_MAX_BYTES)."
    )
    # The ToDo, its history entry and its source.
    assert len(stored(tmp_path / "data", "Ann")) == 3 and stored(tmp_path / "data", "Bob") == []


def test_a_stream_without_a_size_is_read_only_up_to_the_limit(tmp_path, monkeypatch):
    """A named pipe reports no size: the import reads one byte past the limit and stops."""
    text = json.dumps({"format": EXPORT_FORMAT, TODO: {"swim": SWIM_ITEM}}).encode()
    pipe = tmp_path / "export.pipe"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_bytes(text + b" " * 10_000), daemon=True)
    writer.start()
    monkeypatch.setenv("MAISTRO_IMPORT_MAX_BYTES", str(len(text)))

    result = run_import(pipe, "Ann", tmp_path / "data")

    assert refusal(result, pipe) == (
        f"the file is more than {len(text):,} bytes; an import reads at most {len(text):,} (MAISTRO_IMPORT_MAX_BYTES)."
    )
    assert stored(tmp_path / "data", "Ann") == []


def test_the_item_limit_counts_documents_and_history_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_IMPORT_MAX_ITEMS", "3")
    entry = {
        "id": "c1", "time": "2026-01-05T10:00:00+00:00", "order": 0, "thread_id": "t1", "kind": "todo",
        "message": "Book swim lessons", "action": "created", "key": "swim", "before": None, "after": SWIM_ITEM,
    }
    three = export_file(tmp_path / "three.json", {TODO: {"swim": SWIM_ITEM, "lock": SWIM_ITEM}, HISTORY: {"c1": entry}})
    four = export_file(tmp_path / "four.json", {TODO: {"swim": SWIM_ITEM, "lock": SWIM_ITEM}, HISTORY: {"c1": entry},
                                                NOTES: {"n": {"text": "one more"}}})

    at_limit = run_import(three, "Ann", tmp_path / "data")
    over = run_import(four, "Bob", tmp_path / "data")

    assert at_limit.exit_code == 0, at_limit.output
    assert refusal(over, four) == "it holds 4 items; an import takes at most 3 (MAISTRO_IMPORT_MAX_ITEMS)."
    assert stored(tmp_path / "data", "Bob") == []


def test_a_text_of_the_length_limit_imports_and_one_character_more_is_refused(tmp_path):
    longest = export_file(tmp_path / "longest.json", {TODO: {"k": {**SWIM_ITEM, "task": "x" * MAX_IMPORT_TEXT_CHARACTERS}}})
    longer = export_file(tmp_path / "longer.json", {TODO: {"k": {**SWIM_ITEM, "task": "x" * (MAX_IMPORT_TEXT_CHARACTERS + 1)}}})

    at_limit = run_import(longest, "Ann", tmp_path / "data")
    over = run_import(longer, "Bob", tmp_path / "data")

    assert at_limit.exit_code == 0, at_limit.output
    assert refusal(over, longer) == (
        f'"todo" item "k" holds a text of {MAX_IMPORT_TEXT_CHARACTERS + 1:,} characters; '
        f"the limit is {MAX_IMPORT_TEXT_CHARACTERS:,}."
    )
    assert stored(tmp_path / "data", "Bob") == []


def test_an_export_nesting_to_the_depth_limit_imports_and_one_level_more_is_refused(tmp_path):
    # The document sits 3 levels down: the export, its section, the item, then the document's field.
    deepest = export_file(tmp_path / "deepest.json", {NOTES: {"k": {"v": nested(MAX_IMPORT_DEPTH - 3)}}})
    deeper = export_file(tmp_path / "deeper.json", {NOTES: {"k": {"v": nested(MAX_IMPORT_DEPTH - 2)}}})

    at_limit = run_import(deepest, "Ann", tmp_path / "data")
    over = run_import(deeper, "Bob", tmp_path / "data")

    assert at_limit.exit_code == 0, at_limit.output
    assert refusal(over, deeper) == f'"notes" item "k" nests deeper than {MAX_IMPORT_DEPTH} levels.'
    assert stored(tmp_path / "data", "Bob") == []


@pytest.mark.parametrize("levels", [900, 100_000])
def test_a_deeply_nested_file_is_one_sentence_not_a_traceback(tmp_path, levels):
    path = tmp_path / "deep.json"
    path.write_text(f'{{"format": "{EXPORT_FORMAT}", "{NOTES}": {{"k": {{"v": {"[" * levels}{"]" * levels}}}}}}}')

    result = run_import(path, "Ann", tmp_path / "data")

    assert refusal(result, path) in (
        f'"notes" item "k" nests deeper than {MAX_IMPORT_DEPTH} levels.', f"it nests deeper than {MAX_IMPORT_DEPTH} levels."
    )
    assert stored(tmp_path / "data", "Ann") == []


@pytest.mark.parametrize(
    "text, sentence",
    [
        ('{"todo": {"k": {"task": "Pay rent", "task": "Pay Mallory", "solutions": ["Bank"]}}}',
         'an object gives the key "task" twice.'),
        ('{"todo": {"k": {"task": "Pay rent", "solutions": ["Bank"]}}, "todo": {}}', 'an object gives the key "todo" twice.'),
        ('{"notes": {"k": {"amount": NaN}}}', "it holds NaN, which is not a JSON number."),
        ('{"notes": {"k": {"amount": -Infinity}}}', "it holds -Infinity, which is not a JSON number."),
        ('{"notes": {"k": {"amount": 1e999}}}', "it holds the number 1e999, which is not finite."),
    ],
)
def test_duplicate_keys_and_numbers_that_are_not_finite_are_refused(tmp_path, text, sentence):
    path = tmp_path / "export.json"
    path.write_text('{"format": "' + EXPORT_FORMAT + '", ' + text[1:], "utf-8")

    result = run_import(path, "Ann", tmp_path / "data")

    assert refusal(result, path) == sentence
    assert stored(tmp_path / "data", "Ann") == []


def test_python_callers_get_the_same_bounds(tmp_path):
    """`import_memories` takes an export already parsed: what only Python can hand it is refused too."""
    with open_store(tmp_path / "data") as store:
        for value, problem in (
            ({"amount": float("nan")}, '"notes" item "k" holds the number nan, which is not finite'),
            ({"when": {1, 2}}, '"notes" item "k" holds a value that is not JSON (set)'),
            ({1: "one"}, '"notes" item "k" has a key that is not text (int)'),
        ):
            with pytest.raises(InvalidExportError) as refused:
                import_memories(store, "Ann", {"format": EXPORT_FORMAT, NOTES: {"k": value}})
            assert str(refused.value) == problem
        assert user_items(store, "Ann") == []
