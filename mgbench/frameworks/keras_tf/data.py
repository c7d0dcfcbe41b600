"""tf.data over the shared sample keys: the real-data input pipeline of keras-tf and tensorflow.

As TensorFlow users write it: a dataset of sample keys, a parallel `map` whose work is the
shared decode, crop and flip (`tf.numpy_function` around `Augmentation.train_pixels`, so the
pixels are those of every other framework), `batch` into global batches, normalisation as a
vectorised map, `prefetch`. The adapter then hands the dataset to the strategy
(`experimental_distribute_dataset`: each replica takes its consecutive slice of the global
batch, the shared shard, prefetched to its device) or, unstaged, iterates it on the host.
The map runs on `workers` threads (`--workers`; 0 maps in line), the count the row records.
A token stream (`--dataset tokens:PATH`) is read alike: a map from each global batch's index to
its windows (`token_dataset`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from mgbench.datasets.description import Split
from mgbench.datasets.sampling import validation_indices
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.keras.data import RealData, RealTokens, TokenTrainBatches, normalised, sample_keys


def _prepared(
    keys: tf.data.Dataset, decode: Callable, split: Split, real: RealData, drop_remainder: bool
) -> tf.data.Dataset:
    """Keys to normalised global batches of `split`: parallel decode, batch, normalise, prefetch."""
    crop = real.augmentation.crop
    target_shape, target_dtype = split.targets.shape[1:], tf.as_dtype(split.targets.dtype)

    def pixels_and_target(key: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        pixels, target = tf.numpy_function(decode, [key], (tf.uint8, target_dtype), stateful=False)
        pixels.set_shape((crop, crop, 3))
        target.set_shape(target_shape)
        return pixels, target

    channels_last = real.config.job.data_format.channels_last
    return (
        keys.map(pixels_and_target, num_parallel_calls=real.workers or None, deterministic=True)
        .batch(real.config.global_batch, drop_remainder=drop_remainder)
        .map(lambda pixels, targets: (normalised(pixels, channels_last), targets))
        .prefetch(tf.data.AUTOTUNE)
    )


def train_dataset(real: RealData | RealTokens, epoch: int | None) -> tf.data.Dataset:
    """The global batches of `epoch` (None: of every epoch from the first on, endless): of images,
    or of a token stream's windows (`token_dataset`)."""
    if isinstance(real, RealTokens):
        return token_dataset(real, epoch)
    config, split = real.config, real.dataset.train
    epochs = (epoch,) if epoch is not None else None

    def keys():
        shard = Shard(0, config.global_batch)
        return sample_keys(len(split), config.global_batch, shard, config.job.seed, epochs or itertools.count())

    def decode(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        epoch, index = (int(k) for k in key)
        return real.augmentation.train_pixels(split.files[index], config.job.seed, epoch, index), split.targets[index]

    dataset = tf.data.Dataset.from_generator(keys, output_signature=tf.TensorSpec((2,), tf.int64))
    return _prepared(dataset, decode, split, real, drop_remainder=True)


def eval_dataset(real: RealData, name: str) -> tf.data.Dataset:
    """Every image of split `name` once, centre-cropped, in batches of the global batch."""
    split = real.split(name)

    def decode(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return real.augmentation.eval_pixels(split.files[int(index)]), split.targets[int(index)]

    indices = tf.data.Dataset.from_tensor_slices(np.array(validation_indices(len(split), 0, 1), dtype=np.int64))
    return _prepared(indices, decode, split, real, drop_remainder=False)


def token_dataset(real: RealTokens, epoch: int | None) -> tf.data.Dataset:
    """A token stream's global batches of `epoch` (None: endless): the windows of Keras' loader's
    items (`TokenTrainBatches`, every framework's), read by a parallel map as the images are
    decoded (`tf.numpy_function`), prefetched."""
    batches = TokenTrainBatches(real.dataset, real.config, Shard(0, real.config.global_batch), real.workers, epoch)
    shape = (real.config.global_batch, real.seq_len)

    def windows(item: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        inputs, targets = tf.numpy_function(lambda i: batches[int(i)], [item], (tf.int32, tf.int32), stateful=False)
        inputs.set_shape(shape)
        targets.set_shape(shape)
        return inputs, targets

    items = tf.data.Dataset.counter() if epoch is None else tf.data.Dataset.range(batches.num_batches)
    return items.map(windows, num_parallel_calls=real.workers or None, deterministic=True).prefetch(tf.data.AUTOTUNE)
