"""A small Transformer encoder over token ids: embedding, encoder layers, mean pooling, head."""

import torch
from torch import nn


class TinyEncoder(nn.Module):
    def __init__(self, vocab: int = 50, d_model: int = 16, heads: int = 2, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=32, dropout=0.1, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.block = nn.TransformerEncoderLayer(
            d_model, heads, 32, 0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.head = nn.Linear(d_model, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        h = self.block(self.encoder(h))
        return self.head(h.mean(dim=1))


class GridIds(nn.Module):
    """Token ids in a grid, flattened before the embedding: the input does not feed it directly."""

    def __init__(self, vocab: int = 20) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(torch.flatten(ids, 1)).mean(dim=1))
