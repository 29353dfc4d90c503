"""A labelled corpus for the secret filter: ToDo-like texts holding secrets, and ordinary ones that hold none.

Each case is marked text: a secret sits between « and », `text` drops the marks and `expected` puts
"[redacted]" in their place. An ordinary case has no marks, so the filter must leave it byte for byte.
Labels name the format ("stripe", "password/zh", "ordinary/luhn-labelled" …); "ordinary/probe" texts, and
many secrets, were written to try the filter after it was built. The examples of issue 31 (JSON, "pw", arrows,
passphrases, Chinese numerals, bare card numbers, IBANs, SSNs, other separators, invisible and look-alike
characters, German, Spanish, French, Japanese and Korean) are here too, with ordinary texts close to them. Values that must look random (keys, card
and order numbers, ids) come from a seeded generator, so the corpus is the same on every run.
The secrets are fake: no key, card or password here was ever real.
"""

import random
import re
import string
import uuid
from dataclasses import dataclass

from graph.memory.redaction import REDACTED
from testing.secret_probes import KNOWN_MISSES, PROBE_ORDINARY, PROBE_SECRETS
from testing.secret_texts import (
    ORDINARY_TEXT,
    PASSWORD_EN,
    PASSWORD_ZH,
    PIN_AND_CODES,
    WIDER_ORDINARY,
    WIDER_SECRETS,
)

_MARKED = re.compile("«(.*?)»", re.S)


@dataclass(frozen=True)
class Case:
    """One labelled text: `marked` holds the secrets between « and »."""

    label: str
    marked: str

    @property
    def text(self) -> str:
        """The text as the user wrote it."""
        return _MARKED.sub(r"\1", self.marked)

    @property
    def expected(self) -> str:
        """The text as it must be stored."""
        return _MARKED.sub(REDACTED, self.marked)

    @property
    def is_secret(self) -> bool:
        """Whether the text holds a secret."""
        return "«" in self.marked


_rng = random.Random(11)
_ALNUM = string.ascii_letters + string.digits
_BASE64 = _ALNUM + "/+"


def _random(alphabet: str, length: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(length))


def _mixed(length: int, alphabet: str = _ALNUM) -> str:
    """Random characters of `alphabet` with at least one upper case letter, one lower case letter and one digit."""
    while True:
        value = _random(alphabet, length)
        if any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value):
            return value


def _luhn_complete(prefix: str, length: int) -> str:
    """A random number of `length` digits starting with `prefix` that passes the Luhn check."""
    body = prefix + _random(string.digits, length - len(prefix) - 1)
    for check in string.digits:
        digits = body + check
        total = sum(
            (d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 else d for i, d in enumerate(map(int, reversed(digits)))
        )
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


def _group(number: str, sizes: tuple[int, ...], separator: str = " ") -> str:
    parts, position = [], 0
    for size in sizes:
        parts.append(number[position : position + size])
        position += size
    return separator.join(parts)


def _jwt() -> str:
    return f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{_random(_ALNUM, 40)}.{_random(_ALNUM + '-_', 43)}"


def _history_id() -> str:
    """A random UUID whose last groups hold a Luhn-valid run of 14 digits ("…-9c12-345678901234")."""
    head = str(uuid.UUID(int=_rng.getrandbits(128), version=4))[:19]
    run = _luhn_complete(_random(string.digits, 1), 14)
    return f"{head}{_rng.choice('89ab')}{_rng.choice('abcdef')}{run[:2]}-{run[2:]}"


# History ids of the kind an older filter cut a "card number" out of, so export → import → export differed.
HISTORY_IDS = [_history_id() for _ in range(8)]



def _known_formats() -> list[Case]:
    stripe_live = f"sk_live_{_random(_ALNUM, 24)}"
    stripe_restricted = f"rk_live_{_random(_ALNUM, 24)}"
    stripe_test = f"sk_test_{_random(_ALNUM, 24)}"
    github_pat = f"github_pat_11{_random(string.ascii_uppercase + string.digits, 20)}_{_random(_ALNUM, 59)}"
    ghp = f"ghp_{_random(_ALNUM, 36)}"
    akia = "AKIA" + _random(string.ascii_uppercase + string.digits, 16)
    cases = [
        ("stripe", f"Rotate the Stripe key «{stripe_live}» before launch"),
        ("stripe", f"STRIPE_SECRET_KEY=«sk_live_{_random(_ALNUM, 99)}»"),
        ("stripe", f"Restricted key «{stripe_restricted}» for the reporting job"),
        ("stripe", f"测试用的 Stripe 密钥 «{stripe_test}»"),
        ("stripe", f"rk_live key: «rk_live_{_random(_ALNUM, 30)}»"),
        ("github", f"Renew the GitHub token «{github_pat}» before it expires"),
        ("github", f"CI token «{ghp}»"),
        ("github", f"github_pat «github_pat_{_random(_ALNUM, 30)}» 给小王用"),
        ("aws", f"AWS access key «{akia}» secret «{_mixed(40, _BASE64)}»"),
        ("aws", f"aws_secret_access_key = «{_mixed(40, _BASE64)}»"),
        ("aws", f"AWS secret key: «{_mixed(40, _BASE64)}»"),
        ("aws", f"AWS 秘钥 «{_mixed(40, _BASE64)}» 记得轮换"),
        ("aws", f"Deploy with «AKIA{_random(string.ascii_uppercase + string.digits, 16)}»"),
        ("jwt", f"Test the API with «{_jwt()}»"),
        ("jwt", f"Authorization: Bearer «{_jwt()}»"),
        ("jwt", f"把 token «{_jwt()}» 发给后端"),
        ("jwt", f"session jwt=«{_jwt()}»"),
        ("url", f"Connect to postgres://app:«{_mixed(14)}»@db.internal:5432/prod"),
        ("url", f"mongodb+srv://admin:«{_mixed(12)}»@cluster0.example.net/test"),
        ("url", f"redis://:«{_mixed(16)}»@cache.local:6379/0 needs a restart"),
        ("url", "Update the MySQL URL to mysql://root:«Pa55w0rd!»@10.0.0.5/shop"),
        ("url", f"备份数据库 postgresql://backup:«{_mixed(10)}»@192.168.1.20/db"),
        ("url", "Download from https://alice:«s3cr3t@home»@files.example.com/report.pdf"),
        ("url", f"amqp://guest:«{_mixed(10)}»@rabbit:5672/ broker"),
        ("url", f"Reset link: https://app.example.com/reset?token=«{_mixed(32)}»"),
        ("slack", f"Post alerts to https://hooks.slack.com/services/«T{_random(string.ascii_uppercase + string.digits, 8)}/B{_random(string.ascii_uppercase + string.digits, 10)}/{_random(_ALNUM, 24)}»"),
        ("slack", f"Slack webhook 换成 https://hooks.slack.com/services/«T0{_random(string.ascii_uppercase, 7)}/B0{_random(string.ascii_uppercase, 9)}/{_random(_ALNUM, 24)}»"),
        ("slack", f"Bot token «xoxb-{_random(string.digits, 12)}-{_random(string.digits, 13)}-{_random(_ALNUM, 24)}»"),
        ("slack", f"Discord hook https://discord.com/api/webhooks/«{_random(string.digits, 18)}/{_random(_ALNUM, 60)}»"),
        ("openai", f"OpenAI key «sk-proj-{_random(_ALNUM, 48)}»"),
        ("openai", f"用这个 key «sk-{_random(_ALNUM, 48)}» 调接口"),
        ("openai", f"Anthropic key «sk-ant-api03-{_random(_ALNUM, 40)}»"),
        ("key", f"Google Maps key «AIza{_random(_ALNUM + '-_', 35)}»"),
        ("key", f"GitLab «glpat-{_random(_ALNUM, 20)}»"),
        ("key", f"Hugging Face token «hf_{_random(_ALNUM, 34)}»"),
        ("key", f"npm publish token «npm_{_random(_ALNUM, 36)}»"),
        ("key", f"SendGrid «SG.{_random(_ALNUM, 22)}.{_random(_ALNUM, 43)}»"),
        ("key", f"API key: «{_random(string.hexdigits.lower()[:16], 32)}»"),
        ("key", "The weather api key is «a1b2c3d4e5f6»"),
        ("key", f"client_secret = «{_mixed(28)}»"),
        ("key", f"access token: «{_mixed(40)}»"),
        ("key", f"API密钥是«{_mixed(24)}»"),
        ("key", f"令牌：«{_mixed(20)}»"),
        ("key", f"金鑰 «{_mixed(32)}» 要保密"),
        ("key", f"Stripe webhook secret «whsec_{_random(_ALNUM, 32)}»"),
        (
            "private key",
            "Add the deploy key «-----BEGIN OPENSSH PRIVATE KEY-----\n"
            f"{_random(_ALNUM, 64)}\n{_random(_ALNUM, 64)}\n-----END OPENSSH PRIVATE KEY-----» to the server",
        ),
        ("private key", f"私钥 «-----BEGIN RSA PRIVATE KEY-----\n{_random(_ALNUM + '+/', 64)}\n-----END RSA PRIVATE KEY-----»"),
        ("key", "secret key = «abcd1234efgh»"),
        ("key", "API_KEY=«9a8b7c6d5e4f3a2b1c0d»"),
        ("key", "Authorization: Bearer «abc123def456ghi789»"),
        ("key", "API token: «1a2b3c4d5e6f7g8h9i0j»"),
        ("key", "secret=«Zx81Qw72Er63Ty54»"),
        ("openai", "export OPENAI_API_KEY=«sk-abcdefghijklmnop1234»"),
        ("openai", 'curl -H "Authorization: Bearer «sk-live-abcdefghijklmnopqrstu»"'),
        ("stripe", "Stripe test key «sk_test_abc123XYZ789def456GHI»"),
        ("github", "export GITHUB_TOKEN=«ghp_abcdefghijklmnopqrstuvwxyz0123456789»"),
        ("url", "DATABASE_URL=postgres://u:«p4ss»@h/db"),
        ("url", "jdbc:postgresql://db:5432/app?user=admin&password=«Adm1nPass»"),
        ("url", "smtp://mailer:«Gm4ilP4ss»@smtp.gmail.com:587"),
        ("card/context", "visa «4111-1111-1111-1111» cvv «123»"),
        ("card/context", "«4111111111111111» exp 12/26 cvv «123»"),
        ("card/context", "my card is «4111111111111111»"),
        ("card/context", "Two cards: «4111 1111 1111 1111» «5500 0000 0000 0004»"),
        ("card/context", "my Mastercard «5555555555554444» expires 10/29"),
        ("card/grouped", "Amex «3782 822463 10005»"),
        ("card/zh", "我的银行卡号是«6222021234567890128»"),
        ("card/zh", "信用卡 «4111 1111 1111 1111» 有效期 12/27"),
        ("card/zh", "卡号：«4111-1111-1111-1111»"),
    ]
    return [Case(label, text) for label, text in cases]


def _cards() -> list[Case]:
    cards = [  # (IIN prefix, length, label, template)
        ("4", 16, "card/grouped", "Pay the dentist with «{grouped}»"),
        ("51", 16, "card/grouped", "Use «{dashed}» for the flight"),
        ("55", 16, "card/context", "my credit card number is «{plain}»"),
        ("2221", 16, "card/context", "Visa «{plain}» exp 09/28"),
        ("34", 15, "card/context", "Card: «{grouped}», cvv «{cvv}»"),
        ("37", 15, "card/grouped", "Amex «{grouped}» for the hotel"),
        ("6011", 16, "card/zh", "信用卡号«{plain}»，下周还款"),
        ("35", 16, "card/zh", "用这张银行卡 «{grouped}» 交学费"),
        ("62", 19, "card/zh", "卡號 «{plain}» 記得綁定"),
        ("62", 19, "card/zh", "银联卡 «{grouped}» 还信用卡"),
        ("36", 14, "card/context", "Diners card «{plain}» is the one for groceries"),
        ("36", 14, "card/grouped", "«{grouped}» is the company card for travel"),
        ("65", 16, "card/context", "Update the card on file to «{plain}»"),
        ("4", 13, "card/context", "old visa card «{plain}» (cancelled?)"),
        ("4", 16, "card/zh", "借记卡«{dashed}»已经挂失"),
    ]
    groupings = {16: (4, 4, 4, 4), 15: (4, 6, 5), 19: (4, 4, 4, 4, 3), 14: (4, 6, 4), 13: (13,)}
    cases = []
    for prefix, length, label, template in cards:
        number = _luhn_complete(prefix, length)
        grouped, dashed = _group(number, groupings[length]), _group(number, groupings[length], "-")
        text = template.format(plain=number, grouped=grouped, dashed=dashed, cvv=_random(string.digits, 3))
        cases.append(Case(label, text))
    return cases


def _bare_cards() -> list[Case]:
    """Card numbers with no card word near: one run of digits starting the way an issuer's numbers do."""
    templates = [  # (IIN prefix, length, template)
        ("4", 16, "Pay with «{n}» tomorrow"),
        ("53", 16, "«{n}»"),
        ("37", 15, "Use «{n}» for the hotel"),
        ("62", 19, "Book the flight with «{n}»"),
        ("6011", 16, "Groceries: «{n}» (exp 04/29)"),
        ("35", 16, "把 «{n}» 记下来"),
    ]
    return [Case("card/bare", template.format(n=_luhn_complete(prefix, length))) for prefix, length, template in templates]


def _luhn_ordinary() -> list[Case]:
    templates = [
        "Order {n} arrives Tuesday",
        "Track order #{n} with the courier",
        "Tracking number {n} - check on Friday",
        "Invoice {n} is due on the 30th",
        "Pay invoice no. {n} before the audit",
        "Ref {n}: call the insurer back",
        "Quote reference {n} when calling the bank",
        "Confirmation {n} for the hotel in Kyoto",
        "订单号 {n} 还没发货",
        "快递单号{n}，明天到",
        "发票号码 {n} 要报销",
        "訂單 {n} 退貨",
        "Booking {n} — bring passport",
        "Ticket {n} for the plumber",
        "Receipt {n} for the tax return",
        "Customer id {n}",
        "Order {g} ships next week",
        "Tracking {g} (DHL)",
        "Invoice {g} paid?",
        "订单 {g} 催一下",
    ]
    cases = []
    for template in templates:
        number = _luhn_complete(_random(string.digits[1:], 1), 16)
        cases.append(Case("ordinary/luhn-labelled", template.format(n=number, g=_group(number, (4, 4, 4, 4)))))
    for _ in range(6):  # a bare Luhn-valid number that starts the way no card issuer's do (1, 7, 8, 9 …)
        number = _luhn_complete(_rng.choice(["1", "7", "80", "9"]), 16)
        cases.append(Case("ordinary/luhn-bare", f"Scan {number} at the locker kiosk"))
    return cases


def _ids() -> list[Case]:
    cases = []
    for history_id in HISTORY_IDS:
        cases.append(Case("ordinary/history-id", f"Undo change {history_id}"))
    for _ in range(6):
        cases.append(Case("ordinary/uuid", f"Ask support about request {uuid.UUID(int=_rng.getrandbits(128), version=4)}"))
    cases.append(Case("ordinary/uuid", "ID 12345678-1234-4234-9234-123456789012 in the admin panel"))
    cases.append(Case("ordinary/uuid", "thread 0b8f6f5e-6a53-4b8e-9d0c-7c1e9a3d2f41 is the old one"))
    cases.append(Case("ordinary/hash", "Review commit 9fceb02d0ae598e95dc970b74767f19372d61af8 tomorrow"))
    cases.append(Case("ordinary/hash", "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 matches"))
    return cases




SECRET_CASES: list[Case] = [
    *(Case("password/en", text) for text in PASSWORD_EN),
    *(Case("password/zh", text) for text in PASSWORD_ZH),
    *(Case("pin", text) for text in PIN_AND_CODES),
    *_known_formats(),
    *_cards(),
    *_bare_cards(),
    *(Case(label, text) for label, text in WIDER_SECRETS),
    *(Case(label, text) for label, text in (*PROBE_SECRETS, *KNOWN_MISSES)),
]
ORDINARY_CASES: list[Case] = [
    *(Case(label, text) for label, text in ORDINARY_TEXT),
    *(Case(label, text) for label, text in WIDER_ORDINARY),
    *(Case("ordinary/probe", text) for text in PROBE_ORDINARY),
    *_luhn_ordinary(),
    *_ids(),
]
