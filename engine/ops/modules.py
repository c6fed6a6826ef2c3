"""Small wrapper modules for ops whose PyTorch module returns more than one tensor.

Codegen copies these classes verbatim into the generated source, so this file may only
use `torch` and `torch.nn`. Subclassing (not wrapping) keeps parameter names flat:
`gru.weight_ih_l0`, `attn.in_proj_weight`.
"""

import torch
from torch import nn


class LSTMLayer(nn.LSTM):
    """Batch-first LSTM over (B, T, F) returning the output sequence or the last hidden state."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
        output: str = "sequence",
    ) -> None:
        super().__init__(
            input_size,
            hidden_size,
            num_layers=num_layers,
            bias=bias,
            batch_first=True,
            dropout=dropout,
            bidirectional=bidirectional,
        )
        self.output = output

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        sequence, (h_n, _) = super().forward(x)  # (B, T, D*H), (D*L, B, H)
        if self.output == "sequence":
            return sequence
        if self.bidirectional:
            return torch.cat([h_n[-2], h_n[-1]], dim=-1)  # (B, 2*H)
        return h_n[-1]  # (B, H)


class GRULayer(nn.GRU):
    """Batch-first GRU over (B, T, F) returning the output sequence or the last hidden state."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
        output: str = "sequence",
    ) -> None:
        super().__init__(
            input_size,
            hidden_size,
            num_layers=num_layers,
            bias=bias,
            batch_first=True,
            dropout=dropout,
            bidirectional=bidirectional,
        )
        self.output = output

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        sequence, h_n = super().forward(x)  # (B, T, D*H), (D*L, B, H)
        if self.output == "sequence":
            return sequence
        if self.bidirectional:
            return torch.cat([h_n[-2], h_n[-1]], dim=-1)  # (B, 2*H)
        return h_n[-1]  # (B, H)


class SelfAttention(nn.MultiheadAttention):
    """Batch-first multi-head self-attention over (B, T, E); returns only the output."""

    def __init__(
        self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True
    ) -> None:
        super().__init__(embed_dim, num_heads, dropout=dropout, bias=bias, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        out, _ = super().forward(x, x, x, need_weights=False)
        return out  # (B, T, E)


class DecoderLayer(nn.TransformerDecoderLayer):
    """Batch-first Transformer decoder block over (B, T, E) reading memory (B, S, E); `causal`
    lets each position attend only to itself and earlier positions."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
        norm_first: bool = False,
        causal: bool = True,
    ) -> None:
        super().__init__(
            d_model,
            nhead,
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            activation=activation,
            layer_norm_eps=layer_norm_eps,
            batch_first=True,
            norm_first=norm_first,
        )
        self.causal = causal

    def forward(self, tgt: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        if not self.causal:
            return super().forward(tgt, memory)
        size = tgt.shape[1]
        mask = torch.full((size, size), float("-inf"), device=tgt.device, dtype=tgt.dtype).triu(1)
        return super().forward(tgt, memory, tgt_mask=mask, tgt_is_causal=True)  # (B, T, E)


class PositionalEmbedding(nn.Module):
    """A learned vector per position added to a (B, T, E) sequence (GPT-2 style)."""

    def __init__(self, max_len: int, embedding_dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(max_len, embedding_dim))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.weight[: x.shape[1]]  # (B, T, E)
