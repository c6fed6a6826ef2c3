"""PNG renderings of attributions: a heat map over an image, bars over tabular features.

Matplotlib is used through its object API with the Agg canvas only, so importing this module
never changes the process-wide backend.
"""

from __future__ import annotations

import io

import numpy as np
import torch

__all__ = ["render_png", "is_image_shape"]

_MAX_BARS = 20


def is_image_shape(shape: tuple[int, ...]) -> bool:
    """True for per-sample shapes drawn as a picture: (H, W) or (C, H, W)."""
    return len(shape) in (2, 3) and shape[-1] > 1 and shape[-2] > 1


def _to_picture(x: np.ndarray) -> tuple[np.ndarray, str | None]:
    """(C,H,W) or (H,W) -> an (H,W) or (H,W,3) array in [0, 1] and the colormap to use."""
    if x.ndim == 3 and x.shape[0] == 3:
        pic = np.transpose(x, (1, 2, 0))
        cmap = None
    else:
        pic = x.reshape(-1, *x.shape[-2:]).mean(axis=0)
        cmap = "gray"
    lo, hi = float(pic.min()), float(pic.max())
    pic = (pic - lo) / (hi - lo) if hi > lo else np.zeros_like(pic)
    return pic, cmap


def _figure_png(fig) -> bytes:  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _image_png(x: np.ndarray, attr: np.ndarray, title: str, signed: bool) -> bytes:
    from matplotlib.figure import Figure

    pic, cmap = _to_picture(x)
    # Channels are summed: one attribution value per pixel.
    heat = attr.reshape(-1, *attr.shape[-2:]).sum(axis=0)
    fig = Figure(figsize=(6.4, 3.4))
    left, right = fig.subplots(1, 2)
    left.imshow(pic, cmap=cmap, interpolation="nearest")
    left.set_title("input")
    right.imshow(pic, cmap=cmap, interpolation="nearest", alpha=0.5)
    if signed:
        bound = float(np.abs(heat).max()) or 1.0
        shown = right.imshow(heat, cmap="bwr", vmin=-bound, vmax=bound, alpha=0.7,
                             interpolation="nearest")
    else:
        shown = right.imshow(heat, cmap="inferno", alpha=0.7, interpolation="nearest")
    right.set_title("attribution")
    for ax in (left, right):
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(shown, ax=right, fraction=0.046, pad=0.04)
    fig.suptitle(title)
    fig.tight_layout()
    return _figure_png(fig)


def _bars_png(attr: np.ndarray, names: list[str], title: str) -> bytes:
    from matplotlib.figure import Figure

    values = attr.reshape(-1)
    order = np.argsort(-np.abs(values))[:_MAX_BARS]
    shown = values[order][::-1]  # largest at the top
    labels = [names[i] for i in order][::-1]
    fig = Figure(figsize=(6.4, max(2.0, 0.32 * len(shown) + 1.0)))
    ax = fig.subplots()
    colors = ["#c0392b" if v >= 0 else "#2e6fb5" for v in shown]
    ax.barh(range(len(shown)), shown, color=colors)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels(labels)
    ax.axvline(0.0, color="#444444", linewidth=0.8)
    ax.set_xlabel("attribution")
    hidden = values.size - len(shown)
    ax.set_title(title + (f" (top {len(shown)}, {hidden} more)" if hidden > 0 else ""))
    fig.tight_layout()
    return _figure_png(fig)


def render_png(
    x: torch.Tensor,
    attributions: torch.Tensor,
    *,
    feature_names: list[str] | None = None,
    title: str = "",
    signed: bool = True,
) -> bytes:
    """Draw one sample's attributions; `x` and `attributions` have the per-sample shape."""
    xs = x.detach().float().cpu().numpy()
    attr = attributions.detach().float().cpu().numpy()
    if is_image_shape(tuple(xs.shape)):
        return _image_png(xs, attr, title, signed)
    names = feature_names or [f"feature_{i}" for i in range(attr.size)]
    return _bars_png(attr, names, title)
