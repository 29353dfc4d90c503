"""Secrets never reach the store: passwords, PINs, API keys, card numbers, IBANs, social security numbers and
private keys become "[redacted]".

A secret is redacted only where a secret is; ordinary text stays byte for byte. The text is first folded the
way `graph.memory.secret_text` says (NFKC, invisible characters dropped, look-alike letters read as the Latin
ones), so a secret spelled to slip past the rules is found all the same and redacted where it was written.
Then the rules run, an earlier one winning where two find overlapping secrets:

1. Secrets of known formats, anywhere (`graph.memory.secret_formats`): private key blocks, passwords in URLs,
   webhook tokens and secret query parameters, keys and tokens of known shapes (detect-secrets' patterns and
   a few more), standalone AWS-style secret keys.
2. The value after a phrase that announces a password, PIN, code or key, in English, Chinese, German,
   Spanish, French, Japanese and Korean (`graph.memory.secret_phrases`).
3. Card numbers, IBANs and US social security numbers, checked with python-stdnum
   (`graph.memory.secret_numbers`).
"""

from collections.abc import Iterable, Iterator
from typing import Any

from graph.memory.secret_formats import format_rules
from graph.memory.secret_kinds import REDACTED, Span
from graph.memory.secret_numbers import card_spans, iban_spans, ssn_spans
from graph.memory.secret_phrases import phrase_rules
from graph.memory.secret_text import match_text

__all__ = ["REDACTED", "redact", "redact_text", "secret_spans"]

# How far past a `limit` the text is still read, so that a secret the limit cuts through is found whole.
_LOOKAHEAD_CHARS = 512


def _rule_spans(text: str) -> Iterator[Iterable[Span]]:
    """Candidate secrets rule by rule, the rules in order of precedence."""
    yield from format_rules(text)
    yield from phrase_rules(text)
    yield iban_spans(text)
    yield card_spans(text)
    yield ssn_spans(text)


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
    folded = match_text(text)
    spans: list[Span] = []
    for rule in _rule_spans(folded.text):
        if candidates := list(rule):
            spans = _merge(folded.text, spans, candidates)
    return [(*folded.original_span(start, end), kind) for start, end, kind in spans]


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
