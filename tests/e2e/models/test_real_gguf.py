"""newt's GGUF header reader (newt/local/models/gguf.py) on the real models the test
command caches in ~/.cache/newt-llama: SmolLM2-135M-Instruct, a chat model, and
all-MiniLM-L6-v2, an embedding model. The reader on made-up headers is in
tests/unit/local/models/test_local_models.py."""

from __future__ import annotations

from newt.local.models.gguf import read_info
from newt.local.server import default_model_path, embedding_model_path


def test_the_gguf_header_reader_reads_a_real_model() -> None:
    # The README's test command fetches both models (scripts/get_llama_server.sh)
    # before the first test runs; a missing one is a failure, not a skip.
    real, minilm = default_model_path(), embedding_model_path()
    assert real.is_file(), f"{real} is missing: run scripts/get_llama_server.sh"
    info = read_info(real)
    assert info.architecture == "llama" and not info.is_embedding
    assert minilm.is_file(), f"{minilm} is missing: run scripts/get_llama_server.sh"
    assert read_info(minilm).is_embedding
