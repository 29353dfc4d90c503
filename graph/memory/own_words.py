"""What the user wrote themselves, and which words of a text come from something they pasted or quoted instead.

A message is the user's own words except what they pasted or quoted (`split_message`):
- a fenced (```, ~~~) or indented code block, a `>` block quote, an HTML block: CommonMark's blocks, as
  markdown-it-py parses them;
- an e-mail: from two header lines in a row, one of them a sender or subject (`From:`, `Subject:`, `发件人：`,
  `主题：` …), or from a forwarded or quoted-reply marker (`---------- Forwarded message ---------`,
  `-----Original Message-----`, `Begin forwarded message:`, `On … wrote:`, `在…写道：`), to the end of the message;
- a paragraph longer than `PASTED_PARAGRAPH_TOKENS`, which people paste rather than type.

`borrowed_words` names the words of a text (what a change to the instructions adds) that come from pasted or quoted
text: its distinctive pieces (`pieces`: links, domains and e-mail addresses, numbers of three digits or more,
words of five letters or more, runs of three Chinese or Japanese characters) that the quoted text holds and the
user's own words do not. The check is deterministic: it does not ask a model, which the pasted text may have
instructed.
"""

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from markdown_it import MarkdownIt

from graph.text_tokens import count_text_tokens

# A paragraph longer than this (estimated tokens: about 600 characters of English, 150 Chinese characters) was pasted.
PASTED_PARAGRAPH_TOKENS = 150
# CommonMark blocks that hold someone else's text, code or markup (a block quote holds everything inside it).
QUOTING_BLOCKS = ("fence", "code_block", "html_block", "blockquote_open")
# Words compare by their first letters, so that "verify" and "verified", "estimate" and "estimates" match.
STEM_LETTERS = 5
# How many of a text's borrowed words a sentence names.
WORDS_NAMED = 8

_HEADER = re.compile(
    r"^\s*(from|to|cc|bcc|subject|date|sent|reply-to|发件人|收件人|抄送|主题|日期|时间|发送时间|寄件者|收件者|副本|主旨)\s*[:：]",
    re.IGNORECASE,
)
_SENDER_OR_SUBJECT = {"from", "subject", "发件人", "主题", "寄件者", "主旨"}
_FORWARDED = re.compile(
    r"^\s*(?:"
    r"-{2,}\s*(?:forwarded message|original message|转发的?邮件|原始邮件|轉寄(?:的)?郵件|原始郵件)\s*-{2,}"
    r"|begin forwarded message\s*:"
    r"|on\b.{1,200}\bwrote\s*:"
    r"|在.{1,100}写道\s*[:：]"
    r"|.{1,100}於.{1,100}寫道\s*[:：]"
    r")\s*$",
    re.IGNORECASE,
)
# Scripts written without spaces between words: Han and kana (after NFKC, full-width forms are plain ASCII).
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LINK = re.compile(
    r"(?:https?://|www\.)[^\s<>\"'`()\[\]{}\u3000-\u9fff\uf900-\uffff]+"
    r"|[a-z0-9.+_-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+"
    r"|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}"
)
_NUMBER = re.compile(r"\d{3,}")
_WORD = re.compile(rf"[^\W\d_]{{{STEM_LETTERS},}}")


@dataclass(frozen=True)
class Said:
    """A message split into the user's own words and what they pasted or quoted (each "" when there is none)."""

    own: str
    quoted: str


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


def _email_start(lines: list[str]) -> int | None:
    """The index of the line where a pasted e-mail or forwarded message starts, or None."""
    for index, line in enumerate(lines):
        if _FORWARDED.match(line):
            return index
        header = _HEADER.match(line)
        following = _HEADER.match(lines[index + 1]) if index + 1 < len(lines) else None
        if header and following and {header[1].lower(), following[1].lower()} & _SENDER_OR_SUBJECT:
            return index
    return None


def quoted_lines(text: str) -> set[int]:
    """The numbers of the lines of `text` that the user pasted or quoted (see the module's docstring)."""
    lines = text.split("\n")
    quoted: set[int] = set()
    for token in _markdown().parse(text):
        if token.map is None:
            continue
        start, end = token.map
        if token.type in QUOTING_BLOCKS and token.level == 0:
            quoted.update(range(start, end))
        elif token.type == "paragraph_open" and count_text_tokens("\n".join(lines[start:end])) > PASTED_PARAGRAPH_TOKENS:
            quoted.update(range(start, end))
    first = _email_start([line if number not in quoted else "" for number, line in enumerate(lines)])
    if first is not None:
        quoted.update(range(first, len(lines)))
    return quoted


def split_message(text: str) -> Said:
    """`text` as the user's own words and what they pasted or quoted (`quoted_lines`), each line in its order."""
    lines = text.split("\n")
    quoted = quoted_lines(text)
    own = "\n".join(line for number, line in enumerate(lines) if number not in quoted)
    pasted = "\n".join(line for number, line in enumerate(lines) if number in quoted)
    return Said(own.strip(), pasted.strip())


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def pieces(text: str) -> dict[str, str]:
    """The distinctive pieces of `text`, in lower case, each under the form it is compared in: links
    (and a link's host), domains, e-mail addresses, numbers of 3 digits or more, words of 5 letters or more (compared
    by their first 5), and every run of 3 Chinese or Japanese characters."""
    normal = _normal(text)
    found: dict[str, str] = {}
    for link in _LINK.findall(normal):
        link = link.rstrip(".,;:!?")
        found.setdefault(link, link)
        if host := urlsplit(link if "://" in link else f"//{link}").hostname:
            found.setdefault(host, host)
    without_links = _LINK.sub(" ", normal)
    for number in _NUMBER.findall(without_links):
        found.setdefault(number, number)
    for word in _WORD.findall(_UNSPACED.sub(" ", without_links)):
        found.setdefault(word[:STEM_LETTERS], word)
    for run in _UNSPACED.findall(without_links):
        for start in range(len(run) - 2):
            found.setdefault(run[start : start + 3], run[start : start + 3])
    return found


def borrowed_words(text: str, own: Iterable[str], quoted: Iterable[str]) -> list[str]:
    """The pieces of `text` (`pieces`) that the `quoted` texts hold and the `own` texts do not, as written in `text`,
    in its order; an empty list when `text` takes nothing from what was pasted or quoted."""
    theirs = set().union(*(pieces(part) for part in quoted))
    mine = set().union(*(pieces(part) for part in own))
    return [word for key, word in pieces(text).items() if key in theirs and key not in mine]


def named(words: list[str]) -> str:
    """The first `WORDS_NAMED` of `words`, quoted and comma-separated, with "…" when there are more."""
    shown = ", ".join(f'"{word}"' for word in words[:WORDS_NAMED])
    return f"{shown}, …" if len(words) > WORDS_NAMED else shown
