"""Numbers that are secrets: payment card numbers, IBANs and US social security numbers, checked the way their
issuers define them (python-stdnum: the Luhn check, IBAN's country formats and mod-97 check, the SSN's rules).

- Cards: 13–19 digits passing the Luhn check, their groups split by spaces, hyphens, dots or slashes. With a
  card word just before or after (card, visa, debit, 信用卡, 卡号 …) any such run of digits counts; without
  one, the number must also start the way a card issuer's numbers do at their length (Visa 4…, Mastercard
  51–55 / 2221–2720, Amex 34 / 37, Discover, JCB, Diners, UnionPay, Maestro, Mir) and be one run of digits or
  grouped like a card (4-4-4-4, 4-4-4-4-3, 4-6-5, 4-6-4, one separator). Never digits inside an id (touching
  letters or hyphens, as in UUIDs and history ids), after a "+" (a phone number), nor a number whose nearest
  label is an order, tracking, invoice, reference or other id word (订单, 单号, 快递, 发票 …).
- IBANs: two letters, two check digits and the account, spaced or not, valid for their country.
- Social security numbers: `123-45-6789` valid as an SSN, unless its label is an id word; written as nine
  digits or spaced, only after an SSN word (SSN, social security number).
"""

import functools
import re
from collections.abc import Iterator

from graph.memory.secret_kinds import BANK_ACCOUNT, CARD_NUMBER, NATIONAL_ID, Span

# python-stdnum is imported where it is used: the commands that only read memories never load it.

# Cards: a run of digit groups that touches no letter, digit or hyphen (an id), and the words around it.
_DIGIT_RUN = re.compile(r"(?<![A-Za-z0-9_+-])(?>\d+(?:[ ./-]\d+)*)(?![A-Za-z0-9_]|-[A-Za-z0-9])")
_SEPARATOR = re.compile(r"[ ./-]")
_CARD_GROUPINGS = {(4, 4, 4, 4), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4)}
# (first prefix, last prefix, lengths) of the card issuers' number ranges: the start a card number has.
_ISSUERS = (
    ("4", "4", (13, 16, 19)),  # Visa
    ("51", "55", (16,)),  # Mastercard
    ("2221", "2720", (16,)),  # Mastercard
    ("34", "34", (15,)),  # American Express
    ("37", "37", (15,)),  # American Express
    ("300", "305", (14, 15, 16, 17, 18, 19)),  # Diners Club
    ("36", "36", (14, 15, 16, 17, 18, 19)),  # Diners Club
    ("38", "39", (16, 17, 18, 19)),  # Diners Club
    ("3528", "3589", (16, 17, 18, 19)),  # JCB
    ("2200", "2204", (16, 17, 18, 19)),  # Mir
    ("50", "50", (12, 13, 14, 15, 16, 17, 18, 19)),  # Maestro
    ("56", "69", (12, 13, 14, 15, 16, 17, 18, 19)),  # Maestro, Discover, UnionPay, RuPay
    ("81", "81", (16, 17, 18, 19)),  # UnionPay
)
_CARD_CONTEXT = re.compile(
    r"(?i)(?P<card>(?<![A-Za-z])(?:cards?|credit|debit|visa|master\s?card|amex|american\s+express|discover|jcb"
    r"|unionpay|diners|maestro|cc|ccn|cvv|cvc|(?:kredit)?karten?(?:nummer|nr)?|tarjetas?|cartes?|bancaire)"
    r"(?![A-Za-z])"
    r"|卡号|卡號|信用卡|银行卡|銀行卡|借记卡|借記卡|储蓄卡|儲蓄卡|金融卡|签账卡|簽帳卡|银联|銀聯|卡|カード|카드)"
    r"|(?P<other>(?<![A-Za-z])(?:orders?|tracking|track|shipment|parcel|package|invoices?|inv|ref|reference"
    r"|receipt|confirmation|booking|reservation|ticket|case|claim|policy|account|acct|iban|serial|sku|isbn|imei"
    r"|iccid|transaction|txn|ids?|uuid|history|customer|member|membership|po|awb|barcode|upc|ean|part|model"
    r"|phone|tel|mobile|fax)(?![A-Za-z])"
    r"|订单|訂單|单号|單號|运单|運單|快递|快遞|物流|包裹|发票|發票|编号|編號|流水号|流水號|工单|工單|参考号|參考號"
    r"|预约|預約|会员|會員|账号|帳號|账户|帳戶|身份证|身份證|序列号|序號|交易|电话|電話|手机|手機)"
)
_CLAUSE_END = re.compile(r"[;!?\n。；！？]")
_CONTEXT_CHARS = 40

_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?=[ -]?[A-Za-z0-9])")
_IBAN_BODY = re.compile(r"(?:[ -]?[A-Za-z0-9]){1,32}")

_SSN = re.compile(r"(?<![A-Za-z0-9_-])\d{3}(?P<separator>[- ]?)\d{2}(?P=separator)\d{4}(?![A-Za-z0-9_]|-\d)")
_SSN_WORDS = re.compile(r"(?i)(?<![A-Za-z])(?:ssn|social\s+security(?:\s+(?:number|no|#))?|soc\.?\s*sec\.?)(?![A-Za-z])")


def _label(text: str, start: int, end: int) -> str | None:
    """"card" or "other": the nearest label word in the clause before `start`, else the first after `end`."""
    before = list(_CARD_CONTEXT.finditer(_CLAUSE_END.split(text[max(0, start - _CONTEXT_CHARS) : start])[-1]))
    if before:
        return before[-1].lastgroup
    after = _CARD_CONTEXT.search(_CLAUSE_END.split(text[end : end + _CONTEXT_CHARS])[0])
    return after.lastgroup if after else None


def _issued(digits: str) -> bool:
    """Whether a card issuer's numbers start with these digits at this length."""
    return any(
        low <= digits[: len(low)] <= high and len(digits) in lengths for low, high, lengths in _ISSUERS
    )


def _labelled_cards(run: re.Match, groups: list[str]) -> Iterator[Span]:
    """In a run of digit groups with a card word near, the longest Luhn-valid 13–19 digits from each group on."""
    from stdnum import luhn

    offsets = [match.start() for match in re.finditer(r"\d+", run.group())]
    first = 0
    while first < len(groups):
        card, digits = None, ""
        for last in range(first, len(groups)):
            digits += groups[last]
            if len(digits) > 19:
                break
            if len(digits) >= 13 and luhn.is_valid(digits):
                card = last
        if card is None:
            first += 1
            continue
        yield run.start() + offsets[first], run.start() + offsets[card] + len(groups[card]), CARD_NUMBER
        first = card + 1


def _card_shaped(run: re.Match, groups: list[str]) -> int | None:
    """Where a card number without a card word ends in its run: the run when it is one group of digits, else
    its first groups when they are grouped like a card with one separator (an expiry date may follow)."""
    if len(groups) == 1:
        return run.end()
    separators = _SEPARATOR.findall(run.group())
    sizes = tuple(map(len, groups))
    for grouping in sorted(_CARD_GROUPINGS, key=len, reverse=True):
        count = len(grouping)
        if sizes[:count] == grouping and len(set(separators[: count - 1])) == 1:
            return run.start() + sum(grouping) + count - 1
    return None


def card_spans(text: str) -> Iterator[Span]:
    """Card numbers (see the module's docstring)."""
    from stdnum import luhn

    for run in _DIGIT_RUN.finditer(text):
        groups = _SEPARATOR.split(run.group())
        if sum(map(len, groups)) < 13:
            continue
        label = _label(text, run.start(), run.end())
        if label == "card":
            yield from _labelled_cards(run, groups)
        elif label is None and (end := _card_shaped(run, groups)):
            digits = re.sub(r"\D", "", text[run.start() : end])
            if _issued(digits) and luhn.is_valid(digits):
                yield run.start(), end, CARD_NUMBER


@functools.cache
def _iban_length(country: str) -> int | None:
    """How many characters an IBAN of `country` has (python-stdnum's registry), or None for no IBAN country."""
    from stdnum import numdb

    (_, properties), *_ = numdb.get("iban").info(country)
    return 4 + sum(map(int, re.findall(r"\d+", properties["bban"]))) if "bban" in properties else None


def iban_spans(text: str) -> Iterator[Span]:
    """IBANs: from each start of two letters and two digits, as many characters as the country's IBANs have, if
    they end there and are valid."""
    from stdnum import iban

    for start in _IBAN_START.finditer(text):
        length = _iban_length(start.group()[:2].upper())
        body = _IBAN_BODY.match(text, start.end()) if length else None
        if not body:
            continue
        for end in (match.end() for match in re.finditer(r"[A-Za-z0-9]+", body.group())):
            candidate = text[start.start() : body.start() + end]
            characters = len(re.sub(r"[ -]", "", candidate))
            if characters >= length:
                if characters == length and iban.is_valid(candidate):
                    yield start.start(), body.start() + end, BANK_ACCOUNT
                break


def ssn_spans(text: str) -> Iterator[Span]:
    """US social security numbers (see the module's docstring)."""
    from stdnum.us import ssn

    for match in _SSN.finditer(text):
        number = re.sub(r"[ -]", "", match.group())
        if not ssn.is_valid(number):
            continue
        clause = _CLAUSE_END.split(text[max(0, match.start() - _CONTEXT_CHARS) : match.start()])[-1]
        if _SSN_WORDS.search(clause) or (
            match.group("separator") == "-" and _label(text, match.start(), match.end()) is None
        ):
            yield match.start(), match.end(), NATIONAL_ID
