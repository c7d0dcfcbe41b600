"""`--decode gpu`: where it is refused (CPU devices, synthetic data, frameworks without a device
decoder), and the host's and the device's halves of the JPEG path against the host's pixels.

No GPU here: the device half runs on CPU tensors (torchvision decodes on the CPU in the tests),
which is the GPU path's arithmetic on another device.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from conftest import mgbench, one_line_error
from PIL import Image

from mgbench.core.config import RunConfig
from mgbench.core.errors import UsageError
from mgbench.core.job import Job
from mgbench.datasets.augment import IMAGENET_STD, Augmentation
from mgbench.datasets.description import Split
from mgbench.datasets.encoded import EncodedTrainItems, device_file
from mgbench.datasets.images import open_image, read_header
from mgbench.datasets.pillow_build import pillow_build
from mgbench.datasets.resolve import check_dataset, describe_dataset
from mgbench.datasets.synthetic import Shard
from mgbench.frameworks.pytorch.adapter import create_adapter
from mgbench.frameworks.pytorch.data import HostDecoding, PlacedPixels, build_loaders, decoding_for
from mgbench.frameworks.pytorch.device_crop import CropPlan, crop_plan, cropped, planned_crops
from mgbench.frameworks.pytorch.device_decode import DecodedOnDevice, DeviceDecoding, PlannedCollate, decoded_images
from mgbench.frameworks.registry import framework_spec
from mgbench.runner.plan import plan_runs
from mgbench.training.driver import run_training
from mgbench.training.protocol import Placement


def test_gpu_decode_on_cpu_devices_is_one_line_exit_2(tmp_path):
    done = mgbench("compare", "--frameworks", "pytorch", "--device", "cpu", "--dataset", "imagefolder:/nowhere",
                   "--decode", "gpu", "--out", str(tmp_path / "run"))  # fmt: skip
    assert "--decode gpu decodes on the GPUs" in one_line_error(done)
    assert not (tmp_path / "run").exists()


def test_gpu_decode_of_synthetic_data_is_refused():
    with pytest.raises(UsageError, match="synthetic data has nothing to decode"):
        Job("tiny", "cuda", 2, 4, decode="gpu")
    assert Job("tiny", "cuda", 2, 4, dataset="imagefolder:/x", decode="gpu").decode.on_device
    assert not Job("tiny", "cpu", 2, 4).decode.on_device


def test_a_framework_without_a_device_decoder_gets_an_unsupported_row_with_its_reason():
    job = Job("tiny", "cuda", 2, 4, dataset="imagefolder:/x", decode="gpu", data_format="channels_first")
    frameworks = ["pytorch", "horovod", "gluon", "keras-torch", "keras-jax", "keras-tf", "tensorflow"]
    refused = {run.config.framework: run.refusal for run in plan_runs(job, frameworks, None, [1], "weak")}
    assert [name for name, refusal in refused.items() if refusal is None] == frameworks[:2] + frameworks[3:5]
    status, reason = refused["gluon"]
    assert status == "unsupported"
    assert reason == "gluon cannot decode on the GPU (--decode gpu): its loader decodes on the host only here"
    for tf_data in ("keras-tf", "tensorflow"):
        status, reason = refused[tf_data]
        assert status == "unsupported" and "tf.data decodes the images on the host" in reason


def test_a_host_share_outside_0_to_1_or_without_gpu_decode_is_one_line_exit_2(tmp_path):
    for share, decode, message in [("1", "gpu", "below 1, got 1.0"), ("-0.1", "gpu", "at least 0"),
                                   ("0.5", "cpu", "with --decode cpu the host decodes all")]:  # fmt: skip
        done = mgbench("compare", "--frameworks", "pytorch", "--device", "cpu", "--dataset", "imagefolder:/nowhere",
                       "--decode", decode, "--decode-host-share", share, "--out", str(tmp_path / "run"))  # fmt: skip
        assert message in one_line_error(done)
    assert not (tmp_path / "run").exists()


def test_a_loader_that_hands_the_gpu_whole_batches_refuses_a_host_share():
    job = Job("tiny", "cuda", 2, 4, dataset="imagefolder:/x", decode="gpu", decode_host_share=0.25,
              data_format="channels_first")  # fmt: skip
    frameworks = ["pytorch", "horovod", "keras-torch", "keras-jax"]
    refused = {run.config.framework: run.refusal for run in plan_runs(job, frameworks, None, [1], "weak")}
    assert refused["pytorch"] is None and refused["horovod"] is None
    for keras in ("keras-torch", "keras-jax"):
        status, reason = refused[keras]
        assert status == "unsupported" and "(--decode-host-share): its loader hands the GPU whole batches" in reason


def test_a_config_read_back_without_decode_decodes_on_the_host():
    config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cpu", 2, 4)
    data = config.to_dict()
    del data["decode"]
    assert RunConfig.from_dict(data).job.decode == "cpu"
    assert RunConfig.from_json(config.with_changes(device_kind="cuda", dataset="imagefolder:/x", decode="gpu")
                               .to_json()).job.decode.on_device  # fmt: skip
    assert framework_spec("pytorch").capabilities.gpu_decoder == "nvJPEG (torchvision.io.decode_jpeg)"


@pytest.mark.parametrize("framework", ["pytorch", "keras-torch", "keras-jax"])
def test_a_gpu_decoding_run_gets_a_hardware_queue_per_stream_unless_the_user_set_them(framework, monkeypatch):
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    spec = framework_spec(framework)
    jpegs = RunConfig.flat(framework, spec.defaults[0], "tiny", 1, "cuda", 1, 4, dataset="imagefolder:/x")
    assert spec.variables_for(jpegs.with_changes(decode="gpu"))["CUDA_DEVICE_MAX_CONNECTIONS"] == "32"
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in spec.variables_for(jpegs)
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8")
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in spec.variables_for(jpegs.with_changes(decode="gpu"))


def photo(path: Path, size: tuple[int, int], mode: str = "RGB", seed: int = 0) -> str:
    """A JPEG of smooth colour fields and grain: any crop or flip off by a pixel shows."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0 : size[1], 0 : size[0]].astype(np.float32)
    field = np.stack([np.sin(x * f / 9 + f) + np.cos(y * f / 7) for f in (1, 2, 3)], axis=-1)
    pixels = np.clip((field + rng.normal(0, 0.3, field.shape) + 2) * 63, 0, 255).astype(np.uint8)
    image = Image.fromarray(pixels, "RGB").convert(mode)
    image.save(path, quality=90)
    return str(path)


def test_the_window_drawn_from_the_header_is_the_crop_and_flip_train_pixels_takes(tmp_path):
    """The window is what resizing the whole image and cropping it at the drawn place takes
    (train_pixels resizes only the window: the same pixels within rounding), flipped as drawn."""
    augmentation = Augmentation.for_input(64)
    path = photo(tmp_path / "a.jpg", (120, 90))
    image = open_image(path)
    resized = image.resize(augmentation.resized_size(*image.size), Image.Resampling.BILINEAR)
    flips = set()
    for index in range(10):
        window = augmentation.train_window(read_header(path).size, 5, 2, index)
        left = round(window.box[0] * resized.width / image.width)
        top = round(window.box[1] * resized.height / image.height)
        expected = np.asarray(resized.crop((left, top, left + 64, top + 64)), dtype=np.int16)
        expected = expected[:, ::-1] if window.flip else expected
        assert np.abs(augmentation.train_pixels(path, 5, 2, index) - expected).max() <= 2
        flips.add(window.flip)
    assert flips == {False, True}
    centre = augmentation.eval_window(read_header(path).size)
    assert not centre.flip
    assert centre.box[0] == pytest.approx(((resized.width - 64) // 2) * image.width / resized.width)


def encoded(paths: list[str]) -> list[torch.Tensor]:
    return [torch.frombuffer(bytearray(Path(path).read_bytes()), dtype=torch.uint8) for path in paths]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_the_device_crop_gives_the_host_pixels_within_2_levels(tmp_path, dtype):
    """Reduced, enlarged, already at size, grayscale; flipped and not; training and centre
    windows: the device half against Pillow's resize of the same window, in float32 (the CPU's)
    and float16 (CUDA's products)."""
    sizes = [((120, 90), "RGB"), ((50, 40), "RGB"), ((90, 130), "L"), ((75, 75), "RGB")]
    paths = [photo(tmp_path / f"{n}.jpg", size, mode, seed=n) for n, (size, mode) in enumerate(sizes)]
    augmentation = Augmentation.for_input(64)
    images = torchvision.io.decode_jpeg(encoded(paths), mode=torchvision.io.ImageReadMode.UNCHANGED)
    assert images[2].shape[0] == 1
    flips = set()
    for index in range(3):
        windows = [augmentation.train_window(read_header(path).size, 1, 0, index + n) for n, path in enumerate(paths)]
        flips |= {window.flip for window in windows}
        batch = cropped(images, torch.from_numpy(np.stack([w.as_array() for w in windows])), 64, dtype)
        assert batch.shape == (4, 3, 64, 64) and batch.dtype == torch.uint8
        for n, path in enumerate(paths):
            host = augmentation.train_pixels(path, 1, 0, index + n).astype(np.int16)
            assert np.abs(batch[n].permute(1, 2, 0).numpy() - host).max() <= 2, (path, windows[n])
    assert flips == {False, True}
    centres = np.stack([augmentation.eval_window(read_header(path).size).as_array() for path in paths])
    batch = cropped(images, torch.from_numpy(centres), 64, dtype)
    for n, path in enumerate(paths):
        assert np.abs(batch[n].permute(1, 2, 0).numpy() - augmentation.eval_pixels(path).astype(np.int16)).max() <= 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_black_and_white_images_keep_their_levels_without_a_clip(dtype):
    """The crop leaves Pillow's clip to 0-255 out (the bilinear weights sum to one): an image of
    one level, the darkest or the brightest, gray or colour, reduced or enlarged, flipped or not,
    comes out at that level, where a level pushed past either end would wrap around in uint8."""
    images = [
        torch.full((channels, height, width), level, dtype=torch.uint8)
        for channels, level in ((3, 0), (3, 255), (1, 0), (1, 255))
        for height, width in ((37, 301), (250, 90))
    ]
    rng = np.random.default_rng(0)
    windows = []
    for image in images:
        height, width = image.shape[1:]
        left, top = rng.uniform(0, width / 2), rng.uniform(0, height / 2)
        right, bottom = left + rng.uniform(3, width - left), top + rng.uniform(3, height - top)
        windows.append([left, top, right, bottom, len(windows) % 2])
    batch = cropped(images, torch.tensor(windows), 64, dtype)
    for image, crop in zip(images, batch, strict=True):
        assert torch.equal(crop, torch.full_like(crop, int(image[0, 0, 0])))


def test_the_workers_plan_is_the_plan_of_the_decoded_images_and_a_wrong_one_is_refused(tmp_path):
    """The workers plan a batch's crop from the files' headers (grayscale ones decode to three
    channels); on the decoded images it is the plan made from their own shapes, the crops the
    same. A plan of other sizes is refused, never cropped with."""
    sizes = [((120, 90), "RGB"), ((50, 40), "L"), ((75, 75), "RGB")]
    paths = [photo(tmp_path / f"{n}.jpg", size, mode, seed=n) for n, (size, mode) in enumerate(sizes)]
    augmentation = Augmentation.for_input(32)
    items = EncodedTrainItems(Split(paths, np.zeros((3, 1), np.float32)), augmentation, seed=3)
    batch = PlannedCollate(32)([items[(0, index)] for index in range(3)]).parts()
    images = decoded_images(batch.data, batch.lengths, torch.device("cpu"))
    shapes = np.array([image.shape for image in images])
    assert shapes.tolist() == [[3, 90, 120], [3, 40, 50], [3, 75, 75]]
    own = crop_plan(shapes, batch.windows.numpy(), 32)
    for planned, made in zip(batch.plan, own, strict=True):
        assert np.array_equal(planned.numpy(), made)
    assert torch.equal(planned_crops(images, batch.plan, 32), cropped(images, batch.windows, 32))
    with pytest.raises(ValueError, match="a crop plan for images of other sizes"):
        planned_crops(images[::-1], batch.plan, 32)


def test_the_workers_plan_from_the_sizes_the_items_carry_without_reading_a_header_again(tmp_path, monkeypatch):
    """Each item carries the size its header gave when its window was drawn; the collation plans
    the crop from those sizes and opens no file's bytes again (Pillow is never called)."""
    sizes = [(120, 90), (50, 40), (75, 75)]
    paths = [photo(tmp_path / f"{n}.jpg", size, "RGB", seed=n) for n, size in enumerate(sizes)]
    items = EncodedTrainItems(Split(paths, np.zeros((3, 1), np.float32)), Augmentation.for_input(32), seed=3)
    read = [items[(0, index)] for index in range(3)]
    assert [item.size for item in read] == sizes

    def no_open(*args, **kwargs):
        raise AssertionError("a header read again")

    monkeypatch.setattr(Image, "open", no_open)
    batch = PlannedCollate(32)(read).parts()
    assert batch.plan.shapes.tolist() == [[3, 90, 120], [3, 40, 50], [3, 75, 75]]
    assert batch.targets.shape == (3, 1) and batch.lengths.tolist() == [len(item.data) for item in read]


def test_the_device_crop_makes_as_many_calls_for_a_large_batch_as_for_a_small_one():
    """The decoding thread's share of a batch is a fixed number of calls into torch and numpy
    (each can hand the interpreter's lock to it from the threads that launch the step), not a
    number that grows with the batch: no call per image."""
    import sys

    def calls(count: int) -> int:
        images = [torch.zeros((3, 40 + n % 7, 50 + n % 5), dtype=torch.uint8) for n in range(count)]
        windows = np.array([[2.0, 3.0, 30.0, 33.0, n % 2] for n in range(count)], dtype=np.float32)
        plan = CropPlan(
            *(torch.from_numpy(part) for part in crop_plan(np.array([i.shape for i in images]), windows, 16))
        )
        made = 0

        def counted(frame, event, arg):
            nonlocal made
            made += event == "c_call"

        sys.setprofile(counted)
        try:
            planned_crops(images, plan, 16)
        finally:
            sys.setprofile(None)
        return made

    assert calls(64) == calls(4) < 50


def jpeg_folder(root: Path, sizes: list[tuple[int, int]], suffix: str = ".jpg") -> Path:
    """A class folder with train, val and test splits, each of two classes of photos of `sizes`
    (the last grayscale)."""
    for split in ("train", "val", "test"):
        for n, size in enumerate(sizes):
            folder = root / split / f"class{n % 2}"
            folder.mkdir(parents=True, exist_ok=True)
            photo(folder / f"{n:02d}{suffix}", size, "L" if n == len(sizes) - 1 else "RGB", seed=n + len(split))
    return root


def both_loaders(root: Path, workers: int, batch: int = 2, host_share: float = 0.0):
    """The GPU path's loaders (the workers decoding `host_share` of each batch) and the host
    path's over the class folder `root`, batches of `batch` at 32 px, with the CPU as the device
    (torchvision decodes on the CPU)."""
    dataset = describe_dataset(f"imagefolder:{root}")
    config = RunConfig.flat(
        "pytorch", "ddp", "tiny", 1, "cpu", batch, 1, dataset=f"imagefolder:{root}", image_size=32, workers=workers
    )
    cpu = torch.device("cpu")
    shard = Shard.of_rank(0, 1, config.global_batch)
    decoding = DeviceDecoding(DecodedOnDevice(cpu, 32, False), host_share)
    device = build_loaders(dataset, config, Placement(0, 1), shard, decoding)
    host = build_loaders(dataset, config, Placement(0, 1), shard, HostDecoding(PlacedPixels(cpu, False)))
    return device, host


def test_the_byte_reading_loader_decoded_on_a_device_gives_the_host_loaders_batches(tmp_path):
    """The GPU path's loader and placement with the CPU as the device: workers hand over bytes
    and windows, the training process decodes and crops; batches and labels match the host
    path's within 2 levels, for training (random windows, flips) and validation (centre)."""
    root = jpeg_folder(tmp_path / "jpegs", [(120, 90), (50, 40), (90, 130), (75, 75), (64, 100), (200, 60)])
    device, host = both_loaders(root, workers=1)
    level = 2 / 255 / float(IMAGENET_STD.min())
    pairs = [*zip(device.train.epoch(0), host.train.epoch(0)), *zip(device.held_out["val"], host.held_out["val"])]
    assert len(pairs) == 6
    for encoded_batch, pixel_batch in pairs:
        data, lengths = encoded_batch.parts()[:2]  # the files' bytes: nothing decoded yet
        assert data.dtype == torch.uint8 and len(data) == int(lengths.sum()) and len(lengths) == 2
        images, labels = device.decoding.place(encoded_batch)
        expected, expected_labels = host.decoding.place(pixel_batch)
        assert images.shape == expected.shape == (2, 3, 32, 32)
        assert torch.equal(labels, expected_labels)
        assert (images - expected).abs().max() <= level + 1e-6
    assert device.decoding.decoder == "nvJPEG (torchvision.io.decode_jpeg) on cpu, crop on device"
    assert host.decoding.decoder == f"{pillow_build()} (host)"


def test_with_a_host_share_the_workers_decode_the_first_images_as_the_host_path_and_the_device_the_rest(tmp_path):
    """A batch of 4 with half of it decoded by the workers: its first two images are the host
    path's pixels exactly, the other two its pixels within 2 levels, every label in the host
    path's order; and the decoder the rows name says so. A share below one image decodes all
    on the device."""
    root = jpeg_folder(
        tmp_path / "jpegs", [(120, 90), (50, 40), (90, 130), (75, 75), (64, 100), (200, 60), (80, 80), (60, 90)]
    )
    device, host = both_loaders(root, workers=0, batch=4, host_share=0.5)
    level = 2 / 255 / float(IMAGENET_STD.min())
    pairs = [*zip(device.train.epoch(0), host.train.epoch(0)), *zip(device.held_out["val"], host.held_out["val"])]
    assert len(pairs) == 4
    for encoded_batch, pixel_batch in pairs:
        parts = encoded_batch.parts()
        assert len(parts.lengths) == 2 and parts.hosted.shape == (2, 32, 32, 3) and len(parts.targets) == 4
        images, labels = device.decoding.place(encoded_batch)
        expected, expected_labels = host.decoding.place(pixel_batch)
        assert images.shape == expected.shape == (4, 3, 32, 32)
        assert torch.equal(labels, expected_labels)
        assert torch.equal(images[:2], expected[:2])
        assert (images[2:] - expected[2:]).abs().max() <= level + 1e-6
    assert device.decoding.decoder == (
        f"nvJPEG (torchvision.io.decode_jpeg) on cpu, crop on device; 50% of each batch by {pillow_build()} (host)"
    )
    assert PlannedCollate(32, 0.2)([EncodedTrainItems(describe_dataset(f"imagefolder:{root}").train,
                                    Augmentation.for_input(32), 0)[(0, n)] for n in range(4)]).parts().hosted.shape[0] == 0  # fmt: skip


def test_gpu_decode_decodes_jpeg_datasets_on_the_device_and_others_on_the_host(tmp_path):
    jpegs = jpeg_folder(tmp_path / "jpegs", [(40, 40)] * 4)
    pngs = jpeg_folder(tmp_path / "pngs", [(40, 40)] * 4, ".png")
    cpu = torch.device("cpu")

    def decoding(root: Path, decode: str) -> HostDecoding | DeviceDecoding:
        dataset = f"imagefolder:{root}"
        config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cuda", 2, 1, dataset=dataset, decode=decode)
        return decoding_for(describe_dataset(dataset), config, cpu, True)

    assert isinstance(decoding(jpegs, "gpu"), DeviceDecoding)
    assert decoding(jpegs, "gpu").place.channels_last
    assert isinstance(decoding(jpegs, "cpu"), HostDecoding)
    on_host = decoding(pngs, "gpu")
    assert isinstance(on_host, HostDecoding)
    assert on_host.decoder == f"{pillow_build()} (host): not all JPEGs, which --decode gpu decodes"


def test_rows_of_real_data_name_the_decoder_and_rows_of_synthetic_data_none(tmp_path, fake_plugin):
    """PyTorch names its loader's decoder; an adapter that names none gets the host's."""
    import fakefw

    root = jpeg_folder(tmp_path / "jpegs", [(40, 40)] * 4)
    config = RunConfig.flat(
        "pytorch", "dp", "tiny", 1, "cpu", 2, 1, dataset=f"imagefolder:{root}", image_size=32, workers=0
    )
    assert run_training(create_adapter("dp"), config, host_decoder="unused").input.decoder == f"{pillow_build()} (host)"
    synthetic = run_training(create_adapter("dp"), config.with_changes(dataset="synthetic"), host_decoder="unused")
    assert synthetic.input.decoder is None
    fake = RunConfig.flat("fake", "steady", "tiny", 1, "cpu", 2, 3, dataset="chestxray:/data")
    assert run_training(fakefw.create_adapter("steady"), fake, host_decoder="the host's").input.decoder == "the host's"


def odd_jpegs(folder: Path) -> dict[str, str]:
    """Images under JPEG names as real folders hold them (ImageNet's training set has a PNG named
    `.JPEG` and CMYK JPEGs), beside the JPEGs a device decoder reads as they are."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"rgb": photo(folder / "rgb.jpg", (120, 90)), "gray": photo(folder / "gray.jpg", (90, 130), "L", seed=1)}
    source = Image.open(photo(folder / "source.jpg", (100, 80), seed=2))
    paths["png"] = str(folder / "png.JPEG")
    source.save(paths["png"], "PNG")
    paths["cmyk"] = str(folder / "cmyk.jpg")
    source.convert("CMYK").save(paths["cmyk"], "JPEG", quality=95)
    return paths


def test_jpegs_are_handed_over_as_they_are_and_other_images_under_jpeg_names_reencoded(tmp_path):
    """The device decoder reads a PNG under a JPEG name and a CMYK JPEG as a JPEG of the host
    path's pixels (its own decode of a PNG fails); JPEGs it reads keep their bytes."""
    paths = odd_jpegs(tmp_path)
    for name in ("rgb", "gray"):
        data, size = device_file(paths[name])
        assert data.tobytes() == Path(paths[name]).read_bytes() and size == read_header(paths[name]).size
    with pytest.raises(RuntimeError):
        torchvision.io.decode_jpeg(encoded([paths["png"]])[0])
    for name in ("png", "cmyk"):
        data, size = device_file(paths[name])
        assert read_header(paths[name]).format != "JPEG" or read_header(paths[name]).mode == "CMYK"
        assert size == (100, 80)
        handed = torchvision.io.decode_jpeg(torch.from_numpy(data.copy()), mode=torchvision.io.ImageReadMode.RGB)
        host = torch.from_numpy(np.asarray(open_image(paths[name]))).permute(2, 0, 1)
        assert handed.shape == host.shape == (3, 80, 100)
        assert (handed.int() - host.int()).abs().float().mean() <= 2


def test_the_device_path_trains_on_a_folder_with_a_png_and_a_cmyk_file_under_jpeg_names(tmp_path):
    """Both loaders over such a folder give the same batches within the levels the re-encoding
    adds: the device path's batches decode, none fails."""
    root = jpeg_folder(tmp_path / "jpegs", [(120, 90), (50, 40), (90, 130), (75, 75)])
    odd = odd_jpegs(tmp_path / "odd")
    for name, target in (("png", "train/class0/00.jpg"), ("cmyk", "train/class1/01.jpg")):
        Path(odd[name]).replace(root / target)
    device, host = both_loaders(root, workers=0)
    level = 4 / 255 / float(IMAGENET_STD.min())
    batches = list(zip(device.train.epoch(0), host.train.epoch(0)))
    assert len(batches) == 2
    for encoded_batch, pixel_batch in batches:
        images, labels = device.decoding.place(encoded_batch)
        expected, expected_labels = host.decoding.place(pixel_batch)
        assert torch.equal(labels, expected_labels)
        assert (images - expected).abs().max() <= level + 1e-6


def test_the_check_before_launching_names_the_images_gpu_decoding_reencodes(tmp_path):
    root = jpeg_folder(tmp_path / "jpegs", [(40, 40)] * 4)
    odd = odd_jpegs(tmp_path / "odd")
    Path(odd["png"]).replace(root / "train" / "class0" / "00.jpg")
    Path(odd["cmyk"]).replace(root / "val" / "class1" / "01.jpg")
    notes = {}
    for decode in ("gpu", "cpu"):
        config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cuda", 2, 1, dataset=f"imagefolder:{root}", decode=decode)
        notes[decode] = []
        check_dataset(config.job, [config], workers=1, on_note=notes[decode].append)
    (root / "test" / "class0" / "00.jpg").rename(root / "test" / "class0" / "00.png")
    config = RunConfig.flat("pytorch", "ddp", "tiny", 1, "cuda", 2, 1, dataset=f"imagefolder:{root}", decode="gpu")
    notes["host"] = []
    check_dataset(config.job, [config], workers=1, on_note=notes["host"].append)
    assert notes["cpu"] == notes["host"] == []  # a folder not all JPEGs decodes on the host
    assert notes["gpu"] == [
        "--decode gpu: 2 image(s) under JPEG names are not 8-bit RGB or grayscale JPEGs "
        "(train/class0/00.jpg, val/class1/01.jpg); the loaders hand them to the device decoder re-encoded as JPEGs"
    ]
