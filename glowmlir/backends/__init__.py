"""Backends: one folder per instruction set or kernel library, and their registry.

A backend (`glowmlir/backends/<name>/`) holds its kernel selection pass(es), its data layouts,
its kernel emitters and its cost figures, and describes itself in `<name>/backend.py` as
`BACKEND = Backend(...)`: the microkernels it implements (`Microkernel`: which glowll
instructions each takes, in which numbers, the module that emits it, the rules its operands
must meet), its passes and their place in the pipeline for a target it serves
(`glowll_passes`, `graph_passes`, `SelectionOrder`), its `glow-opt` pass names, and what the
graph passes ask it. The shared layers (dialects, transforms, lowering) and the pipeline
builder name no backend: they ask this registry (`backends()`, `microkernel(name)`), which
imports a backend's description only when first asked, as `transforms.PASSES` imports a pass.

`REGISTERED` lists the backends in priority order; adding one is a folder and a line here
(docs/architecture.md, "Adding a target").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

REGISTERED: list[str] = ["arm_dsp", "arm_mve", "x86", "host_vector", "size_first", "cmsis_nn", "hifi4"]
"""The backends (modules `glowmlir.backends.<name>.backend`, or any importable module
defining `BACKEND`), highest priority first."""


@dataclass(frozen=True)
class Microkernel:
    """A kernel of a backend for some glowll instructions, named by their `microkernel` property.

    `ops`: the glowll op names that may take it; `emitter`: the module whose
    `emit_convolution`, `emit_fully_connected`, `emit_elementwise`, `emit_softmax` or
    `emit_int_lookup_table` emits it; `numbers`: "i8" or "f32", what it computes on (`int16`:
    also int16 data of offset 0); `tiled`: a convolution's that carries its `vector_tile`;
    `elementwise_kinds`: the `glowll.elementwise` kinds it takes; `packed_weights`: a
    FullyConnected's weights are packed (the dest and input give its shape);
    `parameters`: the parameters its `#glowll.microkernel<"name", {...}>` attribute may carry
    (which its `verify` checks); `loaded_numbers`: the
    `KernelParameters` it loads from a layer's record even when they are 0; `lookup_tables`: it
    applies a convolution's or FullyConnected's fused `lookup_table` to each output as it stores
    it (`glowll-fuse-lookup-tables`), always or (a predicate of the op) where its parameters
    say so; `verify`: its own rules (a packed filter's shape, a
    record's size), raising `VerifyException`."""

    name: str
    emitter: str
    ops: tuple[str, ...] = ("glowll.convolution", "glowll.fully_connected")
    numbers: str = "i8"
    int16: bool = False
    tiled: bool = False
    elementwise_kinds: tuple[str, ...] = ()
    packed_weights: bool = False
    parameters: tuple[str, ...] = ()
    loaded_numbers: tuple[str, ...] = ()
    lookup_tables: bool | Callable[[Any], bool] = False
    verify: Callable[[Any], None] | None = None
    plane_free_parameters: tuple[str, ...] = ()
    """Its parameters that say what the target has, not what the layer's plane is: a layer cut
    into blocks of rows after kernel selection (`glowll-convolve-in-place`'s `row_block`)
    keeps them; a kernel with any other parameter is not cut."""
    lanes: int = 0
    """A vector kernel's int32 lanes a vector (output columns a vector for a column kernel)."""

    def applies_tables(self, op) -> bool:
        """Whether its kernel of `op` applies a fused lookup table (`lookup_tables`)."""
        return self.lookup_tables(op) if callable(self.lookup_tables) else self.lookup_tables

    def emitters(self) -> ModuleType:
        """The module of its `emit_*` functions."""
        return importlib.import_module(self.emitter)


@dataclass(frozen=True)
class Backend:
    """A target's kernels: its name, its microkernels (see the module doc) and what the graph
    passes ask it."""

    name: str
    microkernels: tuple[Microkernel, ...] = field(default=())
    passes: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Its passes `glow-opt -p` runs: name -> (module, class)."""
    prefers_unfused: Callable[[Any, Any], bool] | None = None
    """(a glow convolution, the target's `VectorTile`) -> whether it runs faster with no pool
    fused into it (`glow-fuse-conv-pool` on a target with a vector unit)."""
    graph_passes: Callable[[PipelineOptions], list[Any]] | None = None
    """Its passes on the graph, after the fusions (in backend priority order)."""
    glowll_passes: Callable[[PipelineOptions], list[tuple[int, Any]]] | None = None
    """Its kernel selection passes for the options' target, each with its `SelectionOrder`."""
    library: tuple[str, str, str] | None = None
    """A kernel library's name ("cmsis-nn"), its `glow-compile` flag ("-use-cmsis") and the
    module of its mappings (`accepts`, `MAPPINGS`, `Declined`, see `libraries`)."""
    serves: Callable[[Any], bool] | None = None
    """Whether a `Target` has its instruction set (other backends ask it through `serves`,
    never by importing it)."""
    frees_code: Callable[[PipelineOptions], bool] | None = None
    """Whether its selection gives layers their size-first kernels in a build of the options
    whose code came out over its budget (`PipelineOptions.code_excess`; `frees_code` below)."""
    tuning: Callable[[PipelineOptions], tuple[str, ...]] | None = None
    """The kernels the autotuner (`glowmlir.autotune`) may measure for the options' target: the
    microkernels its selection pass gives an instruction the autotuner chose for it
    (`glowll.TunedKernelAttr`), whatever its cost rules say; () for none."""
    gathers_windows: Callable[[Any], bool] | None = None
    """(a glow convolution) -> whether its kernels run it as a matrix product over its pixels,
    each pixel's window gathered once for all output channels (what another backend's cost
    model of them counts: `cmsis_nn.conv_pool_costs`)."""
    vector_tile: Callable[[str, Sequence[str]], Any] | None = None
    """(triple, +/- features) -> the f32 `VectorTile` of the vector unit its kernels tile, None
    where the target has none it knows (`Target.vector_tile` asks the backends in order)."""
    cache_bytes: Callable[[str], int] | None = None
    """(triple) -> one core's cache its kernels block their loops for where the target is not
    the host (0: unknown; `Target.cache_bytes`)."""
    feature_bases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Target feature -> the features it builds on, as LLVM implies them (`target.enabled_features`:
    `-avx` turns AVX-512 off too)."""
    shape_parameterised: str | None = None
    """The module of its forms of the size-first int8 kernels whose shapes are data
    (`glowll-shape-parameterised-kernels`, which asks for it by the backend's name): its
    microkernels `MATRIX_PRODUCT` and `DEPTHWISE` (None: no depthwise form),
    `matrix_product_form(op, shape)` (of a layer the portable matrix product takes: None if the
    form does not, else what its code depends on beyond the arithmetic, a tuple), and how it lays
    a layer out: `pack_matrix_product(centred)` and `pack_depthwise(centred)` (int16 weights
    less their zero point), or `select_matrix_product(op, rewriter)` (its own packing)."""


@dataclass(frozen=True)
class PipelineOptions:
    """What a backend's passes depend on: the target (None: no target's kernels) and the
    compile options."""

    target: Any = None
    kernel_library: str | None = None
    memory_fusion: bool = True
    ram_size: int = 0
    reuse_activations: bool = True
    flash_size: int = 0
    """-flash-size (or a -board preset's flash), bytes; 0: not given."""
    tuning_cache: str = ""
    """The autotuner's cache file (`glowmlir.autotune.cache`): measured layers take the kernel
    measured fastest (`glowll-apply-tuned-kernels`); "": no tuning."""
    forced_kernel: str = ""
    """A measuring build's kernel (`glowmlir.autotune.measure`): every layer it can take gets it."""
    profile_quantized: bool = False
    """The model quantized by `glow-compile` itself from a profile (`-load-profile`, Glow's flow),
    not quantized before (a TFLite int8 or QDQ ONNX model): its default constants budget is
    Glow's own bundle's, the int8 weights as they are (`transforms.flash_budget.GLOW_CONSTANT_RATIO`),
    not a ratio over them; `flash_size` still replaces it."""
    code_excess: int = 0
    """Bytes a speed-first build's code measured over its budget (`transforms.flash_budget.
    code_budget`; `compiler.compile_module` builds it again with them): the backends that can
    free code (`Backend.frees_code`) give that many bytes' layers their size-first kernels."""

    @property
    def size_first(self) -> bool:
        """-opt-level=Os or Oz."""
        return self.target is not None and self.target.size_attribute is not None

    @property
    def minimum_size(self) -> bool:
        """-opt-level=Oz."""
        return self.target is not None and self.target.size_attribute == "minsize"


class SelectionOrder:
    """Where a backend's glowll pass runs among the kernel selections (`Backend.glowll_passes`)."""

    LIBRARY_CALLS = 0  # what a kernel library takes becomes calls into it
    SHARED_SHAPES = 10  # kernels shared by layers of many shapes (they leave the rest to the next)
    INSTRUCTION_SET = 20  # an instruction set's kernels
    RECORDS = 40  # quantization numbers as data, for layers that may share a kernel
    VECTOR_UNIT = 50  # float kernels on the vector unit


_loaded: list[Backend] = []


def backends() -> list[Backend]:
    """The registered backends, in priority order (their descriptions imported on first use)."""
    if len(_loaded) != len(REGISTERED):
        _loaded[:] = [_load(name) for name in REGISTERED]
    return list(_loaded)


def _load(name: str) -> Backend:
    module = name if "." in name else f"glowmlir.backends.{name}.backend"
    return importlib.import_module(module).BACKEND


def register(module: str, priority: int | None = None) -> None:
    """Adds a backend (a module defining `BACKEND`) at `priority` (an index into the order;
    default last)."""
    if module not in REGISTERED:
        REGISTERED.insert(len(REGISTERED) if priority is None else priority, module)
    _loaded.clear()


def unregister(module: str) -> None:
    REGISTERED.remove(module)
    _loaded.clear()


def all_microkernels() -> Iterator[Microkernel]:
    for backend in backends():
        yield from backend.microkernels


def microkernel(name: str) -> Microkernel | None:
    """The registered microkernel of this name, None if no backend has it."""
    return next((kernel for kernel in all_microkernels() if kernel.name == name), None)


def kernel_libraries() -> dict[str, str]:
    """The registered kernel libraries: name ("cmsis-nn") -> its `glow-compile` flag ("-use-cmsis")."""
    return {backend.library[0]: backend.library[1] for backend in backends() if backend.library is not None}


def library_module(name: str) -> ModuleType:
    """The mappings module of the kernel library of this name (`kernel_libraries`)."""
    backend = next((b for b in backends() if b.library is not None and b.library[0] == name), None)
    if backend is None:
        raise KeyError(name)
    return importlib.import_module(backend.library[2])


def feature_bases() -> dict[str, tuple[str, ...]]:
    """Every registered backend's `feature_bases`, merged."""
    return {feature: bases for backend in backends() for feature, bases in backend.feature_bases.items()}


def vector_tile(triple: str, features: Sequence[str]) -> Any:
    """The f32 `VectorTile` of a target's vector unit, from the first backend that knows it
    (`Backend.vector_tile`); None where none does."""
    tiles = (b.vector_tile(triple, features) for b in backends() if b.vector_tile is not None)
    return next((tile for tile in tiles if tile is not None), None)


def default_cache_bytes(triple: str) -> int:
    """One core's cache, from the first backend that knows the architecture (`Backend.cache_bytes`;
    0: none does)."""
    sizes = (b.cache_bytes(triple) for b in backends() if b.cache_bytes is not None)
    return next((size for size in sizes if size), 0)


def backend_passes() -> dict[str, tuple[str, str]]:
    """Every backend's passes: name -> (module, class)."""
    return {name: entry for backend in backends() for name, entry in backend.passes.items()}


def named(name: str) -> Backend | None:
    """The registered backend of this name, None if there is none."""
    return next((b for b in backends() if b.name == name), None)


def serves(name: str, target: Any) -> bool:
    """Whether the backend of this name is registered and serves `target` (its `Backend.serves`):
    how a backend asks about another's instruction set without importing it."""
    backend = named(name)
    return backend is not None and backend.serves is not None and target is not None and backend.serves(target)


GENERIC = "generic"
"""The autotuner's name for an instruction's shared loop-nest kernel (no microkernel)."""


def frees_code(options: PipelineOptions) -> bool:
    """Whether a backend serving the options' target can free code a speed-first build of them
    takes over its budget (`Backend.frees_code`)."""
    return any(backend.frees_code is not None and backend.frees_code(options) for backend in backends())


def tuning_candidates(options: PipelineOptions) -> tuple[str, ...]:
    """The kernels the autotuner measures for the options' target: the generic one, then each
    backend's (`Backend.tuning`); () when no backend has any."""
    found = [kernel for backend in backends() if backend.tuning is not None for kernel in backend.tuning(options)]
    return (GENERIC, *dict.fromkeys(found)) if found else ()


def microkernels_of(op_name: str) -> list[Microkernel]:
    """The microkernels an op of this name may take, in priority order."""
    return [kernel for kernel in all_microkernels() if op_name in kernel.ops]
