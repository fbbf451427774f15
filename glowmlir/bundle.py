"""The bundle files, byte for byte in Glow's formats (BundleSaver.cpp).

`<name>.h` (static or dynamic API), `<name>.weights.bin` (the constant region image) and
`<name>.weights.txt` (the same bytes as C array text). The layout they describe is read
off an allocated `glowll.function`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from glowmlir.dialects import glowll
from glowmlir.dialects.quant import UniformQuantizedType
from glowmlir.transforms.select_kernels import SCRATCH_ATTRIBUTE
from glowmlir.dialects.weights import array_from_dense, numpy_dtype
from glowmlir.errors import GlowError
from glowmlir.transforms.allocate_memory import ALIGNMENT

# ----------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class Placeholder:
    name: str
    kind: str  # "input" or "output"
    shape: tuple[int, ...]
    dtype: np.dtype
    offset: int
    quantization: tuple[float, int] | None = None  # (scale, offset) of a quantized placeholder

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
    if isinstance(element_type, UniformQuantizedType):
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

    @staticmethod
    def of(function: glowll.FunctionOp) -> BundleLayout:
        if function.activations_size is None:
            raise GlowError(f"{function.sym_name.data}: memory is not allocated (run glowll-allocate-memory)")
        ops = list(function.body.block.ops)
        placeholders = tuple(sorted(
            (Placeholder(op.name_.data, op.kind.data, tuple(op.buffer.type.get_shape()),
                         np.dtype(numpy_dtype(op.buffer.type.element_type)), op.offset.value.data,
                         _quantization(op.buffer.type.element_type))
             for op in ops if isinstance(op, glowll.PlaceholderOp)), key=lambda p: p.offset))
        weights = []
        for op in ops:
            if isinstance(op, glowll.WeightOp):
                if op.value is None:
                    raise GlowError(f"weight \"{op.name_.data}\" has no data (elided; pass its --weights-file)")
                weights.append((op.name_.data, op.offset.value.data, array_from_dense(op.value)))
        scratch = max((op.byte_size for op in ops if isinstance(op, glowll.AllocOp) and SCRATCH_ATTRIBUTE in op.attributes),
                      default=0)
        return BundleLayout(function.sym_name.data, function.constant_size.value.data,
                            function.mutable_size.value.data, function.activations_size.value.data,
                            function.activations_lower_bound.value.data, placeholders, tuple(weights), scratch)

    def placeholder(self, name: str) -> Placeholder:
        for p in self.placeholders:
            if p.name == name:
                return p
        raise GlowError(f"bundle {self.name} has no placeholder \"{name}\"")


# ----------------------------------------------------------------------------- weights


def constant_region(layout: BundleLayout) -> bytes:
    """weights.bin: each weight's bytes at its offset, zero gaps, CONSTANT_MEM_SIZE long."""
    image = bytearray(layout.constant_size)
    for _, offset, data in layout.weights:
        raw = np.ascontiguousarray(data).astype(data.dtype.newbyteorder("<"), copy=False).tobytes()
        image[offset:offset + len(raw)] = raw
    return bytes(image)


_BYTE_TEXT = np.frombuffer("".join(f" 0X{b:02X}," for b in range(256)).encode(), np.uint8).reshape(256, 6)


def weights_text(image: bytes) -> str:
    """weights.txt: ` 0X%02X,` per byte, 20 bytes a line, one extra newline at the end."""
    data = np.frombuffer(image, np.uint8)
    full = len(data) // 20 * 20
    rows = _BYTE_TEXT[data[:full]].reshape(-1, 120)  # 20 bytes of 6 characters a line
    lines = np.concatenate([rows, np.full((len(rows), 1), ord("\n"), np.uint8)], axis=1).tobytes().decode()
    if full < len(data):
        lines += _BYTE_TEXT[data[full:]].tobytes().decode() + "\n"
    return lines + "\n"


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


def header(layout: BundleLayout, api: str = "static") -> str:
    """The bundle header, laid out as Glow's BundleSaver writes it."""
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
             "// Activations allocation efficiency: 1.0000", "// Placeholders:", "//"]
    for p in layout.placeholders:
        lines += [f"//   Name: \"{p.name}\"", f"//   Type: {p.type_string()}", f"//   Size: {p.size} (elements)",
                  f"//   Size: {p.byte_size} (bytes)", f"//   Offset: {p.offset} (bytes)", "//"]
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
    lines += ["// Bundle entry point (inference function). Returns 0",
              "// for correct execution or some error code otherwise.",
              f"int {layout.name}(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations);", "",
              "#ifdef __cplusplus", "}", "#endif", "#endif", ""]
    return "\n".join(lines)


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
