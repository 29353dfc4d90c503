"""Crons with auth on, on a real `langgraph dev` and a real Aegra (graph/server/auth.py's `own_crons`).

Each user makes, lists, changes and cancels crons on their own threads only; another user's crons are out of
sight and out of reach, and a cron's run acts as the cron's owner, whatever the payload says. Bob's cron is made
disabled, so that it never fires; the cron that does fire is alice's, with a forged caller in its settings.
"""

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from zoneinfo import ZoneInfo

import httpx
import pytest
from langgraph_sdk import Auth, get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from playwright.sync_api import Browser, Page, expect
from typer.testing import CliRunner

from graph.app import cli
from graph.app.reminders import DIGEST, add_reminder, reminder_text, reminder_timezone
from graph.memory.store import user_label
from graph.names import AGENT_NAME
from graph.server import auth as server_auth
from graph.thread.model_message import REMIND_TOOL
from testing.aegra_server import SERVER_KINDS, api_server
from testing.langgraph_server import new_thread, offline_environment
from testing.openai_stub import OpenAIStub, text_reply, tool_calls_reply
from testing.stored_names import TODO
from testing.stub_script import Script, update

ALICE, BOB = "alice", "bob"
TOKENS = {ALICE: "alice-cron-token-5e1f0a9c", BOB: "bob-cron-token-0c77d2b4"}
HELLO = {"messages": [{"role": "user", "content": "Hello"}]}
DAILY = "0 8 * * *"
FIRE_SECONDS = 120
REFUSED = {403, 404, 422}


# Unit test: no server.


def test_the_cron_rules_strip_a_forged_caller_and_refuse_crons_without_a_thread(monkeypatch):
    monkeypatch.setattr(server_auth, "TOKENS", {"tok-a": ALICE})
    ctx = SimpleNamespace(action="create", user=SimpleNamespace(identity=ALICE))
    payload = {"config": {"configurable": {"langgraph_auth_user": {"identity": BOB}, "cron_id": "c"}},
               "context": {"langgraph_auth_user_id": BOB, "user_id": BOB}}
    value = {"thread_id": "t", "payload": payload, "metadata": {"owner": BOB}}

    assert asyncio.run(server_auth.own_crons(ctx, value)) == {"owner": ALICE}
    assert value["metadata"] == {"owner": ALICE}
    assert payload == {"config": {"configurable": {"cron_id": "c"}}, "context": {"user_id": BOB}}
    for refused in ({"payload": {}}, {"thread_id": "t", "webhook": "http://x"}, {"thread_id": "t", "payload": {"webhook": "http://x"}}):
        with pytest.raises(Auth.exceptions.HTTPException) as error:
            asyncio.run(server_auth.own_crons(ctx, refused))
        assert error.value.status_code == 403
    monkeypatch.setattr(server_auth, "TOKENS", {})
    assert asyncio.run(server_auth.own_crons(ctx, {"payload": {}})) is None
    for schedule in ("0 8 * * *", "0 * * * *", "0 8,9 * * *"):
        assert asyncio.run(server_auth.own_crons(ctx, {"schedule": schedule})) is None
    for schedule in ("* * * * *", "*/30 * * * *", "0,30 8 * * *"):
        with pytest.raises(Auth.exceptions.HTTPException) as error:
            asyncio.run(server_auth.own_crons(ctx, {"schedule": schedule}))
        assert error.value.status_code == 403 and "at most once an hour" in error.value.detail
    with pytest.raises(Auth.exceptions.HTTPException) as error:
        asyncio.run(server_auth.own_crons(ctx, {"schedule": "0 9 31 2 *"}))
    assert error.value.status_code == 422 and error.value.detail == "The schedule '0 9 31 2 *' names a date that never comes"


# The servers.


@pytest.fixture(scope="module", params=SERVER_KINDS)
def server(request, stub: OpenAIStub, tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[str]:
    """A server of each kind with tokens for alice and bob."""
    scratch = tmp_path_factory.mktemp(f"{request.param}-crons")
    env = offline_environment(
        OPENAI_BASE_URL=stub.base_url,
        OPENAI_API_KEY="test",
        MAISTRO_DATA_DIR=str(scratch / "data"),
        MAISTRO_AUTH_TOKENS=",".join(f"{token}:{user}" for user, token in TOKENS.items()),
    )
    with api_server(request.param, scratch, env, postgres_url) as url:
        yield url


@pytest.fixture(scope="module")
def clients(server: str) -> dict[str, SyncLangGraphClient]:
    """One authenticated client per user."""
    return {user: get_sync_client(url=server, api_key=token, timeout=30) for user, token in TOKENS.items()}


def make_cron(client: SyncLangGraphClient, thread_id: str, **settings) -> dict:
    """A disabled daily cron on `thread_id`, as the server lists it (langgraph-api answers the cron, Aegra a run)."""
    client.crons.create_for_thread(thread_id, AGENT_NAME, schedule=DAILY, input=HELLO, enabled=False, **settings)
    (cron,) = [cron for cron in client.crons.search(thread_id=thread_id, limit=100) if cron["schedule"] == DAILY]
    return cron


@pytest.fixture(scope="module")
def bobs_cron(clients) -> dict:
    """Bob's thread and his disabled daily cron on it."""
    return make_cron(clients[BOB], new_thread(clients[BOB]), metadata={"note": "bob's reminder"})


def status_of(call) -> int:
    """The HTTP status a refused SDK call got (fails when the call succeeds)."""
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    return refused.value.response.status_code


def test_info_says_crons_run(server, clients):
    info = httpx.get(f"{server}/info", headers={"X-Api-Key": TOKENS[ALICE]}).json()
    assert info["flags"]["crons"] is True


def test_each_user_lists_changes_and_cancels_their_own_crons(clients, bobs_cron):
    bob = clients[BOB]
    assert bobs_cron["metadata"].get("note") == "bob's reminder"
    bob.crons.update(bobs_cron["cron_id"], schedule="30 7 * * *")
    (listed,) = bob.crons.search(limit=100)
    assert listed["cron_id"] == bobs_cron["cron_id"] and listed["schedule"] == "30 7 * * *"
    assert bob.crons.count() == 1

    spare = make_cron(bob, new_thread(bob))
    bob.crons.delete(spare["cron_id"])
    assert [cron["cron_id"] for cron in bob.crons.search(limit=100)] == [bobs_cron["cron_id"]]


def test_no_user_reaches_another_users_crons(server, clients, bobs_cron):
    alice, bob = clients[ALICE], clients[BOB]
    cron_id, bobs_thread = bobs_cron["cron_id"], bobs_cron["thread_id"]
    own_thread = new_thread(alice)
    attempts = {
        "cron on bob's thread": lambda: alice.crons.create_for_thread(bobs_thread, AGENT_NAME, schedule=DAILY, input=HELLO),
        "cron without a thread": lambda: alice.crons.create(AGENT_NAME, schedule=DAILY, input=HELLO, enabled=False),
        "cron calling a webhook": lambda: alice.crons.create_for_thread(
            own_thread, AGENT_NAME, schedule=DAILY, input=HELLO, enabled=False, webhook="http://127.0.0.1:9/hook"),
        "update bob's cron": lambda: alice.crons.update(cron_id, schedule="0 * * * *", enabled=True),
        "take bob's cron": lambda: alice.crons.update(cron_id, metadata={"owner": ALICE}),
        "delete bob's cron": lambda: alice.crons.delete(cron_id),
    }
    statuses = {name: status_of(call) for name, call in attempts.items()}
    assert set(statuses.values()) <= REFUSED, statuses

    assert alice.crons.search(limit=100) == [] and alice.crons.count() == 0
    assert alice.crons.search(thread_id=bobs_thread) == []
    assert alice.crons.search(metadata={"owner": BOB}) == []
    (unchanged,) = bob.crons.search(limit=100)
    assert unchanged["cron_id"] == cron_id and unchanged["enabled"] is False and unchanged["schedule"] == "30 7 * * *"


def test_a_cron_may_fire_at_most_once_an_hour(clients):
    alice = clients[ALICE]
    thread_id = new_thread(alice)
    with pytest.raises(httpx.HTTPStatusError) as refused:
        alice.crons.create_for_thread(thread_id, AGENT_NAME, schedule="*/5 * * * *", input=HELLO, enabled=False)
    assert refused.value.response.status_code == 403
    assert "fires every 5 minutes; a cron may fire at most once an hour" in refused.value.response.text
    with pytest.raises(httpx.HTTPStatusError) as refused:
        alice.crons.create_for_thread(thread_id, AGENT_NAME, schedule="0 9 31 2 *", input=HELLO, enabled=False)
    assert refused.value.response.status_code == 422
    assert "names a date that never comes" in refused.value.response.text
    hourly = make_cron(alice, thread_id)
    assert status_of(lambda: alice.crons.update(hourly["cron_id"], schedule="* * * * *")) == 403
    alice.crons.update(hourly["cron_id"], schedule="0 * * * *")
    alice.crons.delete(hourly["cron_id"])


def test_a_forged_owner_stays_the_creators(server, clients, bobs_cron):
    alice, bob = clients[ALICE], clients[BOB]
    forged = make_cron(alice, new_thread(alice), metadata={"owner": BOB})
    alice.crons.update(forged["cron_id"], metadata={"owner": BOB})

    assert [cron["cron_id"] for cron in bob.crons.search(limit=100)] == [bobs_cron["cron_id"]]
    assert [cron["cron_id"] for cron in alice.crons.search(limit=100)] == [forged["cron_id"]]
    alice.crons.delete(forged["cron_id"])


def test_requests_without_a_token_get_401(server, bobs_cron):
    anonymous = get_sync_client(url=server, api_key=None, headers={"X-Api-Key": ""}, timeout=30)
    calls = [
        lambda: anonymous.crons.search(),
        lambda: anonymous.crons.count(),
        lambda: anonymous.crons.create_for_thread(bobs_cron["thread_id"], AGENT_NAME, schedule=DAILY, input=HELLO),
        lambda: anonymous.crons.update(bobs_cron["cron_id"], enabled=True),
        lambda: anonymous.crons.delete(bobs_cron["cron_id"]),
    ]
    assert {status_of(call) for call in calls} == {401}


def wait_for_runs(client: SyncLangGraphClient, thread_id: str, count: int) -> list[dict]:
    """The thread's runs once `count` of them have ended (fails after `FIRE_SECONDS`)."""
    deadline = time.monotonic() + FIRE_SECONDS
    while time.monotonic() < deadline:
        runs = client.runs.list(thread_id)
        if len(runs) >= count and all(run["status"] not in ("pending", "running") for run in runs):
            return runs
        time.sleep(1)
    pytest.fail(f"no cron run ended on {thread_id} within {FIRE_SECONDS} s")


def test_a_cron_run_acts_as_its_owner_whatever_its_settings_say(server, clients, script: Script):
    alice, bob = clients[ALICE], clients[BOB]
    script.add("chat", update("todo"), text_reply("I added it."))
    script.add("todo", tool_calls_reply(("ToDo", {"task": "Water the ferns"})))
    thread_id = new_thread(alice)
    # Aegra runs a new cron once at once; langgraph-api first at its next time: the next minute, once a day.
    soon = datetime.now(UTC) + timedelta(minutes=1)
    schedule = f"{soon.minute} {soon.hour} * * *"
    forged_caller = {"langgraph_auth_user": {"identity": BOB}, "langgraph_auth_user_id": BOB, "user_id": BOB}
    alice.crons.create_for_thread(
        thread_id, AGENT_NAME, schedule=schedule, timezone="UTC",
        input={"messages": [{"role": "user", "content": "Add: water the ferns"}]},
        config={"configurable": forged_caller},
    )

    (run, *_) = wait_for_runs(alice, thread_id, 1)
    for cron in alice.crons.search(thread_id=thread_id):
        alice.crons.delete(cron["cron_id"])

    assert run["status"] == "success", run
    assert [item["value"]["task"] for item in alice.store.search_items((TODO, user_label(ALICE)))["items"]] == ["Water the ferns"]
    assert bob.store.search_items((TODO, user_label(BOB)))["items"] == []
    assert script.remaining() == {}


def maistro(*arguments: str) -> tuple[int, str]:
    """Run `maistro …` in process: (exit code, stdout and stderr)."""
    result = CliRunner().invoke(cli.app, list(arguments))
    return result.exit_code, result.output


def test_maistro_reminders_adds_lists_and_cancels_a_users_own_reminders(server, clients):
    code, said = maistro("reminders", "add", "--server", server, "--token", TOKENS[ALICE], "--timezone", "Asia/Tokyo")
    assert code == 0, said
    (reminder,) = clients[ALICE].crons.search(limit=100)
    assert reminder["enabled"] is True and reminder["schedule"] == DAILY and reminder_timezone(reminder) == "Asia/Tokyo"
    assert reminder_text(reminder) == DIGEST and reminder["cron_id"] in said
    assert clients[ALICE].runs.list(reminder["thread_id"]) == [], "a reminder speaks first at its time"

    code, listed = maistro("reminders", "list", "--server", server, "--token", TOKENS[ALICE], "--json")
    assert code == 0 and [cron["cron_id"] for cron in json.loads(listed)] == [reminder["cron_id"]]
    code, bobs = maistro("reminders", "list", "--server", server, "--token", TOKENS[BOB], "--json")
    assert reminder["cron_id"] not in bobs
    code, refused = maistro("reminders", "cancel", reminder["cron_id"], "--server", server, "--token", TOKENS[BOB])
    assert code == 1 and refused.strip() == "The server has no such reminder or thread of yours."
    code, refused = maistro("reminders", "list", "--server", server, "--token", "not-a-token-at-all")
    assert code == 1 and "refused the token" in refused

    code, said = maistro("reminders", "cancel", reminder["cron_id"], "--server", server, "--token", TOKENS[ALICE])
    assert code == 0 and clients[ALICE].crons.search(limit=100) == []
    code, said = maistro("reminders", "list", "--server", server, "--token", TOKENS[ALICE])
    assert code == 0 and said.strip() == f"You have no reminders on {server}."


def test_the_agent_makes_the_reminder_the_user_asks_for_on_their_own_thread(server, clients, script: Script):
    alice, bob = clients[ALICE], clients[BOB]
    reply = "I'll send you a digest of what is due every day at 8."
    script.add("chat", {**tool_calls_reply((REMIND_TOOL, {"schedule": DAILY, "message": ""})), "content": reply})
    thread_id = new_thread(alice)

    final = alice.runs.wait(
        thread_id, AGENT_NAME, input={"messages": [{"role": "user", "content": "Remind me every day at 8"}]},
        context={"timezone": "Asia/Tokyo"},
    )

    (reminder,) = alice.crons.search(thread_id=thread_id, limit=100)
    assert (reminder["schedule"], reminder_timezone(reminder), reminder_text(reminder)) == (DAILY, "Asia/Tokyo", DIGEST)
    assert reminder["enabled"] is True and reminder["thread_id"] == thread_id
    assert final["messages"][-1]["content"] == reply and script.remaining() == {}
    assert len(alice.runs.list(thread_id)) == 1, "the reminder speaks first at its time, not at once"
    code, listed = maistro("reminders", "list", "--server", server, "--token", TOKENS[ALICE], "--json")
    assert code == 0 and reminder["cron_id"] in [cron["cron_id"] for cron in json.loads(listed)]
    assert reminder["cron_id"] not in [cron["cron_id"] for cron in bob.crons.search(limit=100)]
    code, bobs = maistro("reminders", "list", "--server", server, "--token", TOKENS[BOB], "--json")
    assert code == 0 and reminder["cron_id"] not in bobs
    alice.crons.delete(reminder["cron_id"])


def test_the_agents_reminder_for_one_date_ends_after_it_and_a_recurring_one_never_ends(request, clients, script: Script):
    alice = clients[ALICE]
    tokyo = ZoneInfo("Asia/Tokyo")
    date = datetime.now(tokyo).date() + timedelta(days=10)
    one_date = f"0 9-17 {date.day} {date.month} *"
    reminders = ((REMIND_TOOL, {"schedule": one_date, "message": "Call the bank"}), (REMIND_TOOL, {"schedule": DAILY, "message": ""}))
    script.add("chat", {**tool_calls_reply(*reminders), "content": "Both are set."})
    thread_id = new_thread(alice)

    alice.runs.wait(
        thread_id, AGENT_NAME, input={"messages": [{"role": "user", "content": "Remind me to call the bank"}]},
        context={"timezone": "Asia/Tokyo"},
    )

    listed = {cron["schedule"]: cron for cron in alice.crons.search(thread_id=thread_id, limit=100)}
    for cron in listed.values():
        alice.crons.delete(cron["cron_id"])
    assert set(listed) == {one_date, DAILY} and script.remaining() == {}
    assert listed[DAILY]["end_time"] is None
    last_firing = datetime(date.year, date.month, date.day, 17, tzinfo=tokyo)
    assert datetime.fromisoformat(listed[one_date]["end_time"]) == expected_end(request, last_firing)


def expected_end(request: pytest.FixtureRequest, last_firing: datetime) -> datetime:
    """The end time a cron whose date's last firing is `last_firing` is listed with: that firing on Aegra (which
    disables a cron after a firing at or past its end time), the date's end on langgraph-api (which skips a cron
    past its end time)."""
    if request.node.callspec.params["server"] == "aegra":
        return last_firing
    return last_firing.replace(hour=0, minute=0) + timedelta(days=1)


def test_maistro_reminders_add_ends_a_reminder_for_one_date_after_it(request, server, clients):
    alice = clients[ALICE]
    tokyo = ZoneInfo("Asia/Tokyo")
    date = datetime.now(tokyo).date() + timedelta(days=10)
    code, said = maistro("reminders", "add", "--server", server, "--token", TOKENS[ALICE], "--timezone", "Asia/Tokyo",
                         "--schedule", f"30 8 {date.day} {date.month} *", "--message", "Renew the passport")
    assert code == 0, said
    (reminder,) = [cron for cron in alice.crons.search(limit=100) if cron["cron_id"] in said]
    alice.crons.delete(reminder["cron_id"])
    last_firing = datetime(date.year, date.month, date.day, 8, 30, tzinfo=tokyo)
    assert reminder["enabled"] is True and datetime.fromisoformat(reminder["end_time"]) == expected_end(request, last_firing)


def test_the_agents_reminder_for_today_fires_once_and_is_then_over(request, clients, script: Script):
    alice = clients[ALICE]
    soon = datetime.now(UTC) + timedelta(seconds=90)
    today = f"{soon.minute} {soon.hour} {soon.day} {soon.month} *"
    script.add("chat", {**tool_calls_reply((REMIND_TOOL, {"schedule": today, "message": "Call the bank"})), "content": "Set."})
    script.add("chat", text_reply("Time to call the bank."))
    thread_id = new_thread(alice)
    alice.runs.wait(
        thread_id, AGENT_NAME, input={"messages": [{"role": "user", "content": "Remind me to call the bank"}]},
        context={"timezone": "UTC"},
    )

    wait_for_runs(alice, thread_id, 2)
    (cron,) = alice.crons.search(thread_id=thread_id, limit=100)
    alice.crons.delete(cron["cron_id"])

    assert script.remaining() == {}
    if request.node.callspec.params["server"] == "aegra":  # Aegra fires a due cron while it is enabled
        assert cron["enabled"] is False, cron
    else:  # langgraph-api skips a cron whose end time is past
        assert datetime.fromisoformat(cron["end_time"]) < datetime.fromisoformat(cron["next_run_date"]), cron


def signed_in_page(browser: Browser, server: str, token: str) -> Page:
    """The memory page in a fresh browser session, signed in with `token`."""
    page = browser.new_context(timezone_id="UTC", locale="en-US").new_page()
    page.goto(f"{server}/memories")
    page.get_by_label("Access token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("Signed in as")).to_be_visible()
    return page


def test_the_memory_page_lists_the_users_own_reminders(server, clients, browser):
    alice = clients[ALICE]
    reminder = add_reminder(alice, None, "30 7 * * 1-5", "Europe/Berlin", "Which ToDos are due this week?", AGENT_NAME)

    alices = signed_in_page(browser, server, TOKENS[ALICE])
    bobs = signed_in_page(browser, server, TOKENS[BOB])
    alice.crons.delete(reminder["cron_id"])

    expect(alices.locator("#reminders-count")).to_have_text("(1)")
    listed = alices.locator("#reminders-list li")
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text("30 7 * * 1-5 (Europe/Berlin) · next ")
    expect(listed).to_contain_text("Which ToDos are due this week?")
    expect(bobs.locator("#reminders-list li")).to_have_count(1)  # bob's own cron, disabled
    expect(bobs.locator("#reminders-list")).not_to_contain_text("Which ToDos are due this week?")
    expect(bobs.locator("#reminders-list li")).to_contain_text("paused")
    alices.context.close()
    bobs.context.close()
