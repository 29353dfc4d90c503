"""`maistro eval` the way a user runs it: against an OpenAI-compatible endpoint (a local stub whose answers are
the oracle's), through the real ChatOpenAI client; and its one-sentence refusals."""

import json
import re

import pytest
from typer.testing import CliRunner

from graph.app.cli import app
from graph.eval.cases import load_cases
from graph.eval.player import respond_to_openai, suite_players
from testing.eval_runs import TODAY
from testing.helpers import free_port
from testing.openai_stub import OpenAIStub, StubError, text_reply, tool_calls_reply, tool_names
from testing.stub_script import route

runner = CliRunner()
SUBSET = (
    "single-name,multi-all-three,delete-called-dentist,chinese-recall,secret-wifi-password,"
    "time-zones-day-after-tomorrow-tokyo,what-is-due-today-los-angeles"  # the user's zone and message time sent
)


def oracle_endpoint(pattern: str = SUBSET) -> OpenAIStub:
    """A stub endpoint whose model plays the cases like the oracle (and answers the eval's up-front check)."""
    players = suite_players(load_cases(pattern), TODAY)

    def respond(body: dict) -> dict:
        if tool_names(body) == ["SaveNote"]:
            return tool_calls_reply(("SaveNote", {"text": "ping"}))
        return respond_to_openai(players, body)

    return OpenAIStub(respond)


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_the_oracle_behind_an_endpoint_scores_in_full_with_tokens_and_latencies_measured(tmp_path):
    with oracle_endpoint() as stub:
        base_url = stub.base_url
        result = runner.invoke(
            app, ["eval", "--base-url", stub.base_url, "--model", "stub-model", "--cases", SUBSET, "-j", "2",
                  "--json", str(tmp_path / "stub.json"), "--html", str(tmp_path / "stub.html")],
        )
        assert result.exit_code == 0, result.output
        assert stub.rejections == []  # every conversation the graph sent was valid for the API
        assert {request["model"] for request in stub.requests} == {"stub-model"}
    card = json.loads((tmp_path / "stub.json").read_text(encoding="utf-8"))
    overall = card["overall"]
    assert overall["cases"] == 7 and overall["rates"]["score"] == 1.0, [c["problems"] for c in card["cases"]]
    assert overall["rates"]["answered_first"] == 1.0
    assert overall["counts"]["prompt_tokens"] > 0 and overall["counts"]["completion_tokens"] > 0  # streamed usage
    assert overall["first_token_seconds"]["median"] is not None
    assert card["base_url"] == base_url and card["label"] == "stub-model"
    assert re.search(r"overall\s*│\s*7\s*│\s*100%", result.output)


def test_a_real_endpoint_leaves_out_the_cases_that_play_an_endpoints_fault_and_says_so(tmp_path):
    with oracle_endpoint("single-name") as stub:
        mixed = runner.invoke(app, ["eval", "--base-url", stub.base_url, "--model", "stub-model", "--cases",
                                    "single-name,pending-changes", "--json", str(tmp_path / "card.json")])
        only_faults = runner.invoke(app, ["eval", "--base-url", stub.base_url, "--model", "stub-model", "--cases", "pending-*"])
    assert mixed.exit_code == 0, mixed.output
    assert "Left out 3 case(s) that play an endpoint's fault, which only --player can play: pending-" in mixed.output
    card = json.loads((tmp_path / "card.json").read_text(encoding="utf-8"))
    assert [case["case_id"] for case in card["cases"]] == ["single-name"] and card["overall"]["rates"]["score"] == 1.0
    assert only_faults.exit_code == 1
    assert "Every case chosen plays an endpoint's fault, which only --player can play: choose others." in only_faults.output


def test_the_html_report_is_one_self_contained_page_with_charts(tmp_path):
    runner.invoke(app, ["eval", "--player", "oracle", "--cases", "single-*", "--html", str(tmp_path / "r.html")])
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 2 and "single-fact" in page
    assert not re.search(r"<script|<link|\bsrc=|\bhref=|@import|url\(", page)


def test_compare_puts_runs_side_by_side_and_refuses_a_file_that_is_no_scorecard(tmp_path):
    for player in ("oracle", "never-routes"):
        result = runner.invoke(app, ["eval", "--player", player, "--cases", "single-*", "--json", str(tmp_path / f"{player}.json")])
        assert result.exit_code == 0, result.output
    result = runner.invoke(
        app, ["eval", "compare", str(tmp_path / "oracle.json"), str(tmp_path / "never-routes.json"), "--html", str(tmp_path / "c.html")]
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"single-fact\s*│\s*100%\s*│\s*0%", result.output)
    assert "never-routes (maistro)" in (tmp_path / "c.html").read_text(encoding="utf-8")
    (tmp_path / "other.json").write_text('{"format": "something else"}', encoding="utf-8")
    result = runner.invoke(app, ["eval", "compare", str(tmp_path / "other.json")])
    assert result.exit_code == 1 and "is not a scorecard written by `maistro eval --json`" in result.output


def test_a_call_budget_stops_the_run_and_scores_only_the_cases_that_finished(tmp_path):
    result = runner.invoke(app, ["eval", "--player", "oracle", "--cases", "single-*", "--max-calls", "3", "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 0, result.output
    card = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    assert card["stopped"] == "the budget of 3 model calls was spent" and card["overall"]["cases"] < 4
    assert "The run stopped early: the budget of 3 model calls was spent" in result.output


def test_an_unreachable_endpoint_is_one_sentence():
    result = runner.invoke(app, ["eval", "--base-url", f"http://127.0.0.1:{free_port()}/v1", "--cases", "single-name"])
    assert result.exit_code == 1
    assert "is unreachable: is the server running, and is the URL (with /v1) right?" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("answer", "sentence"),
    [
        (text_reply("I saved the note 'ping'."), "answered a tiny tool-call request without calling the tool"),
        (StubError(400, "registry.ollama.ai/library/gemma:2b does not support tools"), "cannot call tools (HTTP 400: registry.ollama.ai"),
        (StubError(404, "The model 'nope' does not exist"), "was not found (HTTP 404)"),
    ],
)
def test_a_model_that_cannot_call_tools_is_refused_up_front_with_one_request(answer, sentence):
    with OpenAIStub(lambda _body: answer) as stub:
        result = runner.invoke(app, ["eval", "--base-url", stub.base_url, "--model", "gemma:2b", "--cases", "single-name"])
        assert len(stub.requests) == 1
    assert result.exit_code == 1 and sentence in result.output, result.output


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    [
        ([], "No model endpoint is configured"),
        (["--player", "genius"], "Unknown player 'genius': choose one of oracle, never-routes"),
        (["--player", "oracle", "--graph", "langchain"], "Unknown graph 'langchain': choose maistro or tutorial."),
        (["--player", "oracle", "--timezone", "Mars/Olympus"], "'Mars/Olympus' is not a known IANA time zone"),
        (["--cases", "zzz"], "No eval case matches 'zzz'"),
        (["--player", "oracle", "--model", "gpt-4.1"], "--player plays the cases with a scripted model in process"),
        (["--player", "oracle", "--json", "/nonexistent/dir/x.json"], "Cannot write /nonexistent/dir/x.json: its directory"),
    ],
)
def test_a_run_that_cannot_start_says_why_in_one_sentence(arguments, sentence):
    result = runner.invoke(app, ["eval", "--cases", "single-name", *arguments] if "--cases" not in arguments else ["eval", *arguments])
    assert result.exit_code == 1 and sentence in result.output, result.output


def test_list_shows_every_case_with_its_category():
    result = runner.invoke(app, ["eval", "--list"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 0 and len(lines) == len(load_cases()) and "update-moved-oakland\tupdates\t" in result.output


def test_a_time_budget_stops_starting_cases_once_spent(tmp_path):
    result = runner.invoke(app, ["eval", "--player", "oracle", "--time-budget", "1", "--json", str(tmp_path / "t.json")])
    assert result.exit_code == 0, result.output
    card = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert card["stopped"] == "the time budget of 1 s was spent"
    assert card["overall"]["cases"] < card["cases_asked"] == len(load_cases())


def test_a_model_without_tool_calls_is_measured_in_json_under_auto(tmp_path, script):
    script.keep("precheck", text_reply("ping"))
    script.keep("route", route())
    script.keep("chat", text_reply("I'm doing well, thanks for asking!"))
    with OpenAIStub(script, tool_calling=False) as stub:
        result = runner.invoke(
            app, ["eval", "--base-url", stub.base_url, "--model", "smollm2", "--cases", "none-small-talk",
                  "--call-mode", "auto", "--json", str(tmp_path / "json.json")],
        )
    assert result.exit_code == 0, result.output
    assert "Memory updates are asked as schema-constrained JSON" in result.output
    card = json.loads((tmp_path / "json.json").read_text(encoding="utf-8"))
    assert card["call_mode"] == "json" and card["overall"]["rates"]["score"] == 1.0
    assert script.seen == ["precheck", "route", "chat"]


def test_the_tutorial_graph_is_not_measured_in_json(script):
    script.keep("precheck", text_reply("ping"))
    with OpenAIStub(script, tool_calling=False) as stub:
        result = runner.invoke(app, ["eval", "--base-url", stub.base_url, "--cases", "single-name", "--graph", "tutorial", "--call-mode", "auto"])
    assert result.exit_code == 1 and "The tutorial's graph asks for its memory updates with tool calls" in result.output
    assert script.seen == ["precheck"]


def test_an_unknown_call_mode_is_one_sentence():
    result = runner.invoke(app, ["eval", "--cases", "single-name", "--call-mode", "functions"])
    assert result.exit_code == 1 and "Unknown call mode 'functions': choose auto, tools, json." in result.output
