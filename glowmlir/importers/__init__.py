"""Model importers: each turns a model into a module holding one `glow.function`.

`import_model` picks the importer as Glow's Loader does: a directory, or two paths (net,
weights), is a Caffe2 model; a file whose name ends in `tflite` a TFLite model; any other
file an ONNX model (`.onnx`, or protobuf text `.onnxtxt`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp

from glowmlir.errors import GlowError
from glowmlir.importers.onnx import ModelInput
from glowmlir.names import legalize_name


@dataclass(frozen=True)
class ImportOptions:
    """The loader options of Glow's tools."""

    model_inputs: Sequence[ModelInput] = ()
    symbols: dict[str, int] = field(default_factory=dict)  # -onnx-define-symbol
    tflite_float_inputs: bool = False  # -tflite-float-inputs: a quantized model takes float inputs
    tflite_float_outputs: bool = False  # -tflite-float-outputs: ... and gives float outputs
    tflite_hybrid_inputs: str = "float"  # -tflite-hybrid-inputs: "quantized" as TFLite's hybrid kernels do


def model_format(paths: Sequence[str]) -> str:
    """"caffe2", "tflite" or "onnx", from the `-model` paths."""
    if not paths:
        raise GlowError("-model is required")
    if len(paths) > 2:
        raise GlowError("-model: at most two paths (a Caffe2 net and its weights)")
    if len(paths) == 2 or os.path.isdir(paths[0]):
        return "caffe2"
    return "tflite" if paths[0].endswith("tflite") else "onnx"


def default_network_name(paths: Sequence[str]) -> str:
    """Glow's default `-network-name`: the last component of the model path without its extension."""
    last = os.path.basename(os.path.normpath(paths[0]))
    return legalize_name(os.path.splitext(last)[0] if not os.path.isdir(paths[0]) else last)


def import_model(models: str | Sequence[str], options: ImportOptions = ImportOptions(),
                 name: str | None = None) -> ModuleOp:
    """Imports the model at `models` (one path, or a Caffe2 net and weights pair)."""
    paths = [models] if isinstance(models, str) else list(models)
    kind = model_format(paths)
    network = name or default_network_name(paths)
    if kind != "onnx" and options.symbols:
        raise GlowError("-onnx-define-symbol applies to ONNX models only")
    if kind != "tflite" and (options.tflite_float_inputs or options.tflite_float_outputs):
        raise GlowError("-tflite-float-inputs and -tflite-float-outputs apply to TFLite models only")
    if kind != "tflite" and options.tflite_hybrid_inputs != "float":
        raise GlowError(f"-tflite-hybrid-inputs={options.tflite_hybrid_inputs} applies to TFLite models only")
    if kind == "caffe2":
        from glowmlir.importers.caffe2 import import_caffe2

        return import_caffe2(paths, options.model_inputs, network)
    if kind == "tflite":
        from glowmlir.importers.tflite import import_tflite

        return import_tflite(paths[0], options, network)
    from glowmlir.importers.onnx import import_onnx

    return import_onnx(paths[0], options.model_inputs, options.symbols, network)
