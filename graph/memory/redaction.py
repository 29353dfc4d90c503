"""Secrets never reach the store: passwords, PINs, API keys, card numbers and private keys become "[redacted]".

A secret is redacted only where a secret is; ordinary text stays byte for byte. The rules:

- Known formats, anywhere: private key blocks; keys and tokens with a known shape (OpenAI `sk-…`, Stripe
  `sk_live_…` / `rk_live_…` / `whsec_…`, AWS `AKIA…`, GitHub `ghp_…` / `github_pat_…`, GitLab `glpat-…`, Slack
  `xox…-`, Google `AIza…`, Hugging Face `hf_…`, npm `npm_…`, SendGrid `SG.…`, JWTs); a standalone 40-character
  AWS-style secret key (upper and lower case and a digit, so a git hash is not one); the password of a URL
  (`scheme://user:PASSWORD@host`), the token of a Slack or Discord webhook URL, and secret query parameters
  (`?access_token=…`, `&password=…`).
- The value after a password, PIN or key phrase, in English and Chinese. The phrase (password, passcode,
  passphrase, pwd, pw, wifi key, PIN, door code, CVV, API key, token, secret, 密码, 密碼, 口令, 验证码, PIN码,
  安全码, 密钥, 令牌 …), optionally qualified in English ("for my bank account", "on the router"), then its verb
  or sign ("is", "was", "'s", ":", "=", 是, 为, ：) and the value: the next word, or the quoted text. "to" and
  "as" count only after a verb of change ("set the router password to …", "password changed to …"; 改成, 设为
  always). With no verb or sign at all, only an unmistakable value counts ("wifi password hunter22",
  "密码123456"); a value never continues onto the next line that way.
- What counts as a value: at least 4 characters with a digit, a symbol or mixed case, or — after a verb or
  sign such as "is" and ":" — a single word that is not one of the ordinary words people say about a
  password (expired, wrong, in, the, see …). So "Change password to something stronger", "the password is
  on the fridge" and "设置新密码提醒" hold no secret, while "my password is swordfish" does. PINs and codes
  need 4+ digits (a card security code 3–4 digits); keys and tokens need 8+ characters with letters and
  digits, or 20+ of mixed case.
- Card numbers: 13–19 digits passing the Luhn check, with a card word just before or after (card, visa,
  debit, 信用卡, 卡号 …) or grouped like a card (4-4-4-4, 4-4-4-4-3, 4-6-5, 4-6-4). Never digits inside an id
  (touching letters or hyphens, as in UUIDs and history ids), nor a number whose nearest label is an order,
  tracking, invoice, reference or other id word (订单, 单号, 快递, 发票 …).
"""

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

REDACTED = "[redacted]"
PASSWORD, PIN, API_KEY = "password", "PIN", "API key"
CARD_NUMBER, CARD_CODE, PRIVATE_KEY = "card number", "card security code", "private key"

Span = tuple[int, int, str]

# How far past a `limit` the text is still read, so that a secret the limit cuts through is found whole.
_LOOKAHEAD_CHARS = 512

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S
)
_KEY_FORMATS = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-[A-Za-z0-9_-]{16,}|[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9+/=]{20,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"
    r"|AIza[A-Za-z0-9_-]{35}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,}"
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r")"
)
_AWS_SECRET = re.compile(r"(?<![^\s\"'`=:(\[<])[A-Za-z0-9/+]{40}(?![^\s\"'`,;.)\]>])")
_URL_PASSWORD = re.compile(r"(?i)(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@?#]*:([^\s/?#]+)@[^\s@/?#:]+")
_WEBHOOK = re.compile(
    r"(?i)https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks)/([A-Za-z0-9_/-]+)"
)
_QUERY_SECRET = re.compile(
    r"(?i)[?&;](?:(?P<password>password|passwd|pwd|pass)|access_token|refresh_token|id_token|token|auth"
    r"|api_key|apikey|api-key|key|secret|client_secret|sig|signature|x-amz-signature)=([^&\s#]{4,})"
)

# Connectors between a phrase and its value.
_STRONG = re.compile(
    r"\s*(?:[:=：]|=>)\s*"
    r"|\s*['’]s[ \t]+"
    r"|\s+(?:is\s+now|is\s+still|now\s+is|will\s+be|should\s+be|has\s+been|is|was|are|were)(?:\s*[:：]\s*|\s+)"
    r"|\s*(?:就|也|还|還|都|应该|應該|现在|現在|一直)?(?:是|为|為)\s*"
)
_QUALIFIER_WORDS = r"(?:[^\s.,;:!?=。，；：]+\s+){0,4}?[^\s.,;:!?=。，；：]+"
_QUALIFIED_VERB = r"(?:\s*[:=：]\s*|\s+(?:is\s+now|will\s+be|should\s+be|has\s+been|is|was)(?:\s*[:：]\s*|\s+))"
_QUALIFIED = re.compile(rf"\s+(?:for|of|on|to|at|in)\s+{_QUALIFIER_WORDS}{_QUALIFIED_VERB}")
_QUALIFIED_PIN = re.compile(rf"\s+(?:for|of)\s+{_QUALIFIER_WORDS}{_QUALIFIED_VERB}")
_CHANGED_TO = re.compile(r"(?i)\s+(?:(?:was|is|has\s+been|got)\s+)?(?:changed|set|reset|updated|switched)\s+to\s+")
_TO = re.compile(r"(?i)\s+(?:to|as)\s+")
_CHINESE_CHANGE = re.compile(
    r"\s*(?:改成|改为|改為|设为|設為|设置为|設置為|设成|設成|设置成|設置成|换成|換成|变成|變成|更改为|更改為|更新为|更新為)\s*"
)
_ENGLISH_BARE = re.compile(r"[ \t]+")
_CHINESE_BARE = re.compile(r"[ \t]*")
# A verb of change shortly before the phrase: only then does "password to …" name the new password.
_CHANGE_VERB = re.compile(
    r"(?i)(?<![A-Za-z])(?:change[sd]?|changing|set|setting|reset|resetting|update[sd]?|updating|switch(?:ed)?)"
    r"(?![A-Za-z])[^.;!?\n。；！？]{0,40}$"
)

_OPEN_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "「": "」", "『": "』", "`": "`"}
# A bare value ends at white space, CJK text or full-width punctuation.
_BARE_VALUE = re.compile(r"[^\s\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]+")
_TRAILING = ".,;:?)]}>'\"”’」』`"
_LEADING = "(<'\"“‘`"
_WORD = re.compile(r"[A-Za-z]+(?:[-'’][A-Za-z]+)*")
_PIN_VALUE = re.compile(r"[#*]?\d[\d-]{2,14}\d[#*]?")
_KEY_VALUE = re.compile(r"[A-Za-z0-9_\-./+=~]{8,}")
# Words that say something about a password rather than being one ("the password is expired", "PIN: see card").
_ORDINARY_WORDS = frozenset(
    """
    a an the this that these those it its my our your his her their mine yours ours theirs
    in on at under behind inside near with without by from into onto for of to up
    not no none nothing something anything everything same different new old here there below above
    attached saved stored written kept taped stuck hidden listed printed shown sent
    expired expiring expires wrong incorrect invalid valid correct right required needed missing mandatory
    weak strong stronger weaker too very really still now also just only always never
    changed reset updated set lost forgotten locked blocked compromised leaked shared known unknown
    blank empty unchanged long short simple easy hard secure insecure safe unsafe
    case-sensitive sensitive private confidential secret temporary default
    ask see check call email text change update use get find send remember pick choose enter type
    tbd todo pending unset wifi phone
    """.split()
)


def _upper_lower_and_digit(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)


def _password_value(value: str, how: str) -> bool:
    if how == "quoted":
        return len(value) >= 3
    if len(value) < 4 or "://" in value:
        return False
    if _WORD.fullmatch(value):
        return how == "strong" and value.lower() not in _ORDINARY_WORDS
    return how != "bare" or len(value) >= 6


def _pin_value(value: str, how: str) -> bool:
    return bool(_PIN_VALUE.fullmatch(value)) and sum(c.isdigit() for c in value) >= 4


def _card_code_value(value: str, how: str) -> bool:
    return value.isascii() and value.isdigit() and 3 <= len(value) <= 4


def _key_value(value: str, how: str) -> bool:
    if not _KEY_VALUE.fullmatch(value):
        return False
    letters, digits = any(c.isalpha() for c in value), any(c.isdigit() for c in value)
    return (letters and digits) or (len(value) >= 20 and value != value.lower() and value != value.upper())


@dataclass(frozen=True)
class _Form:
    """One way a phrase leads to its value: the connector, and how plainly it says "the value follows".

    "strong" (is, :, 是 …): a plain word may be the value; "weak" (to, 改成 …): the value must not be a plain
    word; "bare" (nothing between): only an unmistakable value counts.
    """

    connector: re.Pattern
    how: str
    needs_change_verb: bool = False


_STRONG_FORM = _Form(_STRONG, "strong")
_QUALIFIED_FORM = _Form(_QUALIFIED, "strong")
_QUALIFIED_PIN_FORM = _Form(_QUALIFIED_PIN, "strong")
_CHANGED_TO_FORM = _Form(_CHANGED_TO, "weak")
_TO_FORM = _Form(_TO, "weak", needs_change_verb=True)
_CHINESE_CHANGE_FORM = _Form(_CHINESE_CHANGE, "weak")
_ENGLISH_BARE_FORM = _Form(_ENGLISH_BARE, "bare")
_CHINESE_BARE_FORM = _Form(_CHINESE_BARE, "bare")


@dataclass(frozen=True)
class _Phrase:
    """Words that announce a secret, what kind it is, how its value may follow and what a value looks like."""

    kind: str
    words: re.Pattern
    forms: tuple[_Form, ...]
    is_value: Callable[[str, str], bool]
    hints: tuple[str, ...]  # every match holds one of these (lower case): a quick test before the pattern runs


def _english(words: str, case_sensitive: bool = False) -> re.Pattern:
    return re.compile(rf"{'' if case_sensitive else '(?i)'}(?<![A-Za-z0-9])(?:{words})(?![A-Za-z0-9])")


_PHRASES = (
    _Phrase(
        PASSWORD,
        _english(r"pass[ -]?(?:word|wd|phrase|code)s?|(?:wi-?fi|wlan|network|router)[ -]key"),
        (_QUALIFIED_FORM, _STRONG_FORM, _CHANGED_TO_FORM, _TO_FORM, _CHINESE_CHANGE_FORM, _ENGLISH_BARE_FORM),
        _password_value,
        ("pass", "key"),
    ),
    _Phrase(PASSWORD, _english(r"pass[ -]?codes?"), (_ENGLISH_BARE_FORM,), _pin_value, ("pass",)),
    _Phrase(PASSWORD, _english(r"pwd|pw"), (_STRONG_FORM,), _password_value, ("pw",)),
    _Phrase(
        PIN,
        _english(r"pin(?:[ -]?(?:code|number|no\.?|#))?"),
        (_QUALIFIED_PIN_FORM, _STRONG_FORM, _CHANGED_TO_FORM, _TO_FORM),
        _pin_value,
        ("pin",),
    ),
    _Phrase(PIN, _english("PIN", case_sensitive=True), (_ENGLISH_BARE_FORM,), _pin_value, ("pin",)),
    _Phrase(
        PIN,
        _english(r"(?:door|gate|alarm|garage|lock|locker|safe|entry|building)[ -]code|(?:lock[ -])?combination"),
        (_QUALIFIED_PIN_FORM, _STRONG_FORM, _CHANGED_TO_FORM, _TO_FORM, _ENGLISH_BARE_FORM),
        _pin_value,
        ("code", "combination"),
    ),
    _Phrase(
        CARD_CODE,
        _english(r"cvv2?|cvc2?|csc|(?:card[ -])?security[ -]code"),
        (_STRONG_FORM, _ENGLISH_BARE_FORM),
        _card_code_value,
        ("cvv", "cvc", "csc", "security"),
    ),
    _Phrase(
        API_KEY,
        _english(
            r"(?:(?:api|app|client|signing|webhook|consumer)[ _-]?(?:key|secret)|apikey"
            r"|secret(?:[ _-]?access)?[ _-]?key|access[ _-]?key(?:[ _-]?id)?"
            r"|(?:access|auth|refresh|bearer|api|id|session)[ _-]?token|token|secret|private[ _-]?key)s?"
        ),
        (_QUALIFIED_FORM, _STRONG_FORM, _CHANGED_TO_FORM, _TO_FORM),
        _key_value,
        ("key", "secret", "token"),
    ),
    _Phrase(API_KEY, _english("bearer"), (_ENGLISH_BARE_FORM,), _key_value, ("bearer",)),
    _Phrase(
        PASSWORD,
        re.compile(r"密码|密碼|口令|通行码|通行碼|验证码|驗證碼|校验码|校驗碼|动态码|動態碼"),
        (_STRONG_FORM, _CHINESE_CHANGE_FORM, _CHINESE_BARE_FORM),
        _password_value,
        ("密", "口令", "码", "碼"),
    ),
    _Phrase(
        PIN,
        re.compile(r"(?i:pin)\s*[码碼]|门禁码|門禁碼"),
        (_STRONG_FORM, _CHINESE_CHANGE_FORM, _CHINESE_BARE_FORM),
        _pin_value,
        ("码", "碼"),
    ),
    _Phrase(CARD_CODE, re.compile(r"安全码|安全碼"), (_STRONG_FORM, _CHINESE_BARE_FORM), _card_code_value, ("安全",)),
    _Phrase(
        API_KEY,
        re.compile(r"密钥|密鑰|秘钥|秘鑰|金钥|金鑰|私钥|私鑰|令牌"),
        (_STRONG_FORM, _CHINESE_CHANGE_FORM, _CHINESE_BARE_FORM),
        _key_value,
        ("密", "钥", "鑰", "令牌"),
    ),
)

# Cards: a run of digit groups that touches no letter, digit or hyphen (an id), and the words around it.
_DIGIT_RUN = re.compile(r"(?<![A-Za-z0-9_-])(?>\d+(?:[ -]\d+)*)(?![A-Za-z0-9_]|-[A-Za-z0-9])")
_CARD_GROUPINGS = {(4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4)}
_CARD_CONTEXT = re.compile(
    r"(?i)(?P<card>(?<![A-Za-z])(?:cards?|credit|debit|visa|master\s?card|amex|american\s+express|discover|jcb"
    r"|unionpay|diners|maestro|cc|ccn|cvv|cvc)(?![A-Za-z])"
    r"|卡号|卡號|信用卡|银行卡|銀行卡|借记卡|借記卡|储蓄卡|儲蓄卡|金融卡|签账卡|簽帳卡|银联|銀聯|卡)"
    r"|(?P<other>(?<![A-Za-z])(?:orders?|tracking|track|shipment|parcel|package|invoices?|inv|ref|reference"
    r"|receipt|confirmation|booking|reservation|ticket|case|claim|policy|account|acct|iban|serial|sku|isbn|imei"
    r"|iccid|transaction|txn|ids?|uuid|history|customer|member|membership|po|awb|barcode|upc|ean)(?![A-Za-z])"
    r"|订单|訂單|单号|單號|运单|運單|快递|快遞|物流|包裹|发票|發票|编号|編號|流水号|流水號|工单|工單|参考号|參考號"
    r"|预约|預約|会员|會員|账号|帳號|账户|帳戶|身份证|身份證|序列号|序號|交易)"
)
_CLAUSE_END = re.compile(r"[;!?\n。；！？]")
_CONTEXT_CHARS = 40
_LUHN_DOUBLED = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)


def _luhn_valid(digits: str) -> bool:
    doubled = sum(_LUHN_DOUBLED[int(digit)] for digit in digits[-2::-2])
    return (sum(map(int, digits[-1::-2])) + doubled) % 10 == 0


def _card_label(text: str, start: int, end: int) -> str | None:
    """"card" or "other": the nearest label word in the clause before `start`, else the first after `end`."""
    before = list(_CARD_CONTEXT.finditer(_CLAUSE_END.split(text[max(0, start - _CONTEXT_CHARS) : start])[-1]))
    if before:
        return before[-1].lastgroup
    after = _CARD_CONTEXT.search(_CLAUSE_END.split(text[end : end + _CONTEXT_CHARS])[0])
    return after.lastgroup if after else None


def _card_spans(text: str) -> Iterator[Span]:
    """Card numbers: in each run of digit groups, the longest Luhn-valid 13–19 digits from each group on."""
    for run in _DIGIT_RUN.finditer(text):
        groups = re.split(r"[ -]", run.group())
        if sum(map(len, groups)) < 13:
            continue
        label = _card_label(text, run.start(), run.end())
        if label != "card":
            grouped = tuple(map(len, groups)) in _CARD_GROUPINGS and len(set(re.findall(r"[ -]", run.group()))) == 1
            if label is None and grouped and _luhn_valid("".join(groups)):
                yield run.start(), run.end(), CARD_NUMBER
            continue
        offsets = [match.start() for match in re.finditer(r"\d+", run.group())]
        first = 0
        while first < len(groups):
            card, digits = None, ""
            for last in range(first, len(groups)):
                digits += groups[last]
                if len(digits) > 19:
                    break
                if len(digits) >= 13 and _luhn_valid(digits):
                    card = last
            if card is None:
                first += 1
                continue
            yield run.start() + offsets[first], run.start() + offsets[card] + len(groups[card]), CARD_NUMBER
            first = card + 1


def _value_at(text: str, position: int) -> tuple[int, int, bool] | None:
    """The value starting at `position`: (start, end, quoted), or None when there is none."""
    if text.startswith(REDACTED, position):
        return None
    close = _OPEN_QUOTES.get(text[position : position + 1])
    if close:
        end = text.find(close, position + 1, position + 102)
        if end > position + 1 and "\n" not in text[position:end]:
            return position + 1, end, True
    match = _BARE_VALUE.match(text, position)
    if not match:
        return None
    raw = match.group()
    stripped = raw.lstrip(_LEADING).rstrip(_TRAILING)
    if not stripped:
        return None
    start = position + len(raw) - len(raw.lstrip(_LEADING))
    return start, start + len(stripped), False


def _phrase_value(text: str, phrase: _Phrase, words: re.Match) -> tuple[int, int] | None:
    """Where the secret announced by `words` is, or None when what follows is no secret."""
    for form in phrase.forms:
        connector = form.connector.match(text, words.end())
        if not connector:
            continue
        if form.needs_change_verb and not _CHANGE_VERB.search(text, max(0, words.start() - 60), words.start()):
            continue
        value = _value_at(text, connector.end())
        if value is None:
            continue
        start, end, quoted = value
        if phrase.is_value(text[start:end], "quoted" if quoted else form.how):
            return start, end
    return None


def _rule_spans(text: str) -> Iterator[Iterable[Span]]:
    """Candidate secrets rule by rule, the rules in order of precedence."""
    if "-----BEGIN" in text:
        yield ((match.start(), match.end(), PRIVATE_KEY) for match in _PRIVATE_KEY.finditer(text))
    if "://" in text:
        yield ((match.start(1), match.end(1), PASSWORD) for match in _URL_PASSWORD.finditer(text))
        yield ((match.start(1), match.end(1), API_KEY) for match in _WEBHOOK.finditer(text))
    if "=" in text:
        yield (
            (match.start(2), match.end(2), PASSWORD if match.group("password") else API_KEY)
            for match in _QUERY_SECRET.finditer(text)
        )
    yield ((match.start(), match.end(), API_KEY) for match in _KEY_FORMATS.finditer(text))
    yield (
        (match.start(), match.end(), API_KEY)
        for match in _AWS_SECRET.finditer(text)
        if _upper_lower_and_digit(match.group())
    )
    lowered = text.lower()
    for phrase in _PHRASES:
        if any(hint in lowered for hint in phrase.hints):
            yield (
                (*value, phrase.kind)
                for words in phrase.words.finditer(text)
                if (value := _phrase_value(text, phrase, words))
            )
    yield _card_spans(text)


def _merge(text: str, spans: list[Span], candidates: Iterable[Span]) -> list[Span]:
    """`spans` (sorted, apart) plus the candidates that overlap none of them nor each other, sorted."""
    merged: list[Span] = []
    index = 0
    for start, end, kind in sorted(candidates):
        while index < len(spans) and spans[index][0] < start:
            merged.append(spans[index])
            index += 1
        overlaps = (merged and merged[-1][1] > start) or (index < len(spans) and spans[index][0] < end)
        if not overlaps and text[start:end] != REDACTED:
            merged.append((start, end, kind))
    return merged + spans[index:]


def secret_spans(text: str) -> list[Span]:
    """Where the secrets of `text` are: (start, end, kind), in order and apart (an earlier rule wins)."""
    spans: list[Span] = []
    for candidates in _rule_spans(text):
        spans = _merge(text, spans, candidates)
    return spans


def redact_text(text: str, context: str = "", limit: int | None = None) -> tuple[str, set[str]]:
    """The text with secrets replaced by "[redacted]", and the kinds of secret found.

    `context` is what came just before `text` (the user's earlier messages): a password phrase there and its
    value at the start of `text` are caught. With `limit`, only the first `limit` characters of `text` are
    kept; a secret the limit cuts through is redacted all the same.
    """
    window = text if limit is None else text[: limit + _LOOKAHEAD_CHARS]
    keep = len(window) if limit is None else min(limit, len(window))
    joined = f"{context}\n{window}" if context else window
    offset = len(joined) - len(window)
    spans = [
        (max(start - offset, 0), min(end - offset, keep), kind)
        for start, end, kind in secret_spans(joined)
        if end > offset and start - offset < keep
    ]
    pieces, position = [], 0
    for start, end, _ in spans:
        pieces += [window[position:start], REDACTED]
        position = end
    pieces.append(window[position:keep])
    return "".join(pieces), {kind for _, _, kind in spans}


def redact(value: Any) -> tuple[Any, set[str]]:
    """A JSON-like value with every string redacted, and the kinds of secret found."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        pairs = [(key, redact(item)) for key, item in value.items()]
        return {key: item for key, (item, _) in pairs}, _union(found for _, (_, found) in pairs)
    if isinstance(value, list):
        parts = [redact(item) for item in value]
        return [item for item, _ in parts], _union(found for _, found in parts)
    return value, set()


def _union(sets: Iterable[set[str]]) -> set[str]:
    return set().union(*sets)
