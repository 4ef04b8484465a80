"""Instruction encoders: a tiny vocabulary model trained from scratch, or a frozen
pretrained ``transformers`` model loaded from a local path.

Both map a list of B strings to ``[B, out_dim]`` features on the module's device.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

_WORD = re.compile(r"[a-z0-9]+")
PAD_TOKEN, UNK_TOKEN = "<pad>", "<unk>"


def split_words(text: str) -> list[str]:
    """Lower-case words of ``text`` (punctuation dropped)."""
    return _WORD.findall(text.lower())


def batch_instructions(obs: Mapping[str, Any], batch: int) -> list[str]:
    """The B instructions of an observation batch (one string is repeated B times);
    ValueError when they are missing or their count differs from ``batch``."""
    instructions = obs.get("instruction")
    if instructions is None:
        raise ValueError("this policy is language-conditioned: the observation needs 'instruction' (list of B strings)")
    if isinstance(instructions, str):
        return [instructions] * batch
    if len(instructions) != batch:
        raise ValueError(f"got {len(instructions)} instructions for a batch of {batch}")
    return list(instructions)


def build_vocab(instructions: Iterable[str]) -> list[str]:
    """Sorted distinct words of ``instructions``: the vocabulary stored in the policy config."""
    words: set[str] = set()
    for text in instructions:
        words.update(split_words(str(text)))
    return sorted(words)


class TextEncoder(nn.Module, ABC):
    """Interface: ``forward(instructions) -> [B, out_dim]``."""

    out_dim: int

    @abstractmethod
    def forward(self, instructions: Sequence[str]) -> torch.Tensor:
        """Encode B instruction strings."""

    def _device(self) -> torch.device:
        return next(self.parameters()).device


class VocabTextEncoder(TextEncoder):
    """Word embeddings + a small transformer encoder, mean-pooled; trained from scratch.

    Token ids: 0 is padding, 1 is ``<unk>`` (any word not in ``vocab``), then the
    vocabulary in order, so a saved vocabulary reproduces the ids exactly.
    """

    def __init__(self, vocab: Sequence[str], dim: int = 64, max_len: int = 16, num_layers: int = 1, num_heads: int = 4) -> None:
        super().__init__()
        if not vocab:
            raise ValueError("VocabTextEncoder needs a non-empty vocabulary; build one with build_vocab(instructions)")
        self.vocab = list(vocab)
        self.word_ids = {word: index + 2 for index, word in enumerate(self.vocab)}
        self.max_len = int(max_len)
        self.token_embedding = nn.Embedding(len(self.vocab) + 2, dim, padding_idx=0)
        self.position_embedding = nn.Embedding(self.max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, num_heads, dim_feedforward=2 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.out_dim = int(dim)
        self._cache: dict[str, list[int]] = {}

    def token_ids(self, text: str) -> list[int]:
        """Ids of ``text``'s words (truncated to ``max_len``; an empty text is one ``<unk>``)."""
        ids = self._cache.get(text)
        if ids is None:
            ids = [self.word_ids.get(word, 1) for word in split_words(text)][: self.max_len] or [1]
            self._cache[text] = ids
        return ids

    def forward(self, instructions: Sequence[str]) -> torch.Tensor:
        if isinstance(instructions, str):
            raise TypeError("instructions must be a list of strings, one per batch item, not a single string")
        rows = [self.token_ids(str(text)) for text in instructions]
        length = max(len(row) for row in rows)
        device = self._device()
        ids = torch.zeros(len(rows), length, dtype=torch.long, device=device)
        for index, row in enumerate(rows):
            ids[index, : len(row)] = torch.tensor(row, device=device)
        pad = ids == 0
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(length, device=device))
        x = self.encoder(x, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).to(x.dtype)
        return self.norm((x * keep).sum(1) / keep.sum(1))


class PretrainedTextEncoder(TextEncoder):
    """A frozen ``transformers`` AutoModel + AutoTokenizer from a local directory,
    mean-pooled over tokens, followed by a trainable linear projection.

    Nothing is downloaded (``local_files_only=True``). The frozen model is kept out
    of ``parameters()`` and ``state_dict()`` (so optimisers, EMA and checkpoints
    skip it; checkpoints record ``path`` and reload it from there) but still follows
    ``.to(device)``.
    """

    def __init__(self, path: str | Path, out_dim: int = 64, max_len: int = 32) -> None:
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        path = Path(path)
        if not path.is_dir():
            raise ValueError(f"pretrained text encoder path {str(path)!r} is not a directory")
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            model = AutoModel.from_pretrained(str(path), local_files_only=True)
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot load a pretrained text model from {str(path)!r}: {error}") from error
        model.eval()
        model.requires_grad_(False)
        self.path = str(path)
        self.tokenizer = tokenizer
        self._frozen = [model]  # a list hides it from nn.Module registration
        self.max_len = int(max_len)
        self.projection = nn.Linear(int(model.config.hidden_size), out_dim)
        self.out_dim = int(out_dim)

    @property
    def model(self) -> nn.Module:
        return self._frozen[0]

    def _apply(self, fn, recurse: bool = True):  # type: ignore[override]
        # Keep the hidden frozen model on the same device/dtype as the rest.
        super()._apply(fn, recurse)
        self._frozen[0]._apply(fn, recurse)
        return self

    def forward(self, instructions: Sequence[str]) -> torch.Tensor:
        if isinstance(instructions, str):
            raise TypeError("instructions must be a list of strings, one per batch item, not a single string")
        device = self.projection.weight.device
        tokens = self.tokenizer(
            [str(text) for text in instructions], padding=True, truncation=True, max_length=self.max_len, return_tensors="pt"
        )
        tokens = {key: value.to(device) for key, value in tokens.items()}
        with torch.no_grad():
            # Only ids and mask: not every model takes token_type_ids.
            hidden = self.model(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"]).last_hidden_state.float()
        mask = tokens["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.projection(pooled)
