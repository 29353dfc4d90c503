"""A real model for the tests of this folder: SmolLM2-135M-Instruct on llama-server, started once per session.

Nothing is built or downloaded here: without a prepared server and model the tests fail with the one line that
prepares them (testing/llama_server.py). The server caps every reply at `REPLY_CAP` tokens so that a
run-away reply costs CI seconds, not the minutes it takes to fill the context.
"""

import pytest

from testing.llama_server import HarnessError, LlamaServer, serving

REPLY_CAP = 256
# A turn of a tiny model on a busy 2-core machine takes tens of seconds; the default 60 s would cut a slow answer.
MODEL_TIMEOUT_SECONDS = 600


@pytest.fixture(scope="session")
def llama() -> LlamaServer:
    """SmolLM2-135M on llama-server for the whole session."""
    try:
        with serving(n_predict=REPLY_CAP) as server:
            yield server
    except HarnessError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture
def real_model(llama: LlamaServer, monkeypatch: pytest.MonkeyPatch) -> LlamaServer:
    """The agent's endpoint settings pointed at the session's llama-server."""
    monkeypatch.setenv("OPENAI_BASE_URL", llama.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    monkeypatch.setenv("MAISTRO_MODEL", "smollm2-135m")
    monkeypatch.setenv("MAISTRO_MODEL_TIMEOUT", str(MODEL_TIMEOUT_SECONDS))
    # The default: SmolLM2 answers the pre-check without a call, so its memory updates are asked as JSON.
    monkeypatch.setenv("MAISTRO_CALL_MODE", "auto")
    return llama
