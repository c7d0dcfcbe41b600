"""One starting point for every framework (`--init`).

Frameworks initialise the same architecture differently (torchvision's He-normal convolutions,
Keras' Glorot-uniform, Chainer's and Gluon's own), so a time-to-accuracy comparison between
them compares initialisers as much as frameworks. With `--init same` (the default) every
framework starts from the weights drawn here, with numpy, once per (model, outputs, seed):
torchvision's initialisation of the torchvision architecture is the reference (GPT-2's own for
a language model, in the PyTorch module's names: `gpt2_reference_weights`). With
`--init FILE.npz` every framework starts from given weights (`mgbench convert-weights` makes
such a file from a torchvision state dict).

The weights are kept as torchvision names them and lay them out (convolutions OIHW, dense
layers out x in, batch-norm `weight`/`bias`/`running_mean`/`running_var`); each framework's
`weights.py` maps them onto its own variables (`InitialWeights.take` hands each array out
once, `InitialWeights.check_all_taken` proves nothing was left over), so a framework that
builds something else fails in one line instead of training from a partial start.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mgbench.core.architectures import ConvNet, Layer
from mgbench.core.errors import UsageError
from mgbench.core.gpt2 import GPT2
from mgbench.core.models import ModelSpec, catalogue, model_spec
from mgbench.core.safe_files import open_regular

INIT_SAME = "same"
"""Every framework starts from the reference draw of this module."""
INIT_FRAMEWORK = "framework"
"""Every framework starts from its own initialiser (nothing here is used)."""
BATCH_NORM_STATES = ("weight", "bias", "running_mean", "running_var")
"""A batch-norm layer's arrays as torchvision names them: scale, shift, moving mean and variance."""
DIGEST_LENGTH = 12


def shared_start_refusal(model: str) -> str | None:
    """Why `--init same` cannot give `model` one starting point (None: it can): the catalogue
    declares no shape of it to draw (`ModelSpec.drawn`)."""
    if model_spec(model).drawn:
        return None
    drawn = [spec.name for spec in catalogue().values() if spec.drawn]
    return f"{model} has no shared starting weights (models with them: {', '.join(drawn)})"


def _uniform_fan_in(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """torch's default for convolutions and linear layers: kaiming_uniform(a=sqrt(5)), i.e.
    uniform within +-1/sqrt(fan_in), the same bound as their biases."""
    bound = 1.0 / math.sqrt(fan_in)
    return rng.uniform(-bound, bound, shape).astype(np.float32)


def _he_normal(rng: np.random.Generator, shape: tuple[int, ...], fan: int) -> np.ndarray:
    """kaiming_normal with the ReLU gain: normal with standard deviation sqrt(2 / fan)."""
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(math.sqrt(2.0 / fan))).astype(np.float32)


def _draw_layer(rng: np.random.Generator, network: ConvNet, layer: Layer) -> dict[str, np.ndarray]:
    """The layer's arrays as torchvision's own initialisation of `network` draws them: its
    convolutions He-normal over the fan it names (`conv_fan`; ResNet's fan-out, DenseNet's
    fan-in), batch-norm at scale 1 and shift 0, a zero head bias where it says so (DenseNet's
    classifier); everything else torch's default."""
    if layer.kind == "bn":
        channels = layer.shape[0]
        ones, zeros = np.ones(channels, np.float32), np.zeros(channels, np.float32)
        return dict(zip(BATCH_NORM_STATES, (ones, zeros, zeros.copy(), ones.copy()), strict=True))
    fan_in = int(np.prod(layer.shape[1:]))
    fan_out = layer.shape[0] * int(np.prod(layer.shape[2:]))
    if layer.kind == "conv" and network.conv_fan is not None:
        arrays = {"weight": _he_normal(rng, layer.shape, fan_out if network.conv_fan == "fan_out" else fan_in)}
    else:
        arrays = {"weight": _uniform_fan_in(rng, layer.shape, fan_in)}
    if layer.bias:
        zero_bias = network.zero_head_bias and layer.kind == "linear"
        arrays["bias"] = (
            np.zeros(layer.shape[0], np.float32) if zero_bias else _uniform_fan_in(rng, (layer.shape[0],), fan_in)
        )
    return arrays


@dataclass
class InitialWeights:
    """Named float32 arrays in torchvision's names and layouts, handed out once each by `take`."""

    arrays: dict[str, np.ndarray]
    source: str
    """`same` (the reference draw) or the file's name."""
    taken: set[str] = field(default_factory=set)

    @property
    def digest(self) -> str:
        """A short hash of every array's name, shape and bytes: two runs that record the same
        digest started from the same weights."""
        hasher = hashlib.sha256()
        for name in sorted(self.arrays):
            array = np.ascontiguousarray(self.arrays[name], dtype=np.float32)
            hasher.update(f"{name}:{array.shape}".encode())
            hasher.update(array.tobytes())
        return hasher.hexdigest()[:DIGEST_LENGTH]

    def take(self, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """The array `name` (torchvision's layout), checked against `shape` where given, marked used."""
        if name not in self.arrays:
            raise UsageError(f"the initial weights ({self.source}) have no {name!r}; the model built differs")
        array = self.arrays[name]
        if shape is not None and tuple(array.shape) != tuple(shape):
            raise UsageError(
                f"the initial weights' {name!r} ({self.source}) are {tuple(array.shape)}, the model's {tuple(shape)}"
            )
        self.taken.add(name)
        return array

    def check_all_taken(self) -> None:
        """One UsageError if some array was never taken: the framework's model has fewer layers
        (or other names) than the weights, so it would not start where the others do."""
        left = sorted(set(self.arrays) - self.taken)
        if left:
            shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
            raise UsageError(
                f"the model built took {len(self.taken)} of {len(self.arrays)} initial arrays; unused: {shown}"
            )


def _xavier_uniform(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Glorot's uniform: within +-sqrt(6 / (fan_in + fan_out))."""
    bound = math.sqrt(6.0 / (shape[0] + shape[1]))
    return rng.uniform(-bound, bound, shape).astype(np.float32)


def _normal(rng: np.random.Generator, shape: tuple[int, ...], std: float) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)


def _transformer_arrays(rng: np.random.Generator, spec: ModelSpec, image_size: int) -> Iterator[tuple[str, np.ndarray]]:
    """torchvision's `VisionTransformer` as it initialises itself, in its names: the patch
    embedding normal over its fan-in (torch truncates at +-2, never reached at that width) with
    a zero bias, a zero class token, position embeddings normal(0.02), layer norms at 1 and 0,
    attention's input projection Glorot-uniform with a zero bias, its output projection torch's
    default with a zero bias, MLP layers Glorot-uniform with biases normal(1e-6), a zero head."""
    shape = spec.transformer
    assert shape is not None
    width, patch = shape.width, shape.patch_size
    zeros = lambda *dims: np.zeros(dims, np.float32)  # noqa: E731
    ones = lambda *dims: np.ones(dims, np.float32)  # noqa: E731
    yield "class_token", zeros(1, 1, width)
    yield "conv_proj.weight", _normal(rng, (width, 3, patch, patch), math.sqrt(1.0 / (3 * patch * patch)))
    yield "conv_proj.bias", zeros(width)
    yield "encoder.pos_embedding", _normal(rng, (1, shape.tokens(image_size), width), 0.02)
    for index in range(shape.layers):
        prefix = f"encoder.layers.encoder_layer_{index}"
        yield f"{prefix}.ln_1.weight", ones(width)
        yield f"{prefix}.ln_1.bias", zeros(width)
        yield f"{prefix}.self_attention.in_proj_weight", _xavier_uniform(rng, (3 * width, width))
        yield f"{prefix}.self_attention.in_proj_bias", zeros(3 * width)
        yield f"{prefix}.self_attention.out_proj.weight", _uniform_fan_in(rng, (width, width), width)
        yield f"{prefix}.self_attention.out_proj.bias", zeros(width)
        yield f"{prefix}.ln_2.weight", ones(width)
        yield f"{prefix}.ln_2.bias", zeros(width)
        yield f"{prefix}.mlp.0.weight", _xavier_uniform(rng, (shape.mlp_width, width))
        yield f"{prefix}.mlp.0.bias", _normal(rng, (shape.mlp_width,), 1e-6)
        yield f"{prefix}.mlp.3.weight", _xavier_uniform(rng, (width, shape.mlp_width))
        yield f"{prefix}.mlp.3.bias", _normal(rng, (width,), 1e-6)
    yield "encoder.ln.weight", ones(width)
    yield "encoder.ln.bias", zeros(width)
    yield "heads.head.weight", zeros(spec.num_classes, width)
    yield "heads.head.bias", zeros(spec.num_classes)


def reference_weights(spec: ModelSpec, seed: int, image_size: int) -> InitialWeights:
    """The reference draw for `spec` (its number of outputs included) at `image_size` px (a
    transformer's position embedding has a row per patch) and `seed`: the same arrays in every
    process and every framework's interpreter (numpy's generator, seeded alone)."""
    if refusal := shared_start_refusal(spec.name):
        raise UsageError(refusal)
    if spec.language_model is not None:
        return gpt2_reference_weights(spec.language_model, seed)
    rng = np.random.default_rng([seed, 0x1A17])
    if spec.transformer is not None:
        return InitialWeights(dict(_transformer_arrays(rng, spec, image_size)), INIT_SAME)
    assert spec.convnet is not None
    arrays: dict[str, np.ndarray] = {}
    for layer in spec.convnet.layers(spec.num_classes):
        for state, array in _draw_layer(rng, spec.convnet, layer).items():
            arrays[f"{layer.name}.{state}"] = array
    return InitialWeights(arrays, INIT_SAME)


GPT2_STREAM = 0x6E72
"""Mixed into the seed, so that GPT-2's draw is not the image models' at the same seed."""


def gpt2_reference_weights(shape: GPT2, seed: int) -> InitialWeights:
    """GPT-2's initialisation of `shape` drawn with numpy's generator seeded by `seed` alone, in
    the PyTorch module's names and layouts (`GPT2.arrays`): every weight matrix and embedding
    normal (the residual projections at `GPT2.residual_std`), biases 0, layer norms at scale 1 and
    shift 0. The same arrays in every process and every framework's interpreter; a sequence
    length changes none of them (the position embedding has a row per position of the context)."""
    rng = np.random.default_rng([seed, GPT2_STREAM])
    arrays = {}
    for array in shape.arrays():
        if array.std is None:
            arrays[array.name] = np.full(array.shape, array.fill, np.float32)
        else:
            arrays[array.name] = rng.standard_normal(array.shape, dtype=np.float32) * np.float32(array.std)
    return InitialWeights(arrays, INIT_SAME)


WEIGHT_KINDS = "fiub"
"""numpy's kinds of plain numbers (float, signed and unsigned integer, bool): what a weight can be
read as float32 from; a structured, complex, text or object array cannot."""


def read_weights_file(path: Path) -> InitialWeights:
    """An `.npz` of named arrays (torchvision's names and layouts), as float32; one UsageError if
    it cannot be read as one. The file is opened only if it is a regular file (a FIFO would hold
    the read), no pickled object is loaded, and each array's header is checked before its data
    is read (`_read_member`)."""
    try:
        with open(path, "rb", opener=open_regular) as handle, zipfile.ZipFile(handle) as archive:
            arrays = {member.removesuffix(".npy"): _read_member(archive, member) for member in archive.namelist()}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise UsageError(f"{path}: not a readable .npz of weights ({reason})") from None
    if not arrays:
        raise UsageError(f"{path}: the file holds no arrays")
    return InitialWeights(arrays, path.name)


def _read_member(archive: zipfile.ZipFile, member: str) -> np.ndarray:
    """The archive's array `member` as float32, its header read first: a ValueError unless it
    holds plain numbers and claims no more bytes than the member holds (a header may claim
    terabytes, which reading would try to allocate)."""
    with archive.open(member) as stream:
        version = np.lib.format.read_magic(stream)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(stream)
        held = archive.getinfo(member).file_size - stream.tell()
    if dtype.kind not in WEIGHT_KINDS or dtype.fields is not None:
        raise ValueError(f"{member} is an array of {dtype}, not of numbers")
    claimed = math.prod(shape) * dtype.itemsize
    if claimed > held:
        raise ValueError(f"{member}'s header claims {claimed} bytes, the file holds {held}")
    with archive.open(member) as stream:
        return np.asarray(np.lib.format.read_array(stream, allow_pickle=False), dtype=np.float32)


def initial_weights(init: str, spec: ModelSpec, seed: int, image_size: int) -> InitialWeights | None:
    """The weights a run of `spec` at `image_size` px starts from for `--init init` (None: the
    framework's own)."""
    if init == INIT_FRAMEWORK:
        return None
    if init == INIT_SAME:
        return reference_weights(spec, seed, image_size)
    return read_weights_file(Path(init))


LEGACY_DENSENET_NAME = re.compile(
    r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$"
)
"""torchvision's published DenseNet weights name `norm.1` what its modules call `norm1`."""
WRAPPER_PREFIX = "module."
"""What DistributedDataParallel and DataParallel put before every name of a saved state dict."""


@dataclass(frozen=True)
class Conformed:
    weights: InitialWeights
    redrawn: tuple[str, ...]
    """The arrays of another shape than the catalogue model's (a 1000-way ImageNet head for the
    14-output CheXNet one), drawn from the reference initialisation instead."""


def conformed(arrays: dict[str, np.ndarray], spec: ModelSpec, seed: int, source: str) -> Conformed:
    """Arrays of a saved torchvision model as the catalogue's `spec` names and shapes them:
    DDP's `module.` prefixes and the legacy DenseNet names undone, torch's batch counters left
    out, arrays whose shape differs (the classifier, for another number of outputs) drawn as
    the reference draws them, as CheXNet replaces ImageNet's classifier. A name the model does
    not have, or one it needs that is missing, is one UsageError."""
    renamed = {}
    for name, array in arrays.items():
        name = name.removeprefix(WRAPPER_PREFIX)
        name = LEGACY_DENSENET_NAME.sub(lambda m: m.group(1) + m.group(2), name)
        if not name.endswith("num_batches_tracked"):
            renamed[name] = np.asarray(array, dtype=np.float32)
    reference = reference_weights(spec, seed, spec.input.extent).arrays
    unknown = sorted(set(renamed) - set(reference))
    missing = sorted(set(reference) - set(renamed))
    if unknown or missing:
        shown = ", ".join((unknown or missing)[:5])
        what = "names the model does not have" if unknown else "misses arrays the model needs"
        raise UsageError(f"{source} is not {spec.name}'s weights: it {what} ({shown})")
    redrawn = tuple(name for name in reference if renamed[name].shape != reference[name].shape)
    for name in redrawn:
        renamed[name] = reference[name]
    return Conformed(InitialWeights(renamed, source), redrawn)


def weights_file_bytes(weights: InitialWeights) -> bytes:
    """`weights` as an uncompressed `.npz` (what `--init FILE.npz` reads)."""
    buffer = io.BytesIO()
    # numpy's stub types savez's **kwds beside its `allow_pickle: bool`, which a dict of arrays might name.
    np.savez(buffer, **weights.arrays)  # type: ignore[arg-type]
    return buffer.getvalue()
