"""`maistro reminders` without a server: one sentence, no traceback (tests/server/test_crons.py runs it on servers)."""

from typer.testing import CliRunner

from graph.app import cli
from graph.app.reminders import NO_SERVER
from testing.helpers import free_port


def test_reminders_on_a_server_that_is_not_there_say_so_in_one_sentence():
    server = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(cli.app, ["reminders", "list", "--server", server, "--token", "t" * 20])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == f"Cannot reach the server {server} (ConnectError): is it running?"


def test_reminders_without_a_server_say_they_need_one_and_that_maistro_due_is_the_digest():
    for command in (["list"], ["add", "--schedule", "0 8 * * *"], ["cancel", "some-id"]):
        result = CliRunner().invoke(cli.app, ["reminders", *command], env={"LANGGRAPH_API_KEY": ""})
        assert result.exit_code == 1 and result.output.strip() == NO_SERVER, result.output
