"""The value after a phrase that announces a password, PIN, code or key.

- The phrase, in English (password, passcode, passphrase, pwd, pw, wifi key, wifi pass, PIN, door code, CVV,
  API key, token, secret, key: …; "pass" as a quoted key, `{"pass": …}`; a variable such as `DB_PASS=`), Chinese (密码, 密碼, 口令, 验证码, PIN码, 安全码, 密钥, 令牌 …), German (Passwort, Kennwort,
  WLAN-Passwort, PIN, Geheimzahl), Spanish (contraseña, clave, PIN, NIP), French (mot de passe, mdp, code
  secret, code PIN), Japanese (パスワード, 暗証番号, 認証コード) or Korean (비밀번호, 비번, 암호, 핀번호);
  optionally qualified ("for my bank account", "on the router", "für das WLAN", "del banco", "du wifi").
- Then its verb or sign: "is", "was", "'s", ":", "=", "->", "→", 是, 为, ：, ist, lautet, es, est, は, 는 …; a
  closing quote may stand before ":" or "=", as in JSON (`{"password": "…"}`). "to" and "as" count only after
  a verb of change ("set the router password to …", "password changed to …"; 改成, 设为 always; auf, a, en,
  を, 를 after a verb of change in that language). With no verb or sign at all, only an unmistakable value
  counts ("wifi password hunter22", "pw hunter2", "密码123456", "비번 hunter22"); a value never continues onto
  the next line that way.
- Then the value: the next word, or the quoted text, or a run of Chinese numerals (六五四三二一). After an
  English password phrase and "is" or ":", a passphrase of two to eight words up to the end of the clause
  ("my password is correct horse battery staple") counts whole, unless a word of it is one people use to
  talk about a password ("the password is too short", "… is case sensitive", "… is written on the router").
- What counts as a value: at least 4 characters with a digit, a symbol or mixed case, or — after an English
  or Chinese verb or sign such as "is", ":" and 是 — a single word that is not one of the ordinary words
  people say about a password (expired, wrong, in, the, see …); in German, Spanish, French, Japanese and
  Korean never a plain word ("Das Passwort ist abgelaufen", "la clave es practicar"). So "Change password
  to something stronger", "the password is on the fridge" and "设置新密码提醒" hold no secret, while "my
  password is swordfish" does. PINs and codes need 4+ digits (a card security code 3–4 digits); keys and
  tokens need 8+ characters with letters and digits, or 20+ of mixed case.
"""

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from graph.memory.secret_kinds import API_KEY, CARD_CODE, PASSWORD, PIN, REDACTED, Span

_ARROWS = r"[:=：]|=+>|[-–—]+>|[→⇒➔➜]"
# Connectors between a phrase and its value.
_STRONG = re.compile(
    rf"[\"'’”\]]?\s*(?:{_ARROWS})\s*"
    r"|\s*['’]s[ \t]+"
    r"|\s+(?:is\s+now|is\s+still|now\s+is|will\s+be|should\s+be|has\s+been|is|was|are|were)(?:\s*[:：]\s*|\s+)"
    r"|\s*(?:就|也|还|還|都|应该|應該|现在|現在|一直)?(?:是|为|為)\s*"
)
_SIGN = re.compile(r"[ \t]*[:=][ \t]*")
# A quoted key's closing quote, then a sign (`{"pass": "…"}`).
_KEY_SIGN = re.compile(r"[\"'’”][ \t]*[:=][ \t]*")
_QUALIFIER_WORDS = r"(?:[^\s.,;:!?=。，；：]+\s+){0,4}?[^\s.,;:!?=。，；：]+"
_QUALIFIED_VERB = rf"(?:\s*(?:{_ARROWS})\s*|\s+(?:is\s+now|will\s+be|should\s+be|has\s+been|is|was)(?:\s*[:：]\s*|\s+))"
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


def _verbs(verbs: str) -> re.Pattern:
    """A phrase's connector in German, Spanish or French: a sign, or one of `verbs`, then the value."""
    return re.compile(rf"(?i)\s*(?:{_ARROWS})\s*|\s+(?:{verbs})(?:\s*:\s*|\s+)")


def _qualified(prepositions: str, verbs: str) -> re.Pattern:
    return re.compile(rf"(?i)\s+(?:{prepositions})\s*{_QUALIFIER_WORDS}(?:\s*[:=]\s*|\s+(?:{verbs})\s+)")


_GERMAN_VERBS = r"ist(?:\s+jetzt|\s+nun)?|lautet|lautete|war|heißt|heisst"
_SPANISH_VERBS = r"es|era|será|sería|ahora\s+es"
_FRENCH_VERBS = r"est|était|sera|c['’]est"
_GERMAN = _verbs(_GERMAN_VERBS)
_GERMAN_QUALIFIED = _qualified(
    r"für|fürs|von|vom|zum|zur|des|der|bei|beim|am|meiner|meines|unserer|unseres|deiner|deines", _GERMAN_VERBS
)
_SPANISH = _verbs(_SPANISH_VERBS)
_SPANISH_QUALIFIED = _qualified(r"de\s+la|del|de|para|en", _SPANISH_VERBS)
_FRENCH = re.compile(rf"(?i)\s*,?\s*(?:{_ARROWS})\s*|\s*,?\s+(?:{_FRENCH_VERBS})(?:\s*:\s*|\s+)")
_FRENCH_QUALIFIED = _qualified(r"d['’]|de\s+la|du|des|de|pour|sur|à", _FRENCH_VERBS)
# One or two words between the phrase and a sign ("Contraseña nueva = …", "mdp wifi : …").
_WORDS_THEN_SIGN = re.compile(rf"(?:[ \t]+[^\W\d_]+){{1,2}}[ \t]*(?:{_ARROWS})\s*")
_FOREIGN_TO = re.compile(r"(?i)\s+(?:auf|zu|a|por|en|à|par)\s+")
_FOREIGN_CHANGE_VERB = re.compile(
    r"(?i)(?<![^\W\d_])(?:(?:ge)?änder\w*|geaendert|gesetzt|setzen|cambi[éeóoa]\w*|actualic\w*|actualiz\w*|pongo|puse"
    r"|pusimos|chang[ée]\w*|changer|modifi[ée]\w*|modifier|mis|mettre|remplac\w*)(?![^\W\d_])"
)
_JAPANESE = re.compile(rf"\s*(?:は|が|{_ARROWS})\s*")
_JAPANESE_CHANGE = re.compile(r"\s*を\s*")
_KOREAN = re.compile(rf"\s*(?:{_ARROWS})\s*|(?:은|는|이|가)\s*(?:[:：]\s*)?")
_KOREAN_CHANGE = re.compile(r"(?:을|를)\s*")

_OPEN_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "「": "」", "『": "』", "`": "`"}
# A bare value ends at white space, or Chinese, Japanese or Korean text.
_BARE_VALUE = re.compile(
    r"[^\s\u1100-\u11ff\u3000-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
    r"\uff00-\uffef]+"
)
_CHINESE_NUMERALS = re.compile(r"[零〇一二三四五六七八九壹贰貳叁參肆伍陆陸柒捌玖两兩幺]{4,20}")
_AS_DIGITS = str.maketrans("零〇一二三四五六七八九壹贰貳叁參肆伍陆陸柒捌玖两兩幺", "00123456789122334566789221")
_TRAILING = ".,;:?)]}>'\"”’」』`"
_LEADING = "(<'\"“‘`"
_WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*")
_DATE_OR_TIME = re.compile(r"\d{1,4}([-./])\d{1,2}\1\d{1,4}|\d{1,2}:\d{2}(?::\d{2})?(?:[ap]m)?", re.I)
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
    random complex complicated unique memorable obvious guessable predictable reused outdated
    case sensitive protected encrypted hashed generated managed rotated
    pretty quite rather fairly super totally extremely somewhat kinda
    """.split()
)
# Words that never stand in a passphrase: they make the words after "is" a sentence about the password.
_SENTENCE_WORDS = frozenset(
    """
    a an the this that these those it its my our your his her their me him us them i you he she we they
    and or but so then because if when while until unless than as like
    in on at under behind inside near with without by from into onto for of to up down off out over about
    after before since during through between below above
    is are was were be been being am has have had do does did will would can could should shall may might must
    not no none nothing something anything everything every each all any some few many much more most less
    too very really still now also just only always never ever already yet again soon later ago
    today tomorrow yesterday tonight week weeks month months year years day days daily weekly monthly
    monday tuesday wednesday thursday friday saturday sunday morning evening night
    word words letter letters character characters chars digit digits number numbers symbol symbols string
    phrase sentence name birthday date plus minus least
    """.split()
)
_PASSPHRASE = re.compile(r"[A-Za-z]+(?:[ \t]+[A-Za-z]+){1,7}(?=[ \t]*(?:$|[\n.,;:!?)\]\"'”’]))")


def _password_value(value: str, how: str) -> bool:
    if how == "quoted":
        return len(value) >= 3
    if len(value) < 4 or "://" in value or _DATE_OR_TIME.fullmatch(value):
        return False
    if _WORD.fullmatch(value):
        possessive = value.lower().endswith(("'s", "’s"))  # "password is Fluffy's name"
        return how == "strong" and value.lower() not in _ORDINARY_WORDS and not possessive
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

    "strong" (is, :, 是 …): a plain word may be the value; "weak" (to, 改成, ist …): the value must not be a
    plain word; "bare" (nothing between): only an unmistakable value counts. `change_verb`: a verb of change
    must stand near the phrase.
    """

    connector: re.Pattern
    how: str
    change_verb: Callable[[str, int, int], bool] | None = None


def _english_change(text: str, start: int, end: int) -> bool:
    return bool(_CHANGE_VERB.search(text, max(0, start - 60), start))


def _foreign_change(text: str, start: int, end: int) -> bool:
    return bool(_FOREIGN_CHANGE_VERB.search(text[max(0, start - 60) : end + 80]))


_STRONG_FORM = _Form(_STRONG, "strong")
_QUALIFIED_FORM = _Form(_QUALIFIED, "strong")
_QUALIFIED_PIN_FORM = _Form(_QUALIFIED_PIN, "strong")
_CHANGED_TO_FORM = _Form(_CHANGED_TO, "weak")
_TO_FORM = _Form(_TO, "weak", _english_change)
_CHINESE_CHANGE_FORM = _Form(_CHINESE_CHANGE, "weak")
_ENGLISH_BARE_FORM = _Form(_ENGLISH_BARE, "bare")
_CHINESE_BARE_FORM = _Form(_CHINESE_BARE, "bare")
_FOREIGN_TO_FORM = _Form(_FOREIGN_TO, "weak", _foreign_change)
# A PIN phrase of these languages takes no bare value ("pin 2025 calendar" is not a PIN); a password phrase does.
_WORDS_THEN_SIGN_FORM = _Form(_WORDS_THEN_SIGN, "weak")
_GERMAN_FORMS = (_Form(_GERMAN_QUALIFIED, "weak"), _Form(_GERMAN, "weak"), _FOREIGN_TO_FORM, _WORDS_THEN_SIGN_FORM)
_SPANISH_FORMS = (_Form(_SPANISH_QUALIFIED, "weak"), _Form(_SPANISH, "weak"), _FOREIGN_TO_FORM, _WORDS_THEN_SIGN_FORM)
_FRENCH_FORMS = (_Form(_FRENCH_QUALIFIED, "weak"), _Form(_FRENCH, "weak"), _FOREIGN_TO_FORM, _WORDS_THEN_SIGN_FORM)
_JAPANESE_FORMS = (_Form(_JAPANESE, "weak"), _Form(_JAPANESE_CHANGE, "weak"), _CHINESE_BARE_FORM)
_KOREAN_FORMS = (_Form(_KOREAN, "weak"), _Form(_KOREAN_CHANGE, "weak"), _ENGLISH_BARE_FORM)


@dataclass(frozen=True)
class _Phrase:
    """Words that announce a secret, what kind it is, how its value may follow and what a value looks like."""

    kind: str
    words: re.Pattern
    forms: tuple[_Form, ...]
    is_value: Callable[[str, str], bool]
    hints: tuple[str, ...]  # every match holds one of these (lower case): a quick test before the pattern runs
    passphrase: bool = False  # an English password phrase: after a strong connector, a passphrase counts whole


def _english(words: str, case_sensitive: bool = False) -> re.Pattern:
    return re.compile(rf"{'' if case_sensitive else '(?i)'}(?<![A-Za-z0-9])(?:{words})(?![A-Za-z0-9])")


def _variable(endings: str) -> re.Pattern:
    """An environment variable's name ending in one of `endings` ("DB_PASS", "GITHUB_TOKEN"), before its sign."""
    return re.compile(rf"(?<![A-Za-z0-9_])[A-Z0-9_]*_(?:{endings})(?=[ \t]*[:=])")


def _foreign(words: str) -> re.Pattern:
    return re.compile(rf"(?i)(?<![^\W\d_])(?:{words})(?![^\W\d_])")


_PHRASES = (
    _Phrase(
        PASSWORD,
        _english(r"pass[ -]?(?:word|wd|phrase|code)s?|(?:wi-?fi|wlan|network|router)[ -]key"),
        (_QUALIFIED_FORM, _STRONG_FORM, _CHANGED_TO_FORM, _TO_FORM, _CHINESE_CHANGE_FORM, _ENGLISH_BARE_FORM),
        _password_value,
        ("pass", "key"),
        passphrase=True,
    ),
    _Phrase(PASSWORD, _english(r"pass[ -]?codes?"), (_ENGLISH_BARE_FORM,), _pin_value, ("pass",)),
    _Phrase(
        PASSWORD,
        _english(r"(?:wi-?fi|wlan|network|router|e-?mail|login|admin|root|db|database)[ _-]?pass"),
        (_QUALIFIED_FORM, _STRONG_FORM, _CHANGED_TO_FORM, _TO_FORM, _ENGLISH_BARE_FORM),
        _password_value,
        ("pass",),
    ),
    _Phrase(PASSWORD, _english(r"pass(?=[\"'’”])"), (_Form(_KEY_SIGN, "strong"),), _password_value, ("pass",)),
    _Phrase(PASSWORD, _variable("PASS|PASSWD|PWD|PIN"), (_Form(_SIGN, "weak"),), _password_value, ("_pass", "_pwd", "_pin")),
    _Phrase(API_KEY, _variable("SECRET|TOKEN|KEY"), (_Form(_SIGN, "weak"),), _key_value, ("_secret", "_token", "_key")),
    _Phrase(PASSWORD, _english(r"pwd|pw"), (_STRONG_FORM, _ENGLISH_BARE_FORM), _password_value, ("pw",), passphrase=True),
    _Phrase(
        PIN,
        _english(r"pin(?:[ -]?(?:code|number|no\.?|#))?"),
        (_QUALIFIED_PIN_FORM, _STRONG_FORM, _CHANGED_TO_FORM, _TO_FORM),
        _pin_value,
        ("pin",),
    ),
    _Phrase(
        PIN, _english(r"PIN(?:[ -]?(?:code|number|no\.?|#))?", case_sensitive=True), (_ENGLISH_BARE_FORM,), _pin_value, ("pin",)
    ),
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
    _Phrase(API_KEY, _english("keys?"), (_Form(_SIGN, "strong"),), _key_value, ("key",)),
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
    _Phrase(
        PASSWORD,
        re.compile(
            r"(?i)(?:passw(?:ort|örter|oerter)|kennw(?:ort|örter|oerter)|zugangscode|(?:wlan|wifi|netzwerk)-?schlüssel)"
            r"(?:e?s)?(?![^\W\d_])"
        ),
        (*_GERMAN_FORMS, _ENGLISH_BARE_FORM),
        _password_value,
        ("passwort", "passwört", "passwoert", "kennw", "zugangscode", "schlüssel"),
    ),
    _Phrase(PIN, _foreign(r"pin(?:-?(?:code|nummer))?|geheimzahl|geheimnummer"), _GERMAN_FORMS, _pin_value, ("pin", "geheim")),
    _Phrase(
        PASSWORD,
        _foreign(r"contrase(?:ñ|n)as?|claves?(?:\s+de\s+acceso)?"),
        (*_SPANISH_FORMS, _ENGLISH_BARE_FORM),
        _password_value,
        ("contrase", "clave"),
    ),
    _Phrase(
        PIN, _foreign(r"pin|nip|c[óo]digo\s+(?:pin|de\s+seguridad|secreto)"), _SPANISH_FORMS, _pin_value, ("pin", "nip", "digo")
    ),
    _Phrase(
        PASSWORD,
        _foreign(r"mots?\s+de\s+passe|mdp|code\s+(?:secret|d['’]acc[èe]s|confidentiel)"),
        (*_FRENCH_FORMS, _ENGLISH_BARE_FORM),
        _password_value,
        ("passe", "mdp", "code"),
    ),
    _Phrase(PIN, _foreign(r"code\s+pin|code\s+de\s+(?:la\s+)?carte"), _FRENCH_FORMS, _pin_value, ("code",)),
    _Phrase(
        PASSWORD,
        re.compile(r"パスワード|パスコード|暗証番号|認証コード|セキュリティコード|(?i:pin)\s*コード|ピンコード|合言葉"),
        _JAPANESE_FORMS,
        _password_value,
        ("パス", "暗証", "コード", "合言葉"),
    ),
    _Phrase(PIN, re.compile(r"(?i:pin)(?:番号)?(?=\s*[はが])"), _JAPANESE_FORMS[:1], _pin_value, ("pin",)),
    _Phrase(
        PASSWORD,
        re.compile(r"비밀\s?번호|비번|패스워드|암호|(?:핀|(?i:pin))\s?번호|인증\s?번호|보안\s?코드"),
        _KOREAN_FORMS,
        _password_value,
        ("비밀", "비번", "패스워드", "암호", "번호", "코드"),
    ),
)


def _value_at(text: str, position: int) -> tuple[int, int, str] | None:
    """The value starting at `position`: (start, end, "quoted" / "numerals" / "bare"), or None when there is none."""
    if text.startswith(REDACTED, position):
        return None
    close = _OPEN_QUOTES.get(text[position : position + 1])
    if close:
        end = text.find(close, position + 1, position + 102)
        if end > position + 1 and "\n" not in text[position:end]:
            return position + 1, end, "quoted"
    if numerals := _CHINESE_NUMERALS.match(text, position):
        return position, numerals.end(), "numerals"
    match = _BARE_VALUE.match(text, position)
    if not match:
        return None
    raw = match.group()
    stripped = raw.lstrip(_LEADING).rstrip(_TRAILING)
    if not stripped or REDACTED[:-1] in raw:  # what an earlier pass redacted is no value of its own
        return None
    start = position + len(raw) - len(raw.lstrip(_LEADING))
    return start, start + len(stripped), "bare"


def _passphrase_at(text: str, position: int) -> tuple[int, int] | None:
    """Two to eight words up to the end of the clause that read as a passphrase, not as a sentence."""
    match = _PASSPHRASE.match(text, position)
    if not match:
        return None
    words = [word.lower() for word in match.group().split()]
    ordinary = sum(word in _ORDINARY_WORDS for word in words)
    if any(word in _SENTENCE_WORDS for word in words) or ordinary > (0 if len(words) == 2 else 1):
        return None
    return match.start(), match.end()


def _phrase_value(text: str, phrase: _Phrase, words: re.Match) -> tuple[int, int] | None:
    """Where the secret announced by `words` is, or None when what follows is no secret."""
    for form in phrase.forms:
        connector = form.connector.match(text, words.end())
        if not connector:
            continue
        if form.change_verb and not form.change_verb(text, words.start(), connector.end()):
            continue
        if phrase.passphrase and form.how == "strong" and (passphrase := _passphrase_at(text, connector.end())):
            return passphrase
        value = _value_at(text, connector.end())
        if value is None:
            continue
        start, end, shape = value
        candidate = text[start:end].translate(_AS_DIGITS) if shape == "numerals" else text[start:end]
        if phrase.is_value(candidate, form.how if shape == "bare" else "quoted" if shape == "quoted" else "weak"):
            return start, end
    return None


_ANY_HINT = re.compile("|".join(re.escape(hint) for phrase in _PHRASES for hint in phrase.hints))
_HINTS = tuple(re.compile("|".join(map(re.escape, phrase.hints))) for phrase in _PHRASES)


def phrase_rules(text: str) -> Iterator[Iterable[Span]]:
    """Candidate secrets announced by a phrase, phrase by phrase, in order of precedence."""
    lowered = text.lower()
    if not _ANY_HINT.search(lowered):
        return
    for phrase, hints in zip(_PHRASES, _HINTS, strict=True):
        if hints.search(lowered):
            yield (
                (*value, phrase.kind)
                for words in phrase.words.finditer(text)
                if (value := _phrase_value(text, phrase, words))
            )
