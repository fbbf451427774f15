"""Glow quantization profiles: per-value min/max/histogram accumulation and the YAML profile file.

Mirrored sources (pytorch/glow @ 05dd99b9):

* `lib/Quantization/Base/Profile.cpp` `generateTensorHistogram` — `NodeProfile.update`;
* `lib/Graph/Graph.cpp` `createQuantizationProfile` — an empty profile holds
  min = FLT_MAX, max = -FLT_MAX and an all-zero histogram (`-num-histogram-bins`, default 10);
* `lib/Quantization/Serialization.cpp` — the profile file: three YAML documents written by LLVM
  YAML I/O (`llvm/lib/Support/YAMLTraits.cpp` `Output`), reproduced byte for byte:

```
---
GlowToolsVersion: ''
...
---
GraphPreLowerHash: 0x3A5F09C2D4E1B777
...
---
- NodeOutputName:  'conv1:0'
  Min:             -1.5
  Max:             2.25
  Histogram:       [ 0, 3, 1, 0, 0, 0, 0, 0, 0, 12 ]
...
```

glow-profile appends a fourth document, `ChannelMeans` (each value's per-channel means, which
bias correction reads; Glow stops reading after the third): a profile Glow wrote has none.

Min/Max are printed with `%.126f` minus trailing zeros (exact for every float32), histogram
counts with LLVM's default `%g`, the hash as LLVM's `Hex64` of the LLVM 7/8 that Glow's CI
builds with (`0x%016llX`; current LLVM prints `0x%" PRIX64` without the padding — both are read),
strings quoted only when LLVM's `needsQuotes` asks for it, and flow sequences wrapped after
column 70 as LLVM's `Output` does.
"""

from __future__ import annotations

import math
import os
import re
import secrets
from dataclasses import dataclass, field

import numpy as np
import yaml

from glowmlir.errors import GlowError
from glowmlir.quantization.params import FLT_MAX, round_half_away_from_zero, round_to_float32

DEFAULT_NUM_BINS = 10
"""Glow's `-num-histogram-bins` default."""

MAX_NUM_BINS = 1 << 20
"""The most `-num-histogram-bins` we accept: each profiled value holds its histogram in
float64, 8 MiB at this bound (KL calibration needs 255; Glow's tools use up to a few thousand)."""


# ----------------------------------------------------------------------------- accumulation

def _bin_indices(values: np.ndarray, low: float, bin_width: float, num_bins: int) -> np.ndarray:
    """Glow's `getBin` over float32 `values`: `min((size_t)((x - min) / binWidth), nBins - 1)`,
    bin 0 for every value when the width is 0."""
    if bin_width == 0:
        return np.zeros(values.shape, dtype=np.int64)
    positions = (values - np.float32(low)) / np.float32(bin_width)
    return np.minimum(positions, np.float32(num_bins - 1)).astype(np.int64)


def _bin_counts(values: np.ndarray, low: float, bin_width: float, num_bins: int) -> np.ndarray:
    """How many of the float32 `values` (none below `low`) fall in each bin: the counts of
    `_bin_indices`, in fewer passes over the tensor (the bins past the last, reached by the
    largest values, are folded into it after counting instead of clamping every value)."""
    if bin_width == 0:
        return np.bincount([0], minlength=num_bins) * values.size
    positions = np.subtract(values, np.float32(low))
    np.divide(positions, np.float32(bin_width), out=positions)
    counts = np.bincount(positions.astype(np.intp), minlength=num_bins)
    counts[num_bins - 1] += counts[num_bins:].sum()
    return counts[:num_bins]


def _bin_index(value: float, low: float, bin_width: float, num_bins: int) -> int:
    return int(_bin_indices(np.array([value], dtype=np.float32), low, bin_width, num_bins)[0])


def _redistribute_for_wider_range(histogram: np.ndarray, old_min: float, old_max: float,
                                  new_min: float, new_max: float) -> np.ndarray:
    """The range-extension step of Glow's `generateTensorHistogram` (Profile.cpp).

    Each non-empty old bin lands in at most two new bins (the new bins are at least as wide):
    the part up to the end of the new bin holding the old bin's start,
    `min(round(overlap / oldWidth * count), count)` truncated to an integer, goes to that bin and
    the rest to the next one. Glow does not reuse `rescaleHistogram` (`params.rescale_histogram`,
    its KL-calibration helper) here, and neither do we: that one splits over any number of bins,
    rounds every share separately (float rounding can drop a count) and cannot take a zero-width
    old range (min == max after a constant first batch), which this step keeps whole.
    """
    num_bins = histogram.size
    old_width = round_to_float32(round_to_float32(old_max - old_min) / num_bins)
    new_width = round_to_float32(round_to_float32(new_max - new_min) / num_bins)
    redistributed = np.zeros(num_bins, dtype=np.float64)
    for index in np.flatnonzero(histogram):
        count = float(histogram[index])
        begin = round_to_float32(old_min + round_to_float32(old_width * int(index)))
        new_bin = int(round_to_float32(round_to_float32(begin - new_min) / new_width)) if new_width else 0
        new_bin_end = round_to_float32(new_min + round_to_float32(new_width * (new_bin + 1)))
        if old_width == 0:  # overlap / 0 is +inf in C: the whole count stays together
            first_part = count
        else:
            fraction = round_to_float32(round_to_float32(new_bin_end - begin) / old_width)
            first_part = min(round_half_away_from_zero(round_to_float32(fraction * count)), count)
        first_part = float(max(math.trunc(first_part), 0))  # the uint64_t cast
        redistributed[_bin_index(begin, new_min, new_width, num_bins)] += first_part
        if first_part < count:
            next_begin = round_to_float32(begin + new_width)
            redistributed[_bin_index(next_begin, new_min, new_width, num_bins)] += count - first_part
    return redistributed


@dataclass(eq=False)
class NodeProfile:
    """The profile of one node output (`<node name>:<result index>`): running min/max (float32
    values) and a histogram of unnormalised counts over [min, max].

    `channel_means` (a glowmlir extension, None when unknown): the mean of each channel (axis
    1 of an NCHW or [batch, features] tensor) over every inference observed, for bias
    correction (`transforms/quantized_conversion.py` `_bias_corrected`)."""

    name: str
    min: float
    max: float
    histogram: np.ndarray
    channel_means: np.ndarray | None = None
    inferences: int = 0  # how many tensors `channel_means` averages

    def __post_init__(self) -> None:
        self.min, self.max = round_to_float32(float(self.min)), round_to_float32(float(self.max))
        self.histogram = np.asarray(self.histogram, dtype=np.float64).ravel().copy()
        if self.channel_means is not None:
            self.channel_means = np.asarray(self.channel_means, dtype=np.float64).ravel().copy()

    @classmethod
    def empty(cls, name: str, num_bins: int = DEFAULT_NUM_BINS) -> "NodeProfile":
        """A profile that has seen nothing: min = FLT_MAX, max = -FLT_MAX, zero histogram."""
        if not 1 <= num_bins <= MAX_NUM_BINS:
            raise ValueError(f"a histogram needs 1 to {MAX_NUM_BINS} bins, got {num_bins}")
        return cls(name, FLT_MAX, -FLT_MAX, np.zeros(num_bins, dtype=np.float64))

    def update(self, tensor) -> None:
        """Accumulate one inference's tensor: Glow's `generateTensorHistogram`.

        The first batch (all-zero histogram) sets min/max to the tensor's; a tensor outside
        [min, max] widens the range to the union and redistributes the old counts; then each
        element is counted in bin `min(floor((x - min) / binWidth), nBins - 1)`, with
        `binWidth = (max - min) / nBins` (bin 0 when the width is 0). Float32 arithmetic.
        """
        shaped = np.asarray(tensor, dtype=np.float32)
        values = shaped.ravel()
        if values.size == 0:
            return
        self._add_channel_means(shaped)
        batch_min, batch_max = float(values.min()), float(values.max())
        if not (math.isfinite(batch_min) and math.isfinite(batch_max)):  # a NaN anywhere makes both NaN
            raise GlowError(f"profiling \"{self.name}\": the tensor holds NaN or infinity")
        num_bins = self.histogram.size
        if not self.histogram.any():
            self.min, self.max = batch_min, batch_max
        if batch_min < self.min or batch_max > self.max:
            new_min, new_max = min(batch_min, self.min), max(batch_max, self.max)
            self.histogram = _redistribute_for_wider_range(self.histogram, self.min, self.max, new_min, new_max)
            self.min, self.max = new_min, new_max
        bin_width = round_to_float32(round_to_float32(self.max - self.min) / num_bins)
        self.histogram = self.histogram + _bin_counts(values, self.min, bin_width, num_bins)

    def _add_channel_means(self, tensor: np.ndarray) -> None:
        """Folds this tensor's per-channel means (axis 1 of a 2-D or 4-D tensor) into the
        running `channel_means`; another shape, or a channel count that changed, has none."""
        if tensor.ndim not in (2, 4) or (self.inferences and (self.channel_means is None
                                                              or self.channel_means.size != tensor.shape[1])):
            self.channel_means = None
            return
        means = tensor.mean(axis=tuple(a for a in range(tensor.ndim) if a != 1), dtype=np.float64)
        previous = self.channel_means if self.inferences else np.zeros_like(means)
        self.inferences += 1
        self.channel_means = previous + (means - previous) / self.inferences

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeProfile):
            return NotImplemented
        """Glow's fields alike (`channel_means` are left out: the file keeps 6 digits of them)."""
        return (self.name == other.name and self.min == other.min and self.max == other.max
                and np.array_equal(self.histogram, other.histogram))


@dataclass
class Profile:
    """A whole profile file: Glow tools version, pre-lowering graph hash (unsigned 64-bit) and
    the entries keyed by node output name."""

    tools_version: str
    graph_hash: int
    entries: dict[str, NodeProfile] = field(default_factory=dict)


# ----------------------------------------------------------------------------- LLVM YAML output

_PLAIN_SAFE = frozenset("_-^., \t")
_YAML_INDICATORS = "-?:\\,[]{}#&*!|>'\"%@`"
_DECIMAL = re.compile(r"(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\0": "\\0", "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n",
            "\v": "\\v", "\f": "\\f", "\r": "\\r", "\x1b": "\\e", "\x85": "\\N", "\xa0": "\\_",
            "\u2028": "\\L", "\u2029": "\\P"}
_WRAP_COLUMN = 70  # llvm::yaml::Output's default WrapColumn


def _llvm_is_numeric(text: str) -> bool:
    """LLVM's `yaml::isNumeric`."""
    if text in ("", "+", "-"):
        return False
    if text in (".nan", ".NaN", ".NAN"):
        return True
    tail = text[1:] if text[0] in "+-" else text
    if tail in (".inf", ".Inf", ".INF"):
        return True
    if text.startswith("0o"):
        return re.fullmatch(r"[0-7]+", text[2:]) is not None
    if text.startswith("0x"):
        return re.fullmatch(r"[0-9a-fA-F]+", text[2:]) is not None
    return _DECIMAL.fullmatch(tail) is not None


def _llvm_quoting(text: str) -> str:
    """LLVM's `yaml::needsQuotes`: "none", "single" or "double"."""
    if not text:
        return "single"
    quoting = "none"
    if (text[0] in " \t\n\v\f\r" or text[-1] in " \t\n\v\f\r"
            or text in ("null", "Null", "NULL", "~")
            or text in ("true", "True", "TRUE", "false", "False", "FALSE")
            or _llvm_is_numeric(text) or text[0] in _YAML_INDICATORS):
        quoting = "single"
    for char in text:
        if (char.isascii() and char.isalnum()) or char in _PLAIN_SAFE:
            continue
        if ord(char) <= 0x1F or ord(char) >= 0x7F:
            return "double"
        quoting = "single"
    return quoting


def _llvm_double_quoted_body(text: str) -> str:
    """LLVM's `yaml::escape(S, /*EscapePrintable=*/false)` (DEL escaped as well, so that the
    result stays readable by PyYAML)."""
    pieces = []
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            pieces.append(_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            pieces.append(f"\\x{code:02X}")
        elif code < 0x80 or char.isprintable():
            pieces.append(char)
        elif code <= 0xFF:
            pieces.append(f"\\x{code:02X}")
        elif code <= 0xFFFF:
            pieces.append(f"\\u{code:04X}")
        else:
            pieces.append(f"\\U{code:08X}")
    return "".join(pieces)


def _yaml_string(text: str) -> str:
    """A string scalar as LLVM YAML I/O writes it."""
    quoting = _llvm_quoting(text)
    if quoting == "none":
        return text
    if quoting == "single":
        return "'" + text.replace("'", "''") + "'"
    return '"' + _llvm_double_quoted_body(text) + '"'


def _format_exact_float(value: float) -> str:
    """Glow's `FloatWrapper` output: `%.126f` with trailing zeros stripped, keeping one digit
    after the point (every float32 round-trips exactly)."""
    text = "%.126f" % round_to_float32(value)
    if "." in text:
        text = text.rstrip("0")
        if text.endswith("."):
            text += "0"
    return text


def _format_histogram(counts: np.ndarray, key_column: int) -> str:
    """`[ a, b, ... ]` as LLVM's flow-sequence output: `%g` floats, and once the column passes
    70 after a `, ` the line breaks and continues two columns right of the `[`."""
    column = key_column + 2
    pieces = ["[ "]
    for position, count in enumerate(counts):
        if position:
            pieces.append(", ")
            column += 2
        if column > _WRAP_COLUMN:
            pieces.append("\n" + " " * key_column + "  ")
            column = key_column + 2
        text = "%g" % round_to_float32(float(count))
        pieces.append(text)
        column += len(text)
    pieces.append(" ]")
    return "".join(pieces)


def _padded_key(key: str) -> str:
    """LLVM's `Output::paddedKey`: `key:` padded with spaces to column 17 (at least one)."""
    return f"{key}:" + " " * max(16 - len(key), 1)


def _profile_text(profile: Profile) -> str:
    """The whole profile file, as Glow's `serializeProfilingInfosToYaml` writes it."""
    if not 0 <= profile.graph_hash < 1 << 64:
        raise ValueError(f"graph hash {profile.graph_hash} is not an unsigned 64-bit value")
    lines = ["---", _padded_key("GlowToolsVersion") + _yaml_string(profile.tools_version), "...",
             "---", _padded_key("GraphPreLowerHash") + f"0x{profile.graph_hash:016X}", "...", "---"]
    for name in sorted(profile.entries):
        entry = profile.entries[name]
        if entry.name != name:
            raise ValueError(f"profile entry keyed \"{name}\" is named \"{entry.name}\"")
        if not entry.min <= entry.max:
            raise ValueError(f"profile entry \"{name}\" has Min > Max (was it never updated?)")
        histogram_key = "  " + _padded_key("Histogram")
        lines += ["- " + _padded_key("NodeOutputName") + _yaml_string(name),
                  "  " + _padded_key("Min") + _format_exact_float(entry.min),
                  "  " + _padded_key("Max") + _format_exact_float(entry.max),
                  histogram_key + _format_histogram(np.asarray(entry.histogram).ravel(), len(histogram_key))]
    if not profile.entries:
        lines.append("[]")
    lines.append("...")
    return "\n".join(lines + _channel_means_document(profile)) + "\n"


CHANNEL_MEANS = "ChannelMeans"
"""The key of the profile's fourth YAML document (a glowmlir extension): each profiled value's
per-channel means. Glow reads the first three documents and never looks further."""


def _channel_means_document(profile: Profile) -> list[str]:
    """The lines of the `CHANNEL_MEANS` document (none when no entry has channel means)."""
    named = [(name, profile.entries[name].channel_means) for name in sorted(profile.entries)
             if profile.entries[name].channel_means is not None]
    if not named:
        return []
    means_key = "    " + _padded_key("Means")
    lines = ["---", CHANNEL_MEANS + ":"]
    for name, means in named:
        lines += ["  - " + _padded_key("NodeOutputName") + _yaml_string(name),
                  means_key + _format_histogram(means, len(means_key))]  # %g: 6 digits
    return lines + ["..."]


def write_profile(path: str, profile: Profile, *, option: str = "-dump-profile") -> None:
    """Write `profile` to `path` in Glow's format, atomically: the text goes to a temporary file
    beside `path` that replaces it only once complete, and is removed on any failure.
    A file-system problem raises GlowError naming the file; a malformed `profile` ValueError."""
    text = _profile_text(profile)
    directory, base = os.path.split(os.path.abspath(path))
    temporary = os.path.join(directory, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as error:
        raise _write_error(option, path, error) from None
    try:
        with open(descriptor, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException as error:
        _remove_quietly(temporary)
        if isinstance(error, OSError):
            raise _write_error(option, path, error) from None
        raise


def _write_error(option: str, path: str, error: OSError) -> GlowError:
    return GlowError(f"{option}: cannot write \"{path}\": {error.strerror or error}")


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# ----------------------------------------------------------------------------- reading

class _StringScalarLoader(yaml.SafeLoader):
    """A SafeLoader that leaves every plain scalar a string, as LLVM YAML I/O reads them: the
    schema (hex hash, float, string) decides the type, not the scalar's look (so a version
    `1.10` stays "1.10" and `1e-3` is a float)."""


_StringScalarLoader.yaml_implicit_resolvers = {}

_C_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)", re.IGNORECASE)
_C_HEX_FLOAT = re.compile(r"[+-]?0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?", re.IGNORECASE)
_PROFILE_KEYS = ("NodeOutputName", "Min", "Max", "Histogram")


class _Malformed(Exception):
    """A profile-format problem; `read_profile` turns it into a GlowError naming the file."""


def _parse_float32(value, what: str) -> float:
    """A float the way LLVM's `to_float` (strtof, whole scalar consumed) reads it."""
    if isinstance(value, str):
        if _C_FLOAT.fullmatch(value):
            return round_to_float32(float(value))
        if _C_HEX_FLOAT.fullmatch(value):
            return round_to_float32(float.fromhex(value))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return round_to_float32(float(value))
    raise _Malformed(f"{what} is not a number: {value!r}")


def _parse_hash(value) -> int:
    """An unsigned 64-bit integer the way LLVM's `getAsUnsignedInteger(S, 0, N)` reads it
    (0x hex, 0b binary, 0o or leading-0 octal, else decimal)."""
    number = None
    if isinstance(value, str):
        for pattern, base in ((r"0[xX]([0-9a-fA-F]+)", 16), (r"0[bB]([01]+)", 2), (r"0o([0-7]+)", 8),
                              (r"0([0-7]+)", 8), (r"([0-9]+)", 10)):
            match = re.fullmatch(pattern, value)
            if match:
                number = int(match.group(1), base)
                break
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    if number is None or not 0 <= number < 1 << 64:
        raise _Malformed(f"GraphPreLowerHash is not an unsigned 64-bit number: {value!r}")
    return number


def _single_key_document(document, key: str, ordinal: str):
    if not isinstance(document, dict) or key not in document:
        raise _Malformed(f"the {ordinal} document must be a mapping with key \"{key}\"")
    unknown = [str(name) for name in document if name != key]
    if unknown:
        raise _Malformed(f"unknown key \"{unknown[0]}\" in the {ordinal} document")
    return document[key]


def _parse_entry(position: int, entry) -> NodeProfile:
    label = f"entry {position}"
    if not isinstance(entry, dict):
        raise _Malformed(f"{label} is not a mapping")
    name = entry.get("NodeOutputName")
    if isinstance(name, str):
        label = f"entry {position} (\"{name}\")"
    for key in _PROFILE_KEYS:
        if key not in entry:
            raise _Malformed(f"{label} is missing key \"{key}\"")
    unknown = [str(key) for key in entry if key not in _PROFILE_KEYS]
    if unknown:
        raise _Malformed(f"{label} has unknown key \"{unknown[0]}\"")
    if not isinstance(name, str):
        raise _Malformed(f"{label}: NodeOutputName is not a string")
    low = _parse_float32(entry["Min"], f"Min of {label}")
    high = _parse_float32(entry["Max"], f"Max of {label}")
    counts = entry["Histogram"]
    if not isinstance(counts, list):
        raise _Malformed(f"{label}: Histogram is not a sequence")
    histogram = np.array([_parse_float32(count, f"a Histogram value of {label}") for count in counts],
                         dtype=np.float64)
    if not low <= high:
        raise _Malformed(f"Min > Max for entry \"{name}\"")
    return NodeProfile(name, low, high, histogram)


def _parse_channel_means(document, entries: dict[str, NodeProfile]) -> None:
    """The fourth document glowmlir writes (`CHANNEL_MEANS`): each listed value's means go to
    its entry (a value the profile has no entry for is ignored, as Glow ignores entries)."""
    listed = _single_key_document(document, CHANNEL_MEANS, "fourth")
    if not isinstance(listed, list):
        raise _Malformed(f"{CHANNEL_MEANS} is not a sequence")
    for position, item in enumerate(listed, start=1):
        if not isinstance(item, dict) or set(item) != {"NodeOutputName", "Means"} \
                or not isinstance(item["Means"], list):
            raise _Malformed(f"{CHANNEL_MEANS} item {position} needs exactly NodeOutputName and a Means sequence")
        entry = entries.get(item["NodeOutputName"])
        if entry is not None:
            entry.channel_means = np.array([_parse_float32(m, f"a Means value of {CHANNEL_MEANS} item {position}")
                                            for m in item["Means"]])


def _parse_documents(documents: list) -> Profile:
    if len(documents) not in (3, 4):
        raise _Malformed(f"not a Glow profile (expected three YAML documents, four with glow-profile's "
                         f"ChannelMeans; found {len(documents)})")
    version = _single_key_document(documents[0], "GlowToolsVersion", "first")
    if version is None:
        version = ""
    if not isinstance(version, str):
        raise _Malformed("GlowToolsVersion is not a string")
    graph_hash = _parse_hash(_single_key_document(documents[1], "GraphPreLowerHash", "second"))
    listed = documents[2] if documents[2] is not None else []
    if not isinstance(listed, list):
        raise _Malformed("the third document must be a sequence of profile entries")
    entries: dict[str, NodeProfile] = {}
    for position, raw_entry in enumerate(listed, start=1):
        entry = _parse_entry(position, raw_entry)
        entries.setdefault(entry.name, entry)  # Glow's nodeToTQP_.emplace: the first one wins
    if len(documents) == 4:
        _parse_channel_means(documents[3], entries)
    return Profile(version, graph_hash, entries)


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{problem}"


def read_profile(path: str, *, option: str = "-load-profile") -> Profile:
    """Read a Glow profile (`-load-profile`): Glow's `deserializeProfilingInfosFromYaml`.

    Accepts flow or block histograms, hex or decimal hashes, an empty version. Every problem
    (missing or unreadable file, not YAML, not three documents, missing or unknown key, bad
    number, Min > Max) raises GlowError with a one-line message naming the file. Duplicate
    entries keep the first, as Glow does.
    """
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except FileNotFoundError:
        raise GlowError(f"{option}: \"{path}\" not found") from None
    except OSError as error:
        raise GlowError(f"{option}: cannot read \"{path}\": {error.strerror or error}") from None
    try:
        return _parse_documents(list(yaml.load_all(data, Loader=_StringScalarLoader)))
    except _Malformed as problem:
        detail = str(problem)
        if detail.startswith("not a Glow profile"):
            raise GlowError(f"{option}: \"{path}\" is {detail}") from None
        raise GlowError(f"{option}: \"{path}\" is not a valid Glow profile: {detail}") from None
    except yaml.YAMLError as error:
        raise GlowError(f"{option}: \"{path}\" is not valid YAML ({_yaml_problem(error)})") from None
    except Exception as error:  # noqa: BLE001 - nothing but a GlowError may leave the reader
        raise GlowError(f"{option}: \"{path}\" could not be read as a Glow profile "
                        f"({type(error).__name__}: {error})") from None
