"""The bundle files, byte for byte in Glow's formats (BundleSaver.cpp).

`<name>.h` (static or dynamic API), `<name>.weights.bin` (the constant region image) and
`<name>.weights.txt` (the same bytes as C array text). The layout they describe is read
off an allocated `glowll.function`.
"""

from __future__ import annotations

import functools
import io
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import BinaryIO

import numpy as np
from llvmlite import ir

from glowmlir.dialects import glow, glowll
from glowmlir.dialects.memory import ALIGNMENT, SCRATCH_ATTRIBUTE
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.dialects.weights import array_from_dense, numpy_dtype
from glowmlir.errors import GlowError, GlowWarning
from glowmlir.instrumentation import stage, stage_ran
from glowmlir.names import is_reserved_c_name, legalize_name

# ----------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class Placeholder:
    name: str
    kind: str  # "input" or "output"
    shape: tuple[int, ...]
    dtype: np.dtype
    offset: int
    quantization: tuple[float, int] | None = None  # (scale, offset) of a quantized placeholder
    model_name: str | None = None  # the model's name for it, when not `name` (which C needed)

    @property
    def given_name(self) -> str:
        """The name the model gives it (`Bundle.run` keys inputs and outputs by it)."""
        return self.model_name or self.name

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def byte_size(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def type_string(self) -> str:
        """Glow's Type::toString, e.g. `float<1 x 1 x 28 x 28>` or, quantized,
        `i8[S:0.003921569 O:-128][-0.502,0.498]<1 x 1 x 28 x 28>`."""
        element = {np.float32: "float", np.float16: "float16", np.float64: "double", np.bool_: "bool",
                   np.int8: "i8", np.int16: "i16", np.int32: "index32", np.int64: "index64", np.uint8: "ui8",
                   np.uint16: "ui16", np.uint32: "ui32", np.uint64: "ui64"}[np.dtype(self.dtype).type]
        if self.quantization is not None:
            scale, offset = self.quantization
            info = np.iinfo(self.dtype)
            element += (f"[S:{scale:.9f} O:{offset}][{scale * (info.min - offset):.3f},"
                        f"{scale * (info.max - offset):.3f}]")
        return f"{element}<{' x '.join(str(d) for d in self.shape)}>"


def _quantization(element_type) -> tuple[float, int] | None:
    """(scale, offset) of a per-tensor quantized type (per-channel weights are described by their
    integer type alone, as the header has one scale per line)."""
    if isinstance(element_type, UniformQuantizedType) and not element_type.per_channel:
        return element_type.scale, element_type.offset
    return None


@dataclass(frozen=True)
class BundleLayout:
    """Everything the header and weight files say about one network."""

    name: str
    constant_size: int
    mutable_size: int
    activations_size: int
    activations_lower_bound: int
    placeholders: tuple[Placeholder, ...]
    weights: tuple[tuple[str, int, np.ndarray], ...]  # (name, offset, data)
    library_scratch: int = 0  # the largest scratch buffer a library call asks for (in ACTIVATIONS)
    constants: tuple[Placeholder, ...] = ()  # the weights described as the header's verbose list shows them
    entry: str = ""  # the entry point's name (-main-entry-name) when it is not the network's
    states: tuple[Placeholder, ...] = ()  # the state kept in the mutable region between calls (kind "state")
    state_offset: int = 0  # the state's span of the mutable region: its ready word, then `states`
    state_size: int = 0

    @property
    def entry_point(self) -> str:
        """The inference function's symbol: `-main-entry-name`, else the network's name."""
        return self.entry or self.name

    @staticmethod
    def of(function: glowll.FunctionOp) -> BundleLayout:
        if function.activations_size is None:
            raise GlowError(f"{function.sym_name.data}: memory is not allocated (run glowll-allocate-memory)")
        ops = list(function.body.block.ops)
        described = sorted(
            (Placeholder(op.name_.data, op.kind.data, tuple(op.buffer.type.get_shape()),
                         np.dtype(numpy_dtype(op.buffer.type.element_type)), op.offset.value.data,
                         _quantization(op.buffer.type.element_type),
                         op.attributes[glow.MODEL_NAME].data if glow.MODEL_NAME in op.attributes else None)
             for op in ops if isinstance(op, glowll.PlaceholderOp)), key=lambda p: p.offset)
        placeholders = tuple(p for p in described if p.kind != glowll.PlaceholderKind.STATE)
        ready = {glowll.root_buffer(op.ready)[0].name_.data for op in ops if isinstance(op, glowll.InitializeStateOp)}
        state = [p for p in described if p.kind == glowll.PlaceholderKind.STATE]
        state_offset = state[0].offset if state else 0
        state_size = max((p.offset + p.byte_size for p in state), default=0) - state_offset
        weights, constants = [], []
        for op in ops:
            if isinstance(op, glowll.WeightOp):
                if op.value is None:
                    raise GlowError(f"weight \"{op.name_.data}\" has no data (elided; pass its --weights-file)")
                weights.append((op.name_.data, op.offset.value.data, array_from_dense(op.value)))
                constants.append(Placeholder(op.name_.data, "constant", tuple(op.buffer.type.get_shape()),
                                             np.dtype(numpy_dtype(op.buffer.type.element_type)),
                                             op.offset.value.data, _quantization(op.buffer.type.element_type)))
        scratch = max((op.byte_size for op in ops
                       if isinstance(op, glowll.AllocOp) and SCRATCH_ATTRIBUTE in op.attributes),
                      default=0)
        name = function.sym_name.data
        return BundleLayout(name, function.constant_size.value.data,
                            function.mutable_size.value.data, function.activations_size.value.data,
                            function.activations_lower_bound.value.data,
                            _distinct_macros(name, placeholders, stateful=bool(state)), tuple(weights), scratch,
                            tuple(constants), states=tuple(p for p in state if p.name not in ready),
                            state_offset=state_offset, state_size=state_size)

    def placeholder(self, name: str) -> Placeholder:
        """The placeholder named `name` in the bundle, or by the model (when C needed another name)."""
        for p in self.placeholders:
            if p.name == name:
                return p
        for p in self.placeholders:
            if p.given_name == name:
                return p
        raise GlowError(f"bundle {self.name} has no placeholder \"{name}\"")


# ----------------------------------------------------------------------------- C names

MAX_NETWORK_NAME = 200
"""Longest bundle name: `<name>.weights.txt` and the other file names must fit in a file
system's 255-byte name limit."""

HEADER_MACROS = frozenset({"GLOW_SUCCESS", "GLOW_MEM_ALIGN", "GLOW_GET_ADDR", "_GLOW_BUNDLE_COMMON_DEFS"})
"""The macros every bundle header defines (its common definitions)."""

_MEMORY_MACROS = ("CONSTANT_MEM_SIZE", "MUTABLE_MEM_SIZE", "ACTIVATIONS_MEM_SIZE", "MEM_ALIGN")
_STATE_MACROS = ("STATE_OFFSET", "STATE_SIZE", "RESET_STATE")
"""Defined only by a bundle with state (a streaming model's): not in Glow's headers."""


def network_macros(name: str, stateful: bool = False) -> list[str]:
    """The macros a bundle named `name` defines for itself (its memory sizes, and with
    `stateful` where its state is; the header guard `_GLOW_BUNDLE_<NAME>_H` is Glow's and
    cannot clash with them)."""
    return [f"{name.upper()}_{suffix}" for suffix in _MEMORY_MACROS + (_STATE_MACROS if stateful else ())]


def placeholder_macros(name: str, placeholder: Placeholder) -> list[str]:
    """The macros of one placeholder in the static API header: its offset (and scale and offset)."""
    macro = f"{name.upper()}_{placeholder.name}"
    return [macro] + ([f"{macro}_scale", f"{macro}_offset"] if placeholder.quantization is not None else [])


def _unsafe_network_name(name: str) -> bool:
    return any(m in HEADER_MACROS or is_reserved_c_name(m) for m in [name, *network_macros(name)])


def bundle_name(requested: str) -> str:
    """`requested` as a bundle name (Glow's legal name) that is also safe as the entry point's
    C name and its macros' prefix, and short enough for the bundle's file names. A C keyword,
    a C library name (`main`, `memcpy`) or a name whose macros clash with the header's own
    gets `_` appended (a reserved `_X...` name gets `A` prepended); any change beyond Glow's
    character rule is reported as a GlowWarning."""
    glow_name = legalize_name(requested)
    name = legalize_name(requested, MAX_NETWORK_NAME)
    if name.startswith("_") and _unsafe_network_name(name):
        name = "A" + name
    while _unsafe_network_name(name):
        name += "_"
    if name != glow_name:
        why = "is too long for its file names" if len(glow_name) > MAX_NETWORK_NAME else "is reserved in C"
        warnings.warn(GlowWarning(f"network name \"{_shown(requested)}\" {why}; the bundle is named "
                                  f"\"{_shown(name)}\""), stacklevel=2)
    return name


def _shown(name: str) -> str:
    return name if len(name) <= 60 else f"{name[:30]}...{name[-24:]}"


def _distinct_macros(name: str, placeholders: tuple[Placeholder, ...], stateful: bool = False
                     ) -> tuple[Placeholder, ...]:
    """The placeholders, a placeholder whose header macro would clash with the header's
    other macros (`NET_x_scale` of a quantized `x` and an input `x_scale`, an input named
    `MEM_ALIGN`) or a reserved name renamed `<name>__<k>` (Glow's unique-name rule), with a
    GlowWarning. The renamed name is the bundle's: its header, symbol table and `Bundle.run`."""
    taken = set(HEADER_MACROS) | set(network_macros(name, stateful))
    result = []
    for placeholder in placeholders:
        candidate, k = placeholder, 1
        while any(m in taken or is_reserved_c_name(m) for m in placeholder_macros(name, candidate)):
            candidate, k = replace(placeholder, name=f"{placeholder.name}__{k}",
                                   model_name=placeholder.given_name), k + 1
        if candidate is not placeholder:
            warnings.warn(GlowWarning(f"placeholder \"{placeholder.name}\": its header macro "
                                      f"{placeholder_macros(name, placeholder)[0]} clashes with another macro; "
                                      f"the placeholder is named \"{candidate.name}\" in the bundle"), stacklevel=2)
        taken.update(placeholder_macros(name, candidate))
        result.append(candidate)
    return tuple(result)


# ----------------------------------------------------------------------------- weights


def region_pieces(layout: BundleLayout) -> Iterator[memoryview]:
    """weights.bin in order, piece by piece: each weight's little-endian bytes (a view of its
    buffer, not a copy, when it is already so) and the zero gaps between them, up to
    CONSTANT_MEM_SIZE. Concatenated, they are `constant_region(layout)`. A weight the
    allocator gave an earlier one's offset (`glowll-allocate-memory`: equal bytes) is not
    repeated."""
    position = 0
    for _, offset, data in sorted(layout.weights, key=lambda weight: weight[1]):
        if offset > position:
            yield from _zeros(offset - position)
        raw = np.ascontiguousarray(data).astype(data.dtype.newbyteorder("<"), copy=False)
        piece = memoryview(raw.reshape(-1)).cast("B")[max(position - offset, 0):]  # a shared offset: equal bytes
        if len(piece):
            yield piece
            position = max(position, offset) + len(piece)
    if layout.constant_size > position:
        yield from _zeros(layout.constant_size - position)


_ZEROS = memoryview(bytes(1 << 20))


def _zeros(count: int) -> Iterator[memoryview]:
    for start in range(0, count, len(_ZEROS)):
        yield _ZEROS[:min(len(_ZEROS), count - start)]


def constant_region(layout: BundleLayout) -> bytes:
    """weights.bin: each weight's bytes at its offset, zero gaps, CONSTANT_MEM_SIZE long."""
    return b"".join(region_pieces(layout))


def copy_constant_region(layout: BundleLayout, destination: np.ndarray) -> None:
    """Copies weights.bin into `destination` (uint8, CONSTANT_MEM_SIZE long) piece by piece."""
    position = 0
    for piece in region_pieces(layout):
        destination[position:position + len(piece)] = np.frombuffer(piece, np.uint8)
        position += len(piece)


def write_constant_region(layout: BundleLayout, file: BinaryIO) -> None:
    """Writes weights.bin straight from the weights' buffers (no image of the region)."""
    for piece in region_pieces(layout):
        file.write(piece)


def weight_file_writers(layout: BundleLayout, api: str, weights_text: bool = True) -> dict[str, Contents]:
    """`<name>.weights.bin`, and `<name>.weights.txt` for the static API (if `weights_text`),
    as functions streaming them into a file from the weights' buffers."""
    files: dict[str, Contents] = {f"{layout.name}.weights.bin": functools.partial(write_constant_region, layout)}
    if api == "static" and weights_text:
        files[f"{layout.name}.weights.txt"] = lambda file: write_weights_text(region_pieces(layout), file,
                                                                              layout.constant_size)
    return files


_BYTE_TEXT = np.frombuffer("".join(f" 0X{b:02X}," for b in range(256)).encode(), np.uint8).reshape(256, 6)
TEXT_CHUNK_LINES = 1 << 14
"""Lines of weights.txt formatted at a time (20 bytes each: 330 kB of weights, 2 MB of text)."""


@functools.cache
def _pair_text() -> np.ndarray:
    """` 0X%02X, 0X%02X,` of every pair of bytes, indexed by the pair read as a little-endian
    uint16: 12 characters an entry, 768 KiB."""
    return np.frombuffer("".join(f" 0X{pair & 255:02X}, 0X{pair >> 8:02X}," for pair in range(1 << 16)).encode(),
                         "V12")


class _TextLines:
    """Formats whole lines of weights.txt into one reused buffer of `capacity` lines (20
    bytes' text and a newline each): a line is 10 entries of `_pair_text`."""

    def __init__(self, capacity: int) -> None:
        self.text = np.frombuffer((" 0X00," * 20 + "\n").encode() * capacity, np.uint8).copy()
        self.rows = self.text.reshape(capacity, 121)[:, :120]
        self.pairs = np.empty(capacity * 10, "V12")

    def __call__(self, data: np.ndarray) -> memoryview:
        """The lines of `data` (uint8, a multiple of 20 long, at most `capacity` lines), valid
        until the next call."""
        lines = len(data) // 20
        # mode="clip" (every index is in range): with "raise", numpy takes into a temporary and copies
        np.take(_pair_text(), data.view("<u2"), out=self.pairs[:lines * 10], mode="clip")
        self.rows[:lines] = self.pairs[:lines * 10].view(np.uint8).reshape(lines, 120)
        return memoryview(self.text)[:lines * 121]


def _rechunked(pieces: Iterable[memoryview], size: int) -> Iterator[np.ndarray]:
    """The bytes of `pieces` as uint8 arrays of `size` bytes (the last one shorter), copied
    into one reused buffer: each chunk is valid until the next is asked for."""
    buffer, filled = np.empty(size, np.uint8), 0
    for piece in pieces:
        piece = np.frombuffer(piece, np.uint8)
        while len(piece):
            taken = min(size - filled, len(piece))
            buffer[filled:filled + taken] = piece[:taken]
            filled, piece = filled + taken, piece[taken:]
            if filled == size:
                yield buffer
                filled = 0
    yield buffer[:filled]


def write_weights_text(pieces: Iterable[memoryview], file: BinaryIO, size: int | None = None) -> None:
    """Writes weights.txt, the C-array text of the bytes of `pieces` (`size` of them, when
    known): ` 0X%02X,` per byte, 20 bytes a line, one extra newline at the end; formatted
    `TEXT_CHUNK_LINES` lines at a time, never the whole text in memory."""
    capacity = TEXT_CHUNK_LINES if size is None else max(1, min(TEXT_CHUNK_LINES, size // 20))
    lines = _TextLines(capacity)
    for chunk in _rechunked(pieces, 20 * capacity):
        full = len(chunk) // 20 * 20
        file.write(lines(chunk[:full]))
        if full < len(chunk):
            file.write(_BYTE_TEXT[chunk[full:]].tobytes() + b"\n")
    file.write(b"\n")


def weights_text(image: bytes) -> str:
    """weights.txt of a region image (see `write_weights_text`), as a string."""
    text = io.BytesIO()
    write_weights_text([memoryview(image)], text, len(image))
    return text.getvalue().decode()


# ----------------------------------------------------------------------------- header

_COMMON_STATIC = """\
// Memory alignment definition with given alignment size
// for static allocation of memory.
#define GLOW_MEM_ALIGN(size)  __attribute__((aligned(size)))

// Macro function to get the absolute address of a
// placeholder using the base address of the mutable
// weight buffer and placeholder offset definition.
#define GLOW_GET_ADDR(mutableBaseAddr, placeholderOff)  (((uint8_t*)(mutableBaseAddr)) + placeholderOff)
"""

_COMMON_DYNAMIC = """\
// Type describing a symbol table entry of a generated bundle.
struct SymbolTableEntry {
  // Name of a variable.
  const char *name;
  // Offset of the variable inside the memory area.
  uint64_t offset;
  // The number of elements inside this variable.
  uint64_t size;
  // Variable kind: 1 if it is a mutable variable, 0 otherwise.
  char kind;
};

// Type describing the config of a generated bundle.
struct BundleConfig {
  // Size of the constant weight variables memory area.
  uint64_t constantWeightVarsMemSize;
  // Size of the mutable weight variables memory area.
  uint64_t mutableWeightVarsMemSize;
  // Size of the activations memory area.
  uint64_t activationsMemSize;
  // Alignment to be used for weights and activations.
  uint64_t alignment;
  // Number of symbols in the symbol table.
  uint64_t numSymbols;
  // Symbol table.
  const struct SymbolTableEntry *symbolTable;
};
"""

_DASHES = "// " + "-" * 77


def allocation_efficiency(layout: BundleLayout) -> float:
    """Glow's `MemoryAllocator::getAllocationEfficiency`: the most bytes live at once over the
    activations region's size (1 when the plan reaches its lower bound; 0 for an empty region)."""
    if not layout.activations_size:
        return 0.0
    return layout.activations_lower_bound / layout.activations_size


def _described(tensors: Sequence[Placeholder]) -> list[str]:
    """The header's comment lines describing placeholders or constants, as Glow's BundleSaver."""
    lines = []
    for p in tensors:
        lines += [f"//   Name: \"{p.name}\"", f"//   Type: {p.type_string()}", f"//   Size: {p.size} (elements)",
                  f"//   Size: {p.byte_size} (bytes)", f"//   Offset: {p.offset} (bytes)", "//"]
    return lines


def header(layout: BundleLayout, api: str = "static", verbose: bool = False) -> str:
    """The bundle header, laid out as Glow's BundleSaver writes it; `verbose`
    (`-bundle-api-verbose`) also describes the constants (weights)."""
    upper = layout.name.upper()
    total = layout.constant_size + layout.mutable_size + layout.activations_size
    lines = ["// Bundle API auto-generated header file. Do not edit!", "// glowmlir", "",
             f"#ifndef _GLOW_BUNDLE_{upper}_H", f"#define _GLOW_BUNDLE_{upper}_H", "", "#include <stdint.h>", "",
             _DASHES, "//                                 Common definitions", _DASHES,
             "#ifndef _GLOW_BUNDLE_COMMON_DEFS", "#define _GLOW_BUNDLE_COMMON_DEFS", "",
             "// Glow bundle error code for correct execution.", "#define GLOW_SUCCESS 0", "",
             (_COMMON_STATIC if api == "static" else _COMMON_DYNAMIC).rstrip("\n"), "",
             "#endif", "", _DASHES, "//                                 Bundle API", _DASHES,
             f"// Model name: \"{layout.name}\"", f"// Total data size: {total} (bytes)",
             f"// Activations allocation efficiency: {allocation_efficiency(layout):.4f}", "// Placeholders:", "//"]
    lines += _described(layout.placeholders)
    if layout.states:
        lines += ["// State (kept in \"mutableWeight\" between calls, see STATE_OFFSET below):", "//",
                  *_described(layout.states)]
    if verbose:
        lines += ["// Constants:", "//", *_described(layout.constants)]
    lines += ["// NOTE: Placeholders are allocated within the \"mutableWeight\"",
              "// buffer and are identified using an offset relative to base.", _DASHES,
              "#ifdef __cplusplus", "extern \"C\" {", "#endif", ""]
    if api == "static":
        width = max((len(p.name) for p in layout.placeholders), default=0)
        lines.append("// Placeholder address offsets within mutable buffer (bytes).")
        lines += [f"#define {upper}_{p.name}{' ' * (width - len(p.name))}  {p.offset}" for p in layout.placeholders]
        quantized = [p for p in layout.placeholders if p.quantization is not None]
        if quantized:  # not in Glow's headers (it only comments the type): real = scale * (q - offset)
            lines += ["", "// Quantized placeholders: real value = scale * (integer - offset)."]
            for p in quantized:
                scale = np.format_float_positional(np.float32(p.quantization[0]), unique=True)
                lines += [f"#define {upper}_{p.name}_scale   {scale}f",
                          f"#define {upper}_{p.name}_offset  {p.quantization[1]}"]
        lines += ["", "// Memory sizes (bytes).",
                  f"#define {upper}_CONSTANT_MEM_SIZE     {layout.constant_size}",
                  f"#define {upper}_MUTABLE_MEM_SIZE      {layout.mutable_size}",
                  f"#define {upper}_ACTIVATIONS_MEM_SIZE  {layout.activations_size}", "",
                  "// Memory alignment (bytes).", f"#define {upper}_MEM_ALIGN  {ALIGNMENT}", ""]
    else:
        lines += ["// Bundle memory configuration (memory layout).",
                  f"extern struct BundleConfig {layout.name}_config;", ""]
    lines += _state_macros(layout)
    lines += ["// Bundle entry point (inference function). Returns 0",
              "// for correct execution or some error code otherwise.",
              f"int {layout.entry_point}(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations);",
              "",
              "#ifdef __cplusplus", "}", "#endif", "#endif", ""]
    return "\n".join(lines)


def _state_macros(layout: BundleLayout) -> list[str]:
    """Where a streaming model's state lies in mutableWeight and how to start it over (none
    for a network without state: Glow's header as it is)."""
    if not layout.states:
        return []
    upper = layout.name.upper()
    return ["// State kept between calls: bytes [STATE_OFFSET, STATE_OFFSET + STATE_SIZE) of",
            "// \"mutableWeight\", which must be kept from one call to the next (one mutableWeight",
            "// buffer per stream). The first call initialises them (the model's initial values), and",
            "// so does the first call after RESET_STATE. A mutableWeight that is not zero-filled when",
            "// allocated (malloc) needs one RESET_STATE before the first call.",
            f"#define {upper}_STATE_OFFSET  {layout.state_offset}",
            f"#define {upper}_STATE_SIZE    {layout.state_size}",
            f"#define {upper}_RESET_STATE(mutableWeight)  \\",
            f"  (*(volatile int32_t *)((uint8_t *)(mutableWeight) + {upper}_STATE_OFFSET) = 0)", ""]


def add_bundle_config(module: ir.Module, layout: BundleLayout) -> None:
    """The dynamic API's `<name>_config` and its symbol table (placeholders only), in LLVM IR."""
    i64, i8 = ir.IntType(64), ir.IntType(8)
    entry = ir.LiteralStructType([i8.as_pointer(), i64, i64, i8])
    entries = []
    for p in layout.placeholders:
        text = bytearray(p.name.encode() + b"\0")
        name = ir.GlobalVariable(module, ir.ArrayType(i8, len(text)), f"{layout.name}_symbol_{p.name}")
        name.initializer, name.global_constant, name.linkage = ir.Constant(name.type.pointee, text), True, "internal"
        entries.append(ir.Constant(entry, [name.bitcast(i8.as_pointer()), ir.Constant(i64, p.offset),
                                           ir.Constant(i64, p.size), ir.Constant(i8, 1)]))
    table = ir.GlobalVariable(module, ir.ArrayType(entry, len(entries)), f"{layout.name}SymbolTable")
    table.initializer, table.global_constant, table.linkage = ir.Constant(table.type.pointee, entries), True, "internal"
    config_type = ir.LiteralStructType([i64] * 5 + [entry.as_pointer()])
    config = ir.GlobalVariable(module, config_type, f"{layout.name}_config")
    config.global_constant = True
    config.initializer = ir.Constant(config_type, [
        ir.Constant(i64, layout.constant_size), ir.Constant(i64, layout.mutable_size),
        ir.Constant(i64, layout.activations_size), ir.Constant(i64, ALIGNMENT), ir.Constant(i64, len(entries)),
        table.gep([ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 0)])])


# ----------------------------------------------------------------------------- writing files

Contents = bytes | Callable[[BinaryIO], None]
"""A file's contents: its bytes, or a function that writes them to a binary file."""


def _nearest_existing(path: str) -> str:
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


class StagedFiles:
    """The files one command writes: all of them appear, or none.

    `check` validates an output path before any work is done; `add` collects contents (bytes,
    or a function writing them to a file: the weight files are streamed, never held whole);
    `commit` writes each file to a short temporary name in its destination's directory
    (created if absent) and renames them into place only once every one is written. A
    failure removes the temporary files and the directories it created, and raises a
    GlowError naming the option and the path.

    A path that is a device or a pipe (`/dev/stdout`, `/dev/null`) is written directly,
    never replaced by a rename: after the other files are staged and before they are
    renamed, so that its failure (`/dev/full`) still leaves none of them behind.

    `write_early` starts a file (glow-compile: the weight files, once the weights are laid
    out) into its temporary name on a thread of its own while the caller goes on (LLVM's
    code generation); `commit` waits for it, `discard` (the command failed, or the `with`
    block around the work raised) removes it.
    """

    def __init__(self) -> None:
        self.files: dict[str, tuple[str, Contents, str]] = {}  # real path -> (path as given, contents, option)
        self._early: dict[str, _EarlyWrite] = {}  # real path -> its write under way
        self._created: list[str] = []  # directories the early writes made

    @staticmethod
    def check(path: str, option: str, directory: bool = False) -> None:
        """Fails unless `path` can be written: a file (or, with `directory`, a directory made
        if absent) whose nearest existing ancestor is a writable directory."""
        if not path:
            raise GlowError(f"{option}: the path is empty")
        if os.path.isdir(path) and not directory:
            raise GlowError(f"{option}=\"{path}\": is a directory")
        if os.path.lexists(path) and not os.path.isdir(path) and directory:
            raise GlowError(f"{option}=\"{path}\": exists and is not a directory")
        where = path if directory and os.path.isdir(path) else _nearest_existing(os.path.dirname(os.path.abspath(path)))
        if not os.path.isdir(where):
            raise GlowError(f"{option}=\"{path}\": \"{where}\" is not a directory")
        try:  # a real probe: access() says yes to root on /proc and read-only mounts
            descriptor, probe = tempfile.mkstemp(prefix=".glowmlir-", dir=where)
            os.close(descriptor)
            os.unlink(probe)
        except OSError as error:
            raise GlowError(f"{option}=\"{path}\": cannot write in \"{where}\": {error.strerror or error}") from None

    def add(self, path: str, contents: Contents, option: str) -> None:
        """Adds a file; one `write_early` started for the same option is kept (its contents),
        moved to this place in the order."""
        key = os.path.realpath(path)
        if key in self._early and self.files[key][2] == option:
            self.files[key] = self.files.pop(key)
            return
        if key in self.files:
            raise GlowError(f"{option}=\"{path}\": the same file as {self.files[key][2]}'s \"{self.files[key][0]}\"")
        self.files[key] = (path, contents, option)

    def write_early(self, path: str, contents: Contents, option: str) -> None:
        """Adds a file and starts writing it now, on a thread. Anything that stops it (a
        device or pipe, a directory it cannot make, a failed write) leaves the file to
        `commit`, which writes it again and reports the error."""
        key = os.path.realpath(path)
        if key in self.files or (os.path.exists(key) and not os.path.isfile(key)):
            return
        try:
            _make_directories(os.path.dirname(key), self._created)
            descriptor, temporary = tempfile.mkstemp(prefix=".glowmlir-", dir=os.path.dirname(key))
            os.fchmod(descriptor, 0o666 & ~_umask())  # as open() would create it, not mkstemp's 0600
        except OSError:
            return
        self.files[key] = (path, contents, option)
        self._early[key] = _EarlyWrite(descriptor, temporary, contents, next(reversed(self._early.values()), None))

    def __enter__(self) -> StagedFiles:
        return self

    def __exit__(self, error_type, error, traceback) -> None:
        """A block that fails (before its `commit`) leaves no early write behind."""
        if error_type is not None:
            self.discard()

    def discard(self) -> None:
        """The command failed: the early writes are stopped and removed (and the directories
        they made)."""
        for early in self._early.values():
            early.wait()
            _remove_quietly(early.temporary)
        for directory in reversed(self._created):
            _remove_quietly(directory, directory=True)
        self._early.clear()

    def commit(self) -> list[str]:
        """Writes every file, or none; returns the paths as given, in the order added (the
        stage `writing files` for `-time` and `-verbose`, with the wait for the early ones)."""
        with stage("writing files"):
            return self._commit()

    def _commit(self) -> list[str]:
        created: list[str] = self._created
        staged: dict[str, str] = {}  # real path -> temporary file
        moved: list[str] = []
        current = ""
        for key, early in self._early.items():
            if early.wait():
                staged[key] = early.temporary
                stage_ran(f"{os.path.basename(key)}, written alongside", early.seconds)
            else:
                _remove_quietly(early.temporary)
        try:
            special = [key for key in self.files if os.path.exists(key) and not os.path.isfile(key)]
            for key, (path, contents, option) in self.files.items():
                if key in special or key in staged:
                    continue
                current = f"{option}: cannot write \"{path}\""
                _make_directories(os.path.dirname(key), created)
                descriptor, temporary = tempfile.mkstemp(prefix=".glowmlir-", dir=os.path.dirname(key))
                staged[key] = temporary
                os.fchmod(descriptor, 0o666 & ~_umask())  # as open() would create it, not mkstemp's 0600
                with open(descriptor, "wb") as file:
                    _write(file, contents)
            for key in special:
                path, contents, option = self.files[key]
                current = f"{option}: cannot write \"{path}\""
                with open(key, "wb") as file:
                    _write(file, contents)
            for key, temporary in staged.items():
                current = f"{self.files[key][2]}: cannot write \"{self.files[key][0]}\""
                existed = os.path.lexists(key)
                os.replace(temporary, key)
                if not existed:
                    moved.append(key)
        except OSError as error:
            for path in [*staged.values(), *moved]:
                _remove_quietly(path)
            for directory in reversed(created):
                _remove_quietly(directory, directory=True)
            raise GlowError(f"{current}: {error.strerror or error}") from None
        return [path for path, _, _ in self.files.values()]


def _write(file: BinaryIO, contents: Contents) -> None:
    if callable(contents):
        contents(file)
    else:
        file.write(contents)


class _EarlyWrite:
    """A file written into its temporary on a thread of its own (`StagedFiles.write_early`),
    once the write started before it (`after`) is done: one file at a time, one core."""

    def __init__(self, descriptor: int, temporary: str, contents: Contents, after: _EarlyWrite | None) -> None:
        self.temporary = temporary
        self.failed = False
        self.seconds = 0.0
        self.thread = threading.Thread(target=self._run, args=(descriptor, contents, after), daemon=True,
                                       name=f"write {os.path.basename(temporary)}")
        self.thread.start()

    def _run(self, descriptor: int, contents: Contents, after: _EarlyWrite | None) -> None:
        if after is not None:
            after.thread.join()
        start = time.perf_counter()
        try:
            with open(descriptor, "wb") as file:
                _write(file, contents)
        except BaseException:  # noqa: BLE001 - commit writes the file again and reports the error
            self.failed = True
        self.seconds = time.perf_counter() - start

    def wait(self) -> bool:
        """Waits for the write; whether it succeeded."""
        self.thread.join()
        return not self.failed


def rendered(contents: Contents) -> bytes:
    """A file's contents as bytes (a writer function run into memory)."""
    if not callable(contents):
        return contents
    file = io.BytesIO()
    contents(file)
    return file.getvalue()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _make_directories(directory: str, created: list[str]) -> None:
    """Creates `directory` and its missing parents, appending each to `created` (outermost first)."""
    missing: list[str] = []
    while not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for path in reversed(missing):
        os.mkdir(path)
        created.append(path)


def _remove_quietly(path: str, directory: bool = False) -> None:
    try:
        os.rmdir(path) if directory else os.unlink(path)
    except OSError:
        pass
