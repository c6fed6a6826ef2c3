"""An MLP with a skip connection, written with functional calls in forward."""

import torch
import torch.nn.functional as F
from torch import nn


class SkipMLP(nn.Module):
    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 5) -> None:
        super().__init__()
        self.inp = nn.Linear(features, hidden)
        self.hidden = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Dropout(0.1))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(x, 1)
        h = F.relu(self.inp(x))
        h = h + self.hidden(h)  # the skip connection
        return self.head(self.norm(h))
