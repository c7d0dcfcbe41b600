"""Where a Keras GPT-2 starts: the shared initial weights (`core.initial_weights.gpt2_reference_weights`, in the PyTorch
module's names and layouts) mapped onto the layers of `gpt2.build_gpt2` by name (`gpt2.modules`),
converted to Keras' layouts by the image models' loaders where the layer is the same kind
(`weights.LOADERS`: a Dense's kernel is the transpose of torch's weight). Every layer with
weights takes its arrays and every array is taken once, so a build that differs fails in one line.
"""

from __future__ import annotations

from typing import Any

import keras

from mgbench.core.errors import UsageError
from mgbench.core.gpt2 import GPT2
from mgbench.core.initial_weights import InitialWeights
from mgbench.frameworks.keras.gpt2 import CausalSelfAttention, PositionEmbedding, keras_name, modules
from mgbench.frameworks.keras.weights import LOADERS


def _load_embedding(layer: Any, name: str, weights: InitialWeights) -> None:
    """An embedding's rows are torch's: (rows, width), the same layout."""
    layer.embeddings.assign(weights.take(f"{name}.weight", tuple(layer.embeddings.shape)))


def _load_attention(layer: CausalSelfAttention, name: str, weights: InitialWeights) -> None:
    load_dense = LOADERS[keras.layers.Dense]
    load_dense(layer.c_attn, f"{name}.c_attn", weights)
    load_dense(layer.c_proj, f"{name}.c_proj", weights)


GPT2_LOADERS = {
    keras.layers.Embedding: _load_embedding,
    PositionEmbedding: _load_embedding,
    CausalSelfAttention: _load_attention,
    keras.layers.Dense: LOADERS[keras.layers.Dense],
    keras.layers.LayerNormalization: LOADERS[keras.layers.LayerNormalization],
}
"""The loader of each kind of layer a Keras GPT-2 holds weights in (the token embedding is a
`ReversibleEmbedding`, an `Embedding`)."""


def load_gpt2_initial(model: keras.Model, shape: GPT2, weights: InitialWeights) -> None:
    """Assign every weight of the Keras GPT-2 `model` of `shape` from the shared arrays (checked
    by shape); a layer of another name or kind, or an array left over or missing, is one UsageError."""
    torch_module = {keras_name(module): module for module in modules(shape)}
    for layer in model.layers:
        if not layer.weights:
            continue
        loader = next((load for kind, load in GPT2_LOADERS.items() if isinstance(layer, kind)), None)
        if loader is None or layer.name not in torch_module:
            raise UsageError(f"no initial weights for the Keras GPT-2's layer {layer.name!r} ({type(layer).__name__})")
        loader(layer, torch_module[layer.name], weights)
    weights.check_all_taken()
