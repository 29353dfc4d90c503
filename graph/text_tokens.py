"""Token estimates of plain text, offline and CJK-aware (no tokenizer download).

It sits below every package of `graph/`: long-term memory (`graph.memory`) measures what a prompt shows with it,
and the thread (`graph.thread.tokens`) measures messages with it.
"""

import re

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
