"""The kinds benchmark's pure part: its endpoint routes and extracts habits the way the benchmark's turns need."""

import json

from bench.kinds_scale import ADD_HABIT, CHIT_CHAT, HabitEndpoint

UPDATE_MEMORY = {"type": "function", "function": {"name": "UpdateMemory", "parameters": {}}}
HABIT_TOOLS = [{"type": "function", "function": {"name": name, "parameters": {}}} for name in ("Habit", "PatchDoc")]


def request(text: str, tools: list[dict], system: str = "Reflect on following interaction.") -> dict:
    """A request of the agent with one system and one user message."""
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": text}], "tools": tools}


def test_the_endpoint_routes_habits_creates_them_and_patches_the_one_named():
    endpoint = HabitEndpoint()
    routed = endpoint(request(f"{ADD_HABIT}Walk the dog (habit 1000)", [UPDATE_MEMORY]))
    chatted = endpoint(request(CHIT_CHAT, [UPDATE_MEMORY]))
    created = endpoint(request(f"{ADD_HABIT}Walk the dog (habit 1000)", HABIT_TOOLS))
    prompt = '<instance id=h1 schema_type="Habit">\n{"name": "Walk the dog (habit 1000)"}\n</instance>'
    patched = endpoint(request("I did habit (1000) today", HABIT_TOOLS, system=prompt))

    assert json.loads(routed["tool_calls"][0]["function"]["arguments"]) == {"update_type": "habits"}
    assert not chatted["tool_calls"]
    assert created["tool_calls"][0]["function"]["name"] == "Habit"
    assert json.loads(patched["tool_calls"][0]["function"]["arguments"])["json_doc_id"] == "h1"
    assert [r.kind for r in endpoint.requests] == ["chat", "chat", "habits", "habits"]
