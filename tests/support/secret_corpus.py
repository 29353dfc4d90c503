"""A labelled corpus for the secret filter: ToDo-like texts holding secrets, and ordinary ones that hold none.

Each case is marked text: a secret sits between « and », `text` drops the marks and `expected` puts
"[redacted]" in their place. An ordinary case has no marks, so the filter must leave it byte for byte.
Labels name the format ("stripe", "password/zh", "ordinary/luhn-labelled" …); "ordinary/probe" texts, and
many secrets, were written to try the filter after it was built. Values that must look random (keys, card
and order numbers, ids) come from a seeded generator, so the corpus is the same on every run.
The secrets are fake: no key, card or password here was ever real.
"""

import random
import re
import string
import uuid
from dataclasses import dataclass

from graph.memory.redaction import REDACTED

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

_PASSWORD_EN = [
    "My password's «hunter2», remind me to change it",
    "The password for my bank account is «Tr0ub4dor&3».",
    "The password for the wifi at grandma's is «sunflower77»",
    "wifi password is «GreenHouse2024!»",
    "wifi password: «blue-kite-88»",
    "Home wifi password «hunter22» for the guests",
    "Email pw: «mayday1987»",
    "router pwd = «admin123»",
    "pwd=«Xk29!aa»",
    "Set the router password to «N3tgear#5» tonight",
    "Netflix password changed to «S3cure!pass»",
    "My password is «swordfish»",
    "the new passcode is «482913»",
    "Passphrase: '«correct horse battery staple»'",
    "Laptop password: \"«Winter!Snow42»\"",
    "password for my work email is «Qw3rty!!» - change it monday",
    "Gym locker app password is «locker8841»",
    "Remember: my Amazon password was «Pr1me-Day»",
    "Bank login — password: «9dK#2mQ!»",
    "The Wi-Fi key is «h0me-netw0rk»",
    "PASSWORD = «ChangeMe123»",
    "Tell Sam the guest network password is «welcome2home»",
    "Update my password to «Horse!Battery9» on the school portal",
    "My iCloud password's «Apple#Pie77»",
    "password «hunter2!»",
    "my password is: «hunter2»",
    "PASSWORD: «Tr0ub4dor&3»",
    "the password to my laptop is «lemon-tree-42»",
    "Password for netflix = «hunter22»",
    "ssh password for server: «S3rv3r!»",
    ".env: DB_PASSWORD=«hunter2»",
    "my password is «correct-horse-battery-staple»",
    "PW: «letmein99»",
    "My password’s «Sunshine1»",
    "I set my password to «qwerty123»",
    "Email password = '«my dog rex»'",
    "password for the wifi: «cafe2024»",
    "The password of the admin account is «Adm1n!»",
    "pwd: «s3cr3t»",
    "wifi pw is «coffee4all»",
    "My Gmail password is «Blue$ky2020»",
    "WIFI PASSWORD: «sunshine2021»",
    "Wifi: CoffeeShop / password: «latte4life»",
    "the wifi pass word is «dragon88»",
    "home network key = «0123456789ab»",
    "wifi password for guests is \"«guest-2024»\"",
    "The password of my work laptop: «P@ssw0rd!»",
    "Password = «Summer2024!»",
    "my pw is «ilovecats9»",
]
_PASSWORD_ZH = [
    "我的密码是«abc123»",
    "wifi密码是 «abc12345»，别忘了",
    "银行卡密码：«886622»",
    "邮箱密码为«Mail@2024»",
    "家里路由器密码 «router8899»",
    "把网银密码改成«Xy9!kk77»",
    "支付密码«135790»",
    "公司VPN口令是«Vpn#2024x»",
    "密码就是«hunter2»",
    "验证码是 «482913»，五分钟内有效",
    "密碼是«Taipei101»",
    "我的密碼：«Secret#88»",
    "銀行密碼為 «246810»",
    "wifi密碼 «cafe12345»",
    "把密碼改為«Nw!2025tw»",
    "門禁密碼是«8520»",
    "密码：«hunter2»",
    "密码 «hunter2»",
    "密码是 «hunter»",
    "wifi的密码是«12345678»",
    "我家wifi：HomeNet，密码«88886666»",
    "登录密码 «Qwer1234»",
    "支付宝密码是«520131»",
    "开机密码：«lenovo2023»",
    "密碼 «Hk852852»",
]
_PIN_AND_CODES = [
    "My PIN is «4821»",
    "The PIN for my debit card is «0042»",
    "ATM pin: «9911»",
    "PIN «7731» for the new phone",
    "Garage door code is «4821#»",
    "Locker combination: «12-34-56»",
    "Card cvv «123», expires 12/27",
    "security code: «8812»",
    "手机PIN码是«5566»",
    "信用卡安全码«357»",
    "Front door code = «*2580»",
    "New SIM card PIN code: «1379»",
    "my pin number is «1234»",
    "door code «4821»",
    "cvc: «123»",
    "the safe combination is «10-20-30»",
    "the gate code is «#1234»",
    "PIN码：«0000»",
    "My PIN number: «2580»",
    "Tell dad the garage code is «5150»",
    "the alarm code «2468» for the cabin",
    "我的PIN碼是 «9632»",
    "pin for the bike lock: «0852»",
    "passcode «7391» for the phone",
]


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
    for _ in range(6):
        number = _luhn_complete(_random(string.digits[1:], 1), 16)
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


_ORDINARY_TEXT = [
    ("ordinary/password-en", "Change password to something stronger"),
    ("ordinary/password-en", "Remind me to change my password tomorrow"),
    ("ordinary/password-en", "Reset my email password"),
    ("ordinary/password-en", "The wifi password is on the fridge"),
    ("ordinary/password-en", "The password is expired, call IT"),
    ("ordinary/password-en", "Password: ask IT"),
    ("ordinary/password-en", "Send the password to Alice"),
    ("ordinary/password-en", "Email the new password to bob99@example.com"),
    ("ordinary/password-en", "Update the password policy to 12 characters"),
    ("ordinary/password-en", "Make sure the password is 16 characters long"),
    ("ordinary/password-en", "Set up a password manager for mom"),
    ("ordinary/password-en", "Passwords are in 1Password now"),
    ("ordinary/password-en", "1Password: family vault invite"),
    ("ordinary/password-en", "Turn on passwordless login for the bank app"),
    ("ordinary/password-en", "Reset the password to default and tell Ben"),
    ("ordinary/password-en", "Password: see the blue notebook"),
    ("ordinary/password-en", "Is the wifi password still the same?"),
    ("ordinary/password-en", "Print the boarding pass"),
    ("ordinary/password-en", "Run pwd in the project folder"),
    ("ordinary/password-zh", "设置新密码提醒"),
    ("ordinary/password-zh", "提醒我下周修改密码"),
    ("ordinary/password-zh", "忘记密码了，去银行重置"),
    ("ordinary/password-zh", "把wifi密码告诉客人"),
    ("ordinary/password-zh", "密码管理器续费"),
    ("ordinary/password-zh", "密码是生日吗？问一下老婆"),
    ("ordinary/password-zh", "新密码要求是6位数字"),
    ("ordinary/password-zh", "wifi密码改成更强的"),
    ("ordinary/password-zh", "收到验证码后登录银行app"),
    ("ordinary/password-zh", "密碼到期前要更新"),
    ("ordinary/password-zh", "設定新密碼提醒"),
    ("ordinary/password-zh", "修改密码2次都失败了"),
    ("ordinary/pin", "Pin the poster to the wall"),
    ("ordinary/pin", "Pin the recipe on Pinterest"),
    ("ordinary/pin", "Pin to the fridge: the school calendar"),
    ("ordinary/pin", "The PIN is on the back of the letter"),
    ("ordinary/pin", "Get a new PIN for the debit card"),
    ("ordinary/pin", "Order a pin badge for the team"),
    ("ordinary/pin", "Spinning class at 7"),
    ("ordinary/pin", "Buy a new door lock with a 4 digit code"),
    ("ordinary/token", "Buy arcade tokens for the kids"),
    ("ordinary/token", "Token of thanks for the neighbours"),
    ("ordinary/token", "The token is in my wallet"),
    ("ordinary/token", "Bus token: 2 per ride"),
    ("ordinary/token", "Keep the surprise party secret until Friday"),
    ("ordinary/token", "Secret Santa: buy a gift under $20"),
    ("ordinary/token", "Secret: surprise party for mom"),
    ("ordinary/token", "Rotate the API key next week"),
    ("ordinary/token", "API key: see the team vault"),
    ("ordinary/token", "Ask Sam for the API key"),
    ("ordinary/token", "Bearer of the flag at the parade"),
    ("ordinary/token", "换一个新的令牌"),
    ("ordinary/token", "密钥轮换的流程写成文档"),
    ("ordinary/numbers", "Call 415-555-0100 about the lease"),
    ("ordinary/numbers", "Meeting 10:30-11:45 in room 4"),
    ("ordinary/numbers", "Deadline 2026-11-30T23:59:00-08:00"),
    ("ordinary/numbers", "Pay 1,234.56 USD on the visa bill"),
    ("ordinary/numbers", "My card ending in 4242 expires 12/26"),
    ("ordinary/numbers", "Budget 2025: 12 000 000 yuan"),
    ("ordinary/numbers", "ISBN 978-0-306-40615-7 for the book club"),
    ("ordinary/numbers", "Pay rent to DE89 3704 0044 0532 0130 00"),
    ("ordinary/numbers", "UPS tracking 1Z999AA10123456784"),
    ("ordinary/numbers", "USPS 9400 1000 0000 0000 0000 00 arrives Monday"),
    ("ordinary/numbers", "给 138 0013 8000 回电话"),
    ("ordinary/numbers", "卡号末四位 1234 的那张卡要注销"),
    ("ordinary/numbers", "信用卡账单 2,345.67 元"),
    ("ordinary/numbers", "Flight UA 857 on 2025-03-14"),
    ("ordinary/numbers", "Meter reading 1234567890123456789012345678901234567890"),
    ("ordinary/numbers", "Numbers to check: 1234 1234 1234 1234 1234 1234"),
    ("ordinary/urls", "ssh://git@github.com/org/repo.git clone"),
    ("ordinary/urls", "Open https://calendar.example.com:8443/event/12"),
    ("ordinary/urls", "postgres://localhost:5432/app for the local test"),
    ("ordinary/urls", "https://example.com/orders/4111111111111111 shows the status"),
    ("ordinary/urls", "Read https://docs.example.com/search?q=tokens&page=2"),
    ("ordinary/urls", "Email bob@example.com about the key handover"),
    ("ordinary/chores", "Book swim lessons for the baby"),
    ("ordinary/chores", "给女儿报名游泳课"),
    ("ordinary/chores", "Fix the Yale lock"),
    ("ordinary/chores", "Water the plants at 6pm"),
    ("ordinary/probe", "Password reset email didn't arrive"),
    ("ordinary/probe", 'Pick a passphrase for the new laptop'),
    ("ordinary/probe", 'password is required for the guest network'),
    ("ordinary/probe", 'The password was shared with the babysitter'),
    ("ordinary/probe", 'PIN: none yet, ask the bank'),
    ("ordinary/probe", 'pin 3 photos to the board'),
    ("ordinary/probe", 'Tokens: 30 left on the transit card'),
    ("ordinary/probe", 'the secret is to add more salt'),
    ("ordinary/probe", 'Secret ingredient: 2 tbsp honey'),
    ("ordinary/probe", 'API key rotation on 2025-07-01'),
    ("ordinary/probe", 'access token expires in 3600 seconds'),
    ("ordinary/probe", "Order 2 cards for the kids' birthday"),
    ("ordinary/probe", 'Gift card balance 25.00'),
    ("ordinary/probe", "Password hint: first pet's name"),
    ("ordinary/probe", 'the wifi password is the same as the old one'),
    ("ordinary/probe", "My password's too weak"),
    ("ordinary/probe", 'Her PIN was blocked'),
    ("ordinary/probe", '密码错误三次被锁了'),
    ("ordinary/probe", '支付密码忘了'),
    ("ordinary/probe", '密码：见便签'),
    ("ordinary/probe", 'wifi密码：问房东'),
    ("ordinary/probe", '用token登录'),
    ("ordinary/probe", '令牌过期了'),
    ("ordinary/probe", 'API密钥在1Password里'),
    ("ordinary/probe", 'Change PIN to 4 digits'),
    ("ordinary/probe", 'Token: TBD'),
    ("ordinary/probe", 'Password: N/A'),
    ("ordinary/probe", 'Password: none'),
    ("ordinary/probe", 'Is the default password admin?'),
    ("ordinary/probe", 'wifi password changed yesterday'),
    ("ordinary/probe", 'Update password in 1Password'),
    ("ordinary/probe", 'Password protect the PDF'),
    ("ordinary/probe", 'Share the wifi password with guests'),
    ("ordinary/probe", 'Note: password123 is banned'),
    ("ordinary/probe", 'Order #4111 1111 1111 1111'),
    ("ordinary/probe", 'Account 4111111111111111 at the bank'),
    ("ordinary/probe", 'Amazon order 112-1234567-1234567'),
    ("ordinary/probe", 'Amazon 112-1234567-1234567 refund'),
    ("ordinary/probe", 'Serial 1234 5678 9012 3456'),
    ("ordinary/probe", 'Lottery numbers 4 8 15 16 23 42'),
    ("ordinary/probe", 'Meeting IDs 8123 4567 8901 2345'),
    ("ordinary/probe", '身份证 110101199003077777'),
    ("ordinary/probe", 'Barcode 4006381333931'),
    ("ordinary/probe", 'Dates 20250314 20250315'),
    ("ordinary/probe", 'The secret to good bread is time'),
    ("ordinary/probe", 'My password is too short, make a new one'),
    ("ordinary/probe", 'Passwords must be rotated every 90 days'),
    ("ordinary/probe", 'password: at least 12 characters'),
    ("ordinary/probe", 'PIN must be 6 digits'),
    ("ordinary/probe", 'The token was revoked yesterday'),
    ("ordinary/probe", 'Keep API keys out of git'),
    ("ordinary/probe", 'Add 2FA to the bank account'),
    ("ordinary/probe", 'Renew passport 2025-06-01'),
    ("ordinary/probe", 'Confirm token count: 128000 tokens'),
    ("ordinary/probe", 'Buy access card for the gym'),
    ("ordinary/probe", 'Call about credit card 4242 charge'),
    ("ordinary/probe", 'Vote on token 0x1234 proposal'),
    ("ordinary/probe", 'Pass the salt'),
    ("ordinary/probe", 'Tokenize the dataset before Friday'),
    ("ordinary/probe", 'Secretary meeting at 3'),
    ("ordinary/probe", 'Keys: office, car, mailbox'),
    ("ordinary/probe", 'Pinecone delivery on Monday'),
    ("ordinary/probe", 'The password field on the form is broken'),
    ("ordinary/probe", 'Fill in the password form for grandma'),
    ("ordinary/probe", 'Password strength meter bug #4521'),
    ("ordinary/probe", 'Write the API key docs'),
    ("ordinary/probe", 'token bucket rate limit = 100 per minute'),
    ("ordinary/probe", 'Set token limit to 4096'),
    ("ordinary/probe", 'Set PIN reminder for 2025'),
    ("ordinary/probe", 'Change the lock code battery'),
    ("ordinary/probe", 'Access token TTL is 3600'),
    ("ordinary/probe", 'secret garden tickets 2 adults'),
    ("ordinary/probe", '密码学课程作业'),
    ("ordinary/probe", '修改密码后通知全家'),
    ("ordinary/probe", 'wifi名称：HomeNet_5G'),
    ("ordinary/probe", '快递柜取件码过期了'),
    ("ordinary/probe", '验证码收不到，打客服'),
    ("ordinary/probe", '账户余额 12345678.90 元'),
    ("ordinary/probe", 'Meeting ID 845 1234 5678'),
    ("ordinary/probe", 'Train G1234 seat 05F'),
    ("ordinary/probe", 'Confirmation code ABC123'),
    ("ordinary/probe", 'Order number: 5555 5555 5555 4444 (refund)'),
    ("ordinary/probe", 'Tracking: 4111111111111111'),
    ("ordinary/probe", 'Ref#4012888888881881'),
    ("ordinary/probe", 'Customer no. 4222222222222'),
    ("ordinary/probe", 'My credit score is 780'),
    ("ordinary/probe", 'Visa appointment 2025-05-20 at 9:30'),
    ("ordinary/probe", 'The combination lock is broken'),
    ("ordinary/probe", 'Door code changed, ask landlord'),
    ("ordinary/probe", 'Netflix password sharing ends soon'),
    ("ordinary/probe", 'Rotate secrets in Vault every 90 days'),
    ("ordinary/probe", 'password rotation policy: 90 days'),
    ("ordinary/probe", 'Is my PIN 4 or 6 digits?'),
    ("ordinary/probe", 'Secret: the cake is a lie'),
    ("ordinary/probe", 'token: see Slack thread'),
    ("ordinary/probe", 'Buy SIM card for the trip'),
    ("ordinary/probe", 'Pay off the credit card by the 25th'),
]


SECRET_CASES: list[Case] = [
    *(Case("password/en", text) for text in _PASSWORD_EN),
    *(Case("password/zh", text) for text in _PASSWORD_ZH),
    *(Case("pin", text) for text in _PIN_AND_CODES),
    *_known_formats(),
    *_cards(),
]
ORDINARY_CASES: list[Case] = [
    *(Case(label, text) for label, text in _ORDINARY_TEXT),
    *_luhn_ordinary(),
    *_ids(),
]
