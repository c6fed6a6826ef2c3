"""Dropout, and Embedding: a learned vector per integer token id."""

from __future__ import annotations

from torch import nn

from engine.ops.layers.common import P
from engine.ops.registry import In, Inferred, OpDef, registry
from engine.ops.rules import float_param, int_param

registry.register(
    OpDef(
        name="Dropout",
        category="Regularization",
        help="Zero random elements with probability p while training; identity in eval mode.",
        params=(float_param("p", 0.5, "Probability of zeroing an element.", lo=0.0, hi=1.0),),
        arity=(1, 1),
        infer=lambda p, ins: Inferred(ins[0].shape, "float32", 0),
        module=lambda p, ins: (nn.Dropout, {"p": p["p"]}),
        input_hint="any",
        keywords=("regularization", "drop"),
    )
)


def _embedding_infer(p: P, ins: list[In]) -> Inferred:
    (x,) = ins
    n, d = p["num_embeddings"], p["embedding_dim"]
    return Inferred((*x.shape, d), "float32", n * d)


registry.register(
    OpDef(
        name="Embedding",
        category="Embedding",
        help="Look up a learned vector for each integer token id.",
        params=(
            int_param(
                "num_embeddings",
                None,
                "Vocabulary size (ids run 0..num_embeddings-1).",
                required=True,
            ),
            int_param("embedding_dim", None, "Size of each vector.", required=True),
        ),
        arity=(1, 1),
        infer=_embedding_infer,
        module=lambda p, ins: (
            nn.Embedding,
            {"num_embeddings": p["num_embeddings"], "embedding_dim": p["embedding_dim"]},
        ),
        input_dtypes=("int64",),
        input_hint="int64 ids, any shape",
        keywords=("lookup", "token", "word vectors", "vocabulary"),
    )
)
