"""The optimizer and its parameter groups (weight decay on weights only, as nanoGPT does)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from engine.train.config import TrainConfig
from engine.train.errors import TrainingError

__all__ = ["NORM_LAYERS", "make_optimizer", "parameter_groups"]

# Layers whose every parameter is a scale or shift of normalised values: never decayed, whatever
# their shape (a LayerNorm over (C, H, W) has a 3-D weight).
NORM_LAYERS: tuple[type[nn.Module], ...] = (
    nn.modules.batchnorm._NormBase,  # BatchNorm1d/2d/3d, SyncBatchNorm, InstanceNorm*
    nn.LayerNorm,
    nn.GroupNorm,
    nn.LocalResponseNorm,
    nn.RMSNorm,
)


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """Trainable parameters split into a decayed and a not-decayed group.

    Weight matrices and convolution kernels (2-D and more) are decayed; biases, other 1-D
    parameters and every parameter of a normalisation layer are not (nanoGPT's
    `configure_optimizers`). With `weight_decay` 0 there is one group: nothing to split.
    Empty groups are left out; each parameter appears once, in `model.named_parameters()` order.
    """
    trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        raise TrainingError("the model has no trainable parameters")
    if weight_decay == 0:
        return [{"params": [p for _, p in trainable], "weight_decay": 0.0}]
    in_norm_layer = {
        id(p)
        for module in model.modules()
        if isinstance(module, NORM_LAYERS)
        for p in module.parameters(recurse=False)
    }
    decay = [p for _, p in trainable if p.dim() >= 2 and id(p) not in in_norm_layer]
    no_decay = [p for _, p in trainable if p.dim() < 2 or id(p) in in_norm_layer]
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return [g for g in groups if g["params"]]


def make_optimizer(
    model: nn.Module, cfg: TrainConfig, *, decay_every_parameter: bool = False
) -> torch.optim.Optimizer:
    """The config's optimizer over `parameter_groups(model, weight_decay)`.

    `decay_every_parameter` puts every parameter in one group decayed alike, as runs did before
    the groups existed: resuming one of their checkpoints goes on exactly as it started.
    """
    o = cfg.optimizer
    if decay_every_parameter:
        groups = parameter_groups(model, 0.0)
        groups[0]["weight_decay"] = o.weight_decay
    else:
        groups = parameter_groups(model, o.weight_decay)
    if o.name == "sgd":
        return torch.optim.SGD(groups, lr=o.lr, momentum=o.momentum, nesterov=o.nesterov)
    if o.name == "adam":
        return torch.optim.Adam(groups, lr=o.lr, betas=o.betas)
    if o.name == "adamw":
        return torch.optim.AdamW(groups, lr=o.lr, betas=o.betas)
    return torch.optim.RMSprop(groups, lr=o.lr, momentum=o.momentum)
