"""Token counting for context budgets: a model's own tokenizer, or a documented estimate."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Protocol

from memwell.contract.errors import InvalidArgumentError

#: The estimate's characters per token (the reference's chunking rule of thumb).
CHARS_PER_TOKEN = 4


class TokenCounter(Protocol):
    """Counts the tokens of a text; ``name`` says which tokenizer (shown in results)."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


class EstimatedTokens:
    """``ceil(characters / 4)``: no tokenizer needed; English prose runs ~4 characters per
    token in GPT- and BERT-style vocabularies, so budgets come out about right."""

    name = "estimate (4 characters per token)"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / CHARS_PER_TOKEN)


class TokenizerFile:
    """A Hugging Face ``tokenizer.json`` (through the ``tokenizers`` package), untruncated."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self.path = path
        self._tokenizer: Any = Tokenizer.from_file(str(path))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self.name = f"tokenizer {path.parent.name}/{path.name}"

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


def counter_for(provider: object | None, tokenizer: Path | None = None) -> TokenCounter:
    """The counter to use: ``tokenizer`` when given, else the embedding provider's own
    ``tokenizer_file()`` (the local model has one), else :class:`EstimatedTokens`.

    :raises ValueError: ``tokenizer`` is given but cannot be loaded.
    """
    if tokenizer is not None:
        try:
            return TokenizerFile(tokenizer)
        except Exception as exc:
            raise InvalidArgumentError(f"cannot load tokenizer {tokenizer}: {exc}") from exc
    method = getattr(provider, "tokenizer_file", None)
    path = method() if callable(method) else None
    if isinstance(path, Path):
        try:
            return TokenizerFile(path)
        except Exception:  # no ``tokenizers`` package or an unreadable file: estimate
            return EstimatedTokens()
    return EstimatedTokens()
