"""The memory page (`/memories`) on a real `langgraph dev`, driven in Debian's headless Chromium by Playwright.

One server runs with two users' tokens (alice and bob), another open (no tokens); their model calls go to the
local OpenAI-compatible stub. ToDos are written by chats through the SDK, as the agent writes them; the page
then reads, edits, deletes and undoes them, and every step is checked in the server's store through the SDK.
Every page must log no JavaScript error. Screenshots land in `tests/server/screenshots/latest/`.
"""

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import APIStatusError
from playwright.sync_api import Browser, Locator, Page, expect

from graph.memory.store import HISTORY, PENDING, user_label
from graph.server.limits import MAX_STORE_VALUE_BYTES
from graph.server.memory_api import MAX_BODY_BYTES
from testing.aegra_server import SERVER_KINDS, api_server
from testing.chore_endpoint import profile_reply
from testing.langgraph_server import (
    langgraph_dev,
    new_thread,
    offline_environment,
    play,
    scratch_config,
    token_environment,
    token_server,
)
from testing.openai_stub import OpenAIStub, text_reply, tool_calls_reply
from testing.page_kinds import KINDS as PAGE_KINDS
from testing.stored_names import INSTRUCTIONS, INSTRUCTIONS_KEY, PROFILE, PROFILE_KEY, TODO
from testing.stub_script import Script, update

ALICE, BOB = "alice", "bob"
TOKENS = {ALICE: "alice-page-8e1f0c-token", BOB: "bob-page-2c7d9a-token"}
SCREENSHOTS = Path(__file__).with_name("screenshots") / "latest"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SWIM = {
    "task": "Book swim lessons for the baby",
    "time_to_complete": 30,
    "deadline": "2030-11-20T23:59:00-08:00",
    "solutions": ["Check the Aquatic Center's schedule", "Ask other parents"],
    "status": "not started",
}
LOCK = {
    "task": "Fix the jammed electric door lock",
    "time_to_complete": 60,
    "deadline": None,
    "solutions": ["Call a locksmith", "Check the lock's warranty"],
    "status": "in progress",
}
TOYOTA = {
    "task": "Schedule the Toyota 4Runner oil change",
    "time_to_complete": 10,
    "deadline": "2024-12-01T09:00:00-08:00",
    "solutions": ["Call the dealer", "Book online"],
    "status": "not started",
}
PAGE_SOURCE = "on the memory page"
KINDS_SETTING = "testing.page_kinds:KINDS"
# The page's controls that have no label, no aria-label and no text (a script for `page.evaluate`).
UNLABELLED = (
    "[...document.querySelectorAll('input, select, textarea, button')]"
    ".filter(c => !c.hidden && !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.textContent.trim())"
    ".map(c => c.outerHTML)"
)
# A Playwright assertion waits this long: the server embeds ToDos and the machine is shared.
expect.set_options(timeout=20_000)
# Seconds an API request may take on the shared machine.
WAIT = 30


@pytest.fixture(scope="module", params=SERVER_KINDS)
def server(request: pytest.FixtureRequest, stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory,
           postgres_url: str) -> Iterator[str]:
    """A server with alice's and bob's tokens, its model calls going to the stub, keeping the memory kinds of
    `testing.page_kinds` besides the tutorial's: `langgraph dev`, then Aegra."""
    scratch = tmp_path_factory.mktemp(f"memory-page-{request.param}")
    environment = token_environment(scratch, stub, TOKENS, MAISTRO_MEMORY_KINDS=KINDS_SETTING)
    if request.param == "aegra":  # Aegra files SDK store calls on a kind not in `store.scopes` under ("users", ...)
        config = scratch_config(scratch, "aegra.json")
        spec = json.loads(config.read_text())
        spec["store"]["scopes"].update({kind.name: ["user_label"] for kind in PAGE_KINDS})
        config.write_text(json.dumps(spec))
    with api_server(request.param, scratch, environment, postgres_url) as url:
        yield url


@pytest.fixture
def open_tab(browser: Browser) -> Iterator[Callable[..., Page]]:
    """Open pages in fresh browser sessions; at the end, fail on any JavaScript error they logged.

    `expected` lists console messages a test provokes on purpose (the browser logs every HTTP error response).
    """
    contexts, errors = [], []

    def open_page(viewport: dict = DESKTOP, expected: tuple[str, ...] = ()) -> Page:
        context = browser.new_context(viewport=viewport, timezone_id="America/Los_Angeles", locale="en-US")
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on(
            "console",
            lambda message: errors.append(message.text)
            if message.type == "error" and not any(text in message.text for text in expected)
            else None,
        )
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert errors == [], errors


def sdk(url: str, user: str) -> SyncLangGraphClient:
    """An SDK client holding the user's token."""
    return get_sync_client(url=url, api_key=TOKENS[user])


def chat_todos(client: SyncLangGraphClient, script: Script, text: str, *todos: dict) -> None:
    """One chat turn in which the agent saves `todos` (the stub plays the model)."""
    script.add("chat", update("todo"), text_reply("Saved."))
    script.add("todo", tool_calls_reply(*(("ToDo", todo) for todo in todos)))
    play(client, new_thread(client), text)


def stored_todos(client: SyncLangGraphClient, user: str) -> dict[str, tuple[str, dict]]:
    """The user's ToDos in the server's store, by task: (key, document)."""
    items = client.store.search_items((TODO, user_label(user)), limit=100)["items"]
    return {item["value"]["task"]: (item["key"], item["value"]) for item in items}


def stored_history(client: SyncLangGraphClient, user: str) -> list[dict]:
    """The user's history entries in the server's store, oldest first."""
    items = client.store.search_items((HISTORY, user_label(user)), limit=100)["items"]
    return sorted((item["value"] for item in items), key=lambda entry: (entry["time"], entry["order"]))


def stored(client: SyncLangGraphClient, kind: str, user: str, key: str) -> dict | None:
    """One document of the user's from the server's store (None if there is none)."""
    found = client.store.search_items((kind, user_label(user)), limit=100)["items"]
    return next((item["value"] for item in found if item["key"] == key), None)


def sign_in(page: Page, url: str, token: str) -> None:
    """Open the page, give the token in its password field, and wait until the memories show."""
    page.goto(f"{url}/memories")
    field = page.get_by_label("Access token")
    expect(field).to_have_attribute("type", "password")
    field.fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("Signed in as")).to_be_visible()


def tasks_shown(page: Page) -> list[str]:
    """The tasks of the ToDo cards on the page, in order."""
    return page.locator("#kind-todo h3").all_inner_texts()


def screenshot(shown: Page | Locator, name: str, full_page: bool = True) -> None:
    """Save a screenshot from the test run (the whole page, what the window shows, or one element)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    if isinstance(shown, Locator):
        shown.screenshot(path=str(SCREENSHOTS / name))
    else:
        shown.screenshot(path=str(SCREENSHOTS / name), full_page=full_page)


def test_a_user_sees_what_a_chat_saved_edits_deletes_and_undoes_and_the_store_follows(server, script, open_tab):
    alice = sdk(server, ALICE)
    chat_todos(alice, script, "Swim lessons for the baby, the door lock, and the oil change.", SWIM, LOCK, TOYOTA)
    keys = {task: key for task, (key, _) in stored_todos(alice, ALICE).items()}
    page = open_tab()

    sign_in(page, server, TOKENS[ALICE])
    expect(page.get_by_text("Signed in as alice")).to_be_visible()
    assert page.evaluate("Object.values(sessionStorage)") == [TOKENS[ALICE]] and page.evaluate("localStorage.length") == 0
    expect(page.locator("#kind-todo h3")).to_have_text([TOYOTA["task"], SWIM["task"], LOCK["task"]])
    expect(page.locator(".late")).to_have_text([" · overdue"])

    page.get_by_role("button", name=f"Mark done: {LOCK['task']}").click()
    expect(page.get_by_role("status")).to_have_text(f"Marked done: “{LOCK['task']}”.")
    key, marked = stored_todos(alice, ALICE)[LOCK["task"]]
    finished = datetime.fromisoformat(marked.pop("completed_at"))  # the page's edit records when
    assert (key, marked) == (keys[LOCK["task"]], {**LOCK, "status": "done"}) and finished.tzinfo is not None
    assert stored_history(alice, ALICE)[-1]["message"] == f"Changed status {PAGE_SOURCE}"
    expect(page.locator("#kind-todo h3")).to_have_text([TOYOTA["task"], SWIM["task"], LOCK["task"]])
    todos = page.locator("#kind-todo")
    todos.get_by_label("Status").select_option("done")
    expect(page.locator("#kind-todo h3")).to_have_text([LOCK["task"]])
    todos.get_by_label("Status").select_option("open")
    expect(page.locator("#kind-todo h3")).to_have_text([TOYOTA["task"], SWIM["task"]])
    todos.get_by_label("Status").select_option("all")

    page.get_by_role("button", name=f"Edit: {SWIM['task']}").click()
    page.get_by_label("Task").fill("Book swim lessons for Saturday mornings")
    page.get_by_label("Time to complete (minutes)").fill("45")
    page.get_by_label("Solutions (one per line)").fill("Check the Aquatic Center's schedule\nAsk the YMCA")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_role("heading", name="Book swim lessons for Saturday mornings")).to_be_visible()
    edited = {
        **SWIM,
        "task": "Book swim lessons for Saturday mornings",
        "time_to_complete": 45,
        "solutions": ["Check the Aquatic Center's schedule", "Ask the YMCA"],
    }
    assert stored_todos(alice, ALICE)[edited["task"]] == (keys[SWIM["task"]], edited), "same key, deadline untouched"

    page.get_by_role("button", name=f"Delete: {TOYOTA['task']}").click()
    expect(page.get_by_role("heading", name=TOYOTA["task"])).to_have_count(0)
    assert TOYOTA["task"] not in stored_todos(alice, ALICE)

    newest = page.locator("#history-list > li").first
    expect(newest).to_contain_text(f"ToDo “{TOYOTA['task']}” deleted")
    newest.get_by_role("button", name="Undo").click()
    expect(page.get_by_role("heading", name=TOYOTA["task"])).to_be_visible()
    assert stored_todos(alice, ALICE)[TOYOTA["task"]] == (keys[TOYOTA["task"]], TOYOTA)

    page.locator("#history-list > li", has_text=f"ToDo “{edited['task']}” changed").get_by_role("button").click()
    expect(page.get_by_role("heading", name=SWIM["task"])).to_be_visible()
    assert stored_todos(alice, ALICE)[SWIM["task"]] == (keys[SWIM["task"]], SWIM)
    undone = page.locator("#history-list > li").first
    expect(undone).to_contain_text("changed back (undo)")
    expect(undone).to_contain_text("task: Book swim lessons for Saturday mornings → Book swim lessons for the baby")

    page.get_by_role("button", name="Edit: Profile").click()
    page.get_by_label("Location").fill("Oakland")
    page.get_by_role("button", name="Save profile").click()
    expect(page.get_by_role("status")).to_have_text("Saved your profile.")
    assert stored(alice, PROFILE, ALICE, PROFILE_KEY)["location"] == "Oakland"
    page.get_by_role("button", name="Edit: Instructions").click()
    page.get_by_label("Preferences for how to update the ToDo list").fill("Name local shops. Wifi password: hunter2")
    page.get_by_role("button", name="Save instructions").click()
    expect(page.get_by_role("status")).to_have_text("Saved your instructions. Left out as secret: password.")
    assert stored(alice, INSTRUCTIONS, ALICE, INSTRUCTIONS_KEY) == {"memory": "Name local shops. Wifi password: [redacted]"}
    expect(page.locator("#kind-instructions .text")).to_have_text("Name local shops. Wifi password: [redacted]")

    plumber = {"task": "Call the plumber about the leak", "solutions": ["Ask the neighbours for a plumber"]}
    chat_todos(alice, script, "The kitchen sink leaks; remind me to call a plumber.", plumber)
    expect(page.get_by_role("heading", name=plumber["task"])).to_be_visible()
    newest = page.locator("#history-list > li").first
    expect(newest).to_contain_text(f"ToDo “{plumber['task']}” added")
    expect(newest).to_contain_text("“The kitchen sink leaks; remind me to call a plumber.”")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "memory-page.png", full_page=False)
    screenshot(page, "memory-page-full.png")


def test_the_search_box_finds_todos_by_meaning(server, script, open_tab):
    alice = sdk(server, ALICE)
    chat_todos(
        alice,
        script,
        "Three things to remember.",
        {"task": "Buy a birthday cake for Mia", "solutions": ["Order from the bakery"]},
        {"task": "Sign the kids up for swimming classes", "solutions": ["Call the community pool"]},
        {"task": "Renew the car insurance", "solutions": ["Compare quotes online"]},
    )
    page = open_tab()
    sign_in(page, server, TOKENS[ALICE])

    page.get_by_label("Search").fill("natation pour enfants à la piscine")
    page.get_by_role("button", name="Search", exact=True).click()

    expect(page.locator("#search-note")).to_contain_text("the memories closest in meaning to “natation pour enfants à la piscine”, best first")
    assert "swim" in tasks_shown(page)[0]
    page.get_by_role("button", name="Clear search").click()
    expect(page.locator("#search-note")).to_have_text("")
    assert len(tasks_shown(page)) == len(stored_todos(alice, ALICE))


def test_the_page_works_by_keyboard_and_on_a_phone(server, script, open_tab):
    alice = sdk(server, ALICE)
    chat_todos(alice, script, "Remind me to water the ferns.", {"task": "Water the ferns", "solutions": ["Every Sunday"]})
    page = open_tab(PHONE)
    page.goto(f"{server}/memories")

    expect(page.get_by_label("Access token")).to_be_focused()
    page.keyboard.type(TOKENS[ALICE])
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Water the ferns")).to_be_visible()
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('aria-label')") == "Edit: Water the ferns":
            break
    expect(page.get_by_role("button", name="Edit: Water the ferns")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Task")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("button", name="Edit: Water the ferns")).to_be_focused()

    assert page.evaluate(UNLABELLED) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], "no sideways scrolling on a phone"
    screenshot(page, "memory-page-phone.png")


def test_the_other_user_sees_and_changes_none_of_it(server, script, open_tab):
    alice = sdk(server, ALICE)
    chat_todos(alice, script, "Remind me about the surprise party.", {"task": "Plan Bob's surprise party", "solutions": ["Book the hall"]})
    key, before = stored_todos(alice, ALICE)["Plan Bob's surprise party"]
    change_id = stored_history(alice, ALICE)[-1]["id"]
    alice_before = (stored_todos(alice, ALICE), stored_history(alice, ALICE), stored(alice, PROFILE, ALICE, PROFILE_KEY))
    page = open_tab()

    sign_in(page, server, TOKENS[BOB])
    expect(page.get_by_text("Signed in as bob")).to_be_visible()
    expect(page.get_by_text("No ToDo list yet.")).to_be_visible()
    expect(page.get_by_text("No changes yet.")).to_be_visible()
    expect(page.get_by_text("No profile yet.")).to_be_visible()

    api = f"{server}/memories/api"
    as_bob = {"Authorization": f"Bearer {TOKENS[BOB]}"}
    view = httpx.get(f"{api}/memories", params={"user_id": ALICE}, headers=as_bob, timeout=WAIT).json()
    assert (view["user_id"], view["documents"][TODO], view["history"]) == (BOB, [], [])
    searched = httpx.get(f"{api}/search", params={"query": "surprise party", "user_id": ALICE}, headers=as_bob, timeout=WAIT).json()
    assert searched["results"] == []
    attempts = [
        ("PATCH", f"{api}/kinds/{TODO}/documents/{key}", {"value": {"status": "done"}}),
        ("PUT", f"{api}/kinds/{TODO}/documents/{key}", {"value": before}),
        ("DELETE", f"{api}/kinds/{TODO}/documents/{key}", None),
        ("POST", f"{api}/history/{change_id}/undo", None),
    ]
    for method, url, body in attempts:
        for params in ({}, {"user_id": ALICE}):
            answer = httpx.request(method, url, json=body, params=params, headers={"X-Api-Key": TOKENS[BOB]}, timeout=WAIT)
            assert answer.status_code == 404, (method, url, answer.text)
    profile = {"name": "Bob", "location": None, "job": None, "connections": [], "interests": []}
    saved = httpx.put(f"{api}/kinds/{PROFILE}/documents/{PROFILE_KEY}", params={"user_id": ALICE}, json={"value": profile}, headers=as_bob, timeout=WAIT)
    assert saved.status_code == 200 and stored(sdk(server, BOB), PROFILE, BOB, PROFILE_KEY) == profile

    for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-Api-Key": "wrong"}):
        writes = [("PUT", f"{api}/kinds/{PROFILE}/documents/{PROFILE_KEY}", {"value": profile}), ("POST", f"{api}/kinds/{TODO}/documents", {"value": before})]
        for method, url, body in [("GET", f"{api}/memories", None), *writes, *attempts]:
            answer = httpx.request(method, url, json=body, params={"user_id": ALICE}, headers=headers, timeout=WAIT)
            assert answer.status_code == 401 and answer.json()["detail"], (method, url, headers)
    assert (stored_todos(alice, ALICE), stored_history(alice, ALICE), stored(alice, PROFILE, ALICE, PROFILE_KEY)) == alice_before
    assert before["status"] == "not started"


def failed_chat(client: SyncLangGraphClient, script: Script, text: str) -> None:
    """One chat turn whose ToDo extraction the stub answers in text: the update fails and is kept as pending."""
    script.add("chat", update("todo", content="I'll add it."), text_reply("Sorry, that did not save."))
    script.add("todo", text_reply("Sure, it is on your list."))
    play(client, new_thread(client), text)


def test_a_failed_update_is_not_saved_yet_on_the_page_where_it_is_retried_or_dropped_by_its_user_alone(server, script, open_tab):
    alice = sdk(server, ALICE)
    failed_chat(alice, script, "Remind me to renew the car registration.")
    failed_chat(alice, script, "Remind me to water the orchids on the balcony.")
    api, as_alice, as_bob = f"{server}/memories/api", {"X-Api-Key": TOKENS[ALICE]}, {"X-Api-Key": TOKENS[BOB]}
    kept = {entry["message"]: entry for entry in httpx.get(f"{api}/memories", headers=as_alice, timeout=WAIT).json()["pending"]}
    orchids = kept["Remind me to water the orchids on the balcony."]
    assert httpx.get(f"{api}/memories", params={"user_id": ALICE}, headers=as_bob, timeout=WAIT).json()["pending"] == []
    for method, url in (("POST", f"{api}/pending/{orchids['id']}/retry"), ("DELETE", f"{api}/pending/{orchids['id']}")):
        assert httpx.request(method, url, params={"user_id": ALICE}, headers=as_bob, timeout=WAIT).status_code == 404
    for client in (alice, sdk(server, BOB)):  # the store API reaches no pending change, not even its owner's
        with pytest.raises(APIStatusError) as refused:
            client.store.search_items((PENDING, user_label(ALICE)), limit=100)
        assert refused.value.response.status_code == 403
        with pytest.raises(APIStatusError):
            client.store.delete_item((PENDING, user_label(ALICE)), orchids["id"])
    page = open_tab()
    sign_in(page, server, TOKENS[ALICE])

    registration = page.locator("#pending-list > li", has_text="“Remind me to renew the car registration.”")
    expect(registration).to_contain_text("ToDo list not saved: the model answered in text instead of calling the tool")
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Renew the car registration", "solutions": ["Renew online"]})))
    registration.get_by_role("button", name="Retry").click()
    expect(page.get_by_role("status")).to_have_text("Saved: ToDo added: Renew the car registration")
    expect(page.get_by_role("heading", name="Renew the car registration")).to_be_visible()
    expect(registration).to_have_count(0)
    screenshot(page.locator("#pending"), "pending-changes.png")
    page.locator("#pending-list > li", has_text="orchids").get_by_role("button", name="Drop").click()
    expect(page.get_by_role("status")).to_contain_text("Dropped: ToDo list not saved")
    expect(page.locator("#pending-list > li", has_text="orchids")).to_have_count(0)
    assert not [entry for entry in httpx.get(f"{api}/memories", headers=as_alice, timeout=WAIT).json()["pending"]
                if "orchids" in entry["message"] or "registration" in entry["message"]]
    assert "Water the orchids" not in " ".join(stored_todos(alice, ALICE))


def test_a_wrong_token_is_refused_with_one_sentence(server, open_tab):
    page = open_tab(expected=("401",))
    page.goto(f"{server}/memories")
    page.get_by_label("Access token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("That token was not accepted: Unknown or expired token.")
    expect(page.get_by_label("Access token")).to_be_focused()
    assert page.evaluate("sessionStorage.length") == 0


def test_bad_edits_get_one_sentence_and_change_nothing(server, script, open_tab):
    alice = sdk(server, ALICE)
    chat_todos(alice, script, "Remind me to fix the gate.", {"task": "Fix the garden gate", "solutions": ["Buy new hinges"]})
    key, gate = stored_todos(alice, ALICE)["Fix the garden gate"]
    before = (stored_todos(alice, ALICE), stored_history(alice, ALICE))
    url = f"{server}/memories/api/kinds/{TODO}/documents/{key}"
    headers = {"Authorization": f"Bearer {TOKENS[ALICE]}"}

    refusals = {
        400: [{"value": {"status": "someday"}}, {"value": {"colour": "red"}}, {"value": {"solutions": []}}, {"value": "done"}],
        409: [{"value": {"status": "done"}, "base": {**gate, "task": "Fix the gate"}}],
        413: [{"value": {"task": "x" * (MAX_STORE_VALUE_BYTES + 1)}}],
    }
    for status, bodies in refusals.items():
        for body in bodies:
            answer = httpx.patch(url, json=body, headers=headers, timeout=WAIT)
            assert answer.status_code == status, (body, answer.text)
            assert answer.json()["detail"].endswith("."), answer.text
    assert httpx.patch(url, content=b"{not json", headers=headers, timeout=WAIT).status_code == 400
    huge = httpx.patch(url, content=b"{" + b" " * MAX_BODY_BYTES + b"}", headers=headers, timeout=WAIT)
    assert huge.status_code == 413
    assert httpx.patch(f"{server}/memories/api/kinds/{TODO}/documents/no-such-key", json={"value": {}}, headers=headers, timeout=WAIT).status_code == 404
    assert httpx.put(f"{server}/memories/api/kinds/no_such_kind/documents/x", json={"value": {}}, headers=headers, timeout=WAIT).status_code == 404
    assert httpx.post(f"{server}/memories/api/history/no-such-change/undo", headers=headers, timeout=WAIT).status_code == 404
    assert (stored_todos(alice, ALICE), stored_history(alice, ALICE)) == before

    page = open_tab(expected=("400",))
    sign_in(page, server, TOKENS[ALICE])
    page.get_by_role("button", name="Edit: Fix the garden gate").click()
    page.get_by_label("Solutions (one per line)").fill("")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_role("alert")).to_have_text("The ToDo was not saved: solutions: List should have at least 1 item after validation, not 0.")
    expect(page.get_by_label("Task")).to_have_value("Fix the garden gate")
    assert (stored_todos(alice, ALICE), stored_history(alice, ALICE)) == before


@pytest.fixture(scope="module")
def open_server(stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server without tokens (an open dev server)."""
    scratch = tmp_path_factory.mktemp("memory-page-open")
    environment = offline_environment(
        OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="test", MAISTRO_DATA_DIR=str(scratch / "data")
    )
    with langgraph_dev(scratch, environment) as url:
        yield url


def test_on_an_open_server_the_page_asks_which_user(open_server, script, open_tab):
    client = get_sync_client(url=open_server)
    chat_todos(client, script, "Remind me to buy milk.", {"task": "Buy milk", "solutions": ["Corner shop"]})
    script.add("chat", update("todo"), text_reply("Saved."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Call Lance's mum", "solutions": ["Sunday evening"]})))
    play(client, new_thread(client), "Remind me to call my mum.", config={"configurable": {"user_id": "Lance"}})
    page = open_tab()
    page.goto(f"{open_server}/memories")

    expect(page.get_by_label("Access token")).to_be_hidden()
    expect(page.get_by_label("User id")).to_have_value("default-user")
    expect(page.locator("#default-user")).to_have_text("default-user")
    page.get_by_role("button", name="Show memories").click()
    expect(page.get_by_text("Showing default-user (open server)")).to_be_visible()
    expect(page.locator("#kind-todo h3")).to_have_text(["Buy milk"])

    page.get_by_role("button", name="Switch user").click()
    page.get_by_label("User id").fill("Lance")
    page.get_by_role("button", name="Show memories").click()
    expect(page.get_by_text("Showing Lance (open server)")).to_be_visible()
    expect(page.locator("#kind-todo h3")).to_have_text(["Call Lance's mum"])
    page.get_by_role("button", name="Mark done: Call Lance's mum").click()
    expect(page.get_by_role("status")).to_contain_text("Marked done")
    assert [item["value"]["status"] for item in client.store.search_items((TODO, "Lance"))["items"]] == ["done"]
    assert [item["value"]["status"] for item in client.store.search_items((TODO, "default-user"))["items"]] == ["not started"]


def seed_server_store(directory: Path, user: str, documents: dict[tuple[str, str], dict]) -> None:
    """Documents the server's store holds when it starts, written as they would have been before writes were
    checked: straight into the in-memory runtime's store file (`.langgraph_api/store.pckl`, loaded at start)."""
    from langgraph.checkpoint.memory import PersistentDict
    from langgraph.store.memory import InMemoryStore

    (directory / ".langgraph_api").mkdir(parents=True, exist_ok=True)
    store = InMemoryStore()
    store._data = PersistentDict(dict, filename=str(directory / ".langgraph_api" / "store.pckl"))
    for (kind, key), document in documents.items():
        store.put((kind, user_label(user)), key, document, index=False)
    store._data.sync()


def test_a_stored_document_that_does_not_fit_its_schema_is_shown_as_such_and_can_be_deleted(
    stub, open_tab, tmp_path_factory
):
    scratch = tmp_path_factory.mktemp("memory-page-invalid")
    broken = {**LOCK, "solutions": "not a list"}
    seed_server_store(scratch, ALICE, {
        (TODO, "broken"): broken,
        (TODO, "swim"): SWIM,
        (PROFILE, PROFILE_KEY): {"name": "Alice", "interests": "swimming"},
        (INSTRUCTIONS, INSTRUCTIONS_KEY): {"memory": 42},
    })
    with token_server(scratch, stub, TOKENS) as url:
        alice = sdk(url, ALICE)
        page = open_tab()

        sign_in(page, url, TOKENS[ALICE])
        expect(page.locator("#kind-todo h3")).to_have_text([SWIM["task"], f"Not a valid ToDo: {LOCK['task']}"])
        card = page.locator("#kind-todo li.invalid")
        expect(card).to_contain_text("What is stored as your ToDo does not fit its schema (solutions: Input should be a valid array)")
        expect(card).to_contain_text('"solutions": "not a list"')
        expect(card.get_by_role("button")).to_have_text(["Edit", "Delete"])
        expect(page.locator("#kind-profile .problem-text")).to_have_text(
            "What is stored as your profile does not fit its schema (interests: Input should be a valid array); saving the form "
            "replaces it."
        )
        expect(page.locator("#kind-instructions .problem-text")).to_contain_text(
            "What is stored as your instructions does not fit its schema (memory: Input should be a valid string)"
        )
        page.get_by_role("button", name="Edit: Profile").click()
        expect(page.get_by_label("Name", exact=True)).to_have_value("Alice")
        page.get_by_role("button", name="Cancel").click()

        card.get_by_role("button", name=f"Delete: {LOCK['task']}").click()
        expect(page.get_by_role("status")).to_have_text(
            f"Deleted “{LOCK['task']}”. To bring it back, undo the change in the history below."
        )
        expect(page.locator("#kind-todo h3")).to_have_text([SWIM["task"]])
        assert set(stored_todos(alice, ALICE)) == {SWIM["task"]}
        entry = stored_history(alice, ALICE)[-1]
        assert (entry["action"], entry["key"], entry["before"]) == ("deleted", "broken", broken)

        page.get_by_role("button", name="Sign out").click()
        sign_in(page, url, TOKENS[ALICE])  # the page keeps working: it never drops back to sign-in for good
        expect(page.locator("#kind-todo h3")).to_have_text([SWIM["task"]])


ADA = {"name": "Ada", "phone": "555-0100", "relation": "sister"}


def test_kinds_the_setting_adds_are_saved_by_the_servers_graph_shown_from_their_schema_and_undone(
    server, script, open_tab
):
    client = sdk(server, BOB)
    script.add("chat", update("contact", "health"), text_reply("Saved Ada and your allergy."))
    script.add("Contact", tool_calls_reply(("Contact", ADA)))
    script.add("Health", tool_calls_reply(("Health", {"allergies": ["peanuts"]})))
    play(client, new_thread(client), "My sister Ada's number is 555-0100. I'm allergic to peanuts.")
    assert [item["value"] for item in client.store.search_items(("contact", BOB))["items"]] == [ADA]
    page = open_tab()
    sign_in(page, server, TOKENS[BOB])

    contacts = page.locator("#kind-contact")
    expect(contacts.get_by_role("heading", level=2)).to_have_text("Contact list (1)")
    expect(contacts.locator("h3")).to_have_text(["Ada"])
    expect(contacts.locator("dt")).to_have_text(["Phone", "Relation"])
    expect(contacts.locator("dd")).to_have_text(["555-0100", "sister"])
    expect(page.locator("#kind-health dd")).to_have_text(["peanuts", "none"])
    expect(page.get_by_text("Contact “Ada” added")).to_be_visible()
    page.get_by_role("button", name="Undo: Contact “Ada” added").click()

    expect(page.get_by_role("status")).to_have_text("Undone: Contact “Ada” added.")
    expect(contacts.get_by_text("No contact list yet.")).to_be_visible()
    assert client.store.search_items(("contact", BOB))["items"] == []
    assert stored(client, "health", BOB, "user_health") == {"allergies": ["peanuts"], "conditions": []}


HABIT = "habit"
RUN = {
    "name": "Run 5k in the park",
    "frequency": "weekly",
    "started": "2026-03-02",
    "target": 3,
    "shared": False,
    "days": ["Mon", "Thu"],
    "buddy": None,
    "steps": [{"what": "Stretch", "minutes": 5}, {"what": "Jog around the lake", "minutes": 30}],
}
READ = {
    "name": "Read before bed",
    "frequency": "daily",
    "started": "2026-04-01",
    "target": 6.5,
    "shared": True,
    "days": ["Sat", "Sun"],
    "buddy": None,
    "steps": [{"what": "Pick a novel", "minutes": None}],
}


def habits(client: SyncLangGraphClient, user: str) -> dict[str, tuple[str, dict]]:
    """The user's habits in the server's store, by name: (key, document)."""
    items = client.store.search_items((HABIT, user_label(user)), limit=100)["items"]
    return {item["value"]["name"]: (item["key"], item["value"]) for item in items}


def test_an_added_kind_is_added_edited_searched_deleted_and_undone_from_forms_its_schema_makes(
    server, script, open_tab
):
    alice = sdk(server, ALICE)
    alice.store.put_item((HABIT, user_label(ALICE)), "run", RUN)
    page = open_tab(expected=("409",))
    sign_in(page, server, TOKENS[ALICE])
    panel = page.locator(f"#kind-{HABIT}")
    run = panel.locator("li", has=page.get_by_role("heading", name=RUN["name"]))
    expect(run.locator("ul.records > li")).to_have_text(["WhatStretchMinutes5 min", "WhatJog around the lake" "Minutes30 min"])
    expect(panel).not_to_contain_text("[object Object]")

    panel.get_by_role("button", name="Add habit").click()
    form = panel.get_by_role("form", name="Add a habit")
    form.get_by_label("Name").first.fill(READ["name"])  # the habit's; the second is in the Buddy group
    expect(form.get_by_label("Frequency")).to_have_value("0")  # the schema's default, daily
    form.get_by_label("Started").fill(READ["started"])
    form.get_by_label("Target").fill("6.5")
    form.get_by_label("Shared").check()
    form.get_by_label("Sat").check()
    form.get_by_label("Sun").check()
    form.get_by_role("button", name="Add step").click()
    form.get_by_label("What").fill("Pick a novel")
    assert page.evaluate(UNLABELLED) == [], "every control of the generated form is labelled"
    form.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text(f"Added habit “{READ['name']}”.")
    read_key, read = habits(alice, ALICE)[READ["name"]]
    assert read == READ
    assert stored_history(alice, ALICE)[-1]["message"] == f"Added {PAGE_SOURCE}"

    run.get_by_role("button", name=f"Edit: {RUN['name']}").click()
    form = panel.get_by_role("form", name=f"Edit {RUN['name']}")
    form.get_by_label("Frequency").select_option(label="monthly")
    form.get_by_role("group", name="Buddy").get_by_label("Name").fill("Sam")
    form.get_by_role("button", name="Remove step 1").click()
    expect(form.get_by_role("group", name="Step 1").get_by_label("What")).to_have_value("Jog around the lake")
    form.get_by_role("group", name="Step 1").get_by_label("Minutes").fill("40")
    form.get_by_role("button", name="Add step").click()
    form.get_by_role("group", name="Step 2").get_by_label("What").fill("Cool down")
    screenshot(form, "custom-kinds-editor.png")
    form.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text(f"Saved “{RUN['name']}”.")
    edited = {**RUN, "frequency": "monthly", "buddy": {"name": "Sam", "phone": None}, "steps": [{"what": "Jog around the lake", "minutes": 40}, {"what": "Cool down", "minutes": None}]}
    assert habits(alice, ALICE)[RUN["name"]] == ("run", edited)
    newest = page.locator("#history-list > li").first
    expect(newest).to_contain_text(f"Habit “{RUN['name']}” changed")
    expect(newest).to_contain_text("steps: (what Stretch, minutes 5 min), (what Jog around the lake, minutes 30 min) → "
                                   "(what Jog around the lake, minutes 40 min), (what Cool down)")
    expect(newest).to_contain_text("buddy: none → (name Sam)")
    expect(run.get_by_role("definition").filter(has_text="Sam")).to_have_count(2)  # the buddy's table, and its name
    assert stored_history(alice, ALICE)[-1]["message"] == f"Changed buddy, frequency, steps {PAGE_SOURCE}"

    read_card = panel.locator("li", has=page.get_by_role("heading", name=READ["name"]))
    read_card.get_by_role("button", name=f"Edit: {READ['name']}").click()
    elsewhere = {**READ, "target": 7}
    alice.store.put_item((HABIT, user_label(ALICE)), read_key, elsewhere)  # another tab, or the agent
    panel.get_by_role("form", name=f"Edit {READ['name']}").get_by_label("Target").fill("2")
    panel.get_by_role("button", name="Save").click()
    expect(page.get_by_role("alert")).to_have_text(
        "Your habit changed since the page showed it (the agent or another tab edited it); look at the new version "
        "and make your change again."
    )
    assert habits(alice, ALICE)[READ["name"]] == (read_key, elsewhere)
    expect(panel.get_by_role("form")).to_have_count(0)

    page.get_by_label("Search").fill("jogging")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#search-note")).to_contain_text("closest in meaning to “jogging”")
    expect(panel.locator("h3").first).to_have_text(RUN["name"])
    page.get_by_role("button", name="Clear search").click()

    panel.get_by_role("button", name=f"Delete: {READ['name']}").click()
    expect(page.get_by_role("status")).to_contain_text(f"Deleted “{READ['name']}”.")
    assert READ["name"] not in habits(alice, ALICE)
    page.get_by_role("button", name=f"Undo: Habit “{READ['name']}” deleted").click()
    expect(page.get_by_role("status")).to_have_text(f"Undone: Habit “{READ['name']}” deleted.")
    assert habits(alice, ALICE)[READ["name"]] == (read_key, elsewhere)
    expect(panel.locator("h3")).to_have_count(2)
    screenshot(panel, "custom-kinds.png")

    page.get_by_role("button", name="Edit: Tone").click()
    page.get_by_label("How the user wants the assistant to sound").fill("Warm, brief, no emoji.")
    page.get_by_role("button", name="Save tone").click()
    expect(page.get_by_role("status")).to_have_text("Saved your tone.")
    assert stored(alice, "tone", ALICE, "user_tone") == {"memory": "Warm, brief, no emoji."}
    expect(page.locator("#kind-tone .text")).to_have_text("Warm, brief, no emoji.")


def test_bad_documents_of_an_added_kind_get_a_400_with_one_sentence_and_change_nothing(server):
    alice = sdk(server, ALICE)
    api = f"{server}/memories/api/kinds"
    headers = {"Authorization": f"Bearer {TOKENS[ALICE]}"}
    before = (habits(alice, ALICE), stored_history(alice, ALICE))
    refusals = [
        ("POST", f"{api}/{HABIT}/documents", {"value": {**RUN, "frequency": "hourly"}},
         "The habit was not saved: frequency: Input should be 'daily', 'weekly' or 'monthly'."),
        ("POST", f"{api}/{HABIT}/documents", {"value": {**RUN, "steps": [{"minutes": 3}]}},
         "The habit was not saved: steps.0.what: Field required."),
        ("POST", f"{api}/{HABIT}/documents", {"value": {**RUN, "started": "last spring"}},
         "The habit was not saved: started: Input should be a valid date in the format YYYY-MM-DD, invalid character in year."),
        ("POST", f"{api}/{HABIT}/documents", {"value": [RUN]}, "Send the habit as a JSON object in `value`."),
        ("POST", f"{api}/tone/documents", {"value": {"memory": "Loud."}},
         "Your tone is one document: save it rather than adding another."),
    ]
    for method, url, body, detail in refusals:
        answer = httpx.request(method, url, json=body, headers=headers, timeout=WAIT)
        assert (answer.status_code, answer.json()["detail"]) == (400, detail), body
    assert httpx.post(f"{api}/no_such_kind/documents", json={"value": {}}, headers=headers, timeout=WAIT).status_code == 404
    assert (habits(alice, ALICE), stored_history(alice, ALICE)) == before


def test_every_instruction_change_shows_in_full_in_the_history_and_a_text_over_the_cap_is_refused(server, script, open_tab):
    alice = sdk(server, ALICE)
    api, headers = f"{server}/memories/api", {"Authorization": f"Bearer {TOKENS[ALICE]}"}
    path = f"{api}/kinds/{INSTRUCTIONS}/documents/{INSTRUCTIONS_KEY}"
    written = httpx.put(path, json={"value": {"memory": "Name local shops. Keep tasks short."}}, headers=headers, timeout=WAIT)
    assert written.status_code == 200, written.text
    rewritten = "Name local shops. Add a time estimate to every ToDo. 备注用中文写。"
    script.add("chat", update("instructions"), text_reply("Noted."))
    script.add("instructions", text_reply(rewritten))
    play(alice, new_thread(alice), "Add a time estimate to every ToDo, drop the rule on short tasks, and 备注用中文写。")
    page = open_tab(expected=("400",))

    sign_in(page, server, TOKENS[ALICE])

    newest = page.locator("#history-list > li").first
    expect(newest).to_contain_text("Instructions changed")
    expect(newest.locator(".diff li")).to_have_text(
        ["- Keep tasks short.", "+ Add a time estimate to every ToDo.", "+ 备注用中文写。"]
    )
    expect(newest.locator(".diff .removed")).to_have_count(1)
    screenshot(newest, "instructions-change.png")
    before = (stored(alice, INSTRUCTIONS, ALICE, INSTRUCTIONS_KEY), stored_history(alice, ALICE))
    page.get_by_role("button", name="Edit: Instructions").click()
    page.get_by_label("Preferences for how to update the ToDo list (at most 4,000 characters)").fill("x" * 4001)
    page.get_by_role("button", name="Save instructions").click()
    expect(page.get_by_role("alert")).to_have_text(
        "The instructions was not saved: the text is 4,001 characters, over the 4,000 the instructions may hold "
        "(MAISTRO_MAX_INSTRUCTION_CHARS)."
    )
    with pytest.raises(APIStatusError) as through_the_store_api:
        alice.store.put_item((INSTRUCTIONS, user_label(ALICE)), INSTRUCTIONS_KEY, {"memory": "x" * 4001})
    assert through_the_store_api.value.response.status_code == 422
    assert "the text is 4,001 characters, over the 4,000" in through_the_store_api.value.response.text
    assert (stored(alice, INSTRUCTIONS, ALICE, INSTRUCTIONS_KEY), stored_history(alice, ALICE)) == before
    assert before[0] == {"memory": rewritten}


def test_each_memory_shows_its_source_quote_thread_and_date_linked_to_its_change(server, script, open_tab):
    alice = sdk(server, ALICE)
    said = "I moved to Alameda last week, for the new job."
    script.add("chat", update("user"), text_reply("Noted the move."))
    # Alice may have a profile from the tests before: then trustcall asks for a patch of it.
    script.add("profile", lambda request: profile_reply(request, {"name": "Alice", "location": "Alameda"}))
    thread = new_thread(alice)
    play(alice, thread, said)
    chat_todos(alice, script, "Remind me to renew the library card.", {**SWIM, "task": "Renew the library card"})
    page = open_tab()

    sign_in(page, server, TOKENS[ALICE])

    location = page.locator("#kind-profile .source").filter(has_text="Location:")
    expect(location).to_contain_text(f"Location: from “{said}” — thread {thread}")
    card = page.locator("#kind-todo .card").filter(has_text="Renew the library card")
    expect(card.locator(".source")).to_contain_text("“Remind me to renew the library card.”")
    entry = [entry for entry in stored_history(alice, ALICE) if entry["kind"] == PROFILE][-1]
    expect(location.locator("a")).to_have_attribute("href", f"#change-{entry['id']}")
    expect(page.locator(f"#change-{entry['id']}")).to_contain_text("Profile")
    screenshot(page.locator("#kind-profile"), "memory-source.png")
