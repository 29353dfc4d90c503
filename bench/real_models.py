"""Real models in the loop: `maistro eval` against the smallest open-weight models there are, on llama-server.

`python -m bench.real_models [--model NAME|all] [--mode tools|json|all] [--cases PATTERN|all] [--json FILE]
[--temperature T] [--reply-timing first|after_updates] [--todo-update-limit N] [--n-predict N] [--time-budget S]`

For each packaged model (testing/llama_server.py: SmolLM2-135M-Instruct, Gemma 3 270M) and each call mode
(`MAISTRO_CALL_MODE`: `tools`, the model's native tool calls; `json`, routing and extraction as schema-constrained
JSON), it starts `llama-server` on a free loopback port and plays eval cases (graph/eval/) through this agent's
graph on a throwaway SQLite store and the real `ChatOpenAI` client, one turn at a time as `maistro eval` does
(`graph.eval.runner`). It prints the eval's scorecard by category (score, memory recall and precision, recall
answers, model calls, tokens, first-token and turn latency), the server's own prompt-reading and generation
speed (`/metrics`), the wall time, and a census of every turn:

- what the model sent on the chat call: native tool calls, JSON, a call written as text, a plain reply on a turn
  that asked to save something, an empty reply, malformed arguments, a reply cut at the length cap (run away),
  turn markers written out;
  and memory values stored that no word of the user's messages supports (invented);
- what the agent did with it: saved, told the user it was not saved, left it unsaved without a word (the model
  never asked: the agent cannot know), wedged the thread (a tool call left unanswered, or an HTTP 400 a retry
  cannot mend), raised an exception other than its one-sentence endpoint error, stored a ToDo twice, no reply,
  a reply that shows the turn markers the model wrote.

Replies that look like calls written as text, or that write the chat template's turn markers out (a base model
going on with the conversation as the user), are listed raw: the shapes to teach the boundary.

By default it plays one case of each category (`SUBSET`, said in the output) to keep a run near ten minutes per
model and mode on 2 shared cores; `--cases all` plays the whole suite. `--n-predict` caps replies at the server
(default `REPLY_CAP`), so a run-away reply costs seconds, not the minutes it takes to fill the context.
"""

import argparse
import json
import os
import re
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI
from rich.console import Console
from rich.table import Table

from graph.eval.cases import Case, load_cases
from graph.eval.report import print_scorecard, scorecard
from graph.eval.runner import (
    CHAT_NODES,
    EVAL_USER,
    Budget,
    CaseRun,
    Meter,
    TurnRecord,
    play_turn,
    read_memory,
    today_in,
)
from graph.eval.scoring import score_case
from graph.thread.turn_markers import first_marker
from testing.llama_server import MODELS, LlamaServer, PackagedModel, prepare
from testing.thread_checks import doubled_todos, unanswered_calls

MODES = ("tools", "json")
# One case of each category: the shortest that still exercises it.
SUBSET = (
    "single-name,multi-profile-and-todo,update-moved-oakland,done-groceries,date-tomorrow,recall-todo-list,"
    "instructions-local-vendor,secret-api-key,none-small-talk,chinese-profile-todo,long-list-recall"
)
REPLY_CAP = 512
MODEL_TIMEOUT_SECONDS = 600
GRAPH = "maistro"
# Errors the agent raises by design: one sentence for the user, the message kept to send again.
DESIGNED_ERRORS = ("ModelUnavailableError", "ModelCallLimitError")
TEXT_CALL = re.compile(r"<tool_call>|\[TOOL_CALLS\]|update_?memory|update_type|<function|\"arguments\"|\"parameters\"", re.I)
WORD = re.compile(r"\w{4,}")


@dataclass
class ModelCall:
    """One model request as the model answered it, before the agent's boundary touched the answer."""

    node: str
    user: str
    offered_tools: bool
    json_mode: bool
    content: str = ""
    native_calls: int = 0
    malformed_calls: int = 0
    finish_reason: str | None = None
    completion_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None


@dataclass
class JsonAnswer:
    """One schema-constrained request as the server answered it: the schema's name, the text, why it stopped."""

    user: str
    schema: str
    text: str
    finish_reason: str | None


class Census(BaseCallbackHandler):
    """Records every model request's answer before the agent's boundary reads it (a callback on the client: product
    code is untouched). In JSON mode that is the answer after the JSON model read its JSON into calls; the JSON the
    server sent for each schema-constrained request is kept too (`json_answers`, from the HTTP client's hook)."""

    def __init__(self, json_mode: bool = False) -> None:
        self.json_mode = json_mode
        self.calls: list[ModelCall] = []
        self.json_answers: list[JsonAnswer] = []
        self._open: dict[Any, tuple[ModelCall, float]] = {}
        self._lock = threading.Lock()

    def http_client(self) -> httpx.Client:
        """An HTTP client for ChatOpenAI that keeps the answers of schema-constrained requests (never streamed)."""
        return httpx.Client(event_hooks={"response": [self.on_response]}, timeout=MODEL_TIMEOUT_SECONDS)

    def on_response(self, response: httpx.Response) -> None:
        """Keep the answer of a schema-constrained request (streamed ones and failures pass)."""
        body = json.loads(response.request.content or b"{}")
        if body.get("stream") or "response_format" not in body or response.status_code != 200:
            return
        response.read()
        choice = response.json()["choices"][0]
        users = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
        with self._lock:
            self.json_answers.append(JsonAnswer(
                str(users[-1]) if users else "", body["response_format"].get("json_schema", {}).get("name", "?"),
                choice["message"].get("content") or "", choice.get("finish_reason"),
            ))

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: Any, **kwargs: Any) -> None:
        """Note which node asked, for which user message, with tools or a JSON schema."""
        prompt = messages[0] if messages else []
        users = [m.text for m in prompt if isinstance(m, HumanMessage)]
        params = kwargs.get("invocation_params") or {}
        call = ModelCall(
            node=(kwargs.get("metadata") or {}).get("langgraph_node", "?"),
            user=users[-1] if users else "",
            offered_tools=bool(params.get("tools")),
            json_mode=self.json_mode,
        )
        with self._lock:
            self._open[run_id] = (call, time.monotonic())

    def _close(self, run_id: Any) -> ModelCall | None:
        with self._lock:
            call, started = self._open.pop(run_id, (None, 0.0))
            if call is not None:
                call.seconds = time.monotonic() - started
                self.calls.append(call)
        return call

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        """Keep the raw answer: text, native and malformed calls, why it stopped, its length."""
        if (call := self._close(run_id)) is None:
            return
        message = response.generations[0][0].message if response.generations and response.generations[0] else None
        if isinstance(message, AIMessage):
            call.content = message.text
            call.native_calls = len(message.tool_calls) + len(message.invalid_tool_calls)
            call.malformed_calls = len(message.invalid_tool_calls)
            call.finish_reason = (message.response_metadata or {}).get("finish_reason")
            call.completion_tokens = (message.usage_metadata or {}).get("output_tokens", 0)

    def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        """Keep the failed request too."""
        if call := self._close(run_id):
            call.error = f"{type(error).__name__}: {error}"[:200]


def sent_shape(call: ModelCall) -> str:
    """What the model sent on a call, by its raw form."""
    if call.error:
        return "request failed"
    if call.native_calls:
        return "calls asked as JSON" if call.json_mode else "native tool call"
    text = call.content.strip()
    if not text:
        return "empty reply"
    try:
        json.loads(text)
        return "JSON"
    except ValueError:
        pass
    return "call written as text" if TEXT_CALL.search(text) else "plain reply"


@dataclass
class TurnCensus:
    """One turn: what the model sent on its chat calls and what the agent did with it."""

    case: str
    user: str
    asked: list[str]
    sent: list[str]
    runaway: int
    malformed: int
    markers: int
    outcome: list[str]
    raw: list[str] = field(default_factory=list)


def _said(case: Case) -> str:
    return " ".join(turn.user for thread in case.threads for turn in thread).casefold()


def invented_values(memory: dict[str, Any], said: str) -> list[str]:
    """Stored profile values and ToDo tasks none of whose words (4 letters or more) the user said."""
    profile = memory.get("profile") or {}
    values = [v for value in profile.values() for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
    values += [todo.get("task", "") for todo in memory.get("todos") or []]
    return [value for value in values if (words := WORD.findall(value.casefold())) and not any(w in said for w in words)]


def agent_outcome(record: TurnRecord, before: dict, after: dict, messages: list, doubled_before: int, doubled_after: int,
                  asked: bool) -> list[str]:
    """What the agent did on the turn (several can hold)."""
    outcome = []
    if record.error:
        designed = record.error.split(":")[0] in DESIGNED_ERRORS
        outcome.append("told: endpoint error" if designed else "raised")
        if "400" in record.error or "context" in record.error.lower():
            outcome.append("wedged")
    if unanswered_calls(messages):
        outcome.append("wedged")
    if after != before:
        outcome.append("saved")
    if record.failed_updates:
        outcome.append("told: not saved")
    if asked and after == before and not record.failed_updates and not record.error:
        outcome.append("not saved, not told")
    if doubled_after > doubled_before:
        outcome.append("doubled")
    if not record.error and not record.reply.strip():
        outcome.append("no reply")
    if first_marker(record.reply) is not None:
        outcome.append("turn markers shown")
    return outcome


@contextmanager
def environment(**variables: str | None) -> Iterator[None]:
    """The given environment variables for the block (None: unset), restored afterwards."""
    saved = {name: os.environ.get(name) for name in variables}
    _set_environment(variables)
    try:
        yield
    finally:
        _set_environment(saved)


def _set_environment(variables: dict[str, str | None]) -> None:
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def call_mode_supported() -> bool:
    """Whether this version of the agent reads MAISTRO_CALL_MODE (the JSON mode)."""
    from graph.settings import Settings

    return any(info.alias == "MAISTRO_CALL_MODE" for info in Settings.model_fields.values())


def mode_client(client, mode: str):
    """The client as `maistro eval` uses it in the call mode: itself for tools, wrapped in the JSON model for json."""
    if mode == "tools":
        return client
    from graph.backends.json_calls import JsonCallModel

    return JsonCallModel(inner=client)


def run_case(case: Case, client, census: Census, budget: Budget, run_config: dict) -> tuple[CaseRun, list[TurnCensus]]:
    """Play every turn of `case` on a fresh graph, as `maistro eval` does, taking the census of each turn."""
    from graph import DEFAULT_MEMORY_KINDS, open_graph

    run, turns = CaseRun(case), []
    said = _said(case)
    with tempfile.TemporaryDirectory(prefix="maistro-real-") as data_dir, open_graph(
        data_dir, database_url="", embeddings="", chat_model=lambda _settings: client, memory_kinds=DEFAULT_MEMORY_KINDS
    ) as compiled:
        for index, thread in enumerate(case.threads):
            config = {"configurable": {"thread_id": str(uuid.uuid4()), "user_id": EVAL_USER, **run_config}}
            for turn in thread:
                if reason := budget.spent():
                    run.stopped = reason
                    break
                before, _ = read_memory(compiled, EVAL_USER)
                doubled_before = len(doubled_todos(compiled.store, EVAL_USER))
                first_call = len(census.calls)
                record = TurnRecord(index, turn.user)
                play_turn(compiled, CHAT_NODES[GRAPH], config, record, Meter(budget))
                run.turns.append(record)
                after, _ = read_memory(compiled, EVAL_USER)
                messages = compiled.get_state(config).values.get("messages", [])
                chat = [c for c in census.calls[first_call:] if c.node == CHAT_NODES[GRAPH]]
                turns.append(TurnCensus(
                    case.id, turn.user, turn.play.update_types, [sent_shape(c) for c in chat],
                    sum(c.finish_reason == "length" for c in chat), sum(c.malformed_calls for c in chat),
                    sum(first_marker(c.content) is not None for c in chat),
                    agent_outcome(record, before, after, messages, doubled_before,
                                  len(doubled_todos(compiled.store, EVAL_USER)), bool(turn.play.update_types)),
                    [c.content for c in chat if sent_shape(c) == "call written as text" or first_marker(c.content) is not None],
                ))
            if run.stopped:
                break
        run.memory, run.stored_text = read_memory(compiled, EVAL_USER)
    for value in invented_values(run.memory, said):
        turns[-1].outcome.append(f"invented: {value[:40]}")
    return run, turns


@dataclass
class RunResult:
    """One model in one mode: its scorecard, census, server figures and wall time."""

    model: str
    mode: str
    card: dict
    census: list[TurnCensus]
    calls: list[ModelCall]
    json_answers: list[JsonAnswer]
    server: dict[str, float]
    seconds: float
    skipped: str | None = None


def server_figures(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The server's work during the run: prompt tokens read (and reused from its cache), tokens generated, speeds."""
    delta = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after}
    read, generated = delta.get("prompt_tokens_total", 0.0), delta.get("tokens_predicted_total", 0.0)
    return {
        "prompt_tokens_read": read,
        "prompt_tokens_cached": delta.get("prompt_tokens_cached_total", 0.0),
        "prompt_tokens_per_second": read / delta["prompt_seconds_total"] if delta.get("prompt_seconds_total") else 0.0,
        "tokens_generated": generated,
        "generated_per_second": generated / delta["tokens_predicted_seconds_total"] if delta.get("tokens_predicted_seconds_total") else 0.0,
    }


def run_model(model: PackagedModel, mode: str, cases: Sequence[Case], arguments: argparse.Namespace, console: Console) -> RunResult:
    """Serve `model`, play `cases` in call mode `mode`, and score them."""
    if mode == "json" and not call_mode_supported():
        return RunResult(model.name, mode, {}, [], [], [], {}, 0.0, "this version of the agent has no MAISTRO_CALL_MODE")
    binary, files = prepare([model])
    variables = {
        "MAISTRO_CALL_MODE": mode if call_mode_supported() else None,
        "MAISTRO_REPLY_TIMING": arguments.reply_timing,
        "MAISTRO_MODEL_TIMEOUT": str(MODEL_TIMEOUT_SECONDS),
    }
    run_config = {"timezone": "UTC", **({"collection_update_limit": arguments.todo_update_limit} if arguments.todo_update_limit else {})}
    census = Census(json_mode=mode == "json")
    with LlamaServer(binary, files[0], n_predict=arguments.n_predict) as server, environment(**variables):
        # As graph.eval.endpoint.Endpoint.client builds it, with the census's HTTP client.
        client = ChatOpenAI(
            model=model.name, base_url=server.base_url, api_key="not-needed", temperature=arguments.temperature,
            timeout=MODEL_TIMEOUT_SECONDS, stream_usage=True, http_client=census.http_client(),
        )
        client = mode_client(client, mode).model_copy(update={"callbacks": [census]})
        budget = Budget(arguments.time_budget)
        metrics_before, started = server.metrics(), time.monotonic()
        runs, turns = [], []
        for case in cases:
            if budget.spent():
                break
            run, case_turns = run_case(case, client, census, budget, run_config)
            runs.append(run)
            turns += case_turns
            console.print(f"  {model.name} / {mode}: {case.id} done ({time.monotonic() - started:.0f} s)", markup=False)
        seconds = time.monotonic() - started
        figures = server_figures(metrics_before, server.metrics())
    today = today_in("UTC")
    scores = [score_case(run, today, "UTC") for run in runs if run.stopped is None]
    card = scorecard(scores, {
        "label": f"{model.name} ({mode})", "model": model.title, "graph": GRAPH, "mode": mode,
        "today": today.isoformat(), "seconds": round(seconds, 1), "cases_asked": len(cases),
        "stopped": budget.spent(), "temperature": arguments.temperature, "reply_timing": arguments.reply_timing,
        "n_predict": arguments.n_predict,
    })
    return RunResult(model.name, mode, card, turns, census.calls, census.json_answers, figures, seconds)


def census_counts(result: RunResult) -> tuple[Counter, Counter]:
    """What the model sent (per chat call) and what the agent did (per turn), counted."""
    sent, did = Counter(), Counter()
    for turn in result.census:
        sent.update(turn.sent)
        sent["plain reply on a memory turn"] += bool(turn.asked) and all(s in ("plain reply", "empty reply") for s in turn.sent)
        sent["malformed arguments"] += turn.malformed
        sent["run away (cut at the cap)"] += turn.runaway
        sent["turn markers written out"] += turn.markers
        for outcome in turn.outcome:
            did["invented value stored" if outcome.startswith("invented") else outcome] += 1
    return sent, did


def print_result(console: Console, result: RunResult) -> None:
    """The eval's scorecard, the server's figures and the census of one run."""
    if result.skipped:
        console.print(f"{result.model} / {result.mode}: not run: {result.skipped}.", markup=False)
        return
    print_scorecard(console, result.card)
    server = result.server
    console.print(
        f"Wall time {result.seconds:.0f} s; the server read {server['prompt_tokens_read']:,.0f} prompt tokens "
        f"({server['prompt_tokens_per_second']:.0f}/s; {server['prompt_tokens_cached']:,.0f} more reused from its cache) "
        f"and generated {server['tokens_generated']:,.0f} ({server['generated_per_second']:.1f}/s).", markup=False,
    )
    sent, did = census_counts(result)
    table = Table(title=f"Census: {result.model} ({result.mode}), {len(result.census)} turns", title_justify="left")
    table.add_column("the model sent (chat calls)")
    table.add_column("count", justify="right")
    table.add_column("the agent did (turns)")
    table.add_column("count", justify="right")
    left, right = sorted((+sent).items()), sorted((+did).items())
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else ("", "")
        b = right[index] if index < len(right) else ("", "")
        table.add_row(a[0], str(a[1]), b[0], str(b[1]))
    console.print(table)
    if result.json_answers:
        answers = Counter((a.schema, a.text.strip()[:80], a.finish_reason) for a in result.json_answers)
        console.print(f"JSON answers of the {len(result.json_answers)} schema-constrained requests (schema, text, finish), "
                      "most frequent first:", markup=False)
        for (schema, text, finish), count in answers.most_common(12):
            console.print(f"  {count:3d} x {schema}: {text!r} ({finish})", markup=False)
    for turn in result.census:
        for raw in turn.raw:
            console.print(f"  shape to teach the boundary ({turn.case}, {turn.user[:40]!r}): {raw[:300]!r}", markup=False)


def summary_table(console: Console, results: Sequence[RunResult]) -> None:
    """One row per model and mode."""
    table = Table(title="What a tiny local model gets you", title_justify="left")
    for column in ("model", "mode", "cases", "score", "memory recall", "precision", "model calls", "tokens in / out",
                   "generation tok/s", "first token (median)", "turn (median)", "wall", "saved", "not saved, not told",
                   "wedged / raised / doubled"):
        table.add_column(column)
    for result in results:
        if result.skipped:
            table.add_row(result.model, result.mode, *["not run"] + [""] * 12)
            continue
        overall, (_, did) = result.card["overall"], census_counts(result)
        counts, rates = overall["counts"], overall["rates"]
        table.add_row(
            result.model, result.mode, str(overall["cases"]), f"{100 * rates['score']:.0f}%",
            f"{100 * rates['memory_recall']:.0f}%", "–" if rates["memory_precision"] is None else f"{100 * rates['memory_precision']:.0f}%",
            str(counts["model_calls"]), f"{counts['prompt_tokens']:,} / {counts['completion_tokens']:,}",
            f"{result.server['generated_per_second']:.1f}", f"{overall['first_token_seconds']['median'] or 0:.1f} s",
            f"{overall['turn_seconds']['median'] or 0:.1f} s", f"{result.seconds:.0f} s", str(did["saved"]),
            str(did["not saved, not told"]), f"{did['wedged']} / {did['raised']} / {did['doubled']}",
        )
    console.print(table)


def main(argv: Sequence[str] | None = None) -> None:
    """Run every chosen model in every chosen mode and print the tables (and save them as JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=[*MODELS, "all"], default="all")
    parser.add_argument("--mode", choices=[*MODES, "all"], default="all")
    parser.add_argument("--cases", default=SUBSET, help="case ids or categories (globs, comma-separated), or all")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--reply-timing", choices=("first", "after_updates"), default="first")
    parser.add_argument("--todo-update-limit", type=int, default=None)
    parser.add_argument("--n-predict", type=int, default=REPLY_CAP, help="cap every reply at the server")
    parser.add_argument("--time-budget", type=float, default=1800, help="seconds per model and mode")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    arguments = parser.parse_args(argv)
    console = Console(width=200)
    cases = load_cases(None if arguments.cases == "all" else arguments.cases)
    models = list(MODELS.values()) if arguments.model == "all" else [MODELS[arguments.model]]
    modes = MODES if arguments.mode == "all" else (arguments.mode,)
    subset = "the whole suite" if arguments.cases == "all" else f"{len(cases)} cases ({arguments.cases})"
    console.print(
        f"Real models on llama-server, {subset}; temperature {arguments.temperature}, reply timing "
        f"{arguments.reply_timing}, replies capped at {arguments.n_predict} tokens by the server; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.", markup=False,
    )
    results = []
    for model in models:
        for mode in modes:
            result = run_model(model, mode, cases, arguments, console)
            print_result(console, result)
            results.append(result)
    summary_table(console, results)
    console.print(f"Load average at the end: {os.getloadavg()[0]:.1f}.", markup=False)
    if arguments.json:
        arguments.json.write_text(json.dumps([asdict(result) for result in results], indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
