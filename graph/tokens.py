"""Offline, CJK-aware token estimates for prompts (no tokenizer download)."""

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

CHARS_PER_TOKEN = 4.0
# Chinese, Japanese and Korean characters: about one token each, not a quarter of one.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff00-\uffef]")


def cjk_characters(text: str) -> int:
    """How many CJK characters `text` holds."""
    return len(_CJK.findall(text))


def count_text_tokens(text: str) -> int:
    """Estimated tokens of a plain string: one per CJK character, one per four other characters."""
    cjk = cjk_characters(text)
    return cjk + round((len(text) - cjk) / CHARS_PER_TOKEN)


def count_tokens(messages: Sequence[BaseMessage]) -> int:
    """Estimated prompt tokens of messages, counting CJK characters as a token each."""
    approximate = count_tokens_approximately(messages, chars_per_token=CHARS_PER_TOKEN)
    cjk = sum(cjk_characters(message.text) for message in messages)
    return approximate + round(cjk * (1 - 1 / CHARS_PER_TOKEN))
