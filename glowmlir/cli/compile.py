"""`glow-compile`: Glow's `model-compiler` — an ONNX model in, a bundle directory out.

    glow-compile -backend=CPU -model=lenet_mnist.onnx -emit-bundle=build
    glow-compile --model lenet_mnist.onnx --emit-bundle build --network-name lenet

Glow's single-dash `-option=value` spelling is accepted as well as `--option value`.
`-print-pipeline` prints the passes as the `glow-opt -p` string that runs them;
`-dump-ir-after=all` (or `=PASS,...`) prints the IR after each pass on stderr, as MLIR's
`-mlir-print-ir-after-all` does. `-print-cmake-dir` prints the directory of glowmlir's CMake
package (`glowmlir_DIR` for `find_package(glowmlir)`, whose `glowmlir_add_bundle` runs
glow-compile at build time: docs/firmware.md).
Errors are one line on stderr with exit status 2, and leave no bundle files behind.
"""

from __future__ import annotations

import collections
import inspect
import json
import os
import sys
import time
import warnings
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console

from glowmlir.backends import kernel_libraries
from glowmlir.bundle import BundleLayout, StagedFiles, weight_file_writers
from glowmlir.cli import common
from glowmlir.cli.common import (
    BOOLEAN_QUANTIZATION_OPTIONS,
    CMAKE_DIR,
    OBSERVER_OPTIONS,
    QuantizationArguments,
    glow_style_arguments,
    model_input_options,
    observed,
    parse_bool,
    run_app,
)
from glowmlir.errors import GlowError, GlowWarning
from glowmlir.instrumentation import return_large_allocations

if TYPE_CHECKING:
    from glowmlir import compiler

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)

BOOLEAN_OPTIONS = (*BOOLEAN_QUANTIZATION_OPTIONS, "use-cmsis", "use-hifi4", "tflite-float-inputs",
                   "tflite-float-outputs", "instrument-debug", "instrument-ir", "g", *OBSERVER_OPTIONS)
"""Options given bare or as `=true|false` (LLVM cl's boolean options)."""

FLAG_OPTIONS = ("bundle-api-verbose", "dump-graph", "dump-ir", "dump-llvm-ir", "dump-llvm-asm", "llvm-save-asm",
                "print-pipeline", "require-fit")
"""On/off options, also taken as `=true|false`."""


def library_table(rows):
    """Which instructions went to the kernel library, and why the others did not."""
    from rich.table import Table

    table = Table(title="kernel selection", title_justify="left")
    for column in ("instruction", "kernel", "function / reason"):
        table.add_column(column)
    for instruction, kind, detail in rows:
        table.add_row(instruction.removeprefix("glowll."), kind, detail)
    return table


def float_ops_line(float_ops: Sequence[tuple[str, str, str]]) -> str:
    """How many compute ops a quantized network keeps in float, by kind and reason."""
    if not float_ops:
        return "ops left float: 0"
    counts = collections.Counter((op.removeprefix("glow."), why) for _, op, why in float_ops)
    kinds = ", ".join(f"{kind} x{count} ({why})" for (kind, why), count in sorted(counts.items()))
    return f"ops left float: {len(float_ops)}: {kinds}"


def print_summary(report, written: Sequence[str], console: Console) -> None:
    from glowmlir.memory_report import report_table

    console.print(report_table(report))
    console.print("wrote " + ", ".join(written))


def parse_patches(text: str) -> tuple[str, int]:
    """`-patches=CUT,N`: the cut instruction's name (or index) and the patches per side."""
    cut, _, count = text.rpartition(",")
    if not cut or not count.isdigit() or int(count) < 1:
        raise GlowError(f"-patches=\"{text}\": expected CUT,N (the cut layer's name or index, N patches per side "
                        f">= 1)")
    return cut, int(count)


def options_of(arguments: dict) -> compiler.CompileOptions:
    """The `CompileOptions` of `glow-compile`'s arguments (its parameters by name), every value
    checked; `glow-run` builds its bundles from the same arguments."""
    from glowmlir import compiler  # noqa: F811 - imported late: the CLI starts fast
    from glowmlir.lowering.llvm_to_object import ExternalCompiler
    from glowmlir.memory_report import board_preset, parse_size
    from glowmlir.targets import resolve_target

    a = SimpleNamespace(**arguments)
    if a.llvm_compiler is None and (a.llvm_compiler_opt or a.llvm_opt):
        raise GlowError("-llvm-compiler-opt and -llvm-opt need -llvm-compiler")
    instrument_debug = parse_bool("instrument-debug", a.instrument_debug)
    if instrument_debug and a.instrument_debug_format != "rawbin":
        raise GlowError(f"-instrument-debug-format=\"{a.instrument_debug_format}\": a bundle writes rawbin dumps "
                        f"(-instrument-debug-format=rawbin); glow-run -instrument-debug writes every format")
    if a.backend != "CPU":
        raise GlowError(f"-backend=\"{a.backend}\": only CPU bundles are supported")
    options = dict(
        target=resolve_target(a.target, a.mcpu, a.mattr, a.float_abi, a.relocation_model, a.bundle_code_model,
                              a.opt_level),
        network_name=a.network_name,
        main_entry_name=a.main_entry_name,
        debug_info=parse_bool("g", a.debug_info),
        instrument_debug_directory=os.path.abspath(a.instrument_debug_dir) if instrument_debug else None,
        instrument_ir=parse_bool("instrument-ir", a.instrument_ir),
        debug_directory=os.path.abspath(a.emit_bundle) if a.emit_bundle else ".",
        bundle_api_verbose=a.bundle_api_verbose,
        **model_input_options(a.model_input, a.onnx_define_symbol),
        bundle_api=a.bundle_api,
        keep_llvm_ir=a.dump_llvm_ir,
        keep_assembly=a.dump_llvm_asm or a.llvm_save_asm,
        external_compiler=(ExternalCompiler(a.llvm_compiler, tuple(a.llvm_compiler_opt or ()), a.llvm_opt)
                           if a.llvm_compiler is not None else None),
        reuse_activations=parse_bool("reuse-activation-memory-allocations", a.reuse_activation_memory_allocations),
        memory_fusion=parse_bool("memory-fusion", a.memory_fusion),
        tflite_float_inputs=parse_bool("tflite-float-inputs", a.tflite_float_inputs),
        tflite_float_outputs=parse_bool("tflite-float-outputs", a.tflite_float_outputs),
        tflite_rounding=a.tflite_rounding,
        tflite_hybrid_inputs=a.tflite_hybrid_inputs,
    )
    if a.code_model is not None:
        if a.code_model not in ("small", "medium", "large"):
            raise GlowError(f"-code-model=\"{a.code_model}\": expected small, medium or large")
        warnings.warn(GlowWarning("-code-model: no effect on bundles, as in Glow (it is the JIT's code model; "
                                  "bundles take -bundle-code-model)"))
    quantization = QuantizationArguments(
        a.quantization_schema, a.quantization_precision, a.quantization_precision_bias, a.quantization_calibration,
        a.keep_original_precision_for_nodes, a.enable_channelwise, a.convert_placeholders,
        a.assert_all_nodes_quantized, a.calibrate_constants, a.quantization_percentile, a.quantization_bias_correction)
    if a.load_profile is not None:
        options["quantization"] = quantization.options(a.load_profile)
    elif any(quantization.flags().values()):
        raise GlowError(f"-{next(o for o, v in quantization.flags().items() if v)} needs -load-profile")
    elif quantization.given():
        warnings.warn(GlowWarning(f"{', '.join('-' + o for o in quantization.given())}: no effect without "
                                  f"-load-profile (the model is compiled in float)"))
    requested = {"-use-cmsis": a.use_cmsis, "-use-hifi4": a.use_hifi4}  # Glow's flags
    libraries = [library for library, flag in kernel_libraries().items() if parse_bool(flag[1:], requested[flag])]
    if len(libraries) > 1:
        raise GlowError("-use-cmsis and -use-hifi4 exclude each other")
    if libraries:
        options["kernel_library"] = libraries[0]
    if a.ram_size is not None:
        options["ram_size"] = parse_size("ram-size", a.ram_size)
    elif a.board is not None:
        options["ram_size"] = board_preset(a.board).ram
    if getattr(a, "patches", None) is not None:
        options["patches"] = parse_patches(a.patches)
    if a.flash_size is not None:
        options["flash_size"] = parse_size("flash-size", a.flash_size)
    elif a.board is not None:
        options["flash_size"] = board_preset(a.board).flash
    options["hybrid_weights"] = a.hybrid_weights
    options["autotune"] = a.autotune
    options["autotune_cache"] = a.autotune_cache
    return compiler.CompileOptions(**options)


@app.command()
def compile_command(
    model: Annotated[list[str], typer.Option("--model", "-m", help="ONNX (.onnx, .onnxtxt) or TFLite (.tflite) file, "
                                             "or Caffe2 directory (or net and weights: -model twice)")],
    emit_bundle: Annotated[Optional[str], typer.Option("--emit-bundle", help="output directory of the bundle")] = None,
    backend: Annotated[str, typer.Option("--backend", help="CPU (LLVM bundles)")] = "CPU",
    network_name: Annotated[Optional[str], typer.Option("--network-name",
                                                        help="bundle name (default: model file name)")] = None,
    model_input: Annotated[Optional[list[str]], typer.Option("--model-input", "--model-input-name",
                                                             help="name,float,[d0,d1,...]; repeatable")] = None,
    onnx_define_symbol: Annotated[Optional[list[str]], typer.Option("--onnx-define-symbol",
                                                                    help="symbol,value; repeatable")] = None,
    bundle_api: Annotated[str, typer.Option("--bundle-api", help="static or dynamic")] = "static",
    dump_graph_dag: Annotated[Optional[str], typer.Option(
        "--dump-graph-DAG", help="write the optimized graph: DOT, or a picture for FILE.svg/.png (Graphviz)")] = None,
    dump_graph_dag_before_compile: Annotated[Optional[str], typer.Option(
        "--dump-graph-DAG-before-compile", help="the same for the graph as imported, before any pass")] = None,
    instrument_debug: Annotated[str, typer.Option(
        "--instrument-debug", help="the bundle writes every instruction's operands (rawbin files; a file system "
                                   "is needed: glow-run -instrument-debug dumps on any board)")] = "false",
    instrument_debug_dir: Annotated[str, typer.Option("--instrument-debug-dir",
                                                      help="where the dumps go (default: debug)")] = "debug",
    instrument_debug_format: Annotated[str, typer.Option("--instrument-debug-format",
                                                         help="rawbin (the bundle's format)")] = "console",
    instrument_ir: Annotated[str, typer.Option("--instrument-ir", help="call glow_instrument_before/after "
                                               "around each instruction")] = "false",
    debug_info: Annotated[str, typer.Option("--g", "-g", help="DWARF debug information: lines of the glowll IR "
                                            "(written as <name>.glowll.mlir) and the region parameters")] = "false",
    main_entry_name: Annotated[Optional[str], typer.Option("--main-entry-name",
                                                           help="the inference function's name (default: the "
                                                                "network name)")] = None,
    bundle_api_verbose: Annotated[bool, typer.Option("--bundle-api-verbose",
                                                     help="the header also describes the weights")] = False,
    dump_graph: Annotated[bool, typer.Option("--dump-graph", help="print the optimized graph (glow IR)")] = False,
    dump_ir: Annotated[bool, typer.Option("--dump-ir", help="print the allocated low-level IR")] = False,
    dump_llvm_ir: Annotated[bool, typer.Option("--dump-llvm-ir", help="print the optimized LLVM IR")] = False,
    llvm_compiler: Annotated[Optional[str], typer.Option(
        "--llvm-compiler", help="an external LLVM compiler (llc, clang, xt-clang) making the object from our "
                                "optimized bitcode")] = None,
    llvm_compiler_opt: Annotated[Optional[list[str]], typer.Option(
        "--llvm-compiler-opt", help="options for -llvm-compiler; repeatable")] = None,
    llvm_opt: Annotated[Optional[str], typer.Option("--llvm-opt", help="an external opt run between two "
                                                    "-llvm-compiler runs, as in Glow")] = None,
    dump_llvm_asm: Annotated[bool, typer.Option("--dump-llvm-asm", help="print the target's assembly")] = False,
    llvm_save_asm: Annotated[bool, typer.Option("--llvm-save-asm",
                                                help="write <name>.s beside the bundle's object")] = False,
    dump_ir_after: Annotated[Optional[str], typer.Option(
        "--dump-ir-after", help="print the IR after these passes on stderr (all, or names such as "
                                "glow-fuse-activations,glowll-allocate-memory)")] = None,
    print_pipeline: Annotated[bool, typer.Option("--print-pipeline", help="print the passes as a glow-opt -p "
                                                 "string, compile nothing")] = False,
    reuse_activation_memory_allocations: Annotated[str, typer.Option(
        "--reuse-activation-memory-allocations", help="true (default) or false")] = "true",
    memory_report: Annotated[Optional[str], typer.Option("--memory-report",
                                                         help="write the memory report as JSON")] = None,
    memory_plan: Annotated[Optional[str], typer.Option(
        "--memory-plan", help="draw the activations memory plan: FILE.svg, .png or .html")] = None,
    board: Annotated[Optional[str], typer.Option("--board",
                                                 help="imxrt1060, imxrt685, mps2-an385/an386/an500/an505")] = None,
    ram_size: Annotated[Optional[str], typer.Option(
        "--ram-size", help="RAM of the target, e.g. 512K (with -use-cmsis: a fused convolution that must stay "
                           "fused to fit keeps our kernel)")] = None,
    patches: Annotated[Optional[str], typer.Option(
        "--patches", help="CUT,N: the layers up to the instruction CUT (its name or index in the low-level IR) run "
                          "over N x N spatial patches of its output, so that one patch's buffers are live at a "
                          "time (more MACs, less RAM)")] = None,
    flash_size: Annotated[Optional[str], typer.Option(
        "--flash-size", help="flash of the target, e.g. 2M (on a DSP core: the fastest packed filters that fit it "
                             "beside 48 KB of code; a hybrid model's weights stay int8 where float ones do not "
                             "fit)")] = None,
    hybrid_weights: Annotated[str, typer.Option(
        "--hybrid-weights", help="a hybrid (dynamic-range) model's int8 weights: auto (by -flash-size, else by "
                                 "estimated cost), float (dequantized at compile time) or int8 (dequantized by "
                                 "the kernels as they read them)")] = "auto",
    autotune: Annotated[bool, typer.Option(
        "--autotune", help="each layer's kernel measured in estimated cycles on the target's emulated board, "
                           "the fastest that fits the budgets taken; measurements cached by layer signature")] = False,
    autotune_cache: Annotated[Optional[str], typer.Option(
        "--autotune-cache", help="the autotuner's cache file (default: $GLOWMLIR_AUTOTUNE_CACHE, else "
                                 "~/.cache/glowmlir/autotune.json); a build reads it whenever it exists")] = None,
    require_fit: Annotated[bool, typer.Option("--require-fit",
                                              help="fail unless the bundle fits (weights in flash)")] = False,
    target: Annotated[Optional[str], typer.Option("--target", help="LLVM triple, e.g. thumbv7em-none-eabihf")] = None,
    mcpu: Annotated[Optional[str], typer.Option("--mcpu",
                                                help="CPU, e.g. cortex-m7 (presets fill in triple and FPU)")] = None,
    mattr: Annotated[Optional[str], typer.Option("--mattr", "--target-feature",
                                                 help="LLVM features, e.g. +dsp")] = None,
    float_abi: Annotated[str, typer.Option("--float-abi", help="default, soft or hard")] = "default",
    relocation_model: Annotated[Optional[str], typer.Option("--relocation-model", help="static or pic")] = None,
    bundle_code_model: Annotated[str, typer.Option("--bundle-code-model",
                                                   help="small (default), medium, large")] = "small",
    code_model: Annotated[Optional[str], typer.Option(
        "--code-model", help="Glow's JIT code model: checked, no effect on bundles (see -bundle-code-model)")] = None,
    opt_level: Annotated[Optional[str], typer.Option("--opt-level",
                                                     help="O0-O3 (O3 default), Os or Oz for size")] = None,
    memory_fusion: Annotated[str, typer.Option("--memory-fusion",
                                               help="fuse pools and residual adds into convolutions "
                                                    "(default true; false lets -use-cmsis take them)")] = "true",
    use_hifi4: Annotated[str, typer.Option("--use-hifi4", help="call HiFi 4 NNLib xa_nn_* functions where they apply "
                                           "(with -mcpu=hifi4: LLVM IR for xt-clang)")] = "false",
    use_cmsis: Annotated[str, typer.Option("--use-cmsis",
                                           help="call CMSIS-NN s8 functions where they apply")] = "false",
    load_profile: Annotated[Optional[str], typer.Option("--load-profile",
                                                        help="quantize with this profile (glow-profile)")] = None,
    quantization_schema: common.SchemaOption = None,
    quantization_precision: common.PrecisionOption = None,
    quantization_precision_bias: common.PrecisionBiasOption = None,
    quantization_calibration: common.CalibrationOption = None,
    quantization_percentile: common.PercentileOption = None,
    enable_channelwise: common.ChannelwiseOption = "false",
    keep_original_precision_for_nodes: common.KeepPrecisionOption = None,
    convert_placeholders: common.ConvertPlaceholdersOption = "false",
    assert_all_nodes_quantized: common.AssertQuantizedOption = "false",
    calibrate_constants: common.CalibrateConstantsOption = "false",
    quantization_bias_correction: common.BiasCorrectionOption = None,
    tflite_float_inputs: Annotated[str, typer.Option("--tflite-float-inputs",
                                                     help="float inputs for a quantized TFLite model")] = "false",
    tflite_float_outputs: Annotated[str, typer.Option("--tflite-float-outputs",
                                                      help="float outputs for a quantized TFLite model")] = "false",
    tflite_hybrid_inputs: Annotated[str, typer.Option(
        "--tflite-hybrid-inputs", help="a hybrid model's layers compute on their float input (float, default) or "
                                       "on it quantized to int8 per batch as TFLite's hybrid kernels do (quantized)")
    ] = "float",
    tflite_rounding: Annotated[str, typer.Option(
        "--tflite-rounding", help="double: requantizations rounded twice (TFLite Micro, CMSIS-NN); single: "
                                  "FullyConnected's rounded once, as the ai-edge-litert wheel does")
    ] = "double",
    time_passes: common.TimeOption = "false",
    verbose: common.VerboseOption = "false",
) -> None:
    """Compile a model into a Glow bundle."""
    from glowmlir.instrumentation import instrumented
    from glowmlir.memory_report import board_preset
    from glowmlir.pipeline import ir_dumper

    if board is not None:
        board_preset(board)  # fail before compiling
    compile_options = options_of(locals())
    if require_fit and board is None and compile_options.ram_size is None and flash_size is None:
        raise GlowError("-require-fit needs -board, -ram-size or -flash-size")
    pipeline = compile_options.pipeline()
    if print_pipeline:
        print(pipeline.spec())
        return
    ir_printer = ir_dumper(dump_ir_after, pipeline) if dump_ir_after is not None else None
    if emit_bundle is None:
        raise GlowError("Missing option '-emit-bundle' (the bundle's output directory)")
    outputs = SimpleNamespace(emit_bundle=emit_bundle, memory_report=memory_report, dump_graph_dag=dump_graph_dag,
                              dump_graph_dag_before_compile=dump_graph_dag_before_compile, memory_plan=memory_plan,
                              llvm_save_asm=llvm_save_asm)
    check_output_paths(outputs)  # before the work, not after it
    flash = compile_options.flash_size if flash_size is not None else None
    with observed("glow-compile", time_passes, verbose), instrumented(ir_printer):
        bundle, report, written = compile_and_write(model, compile_options, outputs, board, require_fit, flash)
    dumps = {"glow": dump_graph, "glowll": dump_ir, "llvm-ir": dump_llvm_ir, "assembly": dump_llvm_asm}
    for stage in (stage for stage, asked in dumps.items() if asked):
        print(bundle.ir[stage])
    print_results(bundle, report, written)


def check_output_paths(outputs: SimpleNamespace) -> None:
    """Every file the command will write can be written (Graphviz there for a picture, a
    picture format the memory plan draws), checked before any work."""
    from glowmlir.graph_dot import check_graphviz
    from glowmlir.memory_plan import check_picture_path

    StagedFiles.check(outputs.emit_bundle, "-emit-bundle", directory=True)
    for option, path in file_options(outputs).items():
        if path is not None:
            StagedFiles.check(path, option)
            if option.startswith("-dump-graph-DAG"):
                check_graphviz(path, option)
            if option == "-memory-plan":
                check_picture_path(path)


def file_options(outputs: SimpleNamespace) -> dict[str, str | None]:
    """The options that name a file the command writes besides the bundle -> their paths."""
    return {"-memory-report": outputs.memory_report, "-dump-graph-DAG": outputs.dump_graph_dag,
            "-dump-graph-DAG-before-compile": outputs.dump_graph_dag_before_compile,
            "-memory-plan": outputs.memory_plan}


def compile_and_write(model: list[str], options, outputs: SimpleNamespace, board: str | None, require_fit: bool,
                      flash: int | None):
    """Imports and compiles the model, then writes the bundle and every file asked for, all or
    none (a bundle that must fit and does not: none). Returns the bundle, its memory report
    and the paths written."""
    from glowmlir import compiler
    from glowmlir.graph_dot import graph_dot
    from glowmlir.memory_report import memory_report, report_table

    staged = StagedFiles()  # every file of this command, or none

    def write_weights_early(layout: BundleLayout) -> None:  # while LLVM generates the code
        for file_name, contents in weight_file_writers(layout, options.bundle_api).items():
            staged.write_early(os.path.join(outputs.emit_bundle, file_name), contents, "-emit-bundle")

    with staged:
        compiler.tune_if_asked(model, options)
        start = time.perf_counter()
        module = compiler.import_network(model, options)
        imported_graph = graph_dot(module) if outputs.dump_graph_dag_before_compile is not None else None
        bundle = compiler.compile_module(module, options, timings={"import": time.perf_counter() - start},
                                         laid_out=write_weights_early)
        report = memory_report(bundle, board, options.ram_size, flash)
        if require_fit and not report.weights_in_flash.fits:
            Console().print(report_table(report))
            raise GlowError(f"bundle {bundle.name} does not fit the target (weights in flash); nothing written")
        stage_outputs(staged, bundle, report, outputs, imported_graph, options.instrument_debug_directory)
        return bundle, report, staged.commit()


def stage_outputs(staged: StagedFiles, bundle, report, outputs: SimpleNamespace, imported_graph: str | None,
                  instrument_debug_directory: str) -> None:
    """Stages the bundle's files and those its options ask for (assembly, graph pictures, the
    debug dumps' index, the memory plan and report)."""
    from glowmlir.graph_dot import render_graph

    bundle.stage(staged, outputs.emit_bundle, option="-emit-bundle")
    if outputs.llvm_save_asm:  # as Glow: the assembly beside the object
        staged.add(os.path.join(outputs.emit_bundle, f"{bundle.name}.s"), bundle.ir["assembly"].encode(),
                   "-llvm-save-asm")
    for option, path, dot in (("-dump-graph-DAG", outputs.dump_graph_dag, bundle.graph_dot),
                              ("-dump-graph-DAG-before-compile", outputs.dump_graph_dag_before_compile,
                               imported_graph)):
        if path is not None:
            staged.add(path, render_graph(dot, path, option), option)
    if "instrument-debug.info" in bundle.ir:  # as Glow, the dumps' index is written at compile time
        staged.add(os.path.join(instrument_debug_directory, "instrument-debug.info"),
                   bundle.ir["instrument-debug.info"].encode(), "-instrument-debug-dir")
    if outputs.memory_plan is not None:
        from glowmlir.memory_plan import check_picture_path

        staged.add(outputs.memory_plan, bundle.memory_plan.picture(check_picture_path(outputs.memory_plan)),
                   "-memory-plan")
    if outputs.memory_report is not None:
        staged.add(outputs.memory_report, (json.dumps(report.as_json(), indent=2)).encode(), "-memory-report")


def print_results(bundle, report, written: Sequence[str]) -> None:
    """The summary: files written, memory, float ops left in a quantized model, library calls."""
    console = Console()
    print_summary(report, written, console)
    if bundle.float_ops is not None:
        console.print(float_ops_line(bundle.float_ops), highlight=False)
    if bundle.library_calls:
        console.print(library_table(bundle.library_calls))


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if any(argument.lstrip("-") == "print-cmake-dir" for argument in argv):
        print(CMAKE_DIR)
        return
    return_large_allocations()
    run_app(app, "glow-compile", argv, BOOLEAN_OPTIONS, FLAG_OPTIONS)


if __name__ == "__main__":
    main()


def _compile_options_only(**arguments) -> tuple:  # typer reads its signature: compile_command's
    return arguments["model"], options_of(arguments)


_compile_options_only.__signature__ = inspect.signature(compile_command, eval_str=True)
options_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
options_app.command()(_compile_options_only)


def parse_compile_options(argv: Sequence[str]) -> tuple[list[str], compiler.CompileOptions]:
    """The model paths and `CompileOptions` of a glow-compile command line (`glow-run` takes
    every glow-compile option); a GlowError or UsageError for a bad one."""
    return options_app(glow_style_arguments(argv, BOOLEAN_OPTIONS, FLAG_OPTIONS), prog_name="glow-compile",
                       standalone_mode=False)
