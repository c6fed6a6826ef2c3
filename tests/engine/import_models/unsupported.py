"""Models with parts the catalog lacks: a custom layer on a raw parameter, torch.fft, nn.Hardtanh."""

import torch
from torch import nn


class Scale(nn.Module):
    """A custom layer: multiplies by its own learned vector."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.ones(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gain


class Spectral(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.fft.fft(x).real


class Mixed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.scale = Scale(8)
        self.spectral = Spectral()
        self.clip = nn.Hardtanh()
        self.out = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.scale(self.fc(x))
        x = self.spectral(x)
        x = self.clip(x)
        return self.out(x)


class Branchy(nn.Module):
    """Data-dependent control flow: torch.fx cannot trace it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return self.fc(x)
        return x
