"""Recurrent: LSTM and GRU over a [T, F] sequence."""

from __future__ import annotations

from torch import nn

from engine.ops import modules
from engine.ops.layers.common import P
from engine.ops.registry import In, Inferred, OpDef, Param, registry
from engine.ops.rules import bool_param, float_param, int_param, need_rank


def _recurrent(name: str, gates: int, cls: type[nn.Module]) -> OpDef:
    def infer(p: P, ins: list[In]) -> Inferred:
        (x,) = ins
        need_rank(name, x, (2,), "[T, F] (time, features)")
        h, layers = p["hidden_size"], p["num_layers"]
        dirs = 2 if p["bidirectional"] else 1
        count, width = 0, x.shape[1]
        for _ in range(layers):
            per_dir = gates * h * width + gates * h * h + (2 * gates * h if p["bias"] else 0)
            count += dirs * per_dir
            width = dirs * h
        shape = (x.shape[0], dirs * h) if p["output"] == "sequence" else (dirs * h,)
        return Inferred(shape, "float32", count)

    return OpDef(
        name=name,
        category="Recurrent",
        help=f"{name} over a [T, F] sequence (batch first); output the whole sequence or the last hidden state.",
        params=(
            int_param("hidden_size", None, "Features in the hidden state.", required=True),
            int_param("num_layers", 1, "Stacked recurrent layers.", hi=64),
            bool_param("bidirectional", False, "Run forwards and backwards and concatenate."),
            float_param("dropout", 0.0, "Dropout between stacked layers.", lo=0.0, hi=1.0),
            bool_param("bias", True, "Learn biases."),
            Param(
                "output",
                "choice",
                "sequence",
                "'sequence': [T, D*H]; 'last': final hidden state [D*H].",
                choices=("sequence", "last"),
            ),
        ),
        arity=(1, 1),
        infer=infer,
        module=lambda p, ins: (
            cls,
            {
                "input_size": ins[0].shape[1],
                "hidden_size": p["hidden_size"],
                "num_layers": p["num_layers"],
                "bias": p["bias"],
                "dropout": p["dropout"],
                "bidirectional": p["bidirectional"],
                "output": p["output"],
            },
        ),
        inferred=("input_size",),
        input_hint="[T, F]",
        keywords=("recurrent", "rnn", "sequence", "time series", "memory"),
    )


registry.register(_recurrent("LSTM", 4, modules.LSTMLayer))
registry.register(_recurrent("GRU", 3, modules.GRULayer))
