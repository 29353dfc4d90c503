"""The secret filter redacts a secret only where a secret is: the labelled corpus, ids through export and
import, secrets split across messages, and the bounded message a history entry keeps."""

import json

from graph.memory.admin import export_memories, import_memories
from graph.memory.changes import list_history
from graph.memory.redaction import REDACTED, redact, redact_text
from graph.text_tokens import count_text_tokens
from graph.thread.tokens import MAX_MESSAGE_TOKENS
from testing.helpers import before_import, todos, turn
from testing.scripted_model import calls, route, say, todo
from testing.secret_corpus import HISTORY_IDS, ORDINARY_CASES, SECRET_CASES
from testing.secret_probes import KNOWN_MISSES

FORMATS = {"password/en", "password/zh", "pin", "stripe", "github", "aws", "jwt", "url", "slack", "openai", "key",
           "private key", "card/grouped", "card/context", "card/zh", "card/bare", "card/separators", "iban", "ssn",
           "obfuscated", "password/de", "password/es", "password/fr", "password/ja", "password/ko"}
# The secrets issue 31 found stored, each in the corpus as written there.
ISSUE_31 = ('{"password": "S3cretPass"}', "Bank login (pw hunter2)", "password -> hunter2", "银行卡密码：六五四三二一",
            "the password is correct horse battery staple", "4111.1111.1111.1111", "4111/1111/1111/1111",
            "DE89 3704 0044 0532 0130 00", "536-90-4399", "pass\u200bword", "p\u0430ssword", "Passwort", "contraseña",
            "mot de passe", "パスワード", "비밀번호")


def test_the_corpus_covers_every_format_in_every_language():
    assert len(SECRET_CASES) >= 250 and len(ORDINARY_CASES) >= 250
    assert {case.label for case in SECRET_CASES} == FORMATS
    secrets = " ".join(case.text for case in SECRET_CASES).lower()
    for phrase in ("my password's", "the password for my bank account is", "wifi password", "pw:", "pwd =", "密码是",
                   "密碼", "sk_live_", "rk_live_", "github_pat_", "aws_secret_access_key", "eyj", "postgres://",
                   "hooks.slack.com", *(example.lower() for example in ISSUE_31)):
        assert phrase in secrets, phrase
    ordinary = {case.label for case in ORDINARY_CASES}
    assert {"ordinary/uuid", "ordinary/history-id", "ordinary/luhn-labelled", "ordinary/password-zh", "ordinary/de",
            "ordinary/es", "ordinary/fr", "ordinary/ja", "ordinary/ko", "ordinary/homoglyph"} <= ordinary


def test_every_secret_in_the_corpus_is_redacted_but_the_known_misses():
    wrong = [case.marked for case in SECRET_CASES if redact_text(case.text)[0] != case.expected]
    assert wrong == [marked for _, marked in KNOWN_MISSES]


def test_no_ordinary_text_in_the_corpus_changes():
    changed = [(case.text, redact_text(case.text)[0]) for case in ORDINARY_CASES if redact_text(case.text)[0] != case.text]
    assert changed == []


def test_redacting_twice_changes_nothing_more():
    assert [case.expected for case in SECRET_CASES if redact_text(case.expected)[0] != case.expected] == []


def test_the_kinds_of_secret_found_are_named():
    _, found = redact({"task": "PIN is 4821", "solutions": ["card 4111 1111 1111 1111", "API key sk-abcdefghijklmnopqrstu"],
                       "note": "密码是abc123", "other": 7})
    assert found == {"PIN", "card number", "API key", "password"}


def test_a_limit_keeps_the_start_and_redacts_a_secret_it_cuts_through():
    text = "Call mum. " * 10 + "card 4111 1111 1111 1111 and more " * 3

    kept, found = redact_text(text, limit=110)

    assert kept == "Call mum. " * 10 + "card " + REDACTED and found == {"card number"}
    assert redact_text("short", limit=110) == ("short", set())


def test_context_catches_a_secret_split_across_messages():
    assert redact_text("hunter2, and remind me to reset the router", context="My wifi password is") == (
        f"{REDACTED}, and remind me to reset the router", {"password"})
    assert redact_text("abc12345 记得改", context="家里wifi密码是") == (f"{REDACTED} 记得改", {"password"})
    assert redact_text("Remind me to reset the router", context="My wifi password is hunter2") == (
        "Remind me to reset the router", set())


def test_export_import_export_is_identical_with_uuid_like_ids(agent, model):
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Pay rent", solutions=["Bank app"])))
    turn(agent, "Remind me to pay rent.")
    exported = export_memories(agent.store, "Lance")
    (entry,) = exported["history"].values()
    (document,) = exported["todo"].values()
    todo_key, history_id = HISTORY_IDS[0], HISTORY_IDS[1]
    data = {
        **exported,
        "todo": {todo_key: {**document, "task": f"Undo change {HISTORY_IDS[2]}"}},
        "history": {history_id: {**entry, "id": history_id, "key": todo_key, "message": f"Ask about {HISTORY_IDS[3]}"}},
    }

    import_memories(agent.store, "Copy", json.loads(json.dumps(data)))
    again = export_memories(agent.store, "Copy")
    import_memories(agent.store, "Third", again)

    assert before_import(again) == data and before_import(export_memories(agent.store, "Third")) == data


def test_a_secret_split_across_messages_is_not_in_the_history(agent, model):
    model.add("task_maistro", say("Go on."), route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Reset the router", solutions=["Saturday"])))

    turn(agent, "My wifi password is")
    thread = turn(agent, "hunter2 - and remind me to reset the router")

    (entry,) = list_history(agent.store, "Lance")
    assert entry["message"] == f"{REDACTED} - and remind me to reset the router"
    assert thread[2].content == "hunter2 - and remind me to reset the router", "the thread keeps what the user said"


def test_the_history_keeps_only_the_prompt_sized_part_of_a_5_mb_message(agent, model):
    huge = "Plan my week: " + "buy groceries, call the plumber, renew the car insurance; " * 90_000
    assert len(huge.encode()) > 5_000_000
    model.add("task_maistro", route("todo"), say("Added your plan."))
    model.add("update_todos", calls(todo("Plan the week", solutions=["Groceries first"])))

    turn(agent, huge)

    (entry,) = list_history(agent.store, "Lance")
    assert huge.startswith(entry["message"]) and count_text_tokens(entry["message"]) <= MAX_MESSAGE_TOKENS
    assert len(entry["message"]) > 30_000, "the prompt-sized start is kept"
    assert list(todos(agent)) == ["Plan the week"]


def test_invisible_and_look_alike_characters_are_read_through_and_the_secret_is_redacted_where_written():
    assert redact_text("pass\u200bword: hun\u200bter2 tomorrow") == (f"pass\u200bword: {REDACTED} tomorrow", {"password"})
    assert redact_text("p\u0430ssw\u043erd is Tr0ub4dor&3") == (f"p\u0430ssw\u043erd is {REDACTED}", {"password"})
    assert redact_text("ｗｉｆｉ ｐａｓｓｗｏｒｄ：ｈｕｎｔｅｒ２ｘ，别忘了") == (f"ｗｉｆｉ ｐａｓｓｗｏｒｄ：{REDACTED}，别忘了", {"password"})
    assert redact_text("ﾊﾟｽﾜｰﾄﾞはabc12345です") == (f"ﾊﾟｽﾜｰﾄﾞは{REDACTED}です", {"password"})
    assert redact_text("Card: ٤١١١١١١١١١١١١١١١ (Arabic-Indic digits)") == (f"Card: {REDACTED} (Arabic-Indic digits)", {"card number"})


def test_folding_leaves_text_without_secrets_as_written():
    for text in ("Купить молоко и хлеб в 10:30", "Αγορά ψωμιού", "Café with Zoë\u0301", "第〇一二三章", "Ｔｏｄｏ： ｂｕｙ ｍｉｌｋ",
                 "Emoji 👨\u200d👩\u200d👧 family photo", "\u202eright to left\u202c"):
        assert redact_text(text) == (text, set()), text


def test_a_limit_and_the_context_count_characters_as_written_when_the_text_is_folded():
    text = "ｎｏｔｅ " * 30 + "pass\u200bword: hunter2x and more"

    kept, found = redact_text(text, limit=len("ｎｏｔｅ " * 30) + 12)

    assert kept == "ｎｏｔｅ " * 30 + f"pass\u200bword: {REDACTED}" and found == {"password"}
    assert redact_text("ｈｕｎｔｅｒ２ｘ、覚えておいて", context="wifiのパスワードは") == (f"{REDACTED}、覚えておいて", {"password"})
