"""Element-wise activations and (log-)softmax."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from engine.ops.registry import In, Inferred, OpDef, Param, ShapeError, registry
from engine.ops.rules import batched_dim, float_param, int_param, sample_dim


def _keep(p: Mapping[str, Any], ins: list[In]) -> Inferred:
    return Inferred(ins[0].shape, "float32", 0)


def _simple(
    name: str,
    cls: type[nn.Module],
    help: str,
    params: tuple[Param, ...] = (),
    kwargs: Any = None,
    keywords: tuple[str, ...] = ("activation", "nonlinearity"),
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
        keywords=keywords,
    )


registry.register(
    _simple("ReLU", nn.ReLU, "max(0, x).", keywords=("activation", "rectifier", "nonlinearity"))
)
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
registry.register(
    _simple("SiLU", nn.SiLU, "x * sigmoid(x) (swish).", keywords=("activation", "swish"))
)
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
        keywords=("probabilities", "classification", "normalize"),
    )


registry.register(_softmax("Softmax", nn.Softmax, "Exponentials normalised to sum to 1 along dim."))
registry.register(
    _softmax("LogSoftmax", nn.LogSoftmax, "log(softmax(x)) along dim, computed stably.")
)


def _prelu_infer(p: Mapping[str, Any], ins: list[In]) -> Inferred:
    (x,) = ins
    n = p["num_parameters"]
    if n != 1 and (len(x.shape) == 0 or x.shape[0] != n):
        raise ShapeError(
            f"PReLU 'num_parameters' must be 1 or the number of channels (first dimension) of {x}, "
            f"got {n}",
            field="num_parameters",
        )
    return Inferred(x.shape, "float32", n)


registry.register(
    OpDef(
        name="PReLU",
        category="Activation",
        help="max(0, x) + a * min(0, x) with a learned slope a (one, or one per channel).",
        params=(
            int_param(
                "num_parameters",
                1,
                "Learned slopes: 1 for all, or the number of channels for one each.",
            ),
            float_param("init", 0.25, "Starting value of the slope.", lo=None),
        ),
        arity=(1, 1),
        infer=_prelu_infer,
        module=lambda p, ins: (
            nn.PReLU,
            {"num_parameters": p["num_parameters"], "init": p["init"]},
        ),
        input_hint="[C, ...]",
        keywords=("activation", "parametric relu", "learned leaky relu"),
    )
)
registry.register(
    _simple("Mish", nn.Mish, "x * tanh(softplus(x)).", keywords=("activation", "smooth relu"))
)
registry.register(
    _simple(
        "Hardswish",
        nn.Hardswish,
        "x * relu6(x + 3) / 6 (MobileNetV3's cheap swish).",
        keywords=("activation", "hard swish", "mobilenet"),
    )
)
registry.register(
    _simple(
        "Softplus",
        nn.Softplus,
        "log(1 + exp(beta * x)) / beta: a smooth ReLU that is always positive.",
        (
            float_param("beta", 1.0, "Sharpness of the bend.", lo=1e-6),
            float_param("threshold", 20.0, "Above beta * x > threshold it is linear.", lo=None),
        ),
        lambda p: {"beta": p["beta"], "threshold": p["threshold"]},
        keywords=("activation", "smooth relu", "positive"),
    )
)
