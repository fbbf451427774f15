"""The default compile pipeline: every pass `glow-compile` runs, in order, in one place.

    glow     constant folding, batch-norm folding, quantization (a QDQ model's own, then
             profile-guided), transposes sunk,
             fusions, (NHWC for a kernel library), cse, dce, scheduling
    glowll   lower-glow-to-glowll, (library selection), buffer sharing, memory allocation
    llvm     lower-glowll-to-llvm

`glow-compile -print-pipeline` prints it as the `glow-opt -p` string that runs the same
passes, and `-dump-ir-after=all|PASS[,PASS...]` prints the IR after the passes named, with
MLIR's `// -----// IR Dump After <Pass> (<name>) //----- //` headers, on stderr.
`run_passes` tells the installed observers (`glowmlir.instrumentation`) about every pass.
`glow-profile` takes the graph to where quantization sees it with `pre_quantization_passes`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import ArgSpec

from glowmlir.backends import PipelineOptions, backends, tuning_candidates
from glowmlir.errors import GlowError
from glowmlir.instrumentation import Instrumentation, current

if TYPE_CHECKING:
    from glowmlir.target import Target
    from glowmlir.transforms.quantization_options import QuantizationOptions

def pre_quantization_passes(hybrid_weights: str = "auto", flash_size: int = 0) -> list[ModulePass]:
    """The graph passes before quantization: a profile is taken of the graph they leave. The
    decompositions come first: what they leave is what the lowering takes. Then a hybrid
    model's int8 weights are dequantized, or kept to be dequantized as they are read
    (`glow-choose-hybrid-weights`: `hybrid_weights` auto, float or int8; `flash_size` 0: unknown)."""
    from glowmlir.transforms.choose_hybrid_weights import ChooseHybridWeights
    from glowmlir.transforms.constant_fold import ConstantFold
    from glowmlir.transforms.decompose_1d_windows import Decompose1DWindows
    from glowmlir.transforms.decompose_3d_convolution import Decompose3DConvolution
    from glowmlir.transforms.decompose_3d_pools import Decompose3DPools
    from glowmlir.transforms.decompose_conv_transpose import DecomposeConvTranspose
    from glowmlir.transforms.fold_batchnorm import FoldBatchNorm

    # A 1-D transposed convolution becomes a 1-D convolution, which then becomes a 2-D one.
    decompositions = [DecomposeConvTranspose(), Decompose3DConvolution(), Decompose3DPools(), Decompose1DWindows()]
    return [*decompositions, ChooseHybridWeights(hybrid_weights, flash_size), ConstantFold(), FoldBatchNorm(),
            ConstantFold()]


def graph_passes(memory_fusion: bool = True, quantization: Sequence[ModulePass] = (),
                 kernel_library: str | None = None, target: Target | None = None, ram_size: int = 0,
                 reuse_activations: bool = True, hybrid_weights: str = "auto",
                 flash_size: int = 0) -> list[ModulePass]:
    """The `glow` graph optimizations, in order; `quantization` passes run before the fusions,
    as in Glow (fusion then applies to the quantized ops too); after the fusions, the passes
    of the backends (`Backend.graph_passes`, in priority order: with CMSIS-NN on a Cortex-M,
    `glow-choose-conv-pool-kernels`, which may unfuse a convolution + pool within `ram_size`);
    with a kernel library, what it takes runs NHWC. On a `target` with a vector unit
    (`Target.vector_tile`), a pool stays apart from a float convolution a backend runs faster
    unfused, and float 1x1 convolutions of stride over 1 read a subsampled input
    (`glow-subsample-strided-pointwise`). An int16-widened average fuses into its convolution
    on a core without a vector unit at -O3 only, not in a size-first build nor on a host
    (`FuseConvPool.widened_averages`)."""
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    from glowmlir.transforms.fold_lookup_tables import FoldLookupTables
    from glowmlir.transforms.fuse_activations import FuseActivations
    from glowmlir.transforms.fuse_conv_pool import FuseConvPool
    from glowmlir.transforms.fuse_residual_add import FuseResidualAdd
    from glowmlir.transforms.layout import ConvertToNHWC, SinkTransposes
    from glowmlir.transforms.quantize_from_model import QuantizeFromModel
    from glowmlir.transforms.schedule import ScheduleForMemory
    from glowmlir.transforms.subsample_strided_pointwise import SubsampleStridedPointwise

    vector_tile = target.vector_tile if target is not None else None
    size_first = target is not None and target.size_attribute is not None
    # Transposes sink before fusion, so that layout changes (TFLite's NHWC graphs) do not
    # stand between a convolution and its activation or pool.
    # A model quantized by its own QDQ ops is quantized first (a no-op on other graphs).
    from_model = QuantizeFromModel(symmetric_weights=kernel_library is not None)
    # Then chains of elementwise ops on one int8 tensor become lookup tables (a no-op in float);
    # their sources take finer types only where the compiler chose the types (a profile).
    fold = FoldLookupTables(narrow_sources=bool(quantization))
    passes = [*pre_quantization_passes(hybrid_weights, flash_size), from_model, *quantization, fold,
              SinkTransposes(), FuseActivations()]
    if memory_fusion:
        fuse = (FuseConvPool(vector_tile.lanes, vector_tile.accumulators, vector_tile.masked_loads,
                             vector_tile.registers, widened_averages=False)
                if vector_tile is not None else FuseConvPool(widened_averages=not size_first))
        passes += [fuse, FuseResidualAdd()]
    options = PipelineOptions(target, kernel_library, memory_fusion, ram_size, reuse_activations)
    for backend in backends():
        passes += backend.graph_passes(options) if backend.graph_passes is not None else []
    if vector_tile is not None:
        passes.append(SubsampleStridedPointwise())
    if kernel_library is not None:
        passes += [ConvertToNHWC(kernel_library), SinkTransposes()]
    return passes + [CommonSubexpressionElimination(), DeadCodeElimination(), ScheduleForMemory()]


def glowll_passes(reuse_activations: bool = True, kernel_library: str | None = None, pointer_width: int = 64,
                  target: Target | None = None, flash_size: int = 0, tuning_cache: str = "",
                  forced_kernel: str = "", in_place: int = 0,
                  patches: tuple[str, int] | None = None, memory_fusion: bool = True,
                  profile_quantized: bool = False, code_excess: int = 0) -> list[ModulePass]:
    """From the optimized graph to an allocated `glowll.function`: lowered, each int8
    convolution's constant output channels given zero weights and their least bias
    (`glowll-fold-constant-channels`), then the kernel
    selection passes of the backends that serve the `target` (`Backend.glowll_passes`), in
    their selection order (`SelectionOrder`: library calls, kernels shared across shapes,
    instruction-set kernels, quantization records, vector-unit kernels; backends in priority
    order within one; `flash_size`, bytes or 0, is the flash they fit their constants in),
    preceded on a target with kernels to tune (`Backend.tuning`) by `glowll-apply-tuned-kernels`
    when a `tuning_cache` file is given (or a measuring build's `forced_kernel`), then
    the lookup tables that follow a convolution or FullyConnected fused into its kernel
    (`glowll-fuse-lookup-tables`), the exact int8-to-int16 widenings average pools alone read
    folded into them (`glowll-fold-pool-widening`, with `memory_fusion`), buffers shared and
    memory allocated. With `in_place` channels (a plan below the layer-by-layer bound,
    `plan_choice`; 0: none), `glowll-convolve-in-place` stages depthwise convolutions over
    their input, that many channels a slice, before the selection, and writes pointwise ones
    over theirs: after it where the target's kernels stage their pixels, else in blocks of rows
    before it. With `patches` (cut instruction, n), the layers up to the cut run over n x n
    patches of its output (`glowll-execute-in-patches`, right after the lowering: the kernels
    are chosen per patch). A `profile_quantized` model (quantized from a profile, Glow's flow)
    keeps its constants within Glow's own bundle's by default (`PipelineOptions.profile_quantized`);
    `code_excess` (bytes) is what a speed-first build's code measured over its budget
    (`PipelineOptions.code_excess`)."""
    from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL
    from glowmlir.transforms.allocate_memory import AllocateMemory
    from glowmlir.transforms.convolve_in_place import ConvolveInPlace, kernels_stage_pointwise_pixels
    from glowmlir.transforms.execute_in_patches import ExecuteInPatches
    from glowmlir.transforms.fold_constant_channels import FoldConstantChannels
    from glowmlir.transforms.fold_pool_widening import FoldPoolWidening
    from glowmlir.transforms.fuse_lookup_tables import FuseLookupTables
    from glowmlir.transforms.share_buffers import ShareBuffers

    options = PipelineOptions(target, kernel_library, reuse_activations=reuse_activations, flash_size=flash_size,
                              tuning_cache=tuning_cache, forced_kernel=forced_kernel,
                              profile_quantized=profile_quantized, code_excess=code_excess)
    selection = [entry for backend in backends() if backend.glowll_passes is not None
                 for entry in backend.glowll_passes(options)]
    selection = [compiler_pass for _, compiler_pass in sorted(selection, key=lambda entry: entry[0])]  # stable
    candidates = tuning_candidates(options)
    if candidates and (tuning_cache or forced_kernel):
        from glowmlir.autotune.signature import core_key
        from glowmlir.transforms.apply_tuned_kernels import ApplyTunedKernels

        selection.insert(0, ApplyTunedKernels(tuning_cache, core_key(target, candidates), "+".join(candidates),
                                              forced_kernel))
    # Once each op's kernel is known, the lookup tables that kernels can apply as they store fuse into them,
    # and the average pools of the generic kernel take their inputs' exact widenings.
    patched = [] if patches is None else [ExecuteInPatches(*patches)]
    rows = not kernels_stage_pointwise_pixels(options)
    staged = [ConvolveInPlace(depthwise=True, pointwise=False, staged_channels=in_place, pointwise_rows=rows)
              ] if in_place else []
    overwritten = [ConvolveInPlace(depthwise=False, pointwise=True, staged_channels=in_place)] if in_place else []
    return [LowerGlowToGlowLL(), FoldConstantChannels(), *patched, *staged, *selection, FuseLookupTables(),
            *([FoldPoolWidening()] if memory_fusion else []), *overwritten,
            ShareBuffers(), AllocateMemory(reuse_activations, pointer_width)]


@dataclass(frozen=True)
class CompilePipeline:
    """The passes of each stage; `glow-compile` keeps the IR each stage leaves."""

    glow: tuple[ModulePass, ...]
    glowll: tuple[ModulePass, ...]
    llvm: tuple[ModulePass, ...]

    @property
    def passes(self) -> tuple[ModulePass, ...]:
        return self.glow + self.glowll + self.llvm

    def spec(self) -> str:
        """The `glow-opt -p` string that runs the same passes."""
        return pipeline_spec(self.passes)


def default_pipeline(memory_fusion: bool = True, quantization: QuantizationOptions | None = None,
                     kernel_library: str | None = None, reuse_activations: bool = True,
                     pointer_width: int = 64, layer_profile: str = "",
                     save_node_outputs: str | None = None, segmented: bool = True, target: Target | None = None,
                     ram_size: int = 0, hybrid_weights: str = "auto", flash_size: int = 0, tuning_cache: str = "",
                     forced_kernel: str = "", in_place: int = 0,
                     patches: tuple[str, int] | None = None, code_excess: int = 0) -> CompilePipeline:
    """The pipeline `glow-compile` runs for these options (`CompileOptions.pipeline()`) on
    `target` (None: no backend's kernels, no vector unit); `layer_profile` makes a
    layer-profiling build (see `LowerGlowLLToLLVM`), `save_node_outputs`
    (node names, or "" for all) a build whose nodes' results are outputs too (`glow-run
    -instrument-debug`); `segmented=False` keeps every kernel call in the entry point (`-g`, the
    bundle instrumentation); `ram_size`, `hybrid_weights` and `flash_size` as `graph_passes`
    takes them, `flash_size`, `tuning_cache`, `forced_kernel`, `in_place`, `patches` and
    `code_excess` as `glowll_passes` too; a model `quantization` quantizes is `glowll_passes`' `profile_quantized`
    one (Glow's constants its default budget). The float kernels of a target with a vector unit block their loops for
    its cache (`Target.cache_bytes`)."""
    from glowmlir.lowering.glowll_to_llvm import SEGMENT_SIZE, LowerGlowLLToLLVM
    from glowmlir.transforms.quantize import quantization_passes as passes_of
    from glowmlir.transforms.save_node_outputs import SaveNodeOutputs

    quantization_passes = passes_of(quantization) if quantization is not None else ()
    glow = graph_passes(memory_fusion, quantization_passes, kernel_library, target, ram_size, reuse_activations,
                        hybrid_weights, flash_size)
    if save_node_outputs is not None:
        glow.append(SaveNodeOutputs(save_node_outputs))
    cache_bytes = target.cache_bytes if target is not None and target.vector_tile is not None else 0
    return CompilePipeline(tuple(glow), tuple(glowll_passes(reuse_activations, kernel_library, pointer_width, target,
                                                              flash_size, tuning_cache, forced_kernel, in_place,
                                                              patches, memory_fusion, quantization is not None,
                                                              code_excess)),
                           (LowerGlowLLToLLVM(pointer_width, layer_profile, SEGMENT_SIZE if segmented else 0,
                                              cache_bytes),))


def pipeline_spec(passes: Sequence[ModulePass]) -> str:
    """Passes as xDSL's textual pipeline, `name{option-name=value ...},...` (options at their
    defaults left out; dashes in option names, as MLIR spells them), which `glow-opt -p`
    parses back into the same passes."""
    def text(compiler_pass: ModulePass) -> str:
        spec = compiler_pass.pipeline_pass_spec()
        return str(ArgSpec(spec.name, {name.replace("_", "-"): value for name, value in spec.parameters.items()}))

    return ",".join(text(compiler_pass) for compiler_pass in passes)


def run_passes(module: ModuleOp, passes: Sequence[ModulePass]) -> None:
    """Runs the passes in order with xDSL's `PassPipeline`, telling the installed observers
    (`glowmlir.instrumentation.instrumented`) before and after each."""
    observer = current()

    def callback(previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None) -> None:
        if previous is not None:
            observer.after_pass(previous, module)
        if next_pass is not None:
            observer.before_pass(next_pass)

    PassPipeline(tuple(passes), callback).apply(Context(), module)


def ir_dump_header(compiler_pass: ModulePass) -> str:
    """MLIR's `-mlir-print-ir-after` header: the pass class, then its pipeline name."""
    return f"// -----// IR Dump After {type(compiler_pass).__name__} ({compiler_pass.name}) //----- //"


class IRPrinter(Instrumentation):
    """`-dump-ir-after=all` or `=PASS[,PASS...]`: prints the module after each selected pass
    (on stderr by default), as MLIR's `-mlir-print-ir-after` does."""

    def __init__(self, wanted: set[str], stream: TextIO | None = None):
        self.wanted = wanted
        self.stream = stream

    def after_pass(self, compiler_pass: ModulePass, module: ModuleOp) -> None:
        if compiler_pass.name in self.wanted:
            print(f"{ir_dump_header(compiler_pass)}\n{module!s}\n", file=self.stream or sys.stderr)


def ir_dumper(selection: str, pipeline: CompilePipeline, stream: TextIO | None = None) -> IRPrinter:
    """The `IRPrinter` for `-dump-ir-after=<selection>` over `pipeline`. A name that is not a
    pass of this pipeline is refused before anything runs."""
    names = list(dict.fromkeys(p.name for p in pipeline.passes))
    wanted = set(names) if selection == "all" else set(selection.split(","))
    unknown = sorted(wanted - set(names))
    if unknown:
        raise GlowError(f"-dump-ir-after=\"{selection}\": no pass \"{unknown[0]}\" in this pipeline "
                        f"(all, or one of: {', '.join(names)})")
    return IRPrinter(wanted, stream)
