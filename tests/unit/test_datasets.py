"""glowmlir.datasets: calibration inputs with Glow's image / -input-dataset semantics."""

from __future__ import annotations

import glob
import os
import re

import numpy as np
import pytest
from PIL import Image

from glowmlir.datasets import (
    ImageOptions,
    InputDataset,
    calibration_samples,
    load_image,
    load_raw,
    parse_input_dataset,
)
from glowmlir.errors import GlowError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENET_DIR = os.path.join(ROOT, "examples", "lenet_mnist")

# A 2x3 RGB image: RGB[y, x] = (R, G, B)
RGB = np.array([[[0, 10, 255], [1, 128, 254], [2, 200, 100]],
                [[50, 60, 70], [127, 128, 129], [250, 251, 252]]], np.uint8)
GRAY = np.array([[0, 1, 2], [127, 128, 255]], np.uint8)


def glow_scale(pixels: np.ndarray, mode: str) -> np.ndarray:
    """Glow's readPngImage arithmetic, float32: p * float((high - low) / 255.0) + low."""
    low, high = {"0to1": (0.0, 1.0), "0to255": (0.0, 255.0), "neg1to1": (-1.0, 1.0),
                 "neg128to127": (-128.0, 127.0)}[mode]
    return pixels.astype(np.float32) * np.float32((high - low) / 255.0) + np.float32(low)


def raises(fragments, call, *args, **kwargs) -> str:
    with pytest.raises(GlowError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


@pytest.fixture
def rgb_png(tmp_path):
    path = str(tmp_path / "rgb.png")
    Image.fromarray(RGB, "RGB").save(path)
    return path


@pytest.fixture
def gray_png(tmp_path):
    path = str(tmp_path / "gray.png")
    Image.fromarray(GRAY, "L").save(path)
    return path


def write_rawbin(path, values) -> str:
    np.asarray(values, "<f4").tofile(path)
    return str(path)


# ---------------------------------------------------------------------------------------------
# ImageOptions


def test_image_option_defaults_are_glows():
    options = ImageOptions()
    assert (options.mode, options.layout, options.channel_order) == ("0to255", "NCHW", "BGR")
    assert (options.mean, options.stddev) == ((), ())
    assert ImageOptions.parse(None, None, None, None, None) == options
    assert ImageOptions.parse("0to1", "NHWC", "RGB", "1, 2.5,3", "4,5,6") == ImageOptions(
        "0to1", "NHWC", "RGB", (1.0, 2.5, 3.0), (4.0, 5.0, 6.0))
    assert ImageOptions.parse("0to1", "NCHW", "BGR", "", "") == ImageOptions("0to1")


@pytest.mark.parametrize("args, fragments", [
    (("0to2", "NCHW", "BGR", None, None), ["-image-mode=\"0to2\"", "0to1", "neg128to127"]),
    (("0to1", "CHW", "BGR", None, None), ["-image-layout=\"CHW\"", "NCHW, NHWC"]),
    (("0to1", "NCHW", "GBR", None, None), ["-image-channel-order=\"GBR\"", "BGR, RGB"]),
    (("0to1", "NCHW", "BGR", "1,x,3", None), ["-mean=\"1,x,3\"", "\"x\""]),
    (("0to1", "NCHW", "BGR", None, "1,,3"), ["-stddev=\"1,,3\"", "comma-separated numbers"]),
    (("0to1", "NCHW", "BGR", None, "1,0,3"), ["-stddev=\"1,0,3\"", "positive"]),
    (("0to1", "NCHW", "BGR", None, "1,-2,3"), ["-stddev=\"1,-2,3\"", "positive"]),
    (("0to1", "NCHW", "BGR", "nan", None), ["-mean=\"nan\"", "finite"]),
])
def test_image_option_errors(args, fragments):
    raises(fragments, ImageOptions.parse, *args)


# ---------------------------------------------------------------------------------------------
# load_image


@pytest.mark.parametrize("mode", ["0to1", "0to255", "neg1to1", "neg128to127"])
def test_image_modes_exact_values(rgb_png, mode):
    value = load_image(rgb_png, (1, 3, 2, 3), ImageOptions(mode=mode, channel_order="RGB"))
    assert value.dtype == np.float32 and value.shape == (1, 3, 2, 3)
    expected = glow_scale(RGB, mode).transpose(2, 0, 1)[None]
    assert np.array_equal(value, expected)
    low, high = {"0to1": (0, 1), "0to255": (0, 255), "neg1to1": (-1, 1), "neg128to127": (-128, 127)}[mode]
    assert value.min() == pytest.approx(low) and value.max() == pytest.approx(high)
    assert np.allclose(value, RGB.transpose(2, 0, 1)[None] / 255.0 * (high - low) + low, atol=1e-5 * (high - low))


def test_default_is_0to255_bgr_nchw(rgb_png):
    value = load_image(rgb_png, (1, 3, 2, 3), ImageOptions())
    assert np.array_equal(value[0, 0], RGB[:, :, 2].astype(np.float32))  # channel 0 is blue
    assert np.array_equal(value[0, 1], RGB[:, :, 1].astype(np.float32))
    assert np.array_equal(value[0, 2], RGB[:, :, 0].astype(np.float32))


def test_channel_order_and_layout(rgb_png):
    rgb_nchw = load_image(rgb_png, (1, 3, 2, 3), ImageOptions(mode="0to1", channel_order="RGB"))
    bgr_nchw = load_image(rgb_png, (1, 3, 2, 3), ImageOptions(mode="0to1", channel_order="BGR"))
    rgb_nhwc = load_image(rgb_png, (1, 2, 3, 3), ImageOptions(mode="0to1", layout="NHWC", channel_order="RGB"))
    bgr_nhwc = load_image(rgb_png, (1, 2, 3, 3), ImageOptions(mode="0to1", layout="NHWC"))
    assert np.array_equal(bgr_nchw, rgb_nchw[:, ::-1])
    assert np.array_equal(rgb_nhwc, glow_scale(RGB, "0to1")[None])
    assert np.array_equal(bgr_nhwc, glow_scale(RGB[:, :, ::-1], "0to1")[None])
    assert np.array_equal(rgb_nhwc.transpose(0, 3, 1, 2), rgb_nchw)
    assert bgr_nhwc.flags.c_contiguous and bgr_nchw.flags.c_contiguous


def test_mean_stddev_are_pixel_units_before_scaling_in_channel_order(rgb_png):
    # -mean/-stddev list the channels in -image-channel-order: B, G, R here.
    options = ImageOptions.parse("0to1", "NCHW", "BGR", "10,20,30", "2,4,8")
    value = load_image(rgb_png, (1, 3, 2, 3), options)
    bgr = RGB[:, :, ::-1].astype(np.float32)
    mean, std = np.float32([10, 20, 30]), np.float32([2, 4, 8])
    expected = ((bgr - mean) / std) * np.float32(1 / 255.0) + np.float32(0)
    assert np.array_equal(value, expected.transpose(2, 0, 1)[None])
    assert value[0, 0, 0, 0] == pytest.approx((255 - 10) / 2 / 255)  # blue of pixel (0,0) is 255
    # With RGB order the same list applies to R, G, B.
    rgb = load_image(rgb_png, (1, 3, 2, 3), ImageOptions.parse("neg1to1", "NCHW", "RGB", "10,20,30", "2,4,8"))
    expected = ((RGB.astype(np.float32) - mean) / std) * np.float32(2 / 255.0) + np.float32(-1)
    assert np.array_equal(rgb, expected.transpose(2, 0, 1)[None])
    # mean alone (stddev 1), stddev alone (mean 0)
    only_mean = load_image(rgb_png, (1, 2, 3, 3), ImageOptions("0to255", "NHWC", "RGB", mean=(1, 2, 3)))
    assert np.array_equal(only_mean[0], RGB.astype(np.float32) - np.float32([1, 2, 3]))
    only_std = load_image(rgb_png, (1, 2, 3, 3), ImageOptions("0to255", "NHWC", "RGB", stddev=(2, 2, 2)))
    assert np.array_equal(only_std[0], RGB.astype(np.float32) / np.float32(2))


def test_grayscale_into_one_channel(gray_png):
    value = load_image(gray_png, (1, 1, 2, 3), ImageOptions(mode="0to1"))
    assert value.shape == (1, 1, 2, 3)
    assert np.array_equal(value[0, 0], glow_scale(GRAY, "0to1"))
    nhwc = load_image(gray_png, (1, 2, 3, 1), ImageOptions(mode="neg128to127", layout="NHWC", mean=(128,)))
    assert np.array_equal(nhwc[0, :, :, 0], (GRAY.astype(np.float32) - 128) * np.float32(1.0) - 128)


def test_alpha_is_dropped_not_composited(tmp_path):
    rgba = np.dstack([RGB, np.full((2, 3), 7, np.uint8)])
    path = str(tmp_path / "rgba.png")
    Image.fromarray(rgba, "RGBA").save(path)
    value = load_image(path, (1, 2, 3, 3), ImageOptions(layout="NHWC", channel_order="RGB"))
    assert np.array_equal(value[0], RGB.astype(np.float32))


def test_batch_n_shape_gives_one_image(rgb_png):
    value = load_image(rgb_png, (4, 3, 2, 3), ImageOptions())
    assert value.shape == (1, 3, 2, 3)


def test_image_errors(tmp_path, rgb_png, gray_png):
    raises(["image \"", "gray.png", "2x3 (HxW) grayscale with 1 channel", "[1,3,2,3] NCHW needs 2x3 with 3 channels"],
           load_image, gray_png, (1, 3, 2, 3), ImageOptions())
    raises(["rgb.png", "2x3 (HxW) color with 3 channels", "needs 2x4 with 3 channels"],
           load_image, rgb_png, (1, 3, 2, 4), ImageOptions())
    raises(["rgb.png", "[1,3,2,3] NHWC needs 3x2 with 3 channels"],
           load_image, rgb_png, (1, 3, 2, 3), ImageOptions(layout="NHWC"))
    raises(["rgb.png", "4-D", "[3,2,3]"], load_image, rgb_png, (3, 2, 3), ImageOptions())
    raises(["-mean", "3 values", "gray.png", "1 channel"], load_image, gray_png, (1, 1, 2, 3),
           ImageOptions(mean=(1, 2, 3)))
    raises(["-stddev", "1 values", "rgb.png", "3 channels"], load_image, rgb_png, (1, 3, 2, 3),
           ImageOptions(stddev=(2,)))
    raises(["missing.png", "not found"], load_image, str(tmp_path / "missing.png"), (1, 1, 2, 3), ImageOptions())
    junk = tmp_path / "junk.png"
    junk.write_text("not a png")
    raises(["junk.png", "not an image"], load_image, str(junk), (1, 1, 2, 3), ImageOptions())
    deep = str(tmp_path / "deep.png")
    Image.fromarray(np.zeros((2, 3), np.uint16)).save(deep)
    raises(["deep.png", "not supported"], load_image, deep, (1, 1, 2, 3), ImageOptions())


# ---------------------------------------------------------------------------------------------
# load_raw


def test_rawbin_round_trip(tmp_path):
    data = np.arange(6, dtype=np.float32).reshape(2, 3) * np.float32(0.1) - 0.25
    path = write_rawbin(tmp_path / "x.bin", data)
    value = load_raw(path, "rawbin", (2, 3))
    assert value.dtype == np.float32 and np.array_equal(value, data)
    raises(["rawbin file", "x.bin", "24 bytes", "[1,2,3,4]", "96 bytes"], load_raw, path, "rawbin", (1, 2, 3, 4))
    raises(["rawbin file", "nope.bin", "not found"], load_raw, str(tmp_path / "nope.bin"), "rawbin", (2, 3))
    raises(["unknown dataset format \"npy\""], load_raw, path, "npy", (2, 3))


def test_rawtxt_round_trip(tmp_path):
    data = np.array([[1.0, -2.5, 3e-3], [4.0, 5.0, 1e10]], np.float32)
    # Glow's dumpTensorToTextFile writes "v, v, ..., v, "; newlines and spaces are allowed.
    glow_dump = tmp_path / "dump.txt"
    glow_dump.write_text("".join(f"{float(v)!r}, " for v in data.reshape(-1)))
    assert np.array_equal(load_raw(str(glow_dump), "rawtxt", (2, 3)), data)
    multiline = tmp_path / "multi.txt"
    multiline.write_text("1.0, -2.5,\n 0.003,\n4,5, 1e10\n")
    assert np.array_equal(load_raw(str(multiline), "rawtxt", (2, 3)), data)
    assert load_raw(str(multiline), "rawtxt", (6,)).shape == (6,)


def test_rawtxt_errors(tmp_path):
    few = tmp_path / "few.txt"
    few.write_text("1, 2, 3,")
    raises(["rawtxt file", "few.txt", "3 values", "[2,3] needs 6"], load_raw, str(few), "rawtxt", (2, 3))
    spaces = tmp_path / "spaces.txt"
    spaces.write_text("1 2 3 4 5 6")
    raises(["spaces.txt", "value 1 \"1 2 3 4 5 6\" is not a number", "separated by commas"],
           load_raw, str(spaces), "rawtxt", (2, 3))
    hole = tmp_path / "hole.txt"
    hole.write_text("1, , 3")
    raises(["hole.txt", "value 2", "not a number"], load_raw, str(hole), "rawtxt", (3,))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    raises(["empty.txt", "0 values"], load_raw, str(empty), "rawtxt", (1,))
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00")
    raises(["binary.txt", "cannot read"], load_raw, str(binary), "rawtxt", (1,))


# ---------------------------------------------------------------------------------------------
# parse_input_dataset


@pytest.fixture
def raw_dir(tmp_path):
    directory = tmp_path / "raw"
    directory.mkdir()
    for name, value in (("b.bin", 2), ("a.bin", 1), ("c.bin", 3)):
        write_rawbin(directory / name, [value] * 4)
    (directory / ".DS_Store").write_bytes(b"x")
    (directory / "sub").mkdir()
    return str(directory)


def test_dataset_from_dir_is_sorted(raw_dir):
    dataset = parse_input_dataset(f"data,rawbin,dir,{raw_dir}")
    assert dataset == InputDataset("data", "rawbin",
                                   tuple(os.path.join(raw_dir, n) for n in ("a.bin", "b.bin", "c.bin")))


def test_dataset_from_list_file(tmp_path, raw_dir, monkeypatch):
    # Glow's documented list syntax: one path per line, the rest after a comma or space ignored.
    listing = tmp_path / "dataset.csv"
    listing.write_text("c.bin\nb.bin,\n\na.bin 'cat'\nc.bin,dog\nb.bin ,2\n")
    dataset = parse_input_dataset(f"in1,rawtxt,file,{listing},{raw_dir}")
    names = [os.path.relpath(p, raw_dir) for p in dataset.paths]
    assert (dataset.name, dataset.format, names) == ("in1", "rawtxt", ["c.bin", "b.bin", "a.bin", "c.bin", "b.bin"])
    assert parse_input_dataset(f"in1,rawbin,file,{listing},{raw_dir}/").paths == dataset.paths
    # Without a directory the paths are relative to the current directory, not to the list file.
    monkeypatch.chdir(raw_dir)
    plain = tmp_path / "plain.csv"
    plain.write_text("a.bin,\nb.bin,\n")
    assert parse_input_dataset(f"x,rawbin,file,{plain}").paths == ("a.bin", "b.bin")


@pytest.mark.parametrize("spec, fragments", [
    (",rawbin,dir,{raw}", ["the input name is empty"]),
    ("data", ["the format is empty"]),
    ("data,npy,dir,{raw}", ["unknown format \"npy\"", "rawbin or rawtxt"]),
    ("data,rawbin", ["the source is empty"]),
    ("data,rawbin,folder,{raw}", ["unknown source \"folder\"", "file or dir"]),
    ("data,rawbin,dir", ["source 'dir' takes 1 option", "got 0"]),
    ("data,rawbin,dir,{raw},{raw}", ["source 'dir' takes 1 option", "got 2"]),
    ("data,rawbin,file", ["source 'file' takes 1 or 2 options", "got 0"]),
    ("data,rawbin,file,a,b,c", ["source 'file' takes 1 or 2 options", "got 3"]),
    ("data,rawbin,dir,,", ["empty option"]),
    ("data,rawbin,dir,{tmp}/nowhere", ["nowhere\" is not a directory"]),
    ("data,rawbin,dir,{tmp}/empty", ["directory", "empty\" has no files"]),
    ("data,rawbin,file,{tmp}/missing.csv", ["cannot read the list file", "missing.csv"]),
    ("data,rawbin,file,{tmp}/bad.csv,{raw}", ["nothere.bin", "line 2 of", "bad.csv", "does not exist"]),
    ("data,rawbin,file,{tmp}/blank.csv", ["blank.csv", "names no files"]),
    ("data,rawbin,file,{tmp}/bad.csv,{tmp}/nowhere", ["nowhere\" is not a directory"]),
])
def test_dataset_spec_errors(tmp_path, raw_dir, spec, fragments):
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.csv").write_text("a.bin\nnothere.bin\n")
    (tmp_path / "blank.csv").write_text("\n  \n")
    spec = spec.format(raw=raw_dir, tmp=tmp_path)
    message = raises(fragments, parse_input_dataset, spec)
    assert message.startswith(f"-input-dataset=\"{spec}\": ")


# ---------------------------------------------------------------------------------------------
# calibration_samples: -input-dataset


def test_datasets_feed_file_i_of_each(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for i in range(3):
        write_rawbin(tmp_path / "a" / f"{i}.bin", np.full((1, 4), i, np.float32))
        (tmp_path / "b" / f"{i}.txt").write_text(f"{10 + i}, {20 + i},\n")
    datasets = [parse_input_dataset(f"x,rawbin,dir,{tmp_path / 'a'}"),
                parse_input_dataset(f"y,rawtxt,dir,{tmp_path / 'b'}")]
    count, feeds = calibration_samples({"x": (1, 4), "y": (2,)}, [], datasets, [], ImageOptions())
    feeds = list(feeds)
    assert count == len(feeds) == 3
    for i, feed in enumerate(feeds):
        assert list(feed) == ["x", "y"]
        assert feed["x"].dtype == np.float32 and np.array_equal(feed["x"], np.full((1, 4), i, np.float32))
        assert np.array_equal(feed["y"], np.float32([10 + i, 20 + i]))


def test_dataset_errors(tmp_path, raw_dir):
    three = parse_input_dataset(f"x,rawbin,dir,{raw_dir}")
    two = InputDataset("y", "rawbin", three.paths[:2])
    raises(["-input-dataset", "input \"y\" has 2 files but input \"x\" has 3", "same number"],
           calibration_samples, {"x": (4,), "y": (4,)}, [], [three, two], [], ImageOptions())
    raises(["-input-dataset", "\"z\" is not a model input", "inputs: x, y"],
           calibration_samples, {"x": (4,), "y": (4,)}, [], [InputDataset("z", "rawbin", three.paths)], [],
           ImageOptions())
    raises(["no calibration data for input \"y\""],
           calibration_samples, {"x": (4,), "y": (4,)}, [], [three], [], ImageOptions())
    raises(["input \"x\" is given twice"],
           calibration_samples, {"x": (4,)}, [], [three, three], [], ImageOptions())
    raises(["rawbin file", "a.bin", "16 bytes", "input \"x\" [2,4] float32 needs 32 bytes"],
           calibration_samples, {"x": (2, 4)}, [], [three], [], ImageOptions())
    # rawtxt files are read when the iterator reaches them; errors are still GlowErrors.
    bad = tmp_path / "bad.txt"
    bad.write_text("1, 2")
    count, feeds = calibration_samples({"x": (4,)}, [], [InputDataset("x", "rawtxt", (str(bad),))], [], ImageOptions())
    assert count == 1
    raises(["rawtxt file", "bad.txt", "2 values", "[4] needs 4"], next, feeds)


def test_nothing_to_feed():
    raises(["no calibration inputs"], calibration_samples, {"x": (4,)}, [], [], [], ImageOptions())


# ---------------------------------------------------------------------------------------------
# calibration_samples: .npy / .npz


def test_npy_single_sample_and_batches(tmp_path):
    shape = (1, 2, 3)
    one = np.arange(6, dtype=np.float64).reshape(shape)
    np.save(tmp_path / "one.npy", one)
    count, feeds = calibration_samples({"x": shape}, [], [], [str(tmp_path / "one.npy")], ImageOptions())
    feeds = list(feeds)
    assert count == 1 and feeds[0]["x"].dtype == np.float32 and np.array_equal(feeds[0]["x"], one)

    stacked = np.arange(4 * 6, dtype=np.float32).reshape(4, *shape)  # [samples, *shape]
    np.save(tmp_path / "stacked.npy", stacked)
    count, feeds = calibration_samples({"x": shape}, [], [], [f"x={tmp_path / 'stacked.npy'}"], ImageOptions())
    assert count == 4 and all(np.array_equal(f["x"], stacked[i]) for i, f in enumerate(feeds))

    batch_axis = np.arange(5 * 6, dtype=np.int32).reshape(5, 2, 3)  # samples on the batch-1 axis
    np.save(tmp_path / "batch.npy", batch_axis)
    count, feeds = calibration_samples({"x": shape}, [], [], [str(tmp_path / "batch.npy")], ImageOptions())
    feeds = list(feeds)
    assert count == 5 and all(f["x"].shape == shape and np.array_equal(f["x"][0], batch_axis[i])
                              for i, f in enumerate(feeds))
    feeds[0]["x"][...] = -1  # feeds are private copies
    assert np.load(tmp_path / "batch.npy")[0, 0, 0] == 0

    # An input with batch 2 takes 2 consecutive rows per inference.
    rows = np.arange(6 * 3, dtype=np.float32).reshape(6, 3)
    np.save(tmp_path / "rows.npy", rows)
    count, feeds = calibration_samples({"x": (2, 3)}, [], [], [str(tmp_path / "rows.npy")], ImageOptions())
    assert count == 3 and [f["x"].tolist() for f in feeds] == [rows[0:2].tolist(), rows[2:4].tolist(),
                                                               rows[4:6].tolist()]


def test_npz_keys_are_inputs(tmp_path):
    a = np.random.default_rng(0).random((3, 1, 4)).astype(np.float32)
    b = np.arange(3 * 2, dtype=np.float32).reshape(3, 2)
    np.savez(tmp_path / "calib.npz", a=a, b=b)
    count, feeds = calibration_samples({"a": (1, 4), "b": (2,)}, [], [], [str(tmp_path / "calib.npz")], ImageOptions())
    feeds = list(feeds)
    assert count == 3
    assert all(np.array_equal(f["a"], a[i]) and np.array_equal(f["b"], b[i]) for i, f in enumerate(feeds))
    # an .npz can cover some inputs and a .npy the others
    np.savez(tmp_path / "only_a.npz", a=a)
    np.save(tmp_path / "b.npy", b)
    count, feeds = calibration_samples({"a": (1, 4), "b": (2,)}, [], [],
                                       [str(tmp_path / "only_a.npz"), f"b={tmp_path / 'b.npy'}"], ImageOptions())
    assert count == 3 and np.array_equal(list(feeds)[2]["b"], b[2])


def test_array_errors(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((2, 5), np.float32))
    np.save(tmp_path / "ok.npy", np.zeros((3, 4), np.float32))
    np.save(tmp_path / "three.npy", np.zeros((3, 4), np.float32))
    np.save(tmp_path / "two.npy", np.zeros((2, 4), np.float32))
    np.save(tmp_path / "text.npy", np.array(["a", "b"]))
    np.save(tmp_path / "empty.npy", np.zeros((0, 4), np.float32))
    np.savez(tmp_path / "bad.npz", x=np.zeros((1, 4)), mask=np.zeros(2))
    np.savez(tmp_path / "empty.npz")
    (tmp_path / "data.csv").write_text("1,2")
    (tmp_path / "junk.npy").write_text("not numpy")
    one = {"x": (1, 4)}
    two = {"x": (1, 4), "y": (4,)}
    opts = ImageOptions()
    raises(["array", "x.npy", "shape [2,5] does not fit input \"x\" [1,4]",
            "expected [1,4] or [samples,1,4] or [samples,4])"],
           calibration_samples, one, [], [], [str(tmp_path / "x.npy")], opts)
    raises(["\"q\" is not a model input", "inputs: x"],
           calibration_samples, one, [], [], [f"q={tmp_path / 'ok.npy'}"], opts)
    raises(["the model has 2 inputs", "write name=file", "inputs: x, y"],
           calibration_samples, two, [], [], [str(tmp_path / "ok.npy")], opts)
    raises(["the inputs get different numbers of samples", "\"x\" 3", "\"y\" 2"],
           calibration_samples, two, [], [], [f"x={tmp_path / 'three.npy'}", f"y={tmp_path / 'two.npy'}"], opts)
    raises(["text.npy", "expected numbers"],
           calibration_samples, {"x": (2,)}, [], [], [str(tmp_path / "text.npy")], opts)
    raises(["empty.npy", "no samples"], calibration_samples, one, [], [], [str(tmp_path / "empty.npy")], opts)
    raises(["bad.npz", "key \"mask\" is not a model input"],
           calibration_samples, one, [], [], [str(tmp_path / "bad.npz")], opts)
    raises(["empty.npz", "empty"], calibration_samples, one, [], [], [str(tmp_path / "empty.npz")], opts)
    raises(["drop \"x=\""], calibration_samples, one, [], [], [f"x={tmp_path / 'bad.npz'}"], opts)
    raises(["data.csv", "expected a .npy or .npz file"],
           calibration_samples, one, [], [], [str(tmp_path / "data.csv")], opts)
    raises(["junk.npy", "not a readable .npy file"],
           calibration_samples, one, [], [], [str(tmp_path / "junk.npy")], opts)
    raises(["gone.npy", "not found"], calibration_samples, one, [], [], [str(tmp_path / "gone.npy")], opts)
    raises(["no calibration data for input \"y\""],
           calibration_samples, two, [], [], [f"x={tmp_path / 'ok.npy'}"], opts)


# ---------------------------------------------------------------------------------------------
# calibration_samples: images


def make_images(directory, count, size=(2, 3), mode="L"):
    directory.mkdir(exist_ok=True)
    paths = []
    for i in range(count):
        path = directory / f"img{i:02d}.png"
        pixels = np.full(size + ((3,) if mode == "RGB" else ()), i * 10, np.uint8)
        Image.fromarray(pixels, mode).save(path)
        paths.append(str(path))
    return paths


def test_image_directory_and_files(tmp_path):
    paths = make_images(tmp_path / "imgs", 3)
    (tmp_path / "imgs" / ".hidden").write_text("skip me")
    count, feeds = calibration_samples({"data": (1, 1, 2, 3)}, [str(tmp_path / "imgs"), f"data={paths[0]}"], [], [],
                                       ImageOptions(mode="0to1"))
    values = [float(f["data"][0, 0, 0, 0]) for f in feeds]
    assert count == 4 and values == pytest.approx([0, 10 / 255, 20 / 255, 0])


def test_image_batch_groups_consecutive_images(tmp_path):
    make_images(tmp_path / "imgs", 4, mode="RGB")
    count, feeds = calibration_samples({"data": (2, 2, 3, 3)}, [str(tmp_path / "imgs")], [], [],
                                       ImageOptions(layout="NHWC"))
    feeds = list(feeds)
    assert count == 2 and feeds[1]["data"].shape == (2, 2, 3, 3)
    assert feeds[1]["data"][:, 0, 0, 0].tolist() == [20.0, 30.0]
    raises(["images for input \"data\"", "4 images is not a multiple", "batch size 3"],
           calibration_samples, {"data": (3, 2, 3, 3)}, [str(tmp_path / "imgs")], [], [], ImageOptions(layout="NHWC"))


def test_images_with_several_inputs(tmp_path):
    paths = make_images(tmp_path / "imgs", 2)
    np.save(tmp_path / "mask.npy", np.ones((2, 4), np.float32))
    np.save(tmp_path / "data.npy", np.ones((1, 1, 2, 3), np.float32))
    inputs = {"data": (1, 1, 2, 3), "mask": (4,)}
    count, feeds = calibration_samples(inputs, [f"data={tmp_path / 'imgs'}"], [], [f"mask={tmp_path / 'mask.npy'}"],
                                       ImageOptions())
    feeds = list(feeds)
    assert count == 2 and set(feeds[1]) == {"data", "mask"} and feeds[1]["data"][0, 0, 0, 0] == 10
    raises(["image", "the model has 2 inputs", "write name=file", "inputs: data, mask"],
           calibration_samples, inputs, [paths[0]], [], [], ImageOptions())
    raises(["input \"data\" gets data from both images and arrays"],
           calibration_samples, inputs, [f"data={paths[0]}"], [], [f"data={tmp_path / 'data.npy'}"], ImageOptions())


def test_image_source_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    paths = make_images(tmp_path / "imgs", 1)
    inputs = {"data": (1, 1, 2, 3)}
    raises(["image directory", "empty\" has no files"], calibration_samples, inputs, [str(tmp_path / "empty")], [], [],
           ImageOptions())
    raises(["image \"", "nothing.png\": file not found"], calibration_samples, inputs, [str(tmp_path / "nothing.png")],
           [], [], ImageOptions())
    raises(["\"label\" is not a model input"],
           calibration_samples, inputs, [f"label={paths[0]}"], [], [], ImageOptions())
    raises(["img00.png", "needs 2x3 with 3 channels"], calibration_samples, {"data": (1, 3, 2, 3)}, paths, [], [],
           ImageOptions())
    raises(["img00.png", "4-D", "[6]"], calibration_samples, {"data": (6,)}, paths, [], [], ImageOptions())
    # A path containing '=' that exists is a path, not name=path.
    odd = tmp_path / "a=b.png"
    Image.fromarray(GRAY, "L").save(odd)
    count, _ = calibration_samples(inputs, [str(odd)], [], [], ImageOptions())
    assert count == 1


# ---------------------------------------------------------------------------------------------
# A realistic case: the LeNet MNIST digits


def test_lenet_mnist_digits():
    import onnx

    model = onnx.load(os.path.join(LENET_DIR, "lenet_mnist.onnx"))
    (graph_input,) = model.graph.input
    shape = tuple(d.dim_value for d in graph_input.type.tensor_type.shape.dim)
    assert (graph_input.name, shape) == ("data", (1, 1, 28, 28))
    images_dir = os.path.join(LENET_DIR, "images")
    count, feeds = calibration_samples({"data": shape}, [images_dir], [], [],
                                       ImageOptions.parse("0to1", "NCHW", "BGR", None, None))
    feeds = list(feeds)
    files = sorted(glob.glob(os.path.join(images_dir, "*.png")))
    assert count == len(files) == 20

    heldout = np.load(os.path.join(LENET_DIR, "heldout.npz"))
    position = {int(index): i for i, index in enumerate(heldout["indices"])}
    labels = []
    for path, feed in zip(files, feeds):
        index, label = map(int, re.match(r"(\d+)_(\d+)\.png$", os.path.basename(path)).groups())
        pixels = heldout["images"][position[index]]
        assert np.array_equal(feed["data"][0, 0], pixels.astype(np.float32) * np.float32(1 / 255.0))
        labels.append(label)

    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(os.path.join(LENET_DIR, "lenet_mnist.onnx"), providers=["CPUExecutionProvider"])
    predicted = [int(session.run(None, feed)[0].argmax()) for feed in feeds]
    assert sum(p == t for p, t in zip(predicted, labels)) >= 18
