"""The compile pipeline: model file → glow → glowll → llvm → object + bundle files.

    import glowmlir
    bundle = glowmlir.compile("lenet_mnist.onnx")
    bundle.save("build")                      # lenet_mnist.{o,h,weights.bin,weights.txt}
    outputs = bundle.run(data=image)          # on the host, numpy in and out
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from glowmlir import bundle as bundle_files
from glowmlir.dialects import glowll
from glowmlir.dialects.quant import is_quantized
from glowmlir.errors import GlowError
from glowmlir.graph_dot import graph_dot
from glowmlir.importers import ImportOptions, import_model
from glowmlir.importers.onnx import ModelInput
from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL
from glowmlir.lowering.glowll_to_llvm import LowerGlowLLToLLVM
from glowmlir.lowering.llvm_to_object import HOST, Target, compile_to_llvm_ir, compile_to_object
from glowmlir.names import legalize_name
from glowmlir.transforms import graph_passes
from glowmlir.transforms.allocate_memory import AllocateMemory
from glowmlir.transforms.quantize import QuantizationOptions
from glowmlir.transforms.select_kernels import library_report
from glowmlir.transforms.share_buffers import ShareBuffers


KERNEL_LIBRARY_OPTIONS = {"cmsis-nn": "-use-cmsis", "hifi4": "-use-hifi4"}


def graph_pipeline(memory_fusion: bool = True, quantization: QuantizationOptions | None = None,
                   kernel_library: str | None = None) -> list[ModulePass]:
    """The `glow` graph optimizations, in order."""
    return graph_passes(memory_fusion, quantization.passes() if quantization else (), kernel_library)


def glowll_pipeline(reuse_activations: bool = True, kernel_library: str | None = None) -> list[ModulePass]:
    """From the optimized graph to an allocated `glowll.function`; with a kernel library,
    the instructions it implements become calls into it."""
    from glowmlir.transforms.select_kernels import SelectCmsisNN, SelectHifi4

    selection = {"cmsis-nn": [SelectCmsisNN()], "hifi4": [SelectHifi4()], None: []}[kernel_library]
    return [LowerGlowToGlowLL(), *selection, ShareBuffers(), AllocateMemory(reuse=reuse_activations)]


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
    quantization: QuantizationOptions | None = None
    kernel_library: str | None = None  # "cmsis-nn" (-use-cmsis) or "hifi4" (-use-hifi4)
    tflite_float_inputs: bool = False
    tflite_float_outputs: bool = False

    def import_options(self) -> ImportOptions:
        return ImportOptions(self.model_inputs, self.symbols, self.tflite_float_inputs, self.tflite_float_outputs)


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

    @property
    def name(self) -> str:
        return self.layout.name

    def files(self, weights_text: bool = True) -> dict[str, bytes]:
        """File name → contents, as `-emit-bundle` writes them (weights.txt only if asked)."""
        name = self.name
        if self.bitcode is None:
            files = {f"{name}.o": self.object_code}
        else:  # LLVM IR for the vendor's compiler: xt-clang -c <name>.bc
            files = {f"{name}.bc": self.bitcode, f"{name}.ll": self.ir["llvm-ir"].encode()}
        files[f"{name}.h"] = bundle_files.header(self.layout, self.api).encode()
        image = bundle_files.constant_region(self.layout)
        files[f"{name}.weights.bin"] = image
        if self.api == "static" and weights_text:
            files[f"{name}.weights.txt"] = bundle_files.weights_text(image).encode()
        return files

    def save(self, directory: str, weights_text: bool = True) -> list[str]:
        """Writes the bundle into `directory` (created if absent) all at once, or not at all."""
        parent = os.path.dirname(os.path.abspath(directory))
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".glowmlir-", dir=parent)
        try:
            for file_name, contents in self.files(weights_text).items():
                with open(os.path.join(staging, file_name), "wb") as f:
                    f.write(contents)
            os.makedirs(directory, exist_ok=True)
            written = []
            for file_name in sorted(os.listdir(staging)):
                os.replace(os.path.join(staging, file_name), os.path.join(directory, file_name))
                written.append(os.path.join(directory, file_name))
            return written
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    @cached_property
    def runner(self):
        from glowmlir.runtime.host import HostRunner

        return HostRunner(self.layout, self.object_code)

    def run(self, inputs: dict[str, np.ndarray] | None = None, **named: np.ndarray) -> dict[str, np.ndarray]:
        """Runs the bundle on the host (host target only)."""
        return self.runner.run(inputs, **named)


def run_passes(module: ModuleOp, passes: Sequence[ModulePass]) -> None:
    PassPipeline(tuple(passes)).apply(Context(), module)


def compile_module(module: ModuleOp, options: CompileOptions, ir_log: dict[str, str] | None = None,
                   timings: dict[str, float] | None = None) -> Bundle:
    """Compiles a module holding one `glow.function` into a bundle."""
    ir_log = {} if ir_log is None else ir_log
    timings = {} if timings is None else timings

    def stage(label: str, passes: Sequence[ModulePass], keep_ir: bool = True) -> None:
        start = time.perf_counter()
        run_passes(module, passes)
        if keep_ir:  # the llvm-dialect stage is large: LLVM's own verifier checks it later
            module.verify()
            ir_log[label] = str(module)
        timings[label] = time.perf_counter() - start

    quantization = options.quantization
    if quantization is not None and options.kernel_library is not None:
        quantization = dataclasses.replace(quantization, symmetric_weights=True)
    stage("glow", graph_pipeline(options.memory_fusion, quantization, options.kernel_library))
    if options.kernel_library is not None and not any(is_quantized(r.type) for op in module.walk() for r in op.results):
        raise GlowError(f"{KERNEL_LIBRARY_OPTIONS[options.kernel_library]} needs a quantized model (-load-profile, or "
                        f"an int8 TFLite model): the library's functions are int8")
    graph = graph_dot(module)
    stage("glowll", glowll_pipeline(options.reuse_activations, options.kernel_library))
    function = next(op for op in module.body.block.ops if isinstance(op, glowll.FunctionOp))
    layout = bundle_files.BundleLayout.of(function)
    library_calls = library_report(function)
    stage("llvm", [LowerGlowLLToLLVM()], keep_ir=False)
    start = time.perf_counter()
    extend = functools.partial(bundle_files.add_bundle_config, layout=layout) if options.bundle_api == "dynamic" else None
    if options.target.emits_llvm_ir:  # HiFi4: IR and bitcode for Cadence's toolchain, no object
        llvm_ir, bitcode = compile_to_llvm_ir(module, options.target, extend)
        object_code, ir_log["llvm-ir"] = b"", llvm_ir
    else:
        bitcode = None
        object_code, llvm_ir = compile_to_object(module, options.target, extend, options.keep_llvm_ir)
        if llvm_ir is not None:
            ir_log["llvm-ir"] = llvm_ir
    timings["object"] = time.perf_counter() - start
    return Bundle(layout, object_code, options.bundle_api, ir_log, timings, graph, library_calls, bitcode)


def compile(model: str | Sequence[str], **options) -> Bundle:  # noqa: A001 - the API name users expect
    """Compiles a model (ONNX or TFLite file, Caffe2 directory or net and weights pair);
    keyword options are the fields of `CompileOptions`."""
    if options.get("bundle_api", "static") not in ("static", "dynamic"):
        raise GlowError(f"-bundle-api=\"{options['bundle_api']}\": expected static or dynamic")
    compile_options = CompileOptions(**options)
    start = time.perf_counter()
    name = compile_options.network_name
    if name is not None and not name:
        raise GlowError("-network-name must not be empty")
    name = legalize_name(name) if name else None
    module = import_model(model, compile_options.import_options(), name)
    timings = {"import": time.perf_counter() - start}
    return compile_module(module, compile_options, timings=timings)
