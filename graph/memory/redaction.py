"""Secrets never reach the store: passwords, API keys, card numbers and the like are redacted before writing."""

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"

_API_KEY = re.compile(
    r"\b(?:sk-(?:proj-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,})"
)
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)
_LABELLED = [
    ("password", re.compile(
        r"(?i)(\b(?:password|passwd|passphrase|passcode|pin(?: code)?)\b(?:\s+(?:for|of|to)\s+(?:the\s+|my\s+)?[\w-]+)?"
        r"(?:\s*[:=]\s*|\s+(?:is|was|to|will be|should be)\s+))(\S+)")),
    ("password", re.compile(r"((?:密码|口令)(?:是|为|:|：)?\s*)([^\s，。；,;]+)")),
    ("API key", re.compile(
        r"(?i)(\b(?:api[ _-]?key|secret(?: key)?|access[ _-]?token|auth[ _-]?token|token)\b"
        r"(?:\s*[:=]\s*|\s+(?:is|was)\s+))([A-Za-z0-9_\-./+=]{12,})")),
    ("API key", re.compile(r"((?:密钥|令牌)(?:是|为|:|：)?\s*)([A-Za-z0-9_\-./+=]{8,})")),
]
_CARD_CANDIDATE = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")


def _luhn_valid(digits: str) -> bool:
    total = 0
    for position, digit in enumerate(reversed(digits)):
        value = int(digit) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def redact_text(text: str) -> tuple[str, set[str]]:
    """The text with secrets replaced by "[redacted]", and the kinds of secret found."""
    found: set[str] = set()

    def card(match: re.Match) -> str:
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and _luhn_valid(digits):
            found.add("card number")
            return REDACTED
        return match.group()

    text = _CARD_CANDIDATE.sub(card, text)
    for kind, pattern in (("private key", _PRIVATE_KEY), ("API key", _API_KEY)):
        text, count = pattern.subn(REDACTED, text)
        if count:
            found.add(kind)
    for kind, pattern in _LABELLED:

        def labelled(match: re.Match, kind: str = kind) -> str:
            if match.group(2).startswith(REDACTED):
                return match.group()
            found.add(kind)
            return match.group(1) + REDACTED

        text = pattern.sub(labelled, text)
    return text, found


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
