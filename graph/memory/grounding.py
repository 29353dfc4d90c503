"""Whether what a model extracted was said by the user: a deterministic check of its words against the user's.

A model forced through a schema fills the schema's fields whether or not the conversation gave it anything to fill
them with (a tiny model asked for a profile on "Hi!" answered with the name "Mike" and the city "New York City"). A
value is grounded when every number in it and at least half of its other terms
(`graph.memory.selection.text_terms`: words of three or more letters, CJK character bigrams) occur in what the user
wrote, a word also counting when one is the start of the other ("swim" and "swimming", "lesson" and "lessons"); a
value without such terms (a name of two letters) must occur in the user's text as it is, as a word of its own, and
be longer than one character: Gemma 3 270M filled a profile with "A" for the name, the city and the job, which
every "and" held as a substring. "San Francisco, California" is grounded in "I live in San Francisco"; "Mike" is
not grounded in "Hi there", nor "A" in "Put groceries on my list".
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from graph.memory.selection import text_terms

# The shortest word that counts as said when the user wrote a longer word starting with it, or the reverse.
PREFIX_LETTERS = 4


@dataclass(frozen=True)
class UserWords:
    """The terms and the lower-cased text of what the user wrote."""

    terms: frozenset[str]
    text: str

    @classmethod
    def of(cls, texts: Iterable[str]) -> "UserWords":
        """The words of the user's messages."""
        text = "\n".join(texts)
        return cls(text_terms(text), text.lower())

    def said(self, term: str) -> bool:
        """Whether the user wrote `term`, or a word it starts, or a word starting with it (both of PREFIX_LETTERS+)."""
        if term in self.terms:
            return True
        if len(term) < PREFIX_LETTERS or not term.isalpha():
            return False
        return any(
            len(word) >= PREFIX_LETTERS and (word.startswith(term) or term.startswith(word)) for word in self.terms
        )

    def grounds(self, value: str) -> bool:
        """Whether the user said `value`: its numbers and at least half of its other terms, or the whole of a value
        without terms as a word of its own (not inside a longer Latin word or number; CJK text has no spaces) and
        longer than one character ("A" from "I need a haircut" is an article, not a name)."""
        terms = text_terms(value)
        if not terms:
            said = value.strip().lower()
            return len(said) > 1 and re.search(rf"(?<![0-9a-z]){re.escape(said)}(?![0-9a-z])", self.text) is not None
        numbers = {term for term in terms if term.isdigit()}
        return numbers <= self.terms and 2 * sum(self.said(term) for term in terms) >= len(terms)


def grounded_value(value: Any, words: UserWords) -> Any:
    """`value` with what the user did not say taken out: a string kept only when grounded, a list keeping its
    grounded items, an object its grounded fields; other values (numbers, dates, choices) are kept. None when
    nothing of it is left."""
    if isinstance(value, str):
        return value if words.grounds(value) else None
    if isinstance(value, list):
        kept = [item for item in (grounded_value(item, words) for item in value) if item is not None]
        return kept or None
    if isinstance(value, dict):
        kept = {name: item for name, item in ((n, grounded_value(v, words)) for n, v in value.items()) if item is not None}
        return kept or None
    return value
