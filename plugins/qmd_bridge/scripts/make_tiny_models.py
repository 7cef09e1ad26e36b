"""Write three tiny random-weight GGUF models that qmd (llama.cpp) can load, offline.

    python make_tiny_models.py OUT_DIR

writes ``OUT_DIR/tiny-embed.gguf`` (BERT, mean pooling), ``OUT_DIR/tiny-rerank.gguf`` (BERT,
rank pooling with a classification head) and ``OUT_DIR/tiny-gen.gguf`` (llama, byte-level BPE,
ChatML template) and prints their paths, one per line, in that order. Each is a few hundred KB.

They exercise qmd's ``embed``, ``vsearch`` and ``query`` plumbing without downloading anything:
embeddings are deterministic (seeded) but meaningless, and the generate model's weights are
degenerate on purpose so that query expansion emits one short line and stops (qmd then uses its
built-in expansion). Never use them to judge relevance. Needs the PyPI package ``gguf``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import gguf
import numpy as np

_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789") + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


class _Tensors:
    """Adds float32 tensors to a writer: seeded random values, or a constant."""

    def __init__(self, writer: gguf.GGUFWriter, seed: int) -> None:
        self.writer = writer
        self.rng = np.random.default_rng(seed)

    def add(
        self, name: str, shape: tuple[int, ...], scale: float = 0.1, const: float | None = None
    ) -> None:
        # numpy shapes are reversed relative to ggml's ne order
        if const is not None:
            arr = np.full(shape, const, dtype=np.float32)
        else:
            arr = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.writer.add_tensor(name, arr)


def _finish(writer: gguf.GGUFWriter) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _bert_vocab() -> tuple[list[str], list[gguf.TokenType]]:
    toks = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    toks += ["\u2581" + c for c in _CHARS]  # word-initial pieces (phantom space)
    toks += [c for c in _CHARS if c not in toks]  # continuation pieces
    types = [
        gguf.TokenType.CONTROL
        if t.startswith("[") and t.endswith("]") and len(t) > 1
        else gguf.TokenType.NORMAL
        for t in toks
    ]
    return toks, types


def write_bert(out_path: Path, kind: str) -> None:
    """A 1-layer, 32-dim BERT; ``kind`` is ``"embed"`` (mean pooling) or ``"rerank"``."""
    n_embd, n_layer, n_head, n_ff, n_ctx = 32, 1, 2, 64, 2048
    toks, types = _bert_vocab()
    w = gguf.GGUFWriter(str(out_path), "bert")
    w.add_name(f"memwell-test-tiny-bert-{kind}")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_block_count(n_layer)
    w.add_head_count(n_head)
    w.add_layer_norm_eps(1e-12)
    w.add_causal_attention(False)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_pooling_type(gguf.PoolingType.RANK if kind == "rerank" else gguf.PoolingType.MEAN)
    w.add_tokenizer_model("bert")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_type_count(2)
    w.add_pad_token_id(0)
    w.add_unk_token_id(100)
    w.add_bos_token_id(101)
    w.add_sep_token_id(102)
    w.add_mask_token_id(103)
    w.add_add_bos_token(True)

    t = _Tensors(w, seed=0)
    t.add("token_embd.weight", (len(toks), n_embd), 0.5)
    t.add("token_types.weight", (2, n_embd), 0.02)
    t.add("position_embd.weight", (n_ctx, n_embd), 0.02)
    t.add("token_embd_norm.weight", (n_embd,), const=1.0)
    t.add("token_embd_norm.bias", (n_embd,), const=0.0)
    for i in range(n_layer):
        for nm in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t.add(f"blk.{i}.{nm}.weight", (n_embd, n_embd))
            t.add(f"blk.{i}.{nm}.bias", (n_embd,), const=0.0)
        t.add(f"blk.{i}.attn_output_norm.weight", (n_embd,), const=1.0)
        t.add(f"blk.{i}.attn_output_norm.bias", (n_embd,), const=0.0)
        t.add(f"blk.{i}.ffn_up.weight", (n_ff, n_embd))
        t.add(f"blk.{i}.ffn_up.bias", (n_ff,), const=0.0)
        t.add(f"blk.{i}.ffn_down.weight", (n_embd, n_ff))
        t.add(f"blk.{i}.ffn_down.bias", (n_embd,), const=0.0)
        t.add(f"blk.{i}.layer_output_norm.weight", (n_embd,), const=1.0)
        t.add(f"blk.{i}.layer_output_norm.bias", (n_embd,), const=0.0)
    if kind == "rerank":
        t.add("cls.weight", (n_embd, n_embd))
        t.add("cls.bias", (n_embd,), const=0.0)
        t.add("cls.output.weight", (1, n_embd))
        t.add("cls.output.bias", (1,), const=0.0)
    _finish(w)


def _bytes_to_unicode() -> dict[int, str]:
    bs = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


def write_llama(out_path: Path) -> None:
    """A 1-layer llama whose logits are fixed: end-of-turn first, then newline."""
    n_embd, n_layer, n_head, n_ff, n_ctx = 32, 1, 2, 64, 4096
    b2u = _bytes_to_unicode()
    toks = [b2u[b] for b in range(256)]
    types = [gguf.TokenType.NORMAL] * 256
    toks.append(b2u[ord(" ")] + "t")  # one merge so the merges array is non-empty
    types.append(gguf.TokenType.NORMAL)
    for special in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        toks.append(special)
        types.append(gguf.TokenType.CONTROL)
    w = gguf.GGUFWriter(str(out_path), "llama")
    w.add_name("memwell-test-tiny-llama")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_block_count(n_layer)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_vocab_size(len(toks))
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges([b2u[ord(" ")] + " t"])
    w.add_bos_token_id(toks.index("<|endoftext|>"))
    w.add_eos_token_id(toks.index("<|im_end|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
        "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    )

    # Identical token embeddings and zeroed attention/FFN give a constant hidden state, so the
    # logits are fixed: under qmd's expansion grammar that is one short line, then EOS.
    t = _Tensors(w, seed=1)
    t.add("token_embd.weight", (len(toks), n_embd), const=1.0)
    for i in range(n_layer):
        t.add(f"blk.{i}.attn_norm.weight", (n_embd,), const=1.0)
        for nm in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t.add(f"blk.{i}.{nm}.weight", (n_embd, n_embd), const=0.0)
        t.add(f"blk.{i}.ffn_norm.weight", (n_embd,), const=1.0)
        t.add(f"blk.{i}.ffn_gate.weight", (n_ff, n_embd), const=0.0)
        t.add(f"blk.{i}.ffn_up.weight", (n_ff, n_embd), const=0.0)
        t.add(f"blk.{i}.ffn_down.weight", (n_embd, n_ff), const=0.0)
    t.add("output_norm.weight", (n_embd,), const=1.0)
    out = np.zeros((len(toks), n_embd), dtype=np.float32)
    out[toks.index("<|im_end|>"), :] = 1.0
    out[toks.index(b2u[ord("\n")]), :] = 0.5
    w.add_tensor("output.weight", out)
    _finish(w)


def make_models(out_dir: Path) -> dict[str, Path]:
    """Write the three models into ``out_dir``; returns ``{"embed", "rerank", "generate"}``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "embed": out_dir / "tiny-embed.gguf",
        "rerank": out_dir / "tiny-rerank.gguf",
        "generate": out_dir / "tiny-gen.gguf",
    }
    write_bert(paths["embed"], "embed")
    write_bert(paths["rerank"], "rerank")
    write_llama(paths["generate"])
    return paths


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: make_tiny_models.py OUT_DIR", file=sys.stderr)
        return 2
    for path in make_models(Path(argv[0])).values():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
