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
