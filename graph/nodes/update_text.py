"""The update of a free-text kind (the instructions): the whole text rewritten with one model call, no trustcall."""

from langchain_core.messages import HumanMessage

from graph.backends.model import model_errors, quiet
from graph.memory.changes import MemoryChange
from graph.memory.rendering import capitalized
from graph.memory.store import namespace
from graph.nodes.extraction import UnusableOutputError
from graph.nodes.update import UpdateRequest
from prompts import EMPTY_TEXT_PROBLEM, TEXT_REQUEST, TEXT_UNCHANGED, TEXT_UPDATED


def propose_text(request: UpdateRequest) -> list[MemoryChange]:
    """The complete new text, asked of the model (an unchanged text is dropped by the commit); from a model that
    answers in JSON, only a text grounded in what the user said and the current text (else no change).

    Raises `UnusableOutputError` when the model answers with no text: the text was to change, and did not.
    """
    kind = request.kind
    current = request.store.get(namespace(kind, request.user_id), kind.key)
    before = current.value if current else None
    instruction = kind.instruction.format(
        current=(before or {}).get("memory", ""), memory=kind.title, description=kind.description
    )
    prompt = [*request.prompt(instruction), HumanMessage(content=TEXT_REQUEST.format(memory=kind.title))]
    with model_errors():
        text = quiet(request.model).invoke(prompt, request.config).text.strip()
    if not text:
        raise UnusableOutputError(EMPTY_TEXT_PROBLEM)
    if request.answers_in_json and not request.user_words((before or {}).get("memory", "")).grounds(text):
        return []
    after = kind.schema(memory=text).model_dump()
    return [MemoryChange("updated" if before else "created", kind.key, before, after)]


def report_text(request: UpdateRequest, saved: list[MemoryChange]) -> str:
    """Whether the text changed."""
    memory = request.kind.title
    return TEXT_UPDATED.format(Memory=capitalized(memory)) if saved else TEXT_UNCHANGED.format(memory=memory)
