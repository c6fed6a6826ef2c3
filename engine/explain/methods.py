"""Captum attributions for one sample of a trained model."""

from __future__ import annotations

import base64
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from engine.explain.render import is_image_shape, render_png

__all__ = ["explain", "Explanation", "ExplainError", "METHODS"]

METHODS: list[dict[str, Any]] = [
    {
        "name": "integrated_gradients",
        "label": "Integrated Gradients",
        "has_delta": True,
        "needs_layer": False,
        "help": "Gradients averaged along the straight path from a baseline to the input.",
    },
    {
        "name": "saliency",
        "label": "Saliency",
        "has_delta": False,
        "needs_layer": False,
        "help": "Absolute gradient of the target score with respect to each input value.",
    },
    {
        "name": "deeplift",
        "label": "DeepLift",
        "has_delta": True,
        "needs_layer": False,
        "help": "Differences from a baseline propagated back through the network.",
    },
    {
        "name": "gradient_shap",
        "label": "GradientSHAP",
        "has_delta": True,
        "needs_layer": False,
        "help": "Expected gradients over noisy samples between a baseline and the input.",
    },
    {
        "name": "occlusion",
        "label": "Occlusion",
        "has_delta": False,
        "needs_layer": False,
        "help": "How much the target score drops when a patch of the input is hidden.",
    },
    {
        "name": "grad_cam",
        "label": "Grad-CAM",
        "has_delta": False,
        "needs_layer": True,
        "help": "Class activation map of a convolution layer, scaled up to the input.",
    },
]
_METHOD_NAMES = [m["name"] for m in METHODS]
_MAX_IG_STEPS = 1600
_CONV = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.LazyConv1d, nn.LazyConv2d, nn.LazyConv3d)


class ExplainError(ValueError):
    """A request that cannot be explained (bad method, target, layer, input or names)."""


@dataclass
class Explanation:
    """Attributions for one sample, what the model predicted, and a rendering."""

    method: str
    attributions: torch.Tensor  # shaped like the input sample
    target: int
    prediction: int | float
    probabilities: list[float] | None
    delta: float | None
    png: bytes = field(repr=False)
    feature_names: list[str] | None = None
    layer: str | None = None
    output: list[float] = field(default_factory=list)
    n_steps: int | None = None  # integration steps actually used
    classes: list[str] | None = None  # the dataset's class names, in output order (classification)

    def to_json(self, *, include_png: bool = True) -> dict[str, Any]:
        """A JSON-able dict; the PNG as base64 when asked for."""
        doc: dict[str, Any] = {
            "method": self.method,
            "target": self.target,
            "prediction": self.prediction,
            "probabilities": self.probabilities,
            "output": self.output,
            "delta": self.delta,
            "n_steps": self.n_steps,
            "layer": self.layer,
            "shape": list(self.attributions.shape),
            "attributions": self.attributions.tolist(),
            "feature_names": self.feature_names,
            "classes": self.classes,
        }
        if include_png:
            doc["png_base64"] = base64.b64encode(self.png).decode("ascii")
        return doc


def _find_conv(model: nn.Module, layer: str | None) -> tuple[str, nn.Module]:
    if layer is None:
        convs = [(name, m) for name, m in model.named_modules() if isinstance(m, _CONV)]
        if not convs:
            raise ExplainError("grad_cam needs a convolution layer, and this model has none")
        return convs[-1]
    try:
        module = model.get_submodule(layer)
    except AttributeError:
        raise ExplainError(f"grad_cam: there is no node {layer!r} in this model") from None
    if not isinstance(module, _CONV):
        raise ExplainError(
            f"grad_cam needs a convolution node; node {layer!r} is a {type(module).__name__}"
        )
    return layer, module


def _occlusion_window(shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if is_image_shape(shape) and len(shape) == 3:
        side = max(1, min(shape[1], shape[2]) // 4)
        stride = max(1, side // 2)
        return (shape[0], side, side), (shape[0], stride, stride)
    if is_image_shape(shape):
        side = max(1, min(shape) // 4)
        stride = max(1, side // 2)
        return (side, side), (stride, stride)
    return tuple(1 for _ in shape), tuple(1 for _ in shape)


def explain(
    model: nn.Module,
    x: torch.Tensor,
    *,
    method: str = "integrated_gradients",
    target: int | None = None,
    layer: str | None = None,
    feature_names: list[str] | None = None,
    baseline: torch.Tensor | float | None = None,
    n_steps: int = 50,
    display: torch.Tensor | None = None,
    task: str | None = None,
    tolerance: float | None = 1e-2,
) -> Explanation:
    """Attribute the model's output for one sample to its input values.

    Args:
        model: a trained module with one output, `(B, *in) -> (B, K)`.
        x: one sample, shaped like the spec input (a leading batch dimension of 1 is accepted).
        method: one of `METHODS` names.
        target: output index to explain; defaults to the predicted class (0 for regression).
        layer: node id of a convolution for `grad_cam` (default: the last convolution).
        feature_names: names for tabular inputs, used by the bar chart.
        baseline: reference input (tensor shaped like `x`, or a number); zeros by default.
        n_steps: integration steps (Integrated Gradients; the first try), samples (GradientSHAP).
        display: what to draw under the heat map (e.g. the input before normalisation).
        task: "classification" or "regression" when the output alone does not say.
        tolerance: Integrated Gradients doubles `n_steps` (up to 1600) until the convergence
            delta is below this; None keeps `n_steps` as given.
    """
    if method not in _METHOD_NAMES:
        raise ExplainError(f"unknown method {method!r}; choose one of {', '.join(_METHOD_NAMES)}")
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(x)
    if not torch.is_floating_point(x):
        raise ExplainError(
            f"attributions need a float input; this input is {x.dtype} (token ids cannot be "
            "differentiated)"
        )
    if n_steps < 1:
        raise ExplainError("n_steps must be at least 1")
    try:
        device = next(model.parameters()).device
    except StopIteration:
        device = torch.device("cpu")
    model_dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    was_training = model.training
    model.eval()
    try:
        return _explain(
            model, x, method, target, layer, feature_names, baseline, n_steps, display, task,
            tolerance, device, model_dtype,
        )
    finally:
        model.train(was_training)


def _explain(
    model: nn.Module, x: torch.Tensor, method: str, target: int | None, layer: str | None,
    feature_names: list[str] | None, baseline: torch.Tensor | float | None, n_steps: int,
    display: torch.Tensor | None, task: str | None, tolerance: float | None,
    device: torch.device, dtype: torch.dtype,
) -> Explanation:
    from captum.attr import (
        DeepLift,
        GradientShap,
        IntegratedGradients,
        LayerAttribution,
        LayerGradCam,
        Occlusion,
        Saliency,
    )

    batched = x.unsqueeze(0) if _needs_batch(model, x) else x
    if batched.shape[0] != 1:
        raise ExplainError(f"explain takes one sample; got a batch of {batched.shape[0]}")
    sample_shape = tuple(batched.shape[1:])
    inputs = batched.to(device=device, dtype=dtype).detach()
    if baseline is None:
        base = torch.zeros_like(inputs)
    elif isinstance(baseline, (int, float)):
        base = torch.full_like(inputs, float(baseline))
    else:
        base = torch.as_tensor(baseline).to(device=device, dtype=dtype).reshape(inputs.shape)

    with torch.no_grad():
        out = model(inputs)
    if not isinstance(out, torch.Tensor):
        raise ExplainError(f"explain needs a model with one output; this one returns {len(out)}")
    out = out.float().reshape(1, -1)
    k = out.shape[1]
    is_classification = task == "classification" or (task is None and k > 1)
    probabilities: list[float] | None = None
    if is_classification and k > 1:
        probabilities = torch.softmax(out, dim=1)[0].tolist()
        prediction: int | float = int(out.argmax(dim=1).item())
    elif is_classification:
        p = float(torch.sigmoid(out[0, 0]).item())
        probabilities = [1.0 - p, p]
        prediction = int(p > 0.5)
    else:
        prediction = float(out[0, 0].item())
    if target is None:
        target = int(prediction) if (is_classification and k > 1) else 0
    if not isinstance(target, int) or not 0 <= target < k:
        raise ExplainError(f"target {target!r} is out of range: the model has {k} outputs (0..{k - 1})")
    # Captum indexes (B, K) outputs; a (B, 1) regression output is also indexed by 0.
    captum_target: int = target

    delta: float | None = None
    signed = True
    chosen_layer: str | None = None
    with warnings.catch_warnings():
        # Captum warns about things the user cannot act on (e.g. setting requires_grad).
        warnings.simplefilter("ignore", UserWarning)
        if method == "integrated_gradients":
            ig = IntegratedGradients(model)
            while True:
                # Chunks of at most 64 path points bound memory whatever n_steps grows to.
                attr, d = ig.attribute(
                    inputs, baselines=base, target=captum_target, n_steps=n_steps,
                    internal_batch_size=min(n_steps, 64), return_convergence_delta=True,
                )
                delta = float(d.abs().max())
                # ReLU networks make the path integrand a step function, so the error falls
                # only as 1/n_steps: refine until the delta is within tolerance.
                if tolerance is None or delta < tolerance or n_steps * 2 > _MAX_IG_STEPS:
                    break
                n_steps *= 2
        elif method == "saliency":
            attr = Saliency(model).attribute(inputs, target=captum_target, abs=True)
            signed = False
        elif method == "deeplift":
            attr, d = DeepLift(model).attribute(
                inputs, baselines=base, target=captum_target, return_convergence_delta=True
            )
            delta = float(d.abs().max())
        elif method == "gradient_shap":
            spread = float((inputs - base).abs().max()) or 1.0
            with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                torch.manual_seed(0)  # the same request gives the same answer
                attr, d = GradientShap(model).attribute(
                    inputs, baselines=torch.cat([base, base + 0.1 * spread * torch.randn_like(base)]),
                    n_samples=max(n_steps // 5, 5), stdevs=0.05 * spread, target=captum_target,
                    return_convergence_delta=True,
                )
            delta = float(d.abs().mean())
        elif method == "occlusion":
            window, strides = _occlusion_window(sample_shape)
            attr = Occlusion(model).attribute(
                inputs, sliding_window_shapes=window, strides=strides, baselines=base,
                target=captum_target,
            )
        else:
            chosen_layer, conv = _find_conv(model, layer)
            cam = LayerGradCam(model, conv).attribute(inputs, target=captum_target,
                                                      relu_attributions=True)
            spatial = tuple(inputs.shape[2:])
            if cam.dim() - 2 != len(spatial):
                raise ExplainError(
                    f"grad_cam: node {chosen_layer!r} has {cam.dim() - 2} spatial dims but the "
                    f"input has {len(spatial)}"
                )
            mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[len(spatial)]
            cam = LayerAttribution.interpolate(cam, spatial, interpolate_mode=mode)
            attr = cam.expand_as(inputs) / inputs.shape[1]  # channel sum gives the CAM back
            signed = False

    attributions = attr.detach().float().cpu().reshape(sample_shape)
    if not is_image_shape(sample_shape):
        n = attributions.numel()
        if feature_names is not None and len(feature_names) != n:
            raise ExplainError(
                f"feature_names has {len(feature_names)} names but the input has {n} values"
            )
    shown = display if display is not None else inputs[0]
    title = f"{_label(method)} - target {target}"
    png = render_png(
        shown.reshape(sample_shape), attributions, feature_names=feature_names, title=title,
        signed=signed,
    )
    return Explanation(
        method=method,
        attributions=attributions.reshape(x.shape),  # the caller's layout, batched or not
        target=target,
        prediction=prediction,
        probabilities=probabilities,
        delta=delta,
        png=png,
        feature_names=feature_names,
        layer=chosen_layer,
        output=out[0].tolist(),
        n_steps=n_steps if method in ("integrated_gradients", "gradient_shap") else None,
    )


def _label(method: str) -> str:
    return next(m["label"] for m in METHODS if m["name"] == method)


def _needs_batch(model: nn.Module, x: torch.Tensor) -> bool:
    """Whether `x` is one unbatched sample (the usual case) or already `(1, *shape)`."""
    expected = getattr(model, "input_shape", None)
    if expected is not None:
        return tuple(x.shape) == tuple(expected)
    # Without a declared shape: a leading 1 on a 2+-dim tensor is taken as the batch axis,
    # except (1, H, W) single-channel images, which are treated as one sample.
    return not (x.dim() >= 2 and x.shape[0] == 1 and x.dim() != 3)
