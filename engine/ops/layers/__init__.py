"""Ops with weights or windows: Linear, convolution, pooling, normalisation, embedding,
recurrent and attention layers, dropout.

Each module registers its ops when imported. The palette lists the ops of a category in the
order they were registered, so the modules are imported in this order, which is theirs.
"""

# isort: off
from engine.ops.layers import linear  # noqa: F401  (registration side effects, in order)
from engine.ops.layers import convolution  # noqa: F401
from engine.ops.layers import pooling  # noqa: F401
from engine.ops.layers import normalization  # noqa: F401
from engine.ops.layers import dropout_embedding  # noqa: F401
from engine.ops.layers import recurrent  # noqa: F401
from engine.ops.layers import attention  # noqa: F401
from engine.ops.layers import more_norms  # noqa: F401
from engine.ops.layers import upsampling  # noqa: F401
from engine.ops.layers import decoder  # noqa: F401
# isort: on
