"""The augmentation every framework applies, written once so it is identical by construction.

Training: resize the shorter side to 264, take a random 224 crop, flip horizontally with
probability 1/2, scale to [0, 1], normalise with the ImageNet mean and standard deviation;
grayscale images (X-rays) are expanded to 3 channels. `*_pixels` stop before the scaling and
normalisation, for loaders that finish on the device. Validation: the same resize and a
centre crop, no flip. Both sizes scale with the model's input size (`--image-size`), keeping
the 264:224 ratio. The random draws come from a generator seeded by (seed, epoch, image), so
the result does not depend on which loader worker, process or framework decodes the image.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from mgbench.datasets.images import open_image

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
RESIZE_PER_CROP = 264 / 224


@dataclass(frozen=True)
class Augmentation:
    crop: int
    resize: int
    bit_depth: int | None = None
    """The dataset's scale for images wider than 8 bits (`DatasetDescription.bit_depth`)."""

    @classmethod
    def for_input(cls, input_size: int, bit_depth: int | None = None) -> Augmentation:
        return cls(crop=input_size, resize=round(input_size * RESIZE_PER_CROP), bit_depth=bit_depth)

    def _window(self, image: Image.Image, resized: tuple[int, int], left: int, top: int) -> Image.Image:
        """The crop x crop window at (left, top) of `image` resized to `resize` on its shorter side.

        Only the window is resized (Pillow's `box`): the same source coordinates and filter as
        resizing the whole image and cropping it, pixel values within rounding, at a fraction of
        the work; decoding and resizing are what the host spends per image, and a fast step on a
        class folder of JPEGs waits for them. `resized` is the image's `resized_size`; an image
        already at it is cropped as it is."""
        width, height = image.size
        if resized == image.size:
            return image.crop((left, top, left + self.crop, top + self.crop))
        x_scale, y_scale = width / resized[0], height / resized[1]
        box = (left * x_scale, top * y_scale, (left + self.crop) * x_scale, (top + self.crop) * y_scale)
        return image.resize((self.crop, self.crop), Image.Resampling.BILINEAR, box=box)

    def resized_size(self, width: int, height: int) -> tuple[int, int]:
        """An image's size once its shorter side is `resize` (never under the crop)."""
        scale = self.resize / min(width, height)
        return max(self.crop, round(width * scale)), max(self.crop, round(height * scale))

    def train_pixels(self, path: str, seed: int, epoch: int, index: int) -> np.ndarray:
        """(crop, crop, 3) uint8: random crop and flip drawn from (seed, epoch, index)."""
        image = open_image(path, self.bit_depth)
        resized = self.resized_size(*image.size)
        rng = np.random.default_rng([seed, epoch, index])
        left = int(rng.integers(0, resized[0] - self.crop + 1))
        top = int(rng.integers(0, resized[1] - self.crop + 1))
        image = self._window(image, resized, left, top)
        if rng.random() < 0.5:
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return rgb_pixels(image)

    def eval_pixels(self, path: str) -> np.ndarray:
        """(crop, crop, 3) uint8: the centre crop."""
        image = open_image(path, self.bit_depth)
        resized = self.resized_size(*image.size)
        return rgb_pixels(self._window(image, resized, (resized[0] - self.crop) // 2, (resized[1] - self.crop) // 2))

    def train(self, path: str, seed: int, epoch: int, index: int) -> np.ndarray:
        """(3, crop, crop) float32: `train_pixels`, normalised."""
        return normalise(self.train_pixels(path, seed, epoch, index))

    def eval(self, path: str) -> np.ndarray:
        """(3, crop, crop) float32: `eval_pixels`, normalised."""
        return normalise(self.eval_pixels(path))


def rgb_pixels(image: Image.Image) -> np.ndarray:
    """HWC uint8 with three channels; one grayscale channel is repeated into three."""
    pixels = np.asarray(image, dtype=np.uint8)
    return np.repeat(pixels[:, :, None], 3, axis=2) if pixels.ndim == 2 else pixels


def normalise(pixels: np.ndarray) -> np.ndarray:
    """CHW float32 with ImageNet statistics, from HWC uint8 pixels.

    Loaders that ship uint8 pixels to the device and normalise there (4x fewer bytes through
    worker queues, pinned buffers and the bus) must compute exactly this.
    """
    scaled = pixels.astype(np.float32) / 255.0
    return np.ascontiguousarray(((scaled - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1))
