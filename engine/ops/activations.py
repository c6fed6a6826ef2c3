"""Element-wise activations and (log-)softmax."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from engine.ops.registry import In, Inferred, OpDef, Param, registry
from engine.ops.rules import batched_dim, float_param, sample_dim


def _keep(p: Mapping[str, Any], ins: list[In]) -> Inferred:
    return Inferred(ins[0].shape, "float32", 0)


def _simple(
    name: str, cls: type[nn.Module], help: str, params: tuple[Param, ...] = (), kwargs: Any = None
) -> OpDef:
    return OpDef(
        name=name,
        category="Activation",
        help=help,
        params=params,
        arity=(1, 1),
        infer=_keep,
        module=lambda p, ins: (cls, kwargs(p) if kwargs else {}),
        input_hint="any",
    )


registry.register(_simple("ReLU", nn.ReLU, "max(0, x)."))
registry.register(
    _simple(
        "GELU",
        nn.GELU,
        "Gaussian error linear unit.",
        (
            Param(
                "approximate",
                "choice",
                "none",
                "'tanh' uses the faster approximation.",
                choices=("none", "tanh"),
            ),
        ),
        lambda p: {"approximate": p["approximate"]},
    )
)
registry.register(_simple("SiLU", nn.SiLU, "x * sigmoid(x) (swish)."))
registry.register(
    _simple(
        "LeakyReLU",
        nn.LeakyReLU,
        "max(0, x) + negative_slope * min(0, x).",
        (float_param("negative_slope", 0.01, "Slope for negative inputs.", lo=None),),
        lambda p: {"negative_slope": p["negative_slope"]},
    )
)
registry.register(
    _simple(
        "ELU",
        nn.ELU,
        "Exponential linear unit.",
        (float_param("alpha", 1.0, "Scale of the negative part.", lo=None),),
        lambda p: {"alpha": p["alpha"]},
    )
)
registry.register(_simple("Tanh", nn.Tanh, "Hyperbolic tangent."))
registry.register(_simple("Sigmoid", nn.Sigmoid, "1 / (1 + exp(-x))."))


def _softmax(name: str, cls: type[nn.Module], help: str) -> OpDef:
    def infer(p: Mapping[str, Any], ins: list[In]) -> Inferred:
        sample_dim(name, p["dim"], len(ins[0].shape))
        return Inferred(ins[0].shape, "float32", 0)

    return OpDef(
        name=name,
        category="Activation",
        help=help,
        params=(
            Param(
                "dim",
                "int",
                -1,
                "Per-sample dimension to normalise over (-1: last).",
                min=-64,
                max=63,
            ),
        ),
        arity=(1, 1),
        infer=infer,
        module=lambda p, ins: (cls, {"dim": batched_dim(p["dim"], len(ins[0].shape))}),
        input_hint="any",
    )


registry.register(_softmax("Softmax", nn.Softmax, "Exponentials normalised to sum to 1 along dim."))
registry.register(
    _softmax("LogSoftmax", nn.LogSoftmax, "log(softmax(x)) along dim, computed stably.")
)
