"""The faults of the models users bring, one name each, for the strict OpenAI stub to play one at a time.

`FAULTS` is the catalogue: each `Fault` says what the endpoint sends (chat replies, extraction replies, transport
faults) on the turn it spoils, what that turn asked to save, and how many model requests the turn may cost;
asked more often than scripted, the chat model answers with the turn's last chat reply again.
`play_fault` runs a fault through `graph.stream` with the real ChatOpenAI against the stub, then a well-behaved
turn, and measures a `FaultOutcome`: did an exception reach the caller, is the thread wedged, was something lost
without the user being told, was something doubled, how many model calls the turn made. The tests
(tests/models/test_model_faults.py) and `python -m bench.model_faults` read the same catalogue; extraction-side faults
belong here too.

Endpoint faults (HTTP 500, an invalid body, a cut stream, a slow answer) end the turn with the one-sentence
`ModelUnavailableError` by design: the user reads it and the message stays in the thread to send again.

Calls written as text run only when the whole reply is one in a known format (hermes, mistral, one JSON call); a
reply that quotes a call (after prose, in a fence, inline code, OpenAI's shape, a JSON list) is text: it is kept
whole, nothing of it runs, and the user is told the quoted call was not run (`quoted`). `removed` catches the
attack where an example is run: a memory the turn was never asked to change is gone.

A base model writes the chat template's turn markers and goes on as the user: the reply ends before the first
marker, and `invented_kept` says whether the made-up turn reached the reply or the thread. Faults with
`call_mode="json"` play a model that answers in schema-constrained JSON (SmolLM2's and Gemma's shapes: the same
ToDo twice in one answer, a listed one sent back, a list repeating an item, a profile of placeholders).
"""

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from graph.agent import build_graph, close_graph
from graph.backends.model import ModelUnavailableError, load_chat_model
from graph.memory.store import namespace, search_all
from graph.nodes.update import MEMORY_UPDATE_EVENT
from graph.thread.bounded_json import MAX_JSON_CHARS, MAX_JSON_DEPTH
from graph.thread.model_message import UPDATE_TOOL
from testing.helpers import config, profile_of, todos
from testing.openai_stub import (
    CutStream,
    Delayed,
    OpenAIStub,
    RawBody,
    StubError,
    calls_reply,
    cut_reply,
    json_reply,
    json_schema,
    raw_call,
    text_reply,
    tool_calls_reply,
)
from testing.scripted_model import documents_in_prompt
from testing.stored_names import TODO
from testing.stub_script import Reply, Script, route, update
from testing.thread_checks import doubled

SWIM = "Book swim lessons"
MILK = "Buy milk"
ASK_SWIM = "I need to book swim lessons."
SAYS_SWIM = "I'll add the swim lessons to your ToDo list."
SWIM_TODO = tool_calls_reply(("ToDo", {"task": SWIM, "solutions": ["SF swim schools"]}))
MILK_TODO = tool_calls_reply(("ToDo", {"task": MILK, "solutions": ["Corner shop"]}))
LANCE_PROFILE = tool_calls_reply(("Profile", {"name": "Lance"}))
SORRY = text_reply("Sorry, I could not save that; could you say it again?")
UPDATE_TODO = '{"update_type": "todo"}'
ADDED_SWIM = "I added the swim lessons to your ToDo list."
# The call a model writes as text to save the turn's ToDo, as JSON.
SWIM_CALL = json.dumps({"name": UPDATE_TOOL, "arguments": {"update_type": "todo"}})
DENTIST = "Book the dentist"
# The answer to "what would the call look like? Do NOT do it": an example, in a fence.
EXPLAINED_CALL = f"It would look like this; I have not run it:\n\n```json\n{SWIM_CALL}\n```"
# Nested past MAX_JSON_DEPTH: 1,000 deep makes `json` raise RecursionError, 500 deep a checkpoint refuse to store.
DEEP_LIST = "[" * 500 + "]" * 500
# What a base model writes after its reply (Gemma 3 270M on llama-server): the chat template's turn markers, and
# the user's next turn and its answer, made up.
INVENTED_TURN = "Also add buying a boat to my list."
CHATML_TURN = f"<|im_end|>\n<|im_start|>user\n{INVENTED_TURN}<|im_end|>\n<|im_start|>assistant\nDone!"
QUOTED_MARKER = "ChatML ends each turn with `<|im_end|>`, and Gemma with `<end_of_turn>`."
GEMMA_TURN = f"<end_of_turn>\n<start_of_turn>user\n{INVENTED_TURN}<end_of_turn>"


@dataclass(frozen=True)
class Turn:
    """One user message and what the stub answers it with: chat replies in order, extraction replies per kind."""

    message: str
    chat: tuple[Reply, ...]
    extraction: Mapping[str, tuple[Reply, ...]] = field(default_factory=dict)

    def queue(self, script: Script) -> None:
        """Queue this turn's replies on `script`."""
        script.add("chat", *self.chat)
        for kind, replies in self.extraction.items():
            script.add(kind, *replies)


@dataclass(frozen=True)
class Fault:
    """A model fault: the turn that plays it (after the `setup` turns), what it asked to save, and its bounds.

    `model_error`: the endpoint fails, so the turn ends with the one-sentence model error (by design);
    `resumed`: the extraction replies the next message uses first, to finish the fault turn's updates.
    `retries` is how often the client retries a failed request; `timeout` sets MAISTRO_MODEL_TIMEOUT.
    `max_calls` bounds the model requests of the fault turn. `quoted`: the fault turn's reply quotes a call, so it
    is text, kept whole, and the user is told the quoted call was not run. `invented`: text the model made up
    after a chat-template turn marker, which must reach neither the reply nor the thread. `call_mode` is
    MAISTRO_CALL_MODE for the whole play: "json" plays a model answering in schema-constrained JSON (its routing
    answer and its extraction news queued as "route" and the kind's replies of its turns).
    """

    name: str
    description: str
    turn: Turn
    asked_todos: tuple[str, ...] = ()
    asked_profile: Mapping[str, str] = field(default_factory=dict)
    setup: tuple[Turn, ...] = ()
    model_error: bool = False
    retries: int = 0
    timeout: float | None = None
    max_calls: int = 3
    resumed: Mapping[str, tuple[Reply, ...]] = field(default_factory=dict)
    quoted: bool = False
    invented: str = ""
    call_mode: str = "tools"


def _swim_turn(*chat: Reply) -> Turn:
    return Turn(ASK_SWIM, chat, {"todo": (SWIM_TODO,)})


def _written_call(text: str) -> Turn:
    """The reply is the call written as text: it runs, and the model replies once it is answered."""
    return _swim_turn(text_reply(text), text_reply(ADDED_SWIM))


def _quoted_fault(name: str, description: str, reply: str) -> Fault:
    """A fault whose reply quotes the call that would save the turn's ToDo: it is text, nothing runs (the extraction
    reply stays unused), and the user is told."""
    return Fault(name, description, _swim_turn(text_reply(reply)), asked_todos=(SWIM,), quoted=True, max_calls=1)


def _remove_dentist(request: dict) -> dict:
    """The extraction a run example would get: the dentist ToDo removed."""
    prompt = "\n".join(message.get("content") or "" for message in request["messages"])
    doc_id = next(doc_id for doc_id, doc in documents_in_prompt(prompt).items() if "dentist" in doc)
    return tool_calls_reply(("RemoveDoc", {"json_doc_id": doc_id}))


def _refused_text_call(text: str) -> Turn:
    """The reply is a call written as text that cannot be read: refused once, the model replies again."""
    return Turn(ASK_SWIM, (text_reply(text), SORRY))


def todo_news(*new: dict, changed: Callable[[dict], list[dict]] = lambda _request: []) -> Callable[[dict], dict]:
    """A JSON model's ToDo news: the `new` ToDos, the `changed` ones (read from the request, whose prompt numbers the
    listed ToDos), and every other part the request's schema asks for empty."""

    def answer(request: dict) -> dict:
        given = {"new": list(new), "changed": changed(request)}
        return json_reply({part: given.get(part, []) for part in json_schema(request)["schema"]["properties"]})

    return answer


def numbered_as(word: str) -> Callable[[dict], str]:
    """The number the JSON extraction prompt gives the listed document that holds `word`."""

    def number(request: dict) -> str:
        prompt = request["messages"][0]["content"]
        return next(found[1] for found in re.finditer(r"^(\d+)\. (\{.*\})$", prompt, re.M) if word in found[2])

    return number


def _json_turn(message: str, news: Reply, *replies: str) -> Turn:
    """A turn of a model that answers in JSON: it routes the message to the ToDo list, replies, and gives `news`
    (a second reply answers again when the news changed nothing)."""
    return Turn(message, tuple(text_reply(reply) for reply in replies), {"route": (route("todo"),), "todo": (news,)})


SWIM_NEWS = {"task": SWIM, "solutions": ["SF swim schools"]}
JSON_SWIM = _json_turn(ASK_SWIM, todo_news(SWIM_NEWS), SAYS_SWIM)
ON_THE_LIST, ALREADY_LISTED = "It's on your list.", "Swim lessons are on your ToDo list already."
NOTED, NOTHING_CHANGED = "Noted.", "Your ToDo list is unchanged."
DENTIST_AND_MILK = "I need to book the dentist and buy milk."

CATALOGUE = (
    Fault(
        "malformed_args",
        "arguments that are not JSON ({'update_type': 'todo',}) beside the reply text; json-repair mends them",
        _swim_turn(calls_reply(raw_call(UPDATE_TOOL, "{'update_type': 'todo',}", "call_m1"), content=SAYS_SWIM)),
        asked_todos=(SWIM,),
    ),
    Fault(
        "unmendable_args",
        "arguments nothing can mend (update_type=todo) beside the reply text: refused once, the user told",
        Turn(ASK_SWIM, (calls_reply(raw_call(UPDATE_TOOL, "update_type=todo", "call_u1"), content=SAYS_SWIM), SORRY)),
        asked_todos=(SWIM,),
    ),
    Fault(
        "call_without_id",
        "a tool call with no id at all",
        _swim_turn(calls_reply(raw_call(UPDATE_TOOL, UPDATE_TODO, None), content=SAYS_SWIM)),
        asked_todos=(SWIM,),
    ),
    Fault(
        "empty_call_id",
        'every tool call\'s id is "", so a later call looks answered already',
        Turn("I also need to buy milk.", (calls_reply(raw_call(UPDATE_TOOL, UPDATE_TODO, ""), content="I'll add the milk."),), {"todo": (MILK_TODO,)}),
        asked_todos=(SWIM, MILK),
        setup=(_swim_turn(calls_reply(raw_call(UPDATE_TOOL, UPDATE_TODO, ""), content=SAYS_SWIM)),),
    ),
    Fault(
        "duplicate_call_ids",
        "two calls (profile and ToDo) with the same id in one message",
        Turn(
            "I'm Lance and I need to book swim lessons.",
            (
                calls_reply(
                    raw_call(UPDATE_TOOL, '{"update_type": "user"}', "call_0"),
                    raw_call(UPDATE_TOOL, UPDATE_TODO, "call_0"),
                    content="Nice to meet you, Lance! " + SAYS_SWIM,
                ),
            ),
            {"profile": (LANCE_PROFILE,), "todo": (SWIM_TODO,)},
        ),
        asked_todos=(SWIM,),
        asked_profile={"name": "Lance"},
    ),
    Fault(
        "reused_call_id",
        "every response numbers its calls from call_0, so a new call repeats an id the thread holds",
        Turn(
            "I also need to buy milk.",
            (calls_reply(raw_call(UPDATE_TOOL, UPDATE_TODO, "call_0"), content="I'll add the milk."),),
            {"todo": (MILK_TODO,)},
        ),
        asked_todos=(SWIM, MILK),
        setup=(_swim_turn(calls_reply(raw_call(UPDATE_TOOL, UPDATE_TODO, "call_0"), content=SAYS_SWIM)),),
    ),
    Fault(
        "unknown_tool",
        "a call of a tool that was never offered (save_memory): refused once, the user told",
        Turn(ASK_SWIM, (calls_reply(raw_call("save_memory", '{"text": "swim lessons"}', "call_x"), content=SAYS_SWIM), SORRY)),
        asked_todos=(SWIM,),
    ),
    Fault(
        "hermes_text_call",
        "the reply is the call written as text: <tool_call>{...}</tool_call> (Hermes, Qwen)",
        _written_call(f"<tool_call>\n{SWIM_CALL}\n</tool_call>"),
        asked_todos=(SWIM,),
    ),
    Fault(
        "hermes_open_call",
        "the reply is a <tool_call> tag left open: it runs to the end of the reply, as vLLM reads it",
        _written_call(f"<tool_call>{SWIM_CALL}"),
        asked_todos=(SWIM,),
    ),
    Fault(
        "mistral_text_call",
        "the reply is [TOOL_CALLS] [{...}] (Mistral's format, left in the text by the server)",
        _written_call(f"[TOOL_CALLS] [{SWIM_CALL}]"),
        asked_todos=(SWIM,),
    ),
    Fault(
        "bare_json_call",
        "the whole reply is a JSON object naming the tool (Llama 3.1's format, 'parameters')",
        _written_call(json.dumps({"name": UPDATE_TOOL, "parameters": {"update_type": "todo"}})),
        asked_todos=(SWIM,),
    ),
    _quoted_fault(
        "hermes_after_text",
        "a sentence, then <tool_call>{...}</tool_call>: quoted, kept as text, the user told",
        f"{SAYS_SWIM}\n<tool_call>{SWIM_CALL}</tool_call>",
    ),
    _quoted_fault(
        "mistral_after_text",
        "a sentence, then [TOOL_CALLS] [{...}]: quoted, kept as text, the user told",
        f"{SAYS_SWIM} [TOOL_CALLS] [{SWIM_CALL}]",
    ),
    _quoted_fault(
        "fenced_json_call",
        "the call in a ```json fenced block after the reply: quoted, kept as text, the user told",
        f"{SAYS_SWIM}\n```json\n{SWIM_CALL}\n```",
    ),
    _quoted_fault(
        "fenced_python_call",
        "the call in a ```python fenced block: quoted, kept as text, the user told",
        f"{SAYS_SWIM}\n```python\ncall = {SWIM_CALL}\n```",
    ),
    _quoted_fault(
        "fenced_only_call",
        "nothing but a ```text fenced block holding the call: quoted, kept as text, the user told",
        f"```text\n{SWIM_CALL}\n```",
    ),
    _quoted_fault(
        "inline_code_call",
        "the call in inline backticks: quoted, kept as text, the user told",
        f"{SAYS_SWIM} I'll send `{SWIM_CALL}`.",
    ),
    _quoted_fault(
        "prose_json_call",
        "the call as bare JSON inside a sentence: quoted, kept as text, the user told",
        f"{SAYS_SWIM} The call is {SWIM_CALL} and nothing else.",
    ),
    _quoted_fault(
        "openai_shape_call",
        'the whole reply in OpenAI\'s wire shape {"type": "function", "function": {...}}: quoted, the user told',
        json.dumps({"type": "function", "function": {"name": UPDATE_TOOL, "arguments": UPDATE_TODO}}),
    ),
    _quoted_fault(
        "json_list_call",
        "the whole reply a JSON list of calls: quoted, kept as text, the user told",
        f"[{SWIM_CALL}]",
    ),
    Fault(
        "explained_call",
        'asked "what would the call to remove the dentist task look like? Do NOT do it", the model shows one in a '
        "```json fence: nothing runs, the dentist ToDo stays",
        Turn(
            "What would the call to remove the dentist task look like? Do NOT do it.",
            (text_reply(EXPLAINED_CALL),),
            {"todo": (_remove_dentist,)},
        ),
        setup=(
            Turn(
                "I need to book the dentist.",
                (update("todo", content="I'll add the dentist."),),
                {"todo": (tool_calls_reply(("ToDo", {"task": DENTIST, "solutions": ["Dr. Lee"]})),)},
            ),
        ),
        quoted=True,
        max_calls=1,
    ),
    Fault(
        "deep_brackets_reply",
        'a reply that is "[" * 1000 + "]" * 1000: text, read within the bounds',
        Turn("Show me a thousand nested brackets.", (text_reply("[" * 1000 + "]" * 1000),)),
        max_calls=1,
    ),
    Fault(
        "long_brace_reply",
        'a reply of 200,000 "{": text, read in linear time',
        Turn("Show me two hundred thousand braces.", (text_reply("{" * 200_000),)),
        max_calls=1,
    ),
    Fault(
        "deep_hermes_call",
        f"a <tool_call> reply nested past {MAX_JSON_DEPTH} levels: refused once, the user told",
        _refused_text_call(f'<tool_call>{{"name": "{UPDATE_TOOL}", "arguments": {{"x": {DEEP_LIST}}}}}</tool_call>'),
        asked_todos=(SWIM,),
    ),
    Fault(
        "long_hermes_call",
        f"a <tool_call> reply longer than {MAX_JSON_CHARS:,} characters: refused once, the user told",
        _refused_text_call(f'<tool_call>{{"name": "{UPDATE_TOOL}", "arguments": {{"x": "{"a" * MAX_JSON_CHARS}"}}}}'),
        asked_todos=(SWIM,),
    ),
    Fault(
        "deep_call_arguments",
        f"a tool call whose arguments nest 500 deep (past {MAX_JSON_DEPTH}; no checkpoint stores them): refused once",
        Turn(ASK_SWIM, (calls_reply(raw_call(UPDATE_TOOL, f'{{"update_type": "todo", "x": {DEEP_LIST}}}', "call_d"), content=SAYS_SWIM), SORRY)),
        asked_todos=(SWIM,),
    ),
    Fault(
        "tag_in_prose",
        "a reply given beside its call that mentions <tool_call> in prose: shown whole, once",
        _swim_turn(update("todo", content=f"{SAYS_SWIM} (Some models would write <tool_call> here.)")),
        asked_todos=(SWIM,),
    ),
    Fault(
        "brace_first_reply",
        "a reply given beside its call that starts with a JSON object: held back while it may be a call, shown once",
        _swim_turn(update("todo", content='{"task": "Book swim lessons"} is going on your ToDo list.')),
        asked_todos=(SWIM,),
    ),
    Fault(
        "chatml_turn_markers",
        "a reply given beside its call that goes on past <|im_end|>\\n<|im_start|>user with a made-up user turn (a "
        "base model): the reply ends before the first marker",
        _swim_turn(update("todo", content=SAYS_SWIM + CHATML_TURN)),
        asked_todos=(SWIM,),
        invented=INVENTED_TURN,
    ),
    Fault(
        "gemma_turn_markers",
        "a reply that goes on past <end_of_turn>\\n<start_of_turn>user with a made-up user turn: it ends before it",
        Turn("Hello!", (text_reply(f"Hello! How can I help?{GEMMA_TURN}"),)),
        max_calls=1,
        invented=INVENTED_TURN,
    ),
    Fault(
        "turn_markers_to_the_limit",
        "a reply that goes on past <|im_end|>\\n<|im_start|>user until the token limit (finish_reason length, as "
        "Gemma 3 270M's do): it ended at the marker, so it is whole, not cut",
        Turn("Hello!", (cut_reply(f"Hello! How can I help?{CHATML_TURN * 20}"),)),
        max_calls=1,
        invented=INVENTED_TURN,
    ),
    Fault(
        "only_turn_markers",
        "a reply that is nothing but turn markers (<|im_end|>\\n<|im_start|>\\n<|im_end|>…): an empty reply",
        Turn("Hello!", (text_reply("<|im_end|>\n<|im_start|>\n<|im_end|>\n<|im_end|>\n<|im_end|>"),)),
        max_calls=1,
    ),
    Fault(
        "text_call_then_turn_markers",
        "a call written as text, then turn markers and a made-up user turn: the call runs, nothing after it",
        _written_call(f"<tool_call>\n{SWIM_CALL}\n</tool_call>{CHATML_TURN}"),
        asked_todos=(SWIM,),
        invented=INVENTED_TURN,
    ),
    Fault(
        "quoted_turn_marker",
        "a reply that quotes a turn marker in inline code (an answer about chat templates): text, kept whole",
        Turn("How does ChatML end a turn?", (text_reply(QUOTED_MARKER),)),
        max_calls=1,
    ),
    Fault(
        "near_miss_update_types",
        'routing values that miss: "profile" for the profile\'s "user", "ToDos" for "todo"',
        Turn(
            "I'm Lance and I need to book swim lessons.",
            (
                calls_reply(
                    raw_call(UPDATE_TOOL, '{"update_type": "profile"}', "call_p"),
                    raw_call(UPDATE_TOOL, '{"update_type": "ToDos"}', "call_t"),
                    content="Nice to meet you, Lance! " + SAYS_SWIM,
                ),
            ),
            {"profile": (LANCE_PROFILE,), "todo": (SWIM_TODO,)},
        ),
        asked_todos=(SWIM,),
        asked_profile={"name": "Lance"},
    ),
    Fault(
        "unknown_update_type",
        'a routing value that names no memory ("calendar"): refused once, the user told',
        Turn(ASK_SWIM, (calls_reply(raw_call(UPDATE_TOOL, '{"update_type": "calendar"}', "call_c"), content=SAYS_SWIM), SORRY)),
        asked_todos=(SWIM,),
    ),
    Fault(
        "empty_reply",
        "no text and no call in answer to a greeting",
        Turn("Hello!", (text_reply(""),)),
        max_calls=1,
    ),
    Fault(
        "empty_reply_after_save",
        "calls without text, then an empty reply once the memory is saved",
        _swim_turn(update("todo"), text_reply("")),
        asked_todos=(SWIM,),
    ),
    Fault(
        "json_same_task_twice",
        "JSON mode: the news holds the same new ToDo twice, with two lists of solutions (Gemma 3 270M): saved once",
        _json_turn(ASK_SWIM, todo_news(SWIM_NEWS, {"task": SWIM, "solutions": ["Call the pool"]}), SAYS_SWIM),
        asked_todos=(SWIM,),
        call_mode="json",
    ),
    Fault(
        "json_listed_task_again",
        'JSON mode: a listed ToDo sent back as new with other punctuation and case ("book swim lessons."): not saved again',
        _json_turn(
            "Remind me: I need to book swim lessons.",
            todo_news({"task": "book swim lessons.", "solutions": ["Call the pool"]}),
            ON_THE_LIST,
            ALREADY_LISTED,
        ),
        setup=(JSON_SWIM,),
        call_mode="json",
        max_calls=4,
    ),
    Fault(
        "json_renamed_like_another",
        "JSON mode: a change that renames a listed ToDo like another listed one (the dentist becomes \"Buy milk\"): "
        "not made",
        _json_turn(
            "I don't need to book the dentist after all, but I do need to buy milk.",
            todo_news(changed=lambda request: [{"item": numbered_as("dentist")(request), "task": MILK}]),
            NOTED,
            NOTHING_CHANGED,
        ),
        setup=(
            _json_turn(
                DENTIST_AND_MILK,
                todo_news({"task": DENTIST, "solutions": ["Dr. Lee"]}, {"task": MILK, "solutions": ["Corner shop"]}),
                "I'll add both.",
            ),
        ),
        call_mode="json",
        max_calls=4,
    ),
    Fault(
        "json_repeated_solutions",
        'JSON mode: a new ToDo whose solutions repeat one item ("Call the pool" three times, as SmolLM2 did): kept once',
        _json_turn(ASK_SWIM, todo_news({"task": SWIM, "solutions": ["Call the pool", "Call the pool", "call the  pool"]}), SAYS_SWIM),
        asked_todos=(SWIM,),
        call_mode="json",
    ),
    Fault(
        "json_placeholder_profile",
        'JSON mode: a profile of placeholders, "A" for the name, the city and the job (Gemma 3 270M), on a message '
        'with the article "a" and "and": nothing stored',
        Turn(
            "Put buy groceries and fix the bike light on a list.",
            (text_reply("Sure."),),
            {
                "route": (route("user"),),
                "profile": (json_reply({"name": "A", "location": "A", "job": "A", "connections": [], "interests": [], "timezone": None}),),
            },
        ),
        call_mode="json",
    ),
    Fault(
        "invalid_body",
        "an HTML error page with status 200 where the completion belongs",
        Turn(ASK_SWIM, (RawBody("<html><body>502 Bad Gateway</body></html>"),)),
        asked_todos=(SWIM,),
        model_error=True,
        max_calls=1,
    ),
    Fault(
        "invalid_extraction_body",
        "the extraction call's answer is an HTML error page with status 200",
        Turn(ASK_SWIM, (update("todo", content=SAYS_SWIM),), {"todo": (RawBody("<html>502 Bad Gateway</html>"),)}),
        asked_todos=(SWIM,),
        model_error=True,
        max_calls=2,
        resumed={"todo": (SWIM_TODO,)},
    ),
    Fault(
        "http_429",
        "HTTP 429 once, then the answer (the client retries)",
        _swim_turn(StubError(429, "Rate limit reached"), update("todo", content=SAYS_SWIM)),
        asked_todos=(SWIM,),
        retries=1,
    ),
    Fault(
        "http_500",
        "HTTP 500 on the chat call, with no retry left",
        Turn(ASK_SWIM, (StubError(500, "upstream exploded"),)),
        asked_todos=(SWIM,),
        model_error=True,
        max_calls=1,
    ),
    Fault(
        "cut_stream",
        "the connection closes part-way through the answer",
        Turn(ASK_SWIM, (CutStream(update("todo", content=SAYS_SWIM), after=3),)),
        asked_todos=(SWIM,),
        model_error=True,
        max_calls=1,
    ),
    Fault(
        "slow_answer",
        "an answer slower than MAISTRO_MODEL_TIMEOUT",
        Turn(ASK_SWIM, (Delayed(update("todo", content=SAYS_SWIM), 1.0),)),
        asked_todos=(SWIM,),
        model_error=True,
        timeout=0.3,
        max_calls=1,
    ),
)
FAULTS: dict[str, Fault] = {fault.name: fault for fault in CATALOGUE}
GRANDMA = "Call grandma"
RECOVERY_REPLY = "I'll add calling grandma to your list."
# The well-behaved turn after a fault: it must work (no HTTP 400, its memory saved, its reply given).
RECOVERY = Turn(
    "I also have to call grandma.",
    (update("todo", content=RECOVERY_REPLY),),
    {"todo": (tool_calls_reply(("ToDo", {"task": GRANDMA, "solutions": ["Sunday evening"]})),)},
)


# The well-behaved turn after a fault played by a model that answers in JSON.
JSON_RECOVERY = _json_turn(RECOVERY.message, todo_news({"task": GRANDMA, "solutions": ["Sunday evening"]}), RECOVERY_REPLY)


@dataclass
class FaultOutcome:
    """What a fault did to a turn, measured from outside as a caller and the user see it.

    `exception`: what reached the caller other than the designed one-sentence model error ("" when nothing);
    `model_error`: the turn ended with that sentence; `wedged`: the next well-behaved turn (a ToDo to save) failed,
    lost its ToDo, or a request was refused with HTTP 400; `lost_untold`: what the turn asked to save that is neither saved nor reported
    as failed; `removed`: ToDos stored before the turn and gone after it (no fault asks to remove one);
    `doubled`: ToDos stored more than once, and a ToDo's solutions held more than once; `unasked_profile`: profile fields stored that the turn never gave;
    `invented_kept`: the fault's made-up text reached the reply or the
    thread; `model_calls`: requests the fault turn made; `reply`: the assistant's last words of the fault turn;
    `notes`: the notes of its memory_update events.
    """

    fault: str
    exception: str = ""
    model_error: bool = False
    wedged: bool = False
    lost_untold: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    unasked_profile: list[str] = field(default_factory=list)
    invented_kept: bool = False
    model_calls: int = 0
    reply: str = ""
    notes: list[str] = field(default_factory=list)


@contextlib.contextmanager
def model_timeout(seconds: float | None) -> Iterator[None]:
    """MAISTRO_MODEL_TIMEOUT set to `seconds` for the block (unchanged when None)."""
    with _environment("MAISTRO_MODEL_TIMEOUT", None if seconds is None else str(seconds)):
        yield


@contextlib.contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    """The environment variable `name` set to `value` for the block (unchanged when None)."""
    if value is None:
        yield
        return
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


@dataclass
class _TurnResult:
    error: BaseException | None
    reply: str
    failed_notes: list[str]
    notes: list[str]


def _run_turn(agent, text: str, modes: list[str]) -> _TurnResult:
    """Send one message through `graph.stream`, as a caller does; what came back."""
    error, reply, notes, failed = None, "", [], []
    try:
        for mode, payload in agent.stream({"messages": [HumanMessage(text)]}, config(), stream_mode=modes):
            if mode == "values":
                reply = _latest_words(payload["messages"]) or reply
            elif mode == "custom" and isinstance(payload, dict) and MEMORY_UPDATE_EVENT in payload:
                event = payload[MEMORY_UPDATE_EVENT]
                notes += event.get("notes", [])
                failed += event.get("notes", []) if event.get("failed") else []
    except Exception as caught:  # measured, not hidden: the outcome reports it
        error = caught
    return _TurnResult(error, reply, failed, notes)


def _latest_words(messages) -> str:
    """The assistant's last words since the user's latest message ("" when it has said nothing yet)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return ""
        if isinstance(message, AIMessage) and message.text.strip():
            return message.text
    return ""


def play_fault(fault: Fault, stub: OpenAIStub, script: Script, data_dir: Path, *, streamed: bool = False) -> FaultOutcome:
    """Play `fault` through `graph.stream` (`streamed`: with stream_mode "messages" too, so the chat model streams)
    on a fresh graph in `data_dir`, then a well-behaved turn; its `FaultOutcome`. OPENAI_BASE_URL must point at
    `stub`, which answers from `script`."""
    with _environment("MAISTRO_CALL_MODE", fault.call_mode):
        return _play_fault(fault, stub, script, data_dir, streamed=streamed)


def _play_fault(fault: Fault, stub: OpenAIStub, script: Script, data_dir: Path, *, streamed: bool) -> FaultOutcome:
    modes = ["values", "custom", *(["messages"] if streamed else [])]
    outcome = FaultOutcome(fault.name)
    with model_timeout(fault.timeout):
        agent = build_graph(data_dir, chat_model=partial(load_chat_model, max_retries=fault.retries))
    try:
        for setup in fault.setup:
            setup.queue(script)
            _run_turn(agent, setup.message, modes)
        fault.turn.queue(script)
        script.keep("chat", fault.turn.chat[-1])  # asked again, the faulty model answers the same way
        stored_before = todos(agent)
        before = len(stub.requests)
        with model_timeout(fault.timeout):
            result = _run_turn(agent, fault.turn.message, modes)
        outcome.model_calls = len(stub.requests) - before
        script.keep("chat", None)
        outcome.reply, outcome.notes = result.reply, result.notes
        if isinstance(result.error, ModelUnavailableError):
            outcome.model_error = True
        elif result.error is not None:
            outcome.exception = f"{type(result.error).__name__}: {result.error}"
        told = outcome.model_error or bool(result.failed_notes)
        stored = todos(agent)
        profile = profile_of(agent) or {}
        missing = [task for task in fault.asked_todos if task not in stored]
        missing += [f"profile {name}" for name, value in fault.asked_profile.items() if profile.get(name) != value]
        outcome.unasked_profile = sorted(name for name, value in profile.items() if value and name not in fault.asked_profile)
        outcome.lost_untold = [] if told else missing
        outcome.removed = sorted(set(stored_before) - set(stored))
        outcome.doubled = doubled(_stored_tasks(agent)) + _doubled_solutions(agent)
        thread = agent.get_state(config()).values.get("messages", [])
        outcome.invented_kept = bool(fault.invented) and any(fault.invented in text for text in (result.reply, *_texts(thread)))
        script.replies.clear()
        for kind, replies in fault.resumed.items():
            script.add(kind, *replies)
        (JSON_RECOVERY if fault.call_mode == "json" else RECOVERY).queue(script)
        recovery = _run_turn(agent, RECOVERY.message, modes)
        outcome.wedged = (
            recovery.error is not None
            or recovery.reply != RECOVERY_REPLY
            or GRANDMA not in todos(agent)
            or bool(stub.rejections)
        )
    finally:
        close_graph(agent)
    return outcome


def _doubled_solutions(agent) -> list[str]:
    """"task: solution" for every solution a stored ToDo holds more than once (case and spacing aside)."""
    return [
        f"{item.value.get('task')}: {solution}"
        for item in search_all(agent.store, namespace(TODO, "Lance"))
        for solution in doubled(item.value.get("solutions") or [])
    ]


def _texts(messages) -> list[str]:
    """The text of every message, as stored."""
    return [message.content if isinstance(message.content, str) else str(message.content) for message in messages]


def _stored_tasks(agent) -> list[str]:
    """Every stored ToDo's task, one entry per stored item (a doubled ToDo appears twice)."""
    return [item.value.get("task") for item in search_all(agent.store, namespace(TODO, "Lance"))]
