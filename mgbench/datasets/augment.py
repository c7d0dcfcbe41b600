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
class Window:
    """What the augmentation takes of one image: a box in the image's own pixels (left, top,
    right, bottom, as Pillow's `resize(box=)` reads it) resized to crop x crop, then flipped
    left to right or not. Drawn on the host from the image's size; applied by Pillow there
    (`Augmentation.window_pixels`) or by the training device (`--decode gpu`)."""

    box: tuple[float, float, float, float]
    flip: bool

    def as_array(self) -> np.ndarray:
        """(5,) float64: the box, then 1 for a flip (how a loader's worker hands it over)."""
        return np.array([*self.box, float(self.flip)], dtype=np.float64)

    @classmethod
    def of_array(cls, array: np.ndarray) -> Window:
        """The window `as_array` gave."""
        left, top, right, bottom, flip = (float(value) for value in array)
        return cls((left, top, right, bottom), flip > 0.5)


@dataclass(frozen=True)
class Augmentation:
    crop: int
    resize: int
    bit_depth: int | None = None
    """The dataset's scale for images wider than 8 bits (`DatasetDescription.bit_depth`)."""

    @classmethod
    def for_input(cls, input_size: int, bit_depth: int | None = None) -> Augmentation:
        return cls(crop=input_size, resize=round(input_size * RESIZE_PER_CROP), bit_depth=bit_depth)

    def resized_size(self, width: int, height: int) -> tuple[int, int]:
        """An image's size once its shorter side is `resize` (never under the crop)."""
        scale = self.resize / min(width, height)
        return max(self.crop, round(width * scale)), max(self.crop, round(height * scale))

    def _window(self, size: tuple[int, int], left: int, top: int, flip: bool) -> Window:
        """The crop x crop window at (left, top) of an image of `size` resized to `resize` on its
        shorter side, as a box in the image's own pixels."""
        resized = self.resized_size(*size)
        x_scale, y_scale = size[0] / resized[0], size[1] / resized[1]
        box = (left * x_scale, top * y_scale, (left + self.crop) * x_scale, (top + self.crop) * y_scale)
        return Window(box, flip)

    def train_window(self, size: tuple[int, int], seed: int, epoch: int, index: int) -> Window:
        """The random crop and flip of image `index` in `epoch`, drawn from (seed, epoch, index) and
        the image's (width, height) alone: a loader that decodes elsewhere (`--decode gpu`) reads
        the size from the file's header and gets the window `train_pixels` crops."""
        resized = self.resized_size(*size)
        rng = np.random.default_rng([seed, epoch, index])
        left = int(rng.integers(0, resized[0] - self.crop + 1))
        top = int(rng.integers(0, resized[1] - self.crop + 1))
        return self._window(size, left, top, bool(rng.random() < 0.5))

    def eval_window(self, size: tuple[int, int]) -> Window:
        """The centre crop of an image of (width, height) `size`, unflipped."""
        resized = self.resized_size(*size)
        return self._window(size, (resized[0] - self.crop) // 2, (resized[1] - self.crop) // 2, False)

    def window_pixels(self, image: Image.Image, window: Window) -> np.ndarray:
        """(crop, crop, 3) uint8: `window` of `image`, resized to crop x crop and flipped as it says.

        Only the window is resized (Pillow's `box`): the same source coordinates and filter as
        resizing the whole image and cropping it, pixel values within rounding, at a fraction of
        the work; decoding and resizing are what the host spends per image, and a fast step on a
        class folder of JPEGs waits for them. A window of crop x crop source pixels (an image
        already at its resized size) is cropped as it is."""
        left, top, right, bottom = window.box
        if (right - left, bottom - top) == (self.crop, self.crop):
            image = image.crop((round(left), round(top), round(right), round(bottom)))
        else:
            image = image.resize((self.crop, self.crop), Image.Resampling.BILINEAR, box=window.box)
        if window.flip:
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return rgb_pixels(image)

    def train_pixels(self, path: str, seed: int, epoch: int, index: int) -> np.ndarray:
        """(crop, crop, 3) uint8: random crop and flip drawn from (seed, epoch, index)."""
        image = open_image(path, self.bit_depth)
        return self.window_pixels(image, self.train_window(image.size, seed, epoch, index))

    def eval_pixels(self, path: str) -> np.ndarray:
        """(crop, crop, 3) uint8: the centre crop."""
        image = open_image(path, self.bit_depth)
        return self.window_pixels(image, self.eval_window(image.size))

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
    worker queues, pinned buffers and the bus) must compute this, to within float32's rounding.
    """
    scaled = pixels.astype(np.float32) / 255.0
    return np.ascontiguousarray(((scaled - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1))
