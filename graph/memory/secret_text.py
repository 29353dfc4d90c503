"""Text as the secret filter reads it, so that a secret spelled to slip past it is still found.

Before any rule runs, the text is folded: each character (with the combining marks after it) to its NFKC form
(full-width "ｐａｓｓｗｏｒｄ" and "４１１１" become ASCII, half-width katakana become full-width), characters that
show nothing dropped (zero-width spaces and joiners, soft hyphens, variation selectors: Unicode's format
characters and default-ignorable code points), decimal digits of any script as ASCII digits, and letters that
look like a Latin letter or digit — Cyrillic "а" in "pаssword", Greek "Ι" in "PΙN" — as that letter, after
Unicode's confusables data (`confusable_homoglyphs`). Chinese, Japanese and Korean characters are never read
as look-alikes (a "〇" is a numeral; the filter has phrases of its own for these scripts). `MatchText` keeps, for every folded character, where it came
from, so that a secret is redacted where the user wrote it, invisible characters and all.
"""

import functools
import re
import unicodedata
from dataclasses import dataclass
from itertools import chain

# Default-ignorable code points that are not format characters (category Cf, dropped as well).
_IGNORABLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0") | frozenset(
    map(chr, range(0xFE00, 0xFE10))
)
# Half-width katakana voiced sound marks: not combining characters, but they become combining ones under NFKC.
_HALF_WIDTH_MARKS = "\uff9e\uff9f"
# The code points where a character that folds can be (surrogates left out).
_NON_ASCII_BLOCKS = (
    range(0x80, 0xD800), range(0xE000, 0x10000), range(0x1D400, 0x1D800), range(0x1F100, 0x1F300),
    range(0x2F800, 0x2FA20), range(0xE0000, 0xE1000),
)
# Scripts whose characters the filter reads as they are (a CJK "〇" is a numeral, not a Latin "O").
_CJK_RANGES = ((0x2E80, 0x9FFF), (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFF65, 0xFFDC), (0x20000, 0x3FFFF))


@dataclass(frozen=True)
class MatchText:
    """The folded `text` and, for each of its characters, the index in the original text it came from."""

    text: str
    origins: tuple[int, ...] | None  # None: the text was not changed
    length: int  # of the original text

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's span that `text[start:end]` came from."""
        if self.origins is None:
            return start, end
        first = self.origins[start] if start < len(self.origins) else self.length
        last = self.origins[end] if end < len(self.origins) else self.length
        return first, max(last, first + 1) if end > start else first


def _is_cjk(character: str) -> bool:
    code = ord(character)
    return any(low <= code <= high for low, high in _CJK_RANGES)


@functools.cache
def _look_alikes() -> dict[str, str]:
    """Each character that Unicode's confusables data says looks like exactly one ASCII letter or digit: that one."""
    from confusable_homoglyphs.confusables import confusables_data

    look_alikes = {}
    for character, glyphs in confusables_data.items():
        if len(character) != 1 or character.isascii() or _is_cjk(character):
            continue
        targets = {glyph["c"] for glyph in glyphs if len(glyph["c"]) == 1 and glyph["c"].isascii() and glyph["c"].isalnum()}
        if len(targets) == 1:
            target = targets.pop()
            # The data's one prototype for I, l and | is "l": a capital look-alike reads as the capital "I".
            look_alikes[character] = "I" if target == "l" and character.isupper() else target
    return look_alikes


@functools.lru_cache(maxsize=4096)
def _folded(cluster: str) -> str:
    """A character and its combining marks as the filter reads them."""
    if all(unicodedata.category(c) == "Cf" or c in _IGNORABLE for c in cluster):
        return ""
    kept = "".join(c for c in cluster if unicodedata.category(c) != "Cf" and c not in _IGNORABLE)
    normal = unicodedata.normalize("NFKC", kept)
    out = []
    for character in normal:
        if character.isascii() or _is_cjk(character):
            out.append(character)
        elif (digit := unicodedata.decimal(character, None)) is not None:
            out.append(str(digit))
        else:
            out.append(_look_alikes().get(character, character))
    return "".join(out)


def _character_class(characters: set[str]) -> str:
    """A regular expression character class body matching exactly `characters` (runs written as ranges)."""
    codes = sorted(map(ord, characters))
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and code == ranges[-1][1] + 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(re.escape(chr(low)) + (f"-{re.escape(chr(high))}" if high > low else "") for low, high in ranges)


@functools.cache
def _changing() -> re.Pattern:
    """Where folding may change a text: a character with the combining marks after it, or a character that
    folds to something else (found once per process over the code points that have such characters)."""
    marks, singles = set(_HALF_WIDTH_MARKS), set(_look_alikes()) | _IGNORABLE
    for code in chain(*_NON_ASCII_BLOCKS):
        character = chr(code)
        if unicodedata.combining(character):
            marks.add(character)
        elif (
            unicodedata.category(character) == "Cf"
            or unicodedata.decimal(character, None) is not None
            or unicodedata.normalize("NFKC", character) != character
        ):
            singles.add(character)
    return re.compile(f".[{_character_class(marks)}]+|[{_character_class(singles)}]", re.S)


def match_text(text: str) -> MatchText:
    """The text folded for matching, with where each folded character came from."""
    if text.isascii():
        return MatchText(text, None, len(text))
    pieces: list[str] = []
    origins: list[int] = []
    position = 0
    for match in _changing().finditer(text):
        start = match.start()
        pieces.append(text[position:start])
        origins.extend(range(position, start))
        folded = _folded(match.group())
        pieces.append(folded)
        origins.extend([start] * len(folded))
        position = match.end()
    pieces.append(text[position:])
    origins.extend(range(position, len(text)))
    folded_text = "".join(pieces)
    if folded_text == text:
        return MatchText(text, None, len(text))
    return MatchText(folded_text, tuple(origins), len(text))
