"""ONNX importer: an `.onnx` or `.onnxtxt` model becomes a `glow.function`.

The model is checked with onnx's checker and shaped with onnx's shape inference after the
user's `-model-input` and `-onnx-define-symbol` settings are applied. Initializers and
every node whose inputs are all known at compile time (Constant, Shape, ConstantOfShape,
Gather on shapes, ...) are evaluated at import with onnx's reference evaluator, so the
graph that reaches the `glow` dialect holds only the computation on the inputs. Nodes
become glow ops as the model states them (a 1-D or 3-D Conv a `glow.convolution` on
rank-3 or rank-5 tensors, a ConvTranspose a `glow.conv_transpose`): rewriting them into
what the lowering takes is left to the `glow-decompose-*` passes.

* `options`  — `-model-input` and `-onnx-define-symbol`;
* `loader`   — reading the file, the checks onnx's checker does not make, placeholder names;
* `importer` — `OnnxImporter`, the `@imports` registry, `import_onnx`/`import_onnx_model`;
* `builders` — small op builders the op families share;
* one module per op family, each registering its node importers when imported here:
  `control_flow`, `convolution`, `pooling`, `elementwise`, `matmul`, `tensor_ops`, `resize`,
  `reduction`, `normalization`, `quantization` (QuantizeLinear/DequantizeLinear: QDQ models).
"""

from glowmlir.importers.onnx import (  # noqa: F401  (imported for their @imports registrations)
    control_flow,
    convolution,
    elementwise,
    matmul,
    normalization,
    pooling,
    quantization,
    reduction,
    resize,
    tensor_ops,
)
from glowmlir.importers.onnx.importer import (
    ANY_ELEMENT_TYPE,
    OnnxImporter,
    compute_element,
    import_onnx,
    import_onnx_model,
    imports,
    keep_model_names,
    onnx_element_type,
    verified,
    verify_imported,
)
from glowmlir.importers.onnx.loader import check_input_shape, check_text_fields, load_onnx_model, placeholder_names
from glowmlir.importers.onnx.options import INT64_MAX, ModelInput, check_symbol, parse_define_symbol, parse_integer

__all__ = [
    "ANY_ELEMENT_TYPE", "INT64_MAX", "ModelInput", "OnnxImporter", "check_input_shape", "check_symbol",
    "check_text_fields", "compute_element", "import_onnx", "import_onnx_model", "imports", "keep_model_names",
    "load_onnx_model",
    "onnx_element_type", "parse_define_symbol", "parse_integer", "placeholder_names", "verified", "verify_imported",
]
