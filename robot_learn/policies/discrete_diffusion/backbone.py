"""Transformer backbones over the token sequence [observation prefix | action tokens].

Both map embeddings ``[B, N, D]`` to hidden states ``[B, N, D]``:

- :class:`TinyTransformer`, trained from scratch (the CPU default). With
  ``prefix_cached=True`` observation tokens attend only to each other while action
  tokens attend to everything; the prefix's keys and values then do not depend on
  the action tokens, so decoding computes them once (:meth:`encode_prefix`) and each
  round runs only the action tokens (:meth:`forward_actions`).
- :class:`HFBackbone`, a ``transformers`` encoder loaded from a local directory
  (never downloaded) or built from a config dict, optionally with peft LoRA adapters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

# Per layer: (keys, values) of the prefix tokens, each [B, heads, P, head_dim]; plus the prefix pad mask.
PrefixCache = tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]


class Block(nn.Module):
    """Pre-norm transformer block: multi-head self-attention + MLP."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float = 4.0, dropout: float = 0.0) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.dropout = nn.Dropout(dropout)

    def _split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        return q, k, v

    def forward(self, x: torch.Tensor, allowed: torch.Tensor, extra_kv: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """``allowed`` (bool, True = may attend) broadcasts to [B, heads, N, keys]. ``extra_kv``
        are cached keys/values put before this sequence's own. Returns (x, own (k, v))."""
        q, k, v = self._split(x)
        keys, values = (k, v) if extra_kv is None else (torch.cat([extra_kv[0], k], 2), torch.cat([extra_kv[1], v], 2))
        attended = F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed)
        b, _, n, _ = attended.shape
        x = x + self.dropout(self.proj(attended.transpose(1, 2).reshape(b, n, -1)))
        x = x + self.dropout(self.mlp(self.norm2(x)))
        return x, (k, v)


class TinyTransformer(nn.Module):
    """A small bidirectional transformer trained from scratch (see the module docstring)."""

    supports_prefix_cache = True

    def __init__(self, dim: int, layers: int, heads: int, mlp_ratio: float = 4.0, dropout: float = 0.0,
                 prefix_cached: bool = True) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, heads, mlp_ratio, dropout) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.prefix_cached = bool(prefix_cached)

    def forward(self, x: torch.Tensor, prefix_len: int, prefix_pad: torch.Tensor) -> torch.Tensor:
        """Whole sequence ``[B, N, D]`` whose first ``prefix_len`` tokens are the observation
        (``prefix_pad`` [B, prefix_len] marks padding to ignore)."""
        b, n, _ = x.shape
        key_ok = torch.cat([~prefix_pad, prefix_pad.new_ones(b, n - prefix_len)], dim=1)  # [B, N]
        allowed = key_ok[:, None, None, :].expand(b, 1, n, n)
        if self.prefix_cached:
            # Observation rows may not look at action columns.
            block = torch.ones(n, n, dtype=torch.bool, device=x.device)
            block[:prefix_len, prefix_len:] = False
            allowed = allowed & block
        for layer in self.blocks:
            x, _ = layer(x, allowed)
        return self.norm(x)

    def encode_prefix(self, prefix: torch.Tensor, prefix_pad: torch.Tensor) -> PrefixCache:
        """Keys and values of the observation tokens at every layer (needs ``prefix_cached``)."""
        if not self.prefix_cached:
            raise RuntimeError("encode_prefix needs prefix_cached=True (attention='prefix_cached')")
        b, p, _ = prefix.shape
        allowed = (~prefix_pad)[:, None, None, :].expand(b, 1, p, p)
        cache = []
        x = prefix
        for layer in self.blocks:
            x, kv = layer(x, allowed)
            cache.append(kv)
        return cache, prefix_pad

    def forward_actions(self, actions: torch.Tensor, cache: PrefixCache) -> torch.Tensor:
        """Hidden states of the action tokens ``[B, L, D]`` given the cached prefix."""
        kvs, prefix_pad = cache
        b, n, _ = actions.shape
        key_ok = torch.cat([~prefix_pad, prefix_pad.new_ones(b, n)], dim=1)
        allowed = key_ok[:, None, None, :].expand(b, 1, n, key_ok.shape[1])
        x = actions
        for layer, kv in zip(self.blocks, kvs):
            x, _ = layer(x, allowed, extra_kv=kv)
        return self.norm(x)


class HFBackbone(nn.Module):
    """A ``transformers`` encoder (BERT-like: bidirectional) fed with ``inputs_embeds``.

    Linear maps adapt our token width ``dim`` to the model's ``hidden_size`` and back.
    ``lora_rank > 0`` freezes the model and trains LoRA adapters on ``lora_targets``
    (needs the ``peft`` package). Its weights are saved with the policy, so a
    checkpoint reloads without the original directory only when built from a config.
    """

    supports_prefix_cache = False

    def __init__(self, dim: int, path: str = "", config: Mapping[str, Any] | None = None, lora_rank: int = 0,
                 lora_alpha: float = 16.0, lora_targets: Sequence[str] = ("query", "value")) -> None:
        super().__init__()
        from transformers import AutoConfig, AutoModel

        if path:
            if not Path(path).is_dir():
                raise ValueError(f"hf backbone path {path!r} is not a directory (nothing is downloaded)")
            try:
                model = AutoModel.from_pretrained(path, local_files_only=True)
            except (OSError, ValueError) as error:
                raise ValueError(f"cannot load a transformers model from {path!r}: {error}") from error
        else:
            settings = dict(config or {})
            model_type = settings.pop("model_type", None)
            if model_type is None:
                raise ValueError("hf_config needs 'model_type' (e.g. 'bert') when hf_path is empty")
            model = AutoModel.from_config(AutoConfig.for_model(model_type, **settings))
        size = int(model.config.hidden_size)
        if lora_rank > 0:
            try:
                from peft import LoraConfig, get_peft_model
            except ImportError as error:
                raise ValueError("lora_rank > 0 needs the 'peft' package (pip install peft)") from error
            model = get_peft_model(model, LoraConfig(r=int(lora_rank), lora_alpha=float(lora_alpha),
                                                     target_modules=list(lora_targets), lora_dropout=0.0))
        self.model = model
        self.project_in = nn.Linear(dim, size)
        self.project_out = nn.Linear(size, dim)

    def forward(self, x: torch.Tensor, prefix_len: int, prefix_pad: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        key_ok = torch.cat([~prefix_pad, prefix_pad.new_ones(b, n - prefix_len)], dim=1)
        hidden = self.model(inputs_embeds=self.project_in(x), attention_mask=key_ok.long()).last_hidden_state
        return self.project_out(hidden)
