"""The compile pipeline: model file → glow → glowll → llvm → object + bundle files.

    import glowmlir
    bundle = glowmlir.compile("lenet_mnist.onnx")
    bundle.save("build")                      # lenet_mnist.{o,h,weights.bin,weights.txt}
    outputs = bundle.run(data=image)          # on the host, numpy in and out

Bad arguments and bad models raise `GlowError` (a `ValueError`) naming the argument, option,
file or model node at fault.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from llvmlite import binding as llvm
from xdsl.dialects.builtin import ModuleOp, StringAttr

from glowmlir import bundle as bundle_files
from glowmlir.autotune.cache import TuningCache
from glowmlir.backends import kernel_libraries
from glowmlir.dialects import glow, glowll
from glowmlir.dialects.quant import is_quantized
from glowmlir.errors import GlowError
from glowmlir.graph_dot import graph_dot
from glowmlir.importers import ImportOptions, default_network_name, import_model
from glowmlir.importers.onnx import ModelInput
from glowmlir.instrumentation import collect_garbage, stage
from glowmlir.lowering.bundle_instrumentation import plan_of as instrumentation_plan
from glowmlir.lowering.debug_info import DEBUG_SOURCE_SUFFIX, DebugSource
from glowmlir.lowering.llvm_to_object import ExternalCompiler, compile_to_llvm_ir, compile_to_object, compile_with
from glowmlir.lowering.requantization import FULLY_CONNECTED_ROUNDS_ONCE
from glowmlir.memory_plan import MemoryPlan
from glowmlir.pipeline import CompilePipeline, default_pipeline, run_passes
from glowmlir.plan_choice import PlanChoice, choose_plan, layer_by_layer_and_in_place
from glowmlir.target import HOST, Target
from glowmlir.transforms.convolve_in_place import STAGED_CHANNELS
from glowmlir.transforms.quantization_options import QuantizationOptions
from glowmlir.transforms.select_kernels import library_report

HYBRID_WEIGHTS = ("auto", "float", "int8")
"""-hybrid-weights: a hybrid model's int8 weights (TFLite dynamic range) dequantized at compile
time (`float`), kept int8 and dequantized by the kernels as they read them (`int8`), or chosen
layer by layer by flash size or estimated cost (`auto`: `glowmlir.transforms.choose_hybrid_weights`)."""
TFLITE_HYBRID_INPUTS = ("float", "quantized")
"""-tflite-hybrid-inputs: a hybrid layer (int8 weights, float activations) computes on its float
input as it is (`float`: the float model's arithmetic), or on it quantized to int8 per batch as
TFLite's hybrid kernels do (`quantized`: ai-edge-litert's results, `importers.tflite_hybrid`)."""
TFLITE_ROUNDINGS = ("double", "single")
"""-tflite-rounding: `double` rounds every requantization's high multiply, then its division
by a power of two (`arm_nn_requantize`: TFLite Micro's convention and CMSIS-NN's); `single`
rounds the FullyConnected ones once, as the ai-edge-litert wheel's FULLY_CONNECTED does (its
other int8 kernels round twice, measured), for bundles bit-identical to that interpreter."""


@dataclass
class CompileOptions:
    """The options of `glow-compile` that shape the bundle (names as in Glow)."""

    network_name: str | None = None
    model_inputs: Sequence[ModelInput] = ()
    symbols: dict[str, int] = field(default_factory=dict)
    bundle_api: str = "static"
    target: Target = HOST
    reuse_activations: bool = True
    memory_fusion: bool = True
    keep_llvm_ir: bool = False  # keep the optimized LLVM IR text in Bundle.ir["llvm-ir"]
    debug_info: bool = False  # -g: DWARF lines and variables, the glowll IR as the source (see lowering.debug_info)
    debug_directory: str = "."  # where the debugger finds <name>.glowll.mlir (the bundle directory)
    instrument_debug_directory: str | None = None  # -instrument-debug: the bundle dumps operands there
    instrument_ir: bool = False  # -instrument-ir: the bundle calls glow_instrument_before/after
    external_compiler: ExternalCompiler | None = None  # -llvm-compiler: it makes the object from our bitcode
    keep_assembly: bool = False  # the target's assembly in Bundle.ir["assembly"] (-dump-llvm-asm, -llvm-save-asm)
    quantization: QuantizationOptions | None = None
    kernel_library: str | None = None  # "cmsis-nn" (-use-cmsis) or "hifi4" (-use-hifi4)
    ram_size: int | None = None  # -ram-size: with -use-cmsis, a fused convolution that must stay fused to fit keeps it
    patches: tuple[str, int] | None = None  # -patches=<cut>,<n>: the layers up to the cut run over n x n patches
    flash_size: int | None = None  # -flash-size (or -board's): the packed filters that fit it
    # (backends.arm_dsp.flash_budget); hybrid weights go int8 where float ones do not fit
    hybrid_weights: str = "auto"  # -hybrid-weights: a hybrid model's int8 weights auto, float or int8 (HYBRID_WEIGHTS)
    tflite_float_inputs: bool = False
    tflite_float_outputs: bool = False
    tflite_hybrid_inputs: str = "float"  # -tflite-hybrid-inputs: a hybrid layer's input as it is, or quantized
    tflite_rounding: str = "double"  # -tflite-rounding: requantizations rounded twice (TFLite Micro) or once
    main_entry_name: str | None = None  # the inference function's name when not the network's (-main-entry-name)
    bundle_api_verbose: bool = False  # the header also describes the weights (-bundle-api-verbose)
    layer_profile: str = ""  # "kernels" or "timed": a layer-profiling build (glowmlir.layer_profile)
    save_node_outputs: str | None = None  # node names ("" all): their results become outputs too (-instrument-debug)
    autotune: bool = False  # -autotune: each layer's kernel measured on the target's board (glowmlir.autotune)
    autotune_cache: str | None = None  # -autotune-cache: its cache file (default: autotune.cache.default_path())
    forced_kernel: str = ""  # a measuring build's kernel (autotune.measure): every layer it takes gets it
    in_place: bool | None = None  # in-place convolutions: None chosen to fit ram_size (plan_choice), or forced on/off
    code_excess: int = 0  # bytes a speed-first build's code took over its budget: compile_module builds it again

    def __post_init__(self) -> None:
        """Checks every field at the API boundary: a wrong type or value is a GlowError naming it.
        `target` may be given as a CPU preset name (`"cortex-m7"`) or an LLVM triple, and
        `model_inputs` entries as `-model-input` strings (`"data,float,[1,3,224,224]"`)."""
        _expect("network_name", self.network_name, str, "a string", optional=True)
        if self.network_name is not None and not self.network_name:
            raise GlowError("network_name (-network-name) must not be empty")
        _expect("main_entry_name", self.main_entry_name, str, "a string", optional=True)
        _expect("save_node_outputs", self.save_node_outputs, str, "node names, comma-separated", optional=True)
        _expect("in_place", self.in_place, bool, "True or False", optional=True)
        _expect("external_compiler", self.external_compiler, ExternalCompiler, "an ExternalCompiler", optional=True)
        if self.external_compiler is not None and (self.keep_llvm_ir or self.keep_assembly):
            raise GlowError("-dump-llvm-ir, -dump-llvm-asm and -llvm-save-asm come from our back end: not with "
                            "-llvm-compiler (ask the external compiler for them, e.g. -llvm-compiler-opt=-S)")
        if self.main_entry_name is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.main_entry_name):
            raise GlowError(f"main_entry_name (-main-entry-name)=\"{self.main_entry_name}\": expected a C identifier")
        if isinstance(self.model_inputs, str | bytes) or not isinstance(self.model_inputs, Sequence):
            raise GlowError(f"model_inputs={self.model_inputs!r}: expected a list of ModelInput or "
                            f"\"name,float,[d0,d1,...]\" strings")
        self.model_inputs = tuple(ModelInput.parse(spec) if isinstance(spec, str) else spec
                                  for spec in self.model_inputs)
        for spec in self.model_inputs:
            _expect("model_inputs", spec, ModelInput, "a ModelInput or a \"name,float,[d0,d1,...]\" string")
        _expect("symbols", self.symbols, Mapping, "a dict of symbol name to positive integer")
        self.symbols = dict(self.symbols)
        if self.bundle_api not in ("static", "dynamic"):
            raise GlowError(f"bundle_api={self.bundle_api!r} (-bundle-api): expected static or dynamic")
        self.target = _target(self.target)
        for flag in ("reuse_activations", "memory_fusion", "keep_llvm_ir", "keep_assembly", "tflite_float_inputs",
                     "tflite_float_outputs", "bundle_api_verbose", "debug_info", "instrument_ir"):
            _expect(flag, getattr(self, flag), bool, "True or False")
        _expect("quantization", self.quantization, QuantizationOptions, "a QuantizationOptions", optional=True)
        if self.quantization is not None:
            self.quantization.check()  # before the model is read
        if self.kernel_library is not None and self.kernel_library not in kernel_libraries():
            raise GlowError(f"kernel_library={self.kernel_library!r}: expected None or one of "
                            f"{', '.join(map(repr, kernel_libraries()))}")
        _expect("ram_size", self.ram_size, int, "a number of bytes", optional=True)
        if self.ram_size is not None and self.ram_size <= 0:
            raise GlowError(f"ram_size={self.ram_size} (-ram-size): expected a positive number of bytes")
        if self.patches is not None:
            if not (isinstance(self.patches, tuple) and len(self.patches) == 2 and isinstance(self.patches[0], str)
                    and isinstance(self.patches[1], int) and self.patches[0] and self.patches[1] >= 1):
                raise GlowError(f"patches={self.patches!r} (-patches): expected (cut layer name or index, "
                                f"patches per side >= 1)")
        _expect("flash_size", self.flash_size, int, "a number of bytes", optional=True)
        if self.flash_size is not None and self.flash_size <= 0:
            raise GlowError(f"flash_size={self.flash_size} (-flash-size): expected a positive number of bytes")
        if self.hybrid_weights not in HYBRID_WEIGHTS:
            raise GlowError(f"hybrid_weights={self.hybrid_weights!r} (-hybrid-weights): expected auto, float or int8")
        if self.tflite_hybrid_inputs not in TFLITE_HYBRID_INPUTS:
            raise GlowError(f"tflite_hybrid_inputs={self.tflite_hybrid_inputs!r} (-tflite-hybrid-inputs): expected "
                            f"float or quantized")
        if self.tflite_rounding not in TFLITE_ROUNDINGS:
            raise GlowError(f"tflite_rounding={self.tflite_rounding!r} (-tflite-rounding): expected double or single")
        if self.tflite_rounding == "single" and self.kernel_library is not None:
            raise GlowError(f"-tflite-rounding=single: {kernel_libraries()[self.kernel_library]}'s library "
                            f"rounds twice")
        if self.layer_profile not in ("", "kernels", "timed"):
            raise GlowError(f"layer_profile={self.layer_profile!r}: expected \"\", \"kernels\" or \"timed\"")
        _expect("autotune", self.autotune, bool, "True or False")
        _expect("autotune_cache", self.autotune_cache, str, "a file path", optional=True)

    def tuning_cache(self) -> str:
        """The autotuner's cache file the build reads: -autotune-cache, else the default one
        (`autotune.cache.default_path`) when -autotune is given or the file exists; "": none."""
        from glowmlir.autotune.cache import default_path

        if self.autotune_cache is not None:
            return self.autotune_cache
        path = default_path()
        return path if self.autotune or os.path.exists(path) else ""

    def import_options(self) -> ImportOptions:
        return ImportOptions(self.model_inputs, self.symbols, self.tflite_float_inputs, self.tflite_float_outputs,
                             self.tflite_hybrid_inputs)

    def pipeline(self, in_place: int | None = None, patches: tuple[str, int] | None = None) -> CompilePipeline:
        """The passes these options compile with (`glow-compile -print-pipeline` prints them);
        `in_place` (channels a staged depthwise slice takes, 0: no in-place layers) and `patches`
        (cut, patches per side) override the options' (the plan chooser's candidates)."""
        if in_place is None:
            in_place = STAGED_CHANNELS if self.in_place else 0
        if patches is None:
            patches = self.patches
        quantization = self.quantization
        if quantization is not None and self.kernel_library is not None:
            quantization = dataclasses.replace(quantization, symmetric_weights=True)  # what the libraries take
        # -g and the instrumentation find every kernel call in the entry point.
        segmented = not (self.debug_info or self.instrument_ir or self.instrument_debug_directory is not None)
        hybrid = {"hybrid_weights": self.hybrid_weights, "flash_size": self.flash_size or 0}
        tuning = {"tuning_cache": "" if self.forced_kernel else self.tuning_cache(),
                  "forced_kernel": self.forced_kernel, "code_excess": self.code_excess}
        if self.tflite_rounding == "single":  # no backend's kernels: the microkernels' forms round twice
            return default_pipeline(self.memory_fusion, quantization, None, self.reuse_activations,
                                    self.target.pointer_width, self.layer_profile, self.save_node_outputs, segmented,
                                    target=None, ram_size=self.ram_size or 0, in_place=in_place, patches=patches,
                                    **hybrid)
        return default_pipeline(self.memory_fusion, quantization, self.kernel_library, self.reuse_activations,
                                self.target.pointer_width, self.layer_profile, self.save_node_outputs, segmented,
                                target=self.target, ram_size=self.ram_size or 0, in_place=in_place,
                                patches=patches, **hybrid, **tuning)


def _expect(argument: str, value: object, kind: type, description: str, optional: bool = False) -> None:
    if (value is None and optional) or isinstance(value, kind):
        return
    raise GlowError(f"{argument}={value!r}: expected {description}{' or None' if optional else ''}, "
                    f"not {type(value).__name__}")


def _target(target: object) -> Target:
    """A `Target`, or what a user means by a string: a CPU preset (`-mcpu`) or an LLVM triple (`-target`)."""
    if isinstance(target, Target):
        return target
    from glowmlir.targets import CPU_PRESETS, resolve_target

    if not isinstance(target, str) or not target:
        raise GlowError(f"target={target!r}: expected a Target (glowmlir.targets.resolve_target), "
                        f"a CPU name such as \"cortex-m7\" or an LLVM triple")
    try:  # resolve_target builds the machine: an unknown triple fails there
        resolved = resolve_target(mcpu=target) if target in CPU_PRESETS else resolve_target(target=target)
    except GlowError:
        raise GlowError(f"target=\"{target}\": neither a CPU ({', '.join(CPU_PRESETS)}) nor an LLVM triple "
                        f"this LLVM knows") from None
    return resolved


PATH_MAX = 4096
"""Linux's longest path."""


def model_paths(model: object) -> list[str]:
    """The `model` argument of `compile`: one path (str or os.PathLike) or a Caffe2 net and weights pair."""
    def path(value: object) -> str:
        if not isinstance(value, str | bytes | os.PathLike):
            raise GlowError(f"model={model!r}: expected a file path (str or os.PathLike) or a pair of them")
        text = os.fsdecode(value)
        if "\0" in text or len(text) > PATH_MAX:  # e.g. the model's contents instead of its path
            raise GlowError(f"model: a {type(value).__name__} of length {len(value):,} is not a file path "
                            f"(to compile a model held in memory, save it to a file first)")
        return text

    if isinstance(model, Sequence) and not isinstance(model, str | bytes):
        return [path(item) for item in model]
    return [path(model)]


@dataclass
class Bundle:
    """A compiled network: its layout, object code and the IR of each stage."""

    layout: bundle_files.BundleLayout
    object_code: bytes
    api: str
    ir: dict[str, str]
    timings: dict[str, float]
    graph_dot: str
    library_calls: list[tuple[str, str, str]] = field(default_factory=list)  # see select_kernels.library_report
    bitcode: bytes | None = None  # instead of object code, for a target without a back end here (Xtensa)
    target: Target = HOST
    verbose_header: bool = False  # -bundle-api-verbose: the header describes the weights too
    debug_info: bool = False  # -g: the object has DWARF pointing at <name>.glowll.mlir, written with the bundle
    memory_plan: MemoryPlan | None = None  # where each activation buffer lives, when (-memory-plan draws it)
    float_ops: list[tuple[str, str, str]] | None = None  # a quantized graph's ops left float, see kept_float_ops
    plan: PlanChoice | None = None  # the plan chosen to fit -ram-size (plan_choice), None: layer by layer, unchosen

    @property
    def name(self) -> str:
        return self.layout.name

    def files(self, weights_text: bool = True) -> dict[str, bytes]:
        """File name → contents, as `-emit-bundle` writes them (weights.txt only if asked)."""
        return {name: bundle_files.rendered(contents) for name, contents in self.file_writers(weights_text).items()}

    def file_writers(self, weights_text: bool = True) -> dict[str, bundle_files.Contents]:
        """As `files`, but the weight files as functions that stream them into a file (from
        the weights' buffers, never the whole region or its text in memory)."""
        name = self.name
        if self.bitcode is None:
            files = {f"{name}.o": self.object_code}
        else:  # LLVM IR for the vendor's compiler: xt-clang -c <name>.bc
            files = {f"{name}.bc": self.bitcode, f"{name}.ll": self.ir["llvm-ir"].encode()}
        files[f"{name}.h"] = bundle_files.header(self.layout, self.api, self.verbose_header).encode()
        if self.debug_info:  # -g: the source the object's line table points at
            files[f"{name}{DEBUG_SOURCE_SUFFIX}"] = self.ir["glowll"].encode()
        if "instrument-ir.info" in self.ir:  # -instrument-ir: each callback id's instruction
            files["instrument-ir.info"] = self.ir["instrument-ir.info"].encode()
        files.update(bundle_files.weight_file_writers(self.layout, self.api, weights_text))
        return files

    def save(self, directory: str | os.PathLike, weights_text: bool = True) -> list[str]:
        """Writes the bundle into `directory` (created if absent) all at once, or not at all."""
        outputs = bundle_files.StagedFiles()
        self.stage(outputs, directory, weights_text)
        return outputs.commit()

    def stage(self, outputs: bundle_files.StagedFiles, directory: str | os.PathLike, weights_text: bool = True,
              option: str = "directory") -> None:
        """Adds the bundle's files in `directory` to `outputs` (written by its `commit`)."""
        if not isinstance(directory, str | os.PathLike):
            raise GlowError(f"{option}={directory!r}: expected a directory path (str or os.PathLike)")
        directory = os.fspath(directory)
        bundle_files.StagedFiles.check(directory, option, directory=True)
        for file_name, contents in self.file_writers(weights_text).items():
            outputs.add(os.path.join(directory, file_name), contents, option)

    @cached_property
    def runner(self):
        from glowmlir.runtime.host import HostRunner

        return HostRunner(self.layout, self.object_code)

    def run(self, inputs: Mapping[str, np.ndarray] | None = None, **named: np.ndarray) -> dict[str, np.ndarray]:
        """Runs the bundle on the host (host target only): every input by the model's name for it
        (or its placeholder's C name), in `inputs` or as keywords; returns the outputs by the
        model's names (`ModelOutputs`: their C names find them too). A streaming model's state
        is kept from one `run` to the next (one frame a run; `reset_state` starts over)."""
        arrays = self._input_arrays(inputs, named)  # before `runner` links a bundle that may not be the host's
        return ModelOutputs(self.layout, self.runner.run(arrays))

    def reset_state(self) -> None:
        """A streaming model's bundle: the next `run` starts from the model's initial state, as
        the first did (the header's `<NAME>_RESET_STATE`). Each `run` otherwise starts from the
        state the previous one left: frames are run one `run` each, in order."""
        if not self.layout.states:
            raise GlowError(f"bundle {self.name} keeps no state between calls")
        self.runner.reset_state()

    def state(self) -> dict[str, np.ndarray]:
        """A streaming model's state as the next `run` will start from it, by state name (its
        initial values are written by the first `run`)."""
        return self.runner.state()

    def run_in_place(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """As `run`, but the outputs are read-only views of the bundle's memory, overwritten by
        the next run (`glow-profile` reads every activation of every inference, uncopied)."""
        arrays = self._input_arrays(inputs, {})
        return ModelOutputs(self.layout, self.runner.run_in_place(arrays))

    def _input_arrays(self, inputs: Mapping[str, np.ndarray] | None, named: dict[str, np.ndarray]
                      ) -> dict[str, np.ndarray]:
        """The inputs of `run`, checked, as arrays of their placeholders' types by C name."""
        if inputs is not None and not isinstance(inputs, Mapping):
            raise GlowError(f"inputs: expected a dict of input name to array, not {type(inputs).__name__}")
        if self.target.triple and self.target.triple != llvm.get_process_triple():
            raise GlowError(f"bundle {self.name} is compiled for {self.target.triple}: run() runs host bundles only "
                            f"(glow-run -board runs the others)")
        given = {**(inputs or {}), **named}
        placeholders = [p for p in self.layout.placeholders if p.kind == "input"]
        by_name = {**{p.name: p for p in placeholders}, **{p.given_name: p for p in placeholders}}
        expected = [p.given_name for p in placeholders]
        unknown = [name for name in given if name not in by_name]
        missing = [p.given_name for p in placeholders if p.given_name not in given and p.name not in given]
        if unknown or missing:
            problem = f"no input \"{unknown[0]}\"" if unknown else f"no value for input \"{missing[0]}\""
            raise GlowError(f"bundle {self.name}: {problem} (inputs: {', '.join(expected)})")
        arrays = {}
        for name, value in given.items():
            try:
                arrays[by_name[name].name] = np.asarray(value, by_name[name].dtype)
            except (TypeError, ValueError) as error:
                raise GlowError(f"input \"{name}\": not an array of numbers ({error})") from None
        return arrays


STAGE_NAMES = {"glow": "graph passes", "glowll": "glowll passes", "llvm": "lowering to llvm"}
"""How progress and `-time` name the pipeline's stages."""


class ModelOutputs(dict):
    """A run's outputs by the model's names; an output's C name (its header macro's, e.g. `A3`
    for the model's `3`) finds it too."""

    def __init__(self, layout: bundle_files.BundleLayout, by_c_name: Mapping[str, np.ndarray]):
        outputs = [p for p in layout.placeholders if p.kind == "output"]
        super().__init__({p.given_name: by_c_name[p.name] for p in outputs})
        self._given = {p.name: p.given_name for p in outputs}

    def __missing__(self, name: str) -> np.ndarray:
        if name in self._given:
            return self[self._given[name]]
        raise KeyError(name)


@contextlib.contextmanager
def cyclic_collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, and back as it was after.

    A compilation keeps nearly every object it makes alive to the end (the IR of each stage,
    the llvm-dialect module, its llvmlite translation), so the collector's full passes find
    almost nothing while each scans all of them, one more at every 25% of growth: 2 of
    Inception-v1's 9 s. The few cycles a compilation drops (erased ops, the llvmlite module)
    wait for the next full collection after it, reference counting freeing the rest as usual.
    The objects made meanwhile are moved to the oldest generation unscanned (`gc.freeze` then
    `gc.unfreeze`): left in the youngest, the first allocation after the block would scan
    them all (half a second). The objects from before the block are frozen while it runs, so
    that the few full collections a compilation asks for (`instrumentation.collect_garbage`,
    for a large model's memory) scan only its own objects, not the whole process's: in a
    process that has imported and compiled before (a test run's) each scanned it all, 0.1-0.3 s,
    half the time of a small model's compilation. Not when the process keeps objects frozen
    itself (a pre-fork server's), which `gc.unfreeze` would thaw."""
    enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    gc.disable()
    if not frozen:
        gc.freeze()  # the objects from before the block: the collections it runs skip them
    try:
        yield
    finally:
        if not frozen:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


COLLECTED_WEIGHT_BYTES = 32 << 20
"""Weights from which `collect_replaced_weights` runs the cyclic collector."""


def collect_replaced_weights(module: ModuleOp) -> None:
    """Frees the weights of the ops a stage replaced, when the weights are large.

    An erased op is a reference cycle (the op and its results), which only the cyclic
    collector frees, and it is paused while compiling (`cyclic_collection_paused`): the
    weights of the ops a stage replaced (batch-norm folded, transposed, packed) would stay
    to the end, the module's weights held twice through the LLVM stages (ResNet-50's 100 MB
    of weights: 80 MB more at the peak). One full collection after such a stage costs about
    0.2 s, so it runs only for `COLLECTED_WEIGHT_BYTES` of weights or more."""
    held = sum(len(op.properties["value"].data.data) for op in module.walk()
               if isinstance(op, glow.ConstantOp | glowll.WeightOp) and "value" in op.properties)
    if held >= COLLECTED_WEIGHT_BYTES:
        collect_garbage()


def compile_module(module: ModuleOp, options: CompileOptions, ir_log: dict[str, str] | None = None,
                   timings: dict[str, float] | None = None,
                   laid_out: Callable[[bundle_files.BundleLayout], None] | None = None) -> Bundle:
    """Compiles a module holding one `glow.function` into a bundle, reporting its stages and
    passes to the installed observers (`glowmlir.instrumentation`). `laid_out` is told the
    bundle's layout as soon as it is known, before the code is generated (glow-compile starts
    writing the weight files then)."""
    token = FULLY_CONNECTED_ROUNDS_ONCE.set(options.tflite_rounding == "single")
    try:
        with cyclic_collection_paused():
            return _compile_within_code_budget(module, options, ir_log, timings, laid_out)
    finally:
        FULLY_CONNECTED_ROUNDS_ONCE.reset(token)


CODE_BUDGET_BUILDS = 3
"""Builds a speed-first compilation takes at most to bring its code within its budget: the
fastest, then (code over the budget) again with the excess measured, and once more should the
estimated bytes the size-first kernels free have fallen short."""


def _compile_within_code_budget(module: ModuleOp, options: CompileOptions, ir_log: dict[str, str] | None,
                                timings: dict[str, float] | None,
                                laid_out: Callable[[bundle_files.BundleLayout], None] | None) -> Bundle:
    """Compiles `module` speed first; where a backend can free code (`backends.frees_code`) and
    the object's code (`elf.code_size`) comes out over its budget (`flash_budget.code_budget`:
    48 KB, or the flash the constants leave), compiles it again telling the selection the
    bytes over (`code_excess`, summed over the builds), up to `CODE_BUDGET_BUILDS` builds (fewer
    when a build freed nothing: the code may stay over, `-require-fit` says so). The
    size-first kernels change no constant, so the layout `laid_out` is told is the first's (a
    rebuild whose constants differ, `same_constants`, is not taken). An
    instrumented build (a layer profile, node outputs, -g) is built once, speed first as a bundle
    within its budget is: its own counters' and calls' code is not the bundle's."""
    from glowmlir.backends import PipelineOptions, frees_code
    from glowmlir.elf import code_size
    from glowmlir.transforms.flash_budget import code_budget

    instrumented = (options.layer_profile or options.save_node_outputs is not None or options.debug_info
                    or options.instrument_ir or options.instrument_debug_directory is not None)
    if (instrumented or options.target.emits_llvm_ir or options.external_compiler is not None
            or options.tflite_rounding == "single"
            or not frees_code(PipelineOptions(options.target, forced_kernel=options.forced_kernel))):
        return _compile_module(module, options, ir_log, timings, laid_out)
    original = module.clone()
    bundle = _compile_module(module, options, ir_log, timings, laid_out)
    first, code = bundle, code_size(bundle.object_code)
    for _ in range(CODE_BUDGET_BUILDS - 1):
        over = code - code_budget(options.flash_size or 0, bundle.layout.constant_size)
        if over <= 0:
            break
        options = dataclasses.replace(options, code_excess=options.code_excess + over)
        rebuilt = _compile_module(original.clone(), options, ir_log, timings, None)
        if not same_constants(rebuilt.layout, first.layout):  # the weights told `laid_out` must stay true
            break
        bundle, previous, code = rebuilt, code, code_size(rebuilt.object_code)
        if code >= previous:  # nothing left to free (the layers' kernels have no size-first form here)
            break
    return bundle


def same_constants(layout: bundle_files.BundleLayout, other: bundle_files.BundleLayout) -> bool:
    """Whether two layouts hold the same constant weights at the same offsets."""
    return layout.constant_size == other.constant_size and len(layout.weights) == len(other.weights) and all(
        (name, offset) == (other_name, other_offset) and np.array_equal(data, other_data)
        for (name, offset, data), (other_name, other_offset, other_data) in zip(layout.weights, other.weights,
                                                                                strict=True))


def _compile_module(module: ModuleOp, options: CompileOptions, ir_log: dict[str, str] | None,
                    timings: dict[str, float] | None,
                    laid_out: Callable[[bundle_files.BundleLayout], None] | None) -> Bundle:
    ir_log = {} if ir_log is None else ir_log
    timings = {} if timings is None else timings
    pipeline = options.pipeline()

    def run_stage(label: str, keep_ir: bool = True) -> None:
        start = time.perf_counter()
        with stage(STAGE_NAMES[label]):
            run_passes(module, getattr(pipeline, label))
            if label != "llvm":  # the graph and glowll stages replace weights
                collect_replaced_weights(module)
            if keep_ir:  # the llvm-dialect stage is large: LLVM's own verifier checks it later
                module.verify()
                ir_log[label] = str(module)
        timings[label] = time.perf_counter() - start

    run_stage("glow")
    if options.kernel_library is not None and not any(is_quantized(r.type) for op in module.walk() for r in op.results):
        raise GlowError(f"{kernel_libraries()[options.kernel_library]} needs a quantized model (-load-profile, or "
                        f"an int8 TFLite model): the library's functions are int8")
    graph = graph_dot(module)
    quantized = any(is_quantized(r.type) for op in module.walk() for r in op.results)
    float_ops = kept_float_ops(module) if quantized else None
    if options.in_place is None and options.ram_size is not None:  # the fastest plan that fits (plan_choice)
        def lower(graph: ModuleOp, in_place: int, patches: tuple[str, int] | None) -> ModuleOp:
            run_passes(graph, options.pipeline(in_place, patches).glowll)
            return graph

        # -patches given: the stage is the user's, the chooser only adds in-place layers.
        families = [layer_by_layer_and_in_place] if options.patches is not None else None
        start = time.perf_counter()
        with stage(STAGE_NAMES["glowll"]):
            module, plan = choose_plan(module, options.ram_size, lower, families)
            collect_replaced_weights(module)
            module.verify()
            ir_log["glowll"] = str(module)
        timings["glowll"] = time.perf_counter() - start
    else:
        run_stage("glowll")
        plan = None
    function = next(op for op in module.body.block.ops if isinstance(op, glowll.FunctionOp))
    layout = bundle_files.BundleLayout.of(function)
    memory_plan = MemoryPlan.of(function)
    if options.main_entry_name is not None and options.main_entry_name != layout.name:
        layout = dataclasses.replace(layout, entry=options.main_entry_name)
        function.sym_name = StringAttr(options.main_entry_name)  # the entry point's symbol, as in Glow
    library_calls = library_report(function)
    if laid_out is not None:
        laid_out(layout)
    run_stage("llvm", keep_ir=False)
    start = time.perf_counter()
    extend = (functools.partial(bundle_files.add_bundle_config, layout=layout) if options.bundle_api == "dynamic"
              else None)
    if options.target.emits_llvm_ir:  # HiFi4: IR and bitcode for Cadence's toolchain, no object
        llvm_ir, bitcode = compile_to_llvm_ir(module, options.target, extend)
        object_code, ir_log["llvm-ir"] = b"", llvm_ir
    else:
        bitcode = None
        if options.external_compiler is not None:
            object_code = compile_with(options.external_compiler, module, options.target, layout.name, extend)
        else:
            keep = [text for text, wanted in (("llvm-ir", options.keep_llvm_ir),
                                              ("assembly", options.keep_assembly)) if wanted]
            debug = None
            if options.debug_info:
                source = os.path.join(options.debug_directory, f"{layout.name}{DEBUG_SOURCE_SUFFIX}")
                debug = DebugSource.of_glowll(ir_log["glowll"], source, layout.entry_point)
            instrumentation = None
            if options.instrument_debug_directory is not None or options.instrument_ir:
                instrumentation = instrumentation_plan(function, options.instrument_debug_directory,
                                                       options.instrument_ir)
                if options.instrument_debug_directory is not None:
                    ir_log["instrument-debug.info"] = instrumentation.debug_info()
                if options.instrument_ir:
                    ir_log["instrument-ir.info"] = instrumentation.ir_info()
            object_code, texts = compile_to_object(module, options.target, extend, keep, debug, instrumentation,
                                                   consume=True)
            ir_log.update(texts)
    timings["object"] = time.perf_counter() - start
    return Bundle(layout, object_code, options.bundle_api, ir_log, timings, graph, library_calls, bitcode,
                  options.target, options.bundle_api_verbose, options.debug_info and bitcode is None, memory_plan,
                  float_ops, plan)


def kept_float_ops(module: ModuleOp) -> list[tuple[str, str, str]]:
    """(node name, op, why) of every compute op a quantized graph keeps in float."""
    from glowmlir.transforms.quantized_conversion import KEPT_FLOAT

    return [((op.attributes[glow.NODE_NAME].data if glow.NODE_NAME in op.attributes else op.name), op.name,
             op.attributes[KEPT_FLOAT].data) for op in module.walk() if KEPT_FLOAT in op.attributes]


def tune(model, options: CompileOptions, **how) -> TuningCache:
    """Measures the candidate kernels of the model's layers its cache lacks and saves the cache
    (`autotune.measure.tune` with this module's builds; `how`: its executor, workers, kernels)."""
    from glowmlir.autotune.measure import Builder
    from glowmlir.autotune.measure import tune as measure

    return measure(model, options, Builder(import_network, compile_module), **how)


def tune_if_asked(model, options: CompileOptions) -> None:
    """With -autotune, measures the candidate kernels of the model's layers its cache lacks
    (`tune`), so that the build that follows reads them."""
    if options.autotune and not options.forced_kernel:
        tune(model, options)


def import_network(model: str | os.PathLike | Sequence[str | os.PathLike], options: CompileOptions) -> ModuleOp:
    """The model as a module holding one `glow.function` named as its bundle will be (see `bundle_name`)."""
    paths = model_paths(model)
    name = bundle_files.bundle_name(options.network_name or default_network_name(paths)) if paths else None
    with stage("import"):
        return import_model(paths, options.import_options(), name)


def compile(model: str | os.PathLike | Sequence[str | os.PathLike], *extra, **options) -> Bundle:  # noqa: A001 - the API name users expect
    """Compiles a model (ONNX or TFLite file, Caffe2 directory or net and weights pair);
    keyword options are the fields of `CompileOptions`.

    Raises `glowmlir.GlowError` (a `ValueError`) with a one-line message naming the argument,
    option, file or model node at fault: a bad argument type or value, an unknown keyword, an
    unreadable or unsupported model. A network name that is reserved in C (`int`, `main`,
    `memcpy`) or too long for the bundle's file names is changed, with a `GlowWarning`.
    """
    known = [f.name for f in dataclasses.fields(CompileOptions)]
    if extra:
        raise GlowError(f"compile(): {len(extra) + 1} positional arguments; the model is the only one, options are "
                        f"keyword arguments ({', '.join(known)})")
    unknown = [key for key in options if key not in known]
    if unknown:
        raise GlowError(f"compile(): unknown keyword argument \"{unknown[0]}\" (options: {', '.join(known)})")
    compile_options = CompileOptions(**options)
    tune_if_asked(model, compile_options)
    start = time.perf_counter()
    module = import_network(model, compile_options)
    timings = {"import": time.perf_counter() - start}
    return compile_module(module, compile_options, timings=timings)
