"""Calibration inputs for `glow-profile`: the user's files as one feed per inference.

A feed is a `dict[placeholder name -> np.ndarray float32]` holding every model input for one
run. The options follow Glow's loaders exactly (tools/loader/ModelProfiler.cpp,
tools/loader/LoaderUtils.cpp, tools/loader/ExecutorCoreHelperFunctions.cpp, lib/Base/Image.cpp,
lib/Base/TensorSerialization.cpp):

Images (`image-classifier -dump-profile`):
  * a pixel p (0..255, RGB as stored in the file) becomes `((p - mean[c]) / stddev[c]) * scale +
    low` in float32, with `scale = float32((high - low) / 255)` and `[low, high]` the
    `-image-mode` range. So `-mean`/`-stddev` are in 0..255 pixel units and apply BEFORE the range
    scaling; they are listed in the `-image-channel-order` order (BGR by default), one value per
    image channel.
  * `-image-mode` default is `0to255` (Glow's pass-through for 8-bit images), not `0to1`.
  * `-image-channel-order` default is BGR: the RGB channels are reversed. Grayscale has 1
    channel, alpha is dropped (not composited). Images are never resized or converted between
    grayscale and color: height, width and channel count must match the input.
  * `-image-layout` NCHW (default) or NHWC. A directory means all its files, sorted by path.
  * An input with batch N takes N consecutive images per inference (Glow's -minibatch); the
    number of images must be a multiple of N.

`-input-dataset=<name>,<format>,<source>,<opts>` (`model-profiler`):
  * format `rawbin` (float32 little-endian, exactly the tensor's size, no header) or `rawtxt`
    (the values separated by commas, whitespace and newlines allowed, e.g. `1.0, 2.0, 3.0,`).
  * source `file,<list>[,<dir>]`: a text file with one path per line (the rest of a line after
    the first comma or space is ignored), optionally prefixed by `<dir>`; paths relative to the
    current directory, in file order. Source `dir,<dir>`: every file in `<dir>`, sorted.
  * every file is one whole tensor; all datasets must have the same number of files; feed i
    takes file i of each.

Deliberate differences from Glow: blank lines of a list file and hidden (dot) files of a
directory are skipped; a rawtxt file may omit the final comma; PNG palette / gray+alpha images
are accepted (converted as Pillow does); JPEG and other formats Pillow reads are accepted.
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from glowmlir.errors import GlowError

# `-image-mode`: the range [low, high] that the pixel range 0..255 is mapped to.
IMAGE_MODES = {"0to1": (0.0, 1.0), "0to255": (0.0, 255.0), "neg1to1": (-1.0, 1.0), "neg128to127": (-128.0, 127.0)}
IMAGE_LAYOUTS = ("NCHW", "NHWC")
CHANNEL_ORDERS = ("BGR", "RGB")
DATASET_FORMATS = ("rawbin", "rawtxt")
DATASET_SOURCES = ("file", "dir")


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _parse_floats(option: str, text: str | None) -> tuple[float, ...]:
    if text is None or not text.strip():
        return ()
    values = []
    for item in text.split(","):
        try:
            value = float(item)
        except ValueError:
            raise GlowError(f"-{option}=\"{text}\": expected comma-separated numbers, got \"{item.strip()}\"") from None
        if not math.isfinite(value):
            raise GlowError(f"-{option}=\"{text}\": \"{item.strip()}\" is not a finite number")
        values.append(value)
    return tuple(values)


def _choice(option: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise GlowError(f"-{option}=\"{value}\": expected one of {', '.join(choices)}")
    return value


@dataclass(frozen=True)
class ImageOptions:
    """Glow's image pre-processing options (lib/Base/Image.cpp)."""

    mode: str = "0to255"  # -image-mode; Glow's default (pass-through) is 0..255
    layout: str = "NCHW"  # -image-layout
    channel_order: str = "BGR"  # -image-channel-order; Glow's default
    mean: tuple[float, ...] = ()  # -mean, 0..255 pixel units, in channel_order order (empty: 0)
    stddev: tuple[float, ...] = ()  # -stddev, same units and order (empty: 1)

    @staticmethod
    def parse(mode: str | None = None, layout: str | None = None, channel_order: str | None = None,
              mean: str | None = None, stddev: str | None = None) -> "ImageOptions":
        """Options from their command-line strings; None means Glow's default."""
        defaults = ImageOptions()
        means = _parse_floats("mean", mean)
        stddevs = _parse_floats("stddev", stddev)
        if any(value <= 0 for value in stddevs):
            raise GlowError(f"-stddev=\"{stddev}\": values must be positive")
        return ImageOptions(
            mode=_choice("image-mode", defaults.mode if mode is None else mode, tuple(IMAGE_MODES)),
            layout=_choice("image-layout", defaults.layout if layout is None else layout, IMAGE_LAYOUTS),
            channel_order=_choice("image-channel-order",
                                  defaults.channel_order if channel_order is None else channel_order, CHANNEL_ORDERS),
            mean=means,
            stddev=stddevs,
        )


def _image_geometry(shape: Sequence[int], layout: str, what: str) -> tuple[int, int, int]:
    """(channels, height, width) an image must have for a 4-D input `shape` in `layout`."""
    if len(shape) != 4:
        raise GlowError(f"{what}: images need a 4-D {' or '.join(IMAGE_LAYOUTS)} input, not {_shape_text(shape)}")
    if layout == "NCHW":
        return int(shape[1]), int(shape[2]), int(shape[3])
    return int(shape[3]), int(shape[1]), int(shape[2])


def _open_image(path: str):
    """The Pillow image and its channel count (1 gray, 3 color) as Glow's PNG reader sees it."""
    from PIL import Image, UnidentifiedImageError

    if not os.path.isfile(path):
        raise GlowError(f"image \"{path}\": file not found")
    try:
        image = Image.open(path)
    except UnidentifiedImageError:
        raise GlowError(f"image \"{path}\": not an image file (PNG, PPM, JPEG, ...)") from None
    except OSError as error:
        raise GlowError(f"image \"{path}\": cannot read it ({error.strerror or error})") from None
    if image.mode in ("1", "L", "LA", "La"):
        return image, 1
    if image.mode in ("RGB", "RGBA", "RGBa", "RGBX", "P", "PA", "CMYK", "YCbCr", "LAB", "HSV"):
        return image, 3
    raise GlowError(f"image \"{path}\": pixel format {image.mode} is not supported (8-bit gray or color only)")


def _check_image(path: str, image, channels: int, shape: Sequence[int], options: ImageOptions) -> None:
    want_channels, height, width = _image_geometry(shape, options.layout, f"image \"{path}\"")
    if (image.height, image.width) != (height, width) or channels != want_channels:
        kind = "grayscale" if channels == 1 else "color"
        raise GlowError(f"image \"{path}\": {image.height}x{image.width} (HxW) {kind} with {channels} channel"
                        f"{'s' if channels > 1 else ''}, input {_shape_text(shape)} {options.layout} needs "
                        f"{height}x{width} with {want_channels} channel{'s' if want_channels > 1 else ''}")
    for option, values in (("mean", options.mean), ("stddev", options.stddev)):
        if values and len(values) != channels:
            raise GlowError(f"-{option}: {len(values)} values but image \"{path}\" has {channels} "
                            f"channel{'s' if channels > 1 else ''}")


def image_input_shape(images: Sequence[str], options: ImageOptions) -> tuple[int, int, int, int]:
    """The batch-1 input shape the first of `images` (files or directories) fills, in
    `options.layout`: how image-classifier shapes an input the model does not shape."""
    first = _image_files(images[0], images[0].rsplit("=", 1)[-1])[0]
    image, channels = _open_image(first)
    if options.layout == "NCHW":
        return 1, channels, image.height, image.width
    return 1, image.height, image.width, channels


def load_image(path: str, shape: Sequence[int], options: ImageOptions) -> np.ndarray:
    """One image pre-processed as Glow's image-classifier does, float32 of shape `(1, *shape[1:])`.

    `shape` is the 4-D input shape in `options.layout`; for a batch-1 input the result has exactly
    `shape`. The image must have the input's height, width and channel count.
    """
    image, channels = _open_image(path)
    _check_image(path, image, channels, shape, options)
    try:
        pixels = np.asarray(image.convert("L" if channels == 1 else "RGB"), dtype=np.uint8)
    except OSError as error:
        raise GlowError(f"image \"{path}\": cannot decode it ({error})") from None
    values = pixels.astype(np.float32).reshape(image.height, image.width, channels)
    if options.channel_order == "BGR":
        values = values[:, :, ::-1]
    # Glow: val = (p - mean[c]) / stddev[c]; out = val * scale + bias, all in float32.
    if options.mean:
        values = values - np.asarray(options.mean, np.float32)
    if options.stddev:
        values = values / np.asarray(options.stddev, np.float32)
    low, high = IMAGE_MODES[options.mode]
    values = values * np.float32((high - low) / 255.0) + np.float32(low)
    if options.layout == "NCHW":
        values = values.transpose(2, 0, 1)
    return np.ascontiguousarray(values[None], dtype=np.float32)


@dataclass(frozen=True)
class InputDataset:
    """One `-input-dataset`: the placeholder, the file format and the files, in feed order."""

    name: str
    format: str
    paths: tuple[str, ...]


def _visible_files(directory: str) -> list[str]:
    """The regular, non-hidden files of `directory`, sorted by path (Glow's directory order)."""
    with os.scandir(directory) as entries:
        return sorted(e.path for e in entries if not e.name.startswith(".") and e.is_file())


def parse_input_dataset(spec: str) -> InputDataset:
    """Parses `<name>,<format>,<source>,<opts>` and lists its files (ModelProfiler.cpp)."""
    where = f"-input-dataset=\"{spec}\""
    name, _, rest = spec.partition(",")
    if not name:
        raise GlowError(f"{where}: the input name is empty (expected <name>,<format>,<source>,<opts>)")
    fmt, _, rest = rest.partition(",")
    if not fmt:
        raise GlowError(f"{where}: the format is empty (expected <name>,<format>,<source>,<opts>)")
    _choice_in(where, "format", fmt, DATASET_FORMATS)
    source, _, rest = rest.partition(",")
    if not source:
        raise GlowError(f"{where}: the source is empty (expected <name>,<format>,file,<list>[,<dir>] or "
                        f"<name>,<format>,dir,<dir>)")
    _choice_in(where, "source", source, DATASET_SOURCES)
    opts = rest.split(",") if rest else []
    if any(not opt for opt in opts):
        raise GlowError(f"{where}: empty option after \"{source}\"")
    if source == "file":
        if len(opts) not in (1, 2):
            raise GlowError(f"{where}: source 'file' takes 1 or 2 options (<list file>[,<dir>]), got {len(opts)}")
        paths = _read_list_file(where, opts[0], opts[1] if len(opts) == 2 else "")
    else:
        if len(opts) != 1:
            raise GlowError(f"{where}: source 'dir' takes 1 option (<dir>), got {len(opts)}")
        directory = opts[0]
        if not os.path.isdir(directory):
            raise GlowError(f"{where}: \"{directory}\" is not a directory")
        paths = _visible_files(directory)
        if not paths:
            raise GlowError(f"{where}: directory \"{directory}\" has no files")
    return InputDataset(name=name, format=fmt, paths=tuple(paths))


def _choice_in(where: str, what: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise GlowError(f"{where}: unknown {what} \"{value}\" (expected {' or '.join(choices)})")


def _read_list_file(where: str, list_file: str, directory: str) -> list[str]:
    if directory and not os.path.isdir(directory):
        raise GlowError(f"{where}: \"{directory}\" is not a directory")
    try:
        with open(list_file, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else "not a text file"
        raise GlowError(f"{where}: cannot read the list file \"{list_file}\" ({reason})") from None
    paths = []
    for number, line in enumerate(lines, 1):
        words = line.replace(",", " ").split()
        if not words:
            continue
        path = words[0]
        if directory:
            path = directory + ("" if directory.endswith(os.sep) else os.sep) + path
        if not os.path.exists(path):
            raise GlowError(f"{where}: \"{path}\" (line {number} of \"{list_file}\") does not exist")
        paths.append(path)
    if not paths:
        raise GlowError(f"{where}: the list file \"{list_file}\" names no files")
    return paths


def load_raw(path: str, fmt: str, shape: Sequence[int]) -> np.ndarray:
    """One tensor from a `rawbin` or `rawtxt` file (TensorSerialization.cpp), float32 of `shape`."""
    count = math.prod(int(d) for d in shape)
    if fmt not in DATASET_FORMATS:
        raise GlowError(f"\"{path}\": unknown dataset format \"{fmt}\" (expected {' or '.join(DATASET_FORMATS)})")
    if not os.path.isfile(path):
        raise GlowError(f"{fmt} file \"{path}\": not found")
    if fmt == "rawbin":
        size = os.path.getsize(path)
        if size != 4 * count:
            raise GlowError(f"-input-dataset: rawbin file \"{path}\": {size} bytes, "
                            f"input {_shape_text(shape)} float32 needs {4 * count} bytes")
        try:
            data = np.fromfile(path, dtype="<f4")
        except OSError as error:
            raise GlowError(f"-input-dataset: rawbin file \"{path}\": "
                            f"cannot read it ({error.strerror or error})") from None
        return data.astype(np.float32).reshape(tuple(shape))
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else "not a text file"
        raise GlowError(f"-input-dataset: rawtxt file \"{path}\": cannot read it ({reason})") from None
    items = text.split(",")
    if items and not items[-1].strip():
        items.pop()  # "1, 2, 3," (Glow's own dump format) or an empty file
    values = []
    for index, item in enumerate(items):
        try:
            values.append(float(item))
        except ValueError:
            shown = " ".join(item.split())[:40]
            raise GlowError(f"-input-dataset: rawtxt file \"{path}\": value {index + 1} \"{shown}\" is not a number "
                            f"(values must be separated by commas)") from None
    if len(values) != count:
        raise GlowError(f"-input-dataset: rawtxt file \"{path}\": {len(values)} values, "
                        f"input {_shape_text(shape)} needs {count}")
    return np.asarray(values, np.float64).astype(np.float32).reshape(tuple(shape))


# ---------------------------------------------------------------------------------------------
# Calibration feeds


@dataclass
class _Source:
    """The samples one placeholder gets from one kind of user input."""

    kind: str  # "images", "-input-dataset", "arrays"
    origin: str  # what to name in messages
    count: int
    get: Callable[[int], np.ndarray]


def _image_files(entry: str, path: str) -> list[str]:
    if os.path.isdir(path):
        files = _visible_files(path)
        if not files:
            raise GlowError(f"image directory \"{path}\" has no files")
        return files
    if not os.path.exists(path):
        raise GlowError(f"image \"{entry}\": file not found")
    return [path]


def image_files(entries: Sequence[str]) -> list[str]:
    """The image files `entries` (files or directories, each optionally `name=`-prefixed) stand
    for, in the order profiling reads them."""
    return [file for entry in entries for file in _image_files(entry, entry.rsplit("=", 1)[-1])]


def _split_name(entry: str, placeholders: dict[str, tuple[int, ...]], what: str) -> tuple[str | None, str]:
    """`name=path` or `path`; a path that exists wins over a name-like prefix."""
    name, sep, path = entry.partition("=")
    if not sep or name in placeholders:
        return (name, path) if sep else (None, entry)
    if os.path.exists(entry):
        return None, entry
    raise GlowError(f"{what} \"{entry}\": \"{name}\" is not a model input (inputs: {', '.join(placeholders)})")


def _sole_input(entry: str, placeholders: dict[str, tuple[int, ...]], what: str) -> str:
    if len(placeholders) != 1:
        raise GlowError(f"{what} \"{entry}\": the model has {len(placeholders)} inputs, write name=file "
                        f"(inputs: {', '.join(placeholders)})")
    return next(iter(placeholders))


def _image_source(name: str, shape: tuple[int, ...], paths: list[str], options: ImageOptions) -> _Source:
    for path in paths:  # headers only: cheap, and catches bad files before a long profiling run
        image, channels = _open_image(path)
        _check_image(path, image, channels, shape, options)
        image.close()
    batch = int(shape[0])
    if batch < 1 or len(paths) % batch:
        raise GlowError(f"images for input \"{name}\": {len(paths)} images is not a multiple of the input's "
                        f"batch size {batch} ({_shape_text(shape)})")

    def get(index: int) -> np.ndarray:
        group = paths[index * batch:(index + 1) * batch]
        return np.concatenate([load_image(path, shape, options) for path in group]).reshape(shape)

    origin = paths[0] if len(paths) == 1 else f"{len(paths)} images"
    return _Source("images", origin, len(paths) // batch, get)


def _dataset_source(dataset: InputDataset, shape: tuple[int, ...]) -> _Source:
    if dataset.format not in DATASET_FORMATS:
        raise GlowError(f"-input-dataset for \"{dataset.name}\": unknown format \"{dataset.format}\"")
    if not dataset.paths:
        raise GlowError(f"-input-dataset for \"{dataset.name}\": no files")
    if dataset.format == "rawbin":  # sizes are cheap to check up front
        for path in dataset.paths:
            if not os.path.isfile(path):
                raise GlowError(f"-input-dataset: rawbin file \"{path}\": not found")
            size, need = os.path.getsize(path), 4 * math.prod(shape)
            if size != need:
                raise GlowError(f"-input-dataset: rawbin file \"{path}\": {size} bytes, input \"{dataset.name}\" "
                                f"{_shape_text(shape)} float32 needs {need} bytes")
    return _Source("-input-dataset", f"-input-dataset for \"{dataset.name}\"", len(dataset.paths),
                   lambda index: load_raw(dataset.paths[index], dataset.format, shape))


def _array_samples(array: np.ndarray, shape: tuple[int, ...], name: str, origin: str) -> _Source:
    """Samples of `shape` in `array`: [K, *shape], or [K*N, *shape[1:]] for an input with batch N."""
    if array.dtype.kind not in "biuf":
        raise GlowError(f"{origin}: {array.dtype} data, expected numbers")
    if array.ndim == len(shape) + 1 and tuple(array.shape[1:]) == shape:
        count, get = array.shape[0], (lambda index: array[index])
    elif (len(shape) >= 1 and array.ndim == len(shape) and tuple(array.shape[1:]) == shape[1:]
          and shape[0] >= 1 and array.shape[0] % shape[0] == 0):
        batch = shape[0]
        count, get = array.shape[0] // batch, (lambda index: array[index * batch:(index + 1) * batch])
    else:
        expected = f"{_shape_text(shape)} or [samples,{_shape_text(shape)[1:]}"
        if len(shape) >= 1:
            rows = "samples" if shape[0] == 1 else f"samples*{shape[0]}"
            expected += f" or [{rows}" + ("," if len(shape) > 1 else "") + _shape_text(shape[1:])[1:]
        raise GlowError(f"{origin}: shape {_shape_text(array.shape)} does not fit input \"{name}\" "
                        f"{_shape_text(shape)} (expected {expected})")
    if count == 0:
        raise GlowError(f"{origin}: no samples (shape {_shape_text(array.shape)})")
    return _Source("arrays", origin, count, lambda index: np.array(get(index), np.float32).reshape(shape))


_UNREADABLE_ARRAY = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)
"""What numpy raises for a damaged .npy or .npz file (a truncated archive, a bad member)."""


def _load_arrays(entry: str, placeholders: dict[str, tuple[int, ...]]) -> list[tuple[str, _Source]]:
    name, path = _split_name(entry, placeholders, "array")
    if not os.path.isfile(path):
        raise GlowError(f"array \"{entry}\": file \"{path}\" not found")
    if path.endswith(".npz"):
        if name is not None:
            raise GlowError(f"array \"{entry}\": a .npz file names its inputs by its keys, drop \"{name}=\"")
        try:
            with np.load(path, allow_pickle=False) as archive:
                arrays = {key: archive[key] for key in archive.files}
        except _UNREADABLE_ARRAY as error:
            raise GlowError(f"array \"{path}\": not a readable .npz file ({error})") from None
        if not arrays:
            raise GlowError(f"array \"{path}\": the .npz file is empty")
        unknown = [key for key in arrays if key not in placeholders]
        if unknown:
            raise GlowError(f"array \"{path}\": key \"{unknown[0]}\" is not a model input "
                            f"(inputs: {', '.join(placeholders)})")
        return [(key, _array_samples(value, placeholders[key], key, f"\"{path}\" key \"{key}\""))
                for key, value in arrays.items()]
    if not path.endswith(".npy"):
        raise GlowError(f"array \"{entry}\": expected a .npy or .npz file")
    if name is None:
        name = _sole_input(entry, placeholders, "array")
    array = read_npy(path, "array")
    return [(name, _array_samples(array, placeholders[name], name, f"array \"{path}\""))]


def read_npy(path: str, what: str) -> np.ndarray:
    """The array of a .npy file (memory-mapped, never unpickled); a damaged file or one that
    does not hold numbers is a GlowError naming `what` and the file."""
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except _UNREADABLE_ARRAY as error:
        raise GlowError(f"{what} \"{path}\": not a readable .npy file ({error})") from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biuf":
        raise GlowError(f"{what} \"{path}\": {getattr(array, 'dtype', type(array).__name__)} data, expected numbers")
    return array


def calibration_samples(placeholders: dict[str, tuple[int, ...]], images: Sequence[str],
                        datasets: Sequence[InputDataset], arrays: Sequence[str],
                        image_options: ImageOptions) -> tuple[int, Iterator[dict[str, np.ndarray]]]:
    """(number of inferences, feeds): every model input gets one float32 array of its shape per feed.

    `placeholders` maps each model input to its shape. `images` are image files or directories,
    `[name=]path`; `datasets` come from `parse_input_dataset`; `arrays` are `[name=]file.npy` or
    `file.npz` (keys = input names). A feed's files are read when the iterator reaches it.
    """
    placeholders = {name: tuple(int(d) for d in shape) for name, shape in placeholders.items()}
    if not placeholders:
        raise GlowError("the model has no inputs to feed")
    sources: dict[str, list[_Source]] = {}

    def add(name: str, source: _Source) -> None:
        previous = sources.setdefault(name, [])
        if previous and previous[0].kind != source.kind:
            raise GlowError(f"input \"{name}\" gets data from both {previous[0].kind} and {source.kind} "
                            f"({previous[0].origin}, {source.origin})")
        if previous and source.kind == "-input-dataset":
            raise GlowError(f"-input-dataset: input \"{name}\" is given twice")
        previous.append(source)

    image_files: dict[str, list[str]] = {}
    for entry in images:
        name, path = _split_name(entry, placeholders, "image")
        if name is None:
            name = _sole_input(entry, placeholders, "image")
        image_files.setdefault(name, []).extend(_image_files(entry, path))
    for name, paths in image_files.items():
        add(name, _image_source(name, placeholders[name], paths, image_options))
    for dataset in datasets:
        if dataset.name not in placeholders:
            raise GlowError(f"-input-dataset: \"{dataset.name}\" is not a model input "
                            f"(inputs: {', '.join(placeholders)})")
        add(dataset.name, _dataset_source(dataset, placeholders[dataset.name]))
    for entry in arrays:
        for name, source in _load_arrays(entry, placeholders):
            add(name, source)

    if not sources:
        raise GlowError("no calibration inputs: give images, -input-dataset options or .npy/.npz files")
    missing = [name for name in placeholders if name not in sources]
    if missing:
        quoted = ", ".join('"' + name + '"' for name in missing)
        raise GlowError(f"no calibration data for input{'s' if len(missing) > 1 else ''} {quoted}")
    counts = {name: sum(source.count for source in group) for name, group in sources.items()}
    if len(set(counts.values())) > 1:
        if all(group[0].kind == "-input-dataset" for group in sources.values()):
            first = next(iter(counts))
            odd = next(name for name in counts if counts[name] != counts[first])
            raise GlowError(f"-input-dataset: input \"{odd}\" has {counts[odd]} files but input \"{first}\" has "
                            f"{counts[first]}; all datasets need the same number of files")
        listed = ", ".join(f"\"{name}\" {count}" for name, count in counts.items())
        raise GlowError(f"the inputs get different numbers of samples ({listed}); each inference needs one of each")
    total = next(iter(counts.values()))

    def sample(group: list[_Source], index: int) -> np.ndarray:
        for source in group:
            if index < source.count:
                return source.get(index)
            index -= source.count
        raise IndexError(index)

    def feeds() -> Iterator[dict[str, np.ndarray]]:
        for index in range(total):
            yield {name: sample(sources[name], index) for name in placeholders}

    return total, feeds()
