"""Transformer denoiser: action tokens attend to conditioning tokens.

Design (documented choice): the noisy chunk becomes Ta action tokens, processed by
a pre-norm transformer decoder. The conditioning is a short token sequence
``[timestep, obs_1 .. obs_To, instruction?]``, mixed by a small transformer
encoder and read through cross-attention. Self-attention among action tokens is
causal when ``causal=True`` (each action sees only earlier ones, as in the
diffusion-policy transformer) and bidirectional otherwise; cross-attention always
sees every conditioning token.
"""

from __future__ import annotations

import torch
from torch import nn

from robot_learn.policies.diffusion.timestep_embedding import SinusoidalTimestepEmbedding


class TransformerDenoiser(nn.Module):
    """``forward(sample [B, Ta, A], timesteps [B], obs_features [B, To, F], text_features [B, T] | None) -> [B, Ta, A]``."""

    def __init__(
        self,
        action_dim: int,
        action_horizon: int,
        obs_horizon: int,
        obs_feature_dim: int,
        text_feature_dim: int = 0,
        embed_dim: int = 128,
        num_layers: int = 4,
        num_heads: int = 4,
        num_cond_layers: int = 1,
        dropout: float = 0.0,
        causal: bool = True,
    ) -> None:
        super().__init__()
        self.causal = bool(causal)
        self.action_in = nn.Linear(action_dim, embed_dim)
        self.action_position = nn.Parameter(torch.zeros(1, action_horizon, embed_dim))
        self.timestep_embedding = nn.Sequential(SinusoidalTimestepEmbedding(embed_dim), nn.Linear(embed_dim, embed_dim))
        self.obs_in = nn.Linear(obs_feature_dim, embed_dim)
        self.text_in = nn.Linear(text_feature_dim, embed_dim) if text_feature_dim else None
        num_cond = 1 + obs_horizon + (1 if text_feature_dim else 0)
        self.cond_position = nn.Parameter(torch.zeros(1, num_cond, embed_dim))

        def encoder_layer() -> nn.TransformerEncoderLayer:
            return nn.TransformerEncoderLayer(
                embed_dim, num_heads, 4 * embed_dim, dropout, activation="gelu", batch_first=True, norm_first=True
            )

        self.cond_encoder = (
            nn.TransformerEncoder(encoder_layer(), num_cond_layers, enable_nested_tensor=False)
            if num_cond_layers > 0
            else nn.Sequential(nn.Linear(embed_dim, 4 * embed_dim), nn.Mish(), nn.Linear(4 * embed_dim, embed_dim))
        )
        decoder_layer = nn.TransformerDecoderLayer(
            embed_dim, num_heads, 4 * embed_dim, dropout, activation="gelu", batch_first=True, norm_first=True
        )
        self.decoder = nn.TransformerDecoder(decoder_layer, num_layers)
        self.final_norm = nn.LayerNorm(embed_dim)
        self.action_out = nn.Linear(embed_dim, action_dim)
        mask = torch.triu(torch.full((action_horizon, action_horizon), float("-inf")), diagonal=1)
        self.register_buffer("causal_mask", mask, persistent=False)
        nn.init.normal_(self.action_position, std=0.02)
        nn.init.normal_(self.cond_position, std=0.02)

    def forward(
        self,
        sample: torch.Tensor,
        timesteps: torch.Tensor,
        obs_features: torch.Tensor,
        text_features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        cond = [self.timestep_embedding(timesteps).unsqueeze(1), self.obs_in(obs_features)]
        if self.text_in is not None:
            if text_features is None:
                raise ValueError("this denoiser was built with text conditioning but got no text features")
            cond.append(self.text_in(text_features).unsqueeze(1))
        memory = self.cond_encoder(torch.cat(cond, dim=1) + self.cond_position)
        x = self.action_in(sample) + self.action_position[:, : sample.shape[1]]
        length = sample.shape[1]
        mask = self.causal_mask[:length, :length] if self.causal else None
        # tgt_is_causal: the mask is causal by construction; without it torch checks the mask's
        # values, which torch.compile cannot trace whole (compile_inference)
        x = self.decoder(x, memory, tgt_mask=mask, tgt_is_causal=self.causal)
        return self.action_out(self.final_norm(x))
