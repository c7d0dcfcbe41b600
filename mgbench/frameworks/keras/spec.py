"""What the Keras family's specs share, declared without importing Keras: its builder table
(`models.py`: keras.applications' DenseNet-121 and Inception-v3, torchvision's ResNet-50, ViT-B/16
and `tiny` written in Keras, and every GPT-2 size by one builder, `gpt2`) and the family's name.

keras.applications' DenseNet121 refuses channels_first; its Inception-v3's batch-norms have no
gamma (-17,216 parameters, -94 tensors)."""

from __future__ import annotations

from mgbench.core.optimization import SGD, AdamW
from mgbench.frameworks.specs import BATCH_NORM_UNMATCHED, ModelBuilders

KERAS_MODELS = ModelBuilders(
    "mgbench.frameworks.keras.models",
    ("densenet121", "resnet50", "inception_v3", "vit_b_16", "tiny", "gpt2", "gpt2-medium", "gpt2-xl", "gpt2-tiny"),
    data_formats={"densenet121": ("channels_last",)},
    parameter_offsets={"inception_v3": -17_216},
    tensor_offsets={"inception_v3": -94},
    unmatched=BATCH_NORM_UNMATCHED,
)
"""The models keras-tf, keras-jax, keras-torch and the tensorflow loop build, all four alike."""
KERAS_OPTIMIZERS = (SGD.kind, AdamW.kind)
"""The optimizer kinds `models.py` builds in torch's form (`TorchFormSGD`, `TorchFormAdamW`): those of
every Keras framework that steps Keras' optimizers (keras-torch steps torch's own)."""
KERAS_FAMILY = "keras"
"""`--frameworks keras`: Keras 3 on every backend (keras-tf, keras-jax, keras-torch)."""
TF_DATA_DECODES = "tf.data decodes the images on the host (keras_tf/data.py); its pipeline has no device decoder"
"""Why keras-tf and the tensorflow loop do not decode on the GPU (`Capabilities.no_gpu_decoder`):
keras-jax and keras-torch do, their PyDataset handing the files over (`data.FileBytes`)."""
