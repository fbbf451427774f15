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

from glowmlir.backends import GraphOptions, backends
from glowmlir.errors import GlowError
from glowmlir.instrumentation import Instrumentation, current

if TYPE_CHECKING:
    from glowmlir.target import VectorTile
    from glowmlir.transforms.quantize import QuantizationOptions

def pre_quantization_passes() -> list[ModulePass]:
    """The graph passes before quantization: a profile is taken of the graph they leave. The
    decompositions come first: what they leave is what the lowering takes."""
    from glowmlir.transforms.constant_fold import ConstantFold
    from glowmlir.transforms.decompose_1d_windows import Decompose1DWindows
    from glowmlir.transforms.decompose_3d_convolution import Decompose3DConvolution
    from glowmlir.transforms.decompose_3d_pools import Decompose3DPools
    from glowmlir.transforms.decompose_conv_transpose import DecomposeConvTranspose
    from glowmlir.transforms.fold_batchnorm import FoldBatchNorm

    # A 1-D transposed convolution becomes a 1-D convolution, which then becomes a 2-D one.
    decompositions = [DecomposeConvTranspose(), Decompose3DConvolution(), Decompose3DPools(), Decompose1DWindows()]
    return [*decompositions, ConstantFold(), FoldBatchNorm(), ConstantFold()]


def graph_passes(memory_fusion: bool = True, quantization: Sequence[ModulePass] = (),
                 kernel_library: str | None = None, core: str = "", ram_size: int = 0,
                 reuse_activations: bool = True, vector_tile: VectorTile | None = None,
                 size_first: bool = False) -> list[ModulePass]:
    """The `glow` graph optimizations, in order; `quantization` passes run before the fusions,
    as in Glow (fusion then applies to the quantized ops too); with a kernel library, what it
    takes runs NHWC. With CMSIS-NN on a Cortex-M (`core`, a `conv_pool_costs.COSTS` class),
    each fused convolution + pool goes to whichever kernel is estimated faster, unless
    unfusing it would exceed `ram_size` (`glow-choose-conv-pool-kernels`). On a target with a
    vector unit (`vector_tile`), a pool stays apart from a float convolution that runs faster
    on whole planes, and float 1x1 convolutions of stride over 1 read a subsampled input
    (`glow-subsample-strided-pointwise`). An int16-widened average fuses into its convolution
    on the Cortex-M cores (no `vector_tile`) at -O3 only, not in a size-first build
    (`size_first`) nor on a host (`FuseConvPool.widened_averages`)."""
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    from glowmlir.transforms.fuse_activations import FuseActivations
    from glowmlir.transforms.fuse_conv_pool import FuseConvPool
    from glowmlir.transforms.fuse_residual_add import FuseResidualAdd
    from glowmlir.transforms.layout import ConvertToNHWC, SinkTransposes
    from glowmlir.transforms.quantize import QuantizeFromModel
    from glowmlir.transforms.schedule import ScheduleForMemory
    from glowmlir.transforms.subsample_strided_pointwise import SubsampleStridedPointwise

    # Transposes sink before fusion, so that layout changes (TFLite's NHWC graphs) do not
    # stand between a convolution and its activation or pool.
    # A model quantized by its own QDQ ops is quantized first (a no-op on other graphs).
    from_model = QuantizeFromModel(symmetric_weights=kernel_library is not None)
    passes = [*pre_quantization_passes(), from_model, *quantization, SinkTransposes(), FuseActivations()]
    if memory_fusion:
        fuse = (FuseConvPool(vector_tile.lanes, vector_tile.accumulators, vector_tile.masked_loads,
                             vector_tile.registers, widened_averages=False)
                if vector_tile is not None else FuseConvPool(widened_averages=not size_first))
        passes += [fuse, FuseResidualAdd()]
    options = GraphOptions(memory_fusion, kernel_library, core, ram_size, reuse_activations)
    for backend in backends():
        passes += backend.graph_passes(options) if backend.graph_passes is not None else []
    if vector_tile is not None:
        passes.append(SubsampleStridedPointwise())
    if kernel_library is not None:
        passes += [ConvertToNHWC(kernel_library), SinkTransposes()]
    return passes + [CommonSubexpressionElimination(), DeadCodeElimination(), ScheduleForMemory()]


def glowll_passes(reuse_activations: bool = True, kernel_library: str | None = None,
                  pointer_width: int = 64, arm_dsp: bool = False, helium: bool = False,
                  size_first: bool = False, vector_tile: VectorTile | None = None,
                  minimum_size: bool = False, vnni: bool = False, vbmi: bool = False) -> list[ModulePass]:
    """From the optimized graph to an allocated `glowll.function`; with a kernel library,
    the instructions it implements become calls into it; on a core with the Arm DSP
    extension (`arm_dsp`), the int8 instructions left get the DSP microkernels (FullyConnected
    Helium's, with `helium`); in a size-first build (`-opt-level=Os/Oz`) the int8 layers'
    quantization numbers become data, so that equal-shaped layers share a kernel (with `vnni`
    at -O3 too, for the layers that have an equal-shaped partner); on a target
    with a vector unit (`vector_tile`), float convolutions get the column-vector kernel; on
    one with AVX-512 VNNI (`vnni`), int8 convolutions and FullyConnected get its kernels, and
    with VBMI too (`vbmi`) int8 lookup tables get theirs;
    `minimum_size` (-Oz) keeps a Helium core on the DSP kernels: LLVM vectorizes no loop in
    minimum-size code (Helium's dot products would be scalar: MobileNetV2 4x slower), and
    its ARM low-overhead-loop pass aborted on the column kernel's predicated vectors. A
    size-first build tells the DSP kernels so (`loop_pairs`): they keep their loops, taking
    the core's `arm_dsp.LOOP_PAIRS` channel pairs a step. At -Oz, and at -Os on a core
    without the DSP extension or VNNI (whose kernels the shape-parameterised one would slow
    most), int8 pointwise convolutions and FullyConnected of many shapes share one kernel
    that reads its shapes from the record, and depthwise convolutions one per kernel size
    (`glowll-shape-parameterised-kernels`, docs/code-size.md); on a VNNI host at -O3 and
    -Os, the matrix product's VNNI form."""
    from glowmlir.backends.arm_dsp.kernels import LOOP_PAIRS
    from glowmlir.backends.arm_dsp.select_kernels import SelectArmDspKernels
    from glowmlir.backends.host_vector.select_kernels import SelectVectorColumns
    from glowmlir.backends.size_first.quantization_records import QuantizationRecords
    from glowmlir.backends.size_first.select_kernels import ShapeParameterisedKernels
    from glowmlir.backends.x86.select_kernels import SelectVnniKernels
    from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL
    from glowmlir.transforms.allocate_memory import AllocateMemory
    from glowmlir.transforms.select_kernels import SelectCmsisNN, SelectHifi4
    from glowmlir.transforms.share_buffers import ShareBuffers

    selection = {"cmsis-nn": [SelectCmsisNN()], "hifi4": [SelectHifi4()], None: []}[kernel_library]
    if size_first and (minimum_size or not (arm_dsp or vnni)):
        selection.append(ShapeParameterisedKernels(dsp=arm_dsp))
    elif vnni:
        selection.append(ShapeParameterisedKernels(vnni=True))
    if arm_dsp:
        loop_pairs = LOOP_PAIRS["helium" if helium else "dsp"] if size_first else 0
        selection.append(SelectArmDspKernels(helium and not minimum_size, loop_pairs))
    if vnni:
        selection.append(SelectVnniKernels(lookup_tables=vbmi, depthwise=vbmi))
    if size_first or vnni:  # on a VNNI host at -O3 only layers that may share a kernel
        selection.append(QuantizationRecords(partnered=not size_first))
    if vector_tile is not None:
        selection.append(SelectVectorColumns(vector_tile.lanes, vector_tile.accumulators, vector_tile.masked_loads,
                                             vector_tile.registers))
    return [LowerGlowToGlowLL(), *selection, ShareBuffers(), AllocateMemory(reuse_activations, pointer_width)]


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
                     save_node_outputs: str | None = None, segmented: bool = True, arm_dsp: bool = False,
                     helium: bool = False, size_first: bool = False, core: str = "",
                     ram_size: int = 0, vector_tile: VectorTile | None = None,
                     minimum_size: bool = False, vnni: bool = False, vbmi: bool = False,
                     cache_bytes: int = 0) -> CompilePipeline:
    """The pipeline `glow-compile` runs for these options (`CompileOptions.pipeline()`);
    `arm_dsp` selects the Arm DSP-extension int8 kernels, `size_first` (-opt-level=Os/Oz) int8
    kernels shared by equal-shaped layers; `layer_profile` makes a
    layer-profiling build (see `LowerGlowLLToLLVM`), `save_node_outputs`
    (node names, or "" for all) a build whose nodes' results are outputs too (`glow-run
    -instrument-debug`); `segmented=False` keeps every kernel call in the entry point (`-g`, the
    bundle instrumentation); `core` and `ram_size` as `graph_passes` takes them; `cache_bytes`
    the cache of one core the float kernels block their loops for (0: unknown, no blocking)."""
    from glowmlir.lowering.glowll_to_llvm import SEGMENT_SIZE, LowerGlowLLToLLVM
    from glowmlir.transforms.save_node_outputs import SaveNodeOutputs

    quantization_passes = quantization.passes() if quantization is not None else ()
    glow = graph_passes(memory_fusion, quantization_passes, kernel_library, core, ram_size, reuse_activations,
                        vector_tile, size_first)
    if save_node_outputs is not None:
        glow.append(SaveNodeOutputs(save_node_outputs))
    return CompilePipeline(tuple(glow),
                           tuple(glowll_passes(reuse_activations, kernel_library, pointer_width, arm_dsp, helium,
                                               size_first, vector_tile, minimum_size, vnni, vbmi)),
                           (LowerGlowLLToLLVM(pointer_width, layer_profile, SEGMENT_SIZE if segmented else 0,
                                              cache_bytes if vector_tile is not None else 0),))


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
