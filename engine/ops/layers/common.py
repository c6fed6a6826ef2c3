"""What the layer modules share: the parameter mapping, the input layouts, the eps parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.ops.rules import float_param

P = Mapping[str, Any]
# The input layout of an op over 1, 2 or 3 spatial dimensions (channels first).
LAYOUTS = {1: "[C, L]", 2: "[C, H, W]", 3: "[C, D, H, W]"}
EPS = float_param("eps", 1e-5, "Added to the variance for numerical stability.", lo=0.0, hi=1.0)
