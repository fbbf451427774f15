"""`glow-quantize-from-model`: a model that carries its own quantization (ONNX QDQ) quantized
with the types its quantize ops give."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from glowmlir.dialects import glow
from glowmlir.dialects.quant import UniformQuantizedType, is_quantized
from glowmlir.quantization.profile import Profile
from glowmlir.transforms.optimize_quantization import OptimizeQuantization
from glowmlir.transforms.quantization_options import QuantizationOptions
from glowmlir.transforms.quantized_conversion import FunctionQuantizer, is_model_quantize


class _ModelQuantizer(FunctionQuantizer):
    """Quantizes with the types a quantized model's own `glow.quantize` ops give (ONNX QDQ):
    an op's result takes the type of the quantize ops that use it (the float ops a model's
    QuantizeLinear/DequantizeLinear pairs enclose), constants the types their file gives them."""

    follows_dequantized = True

    def keep_float(self, op: Operation) -> None:
        """Only what this pass quantized is dequantized for an op it leaves alone: the graph
        is the model's (quantized data may flow where the model sends it)."""
        for index, operand in enumerate(op.operands):
            if operand in self.requantized:
                op.operands[index] = self.as_float(operand, op)

    def profiled(self, value: SSAValue) -> UniformQuantizedType | None:
        types = {use.operation.result.type.element_type for use in value.uses if is_model_quantize(use.operation)}
        return types.pop() if len(types) == 1 else None

    def run(self) -> None:
        super().run()
        for op in list(self.function.body.block.ops):  # the model's quantize ops of what is quantized now
            if is_model_quantize(op) and is_quantized(op.input.type):
                if op.input.type == op.result.type:
                    Rewriter.replace_op(op, [], [op.input])
                else:
                    Rewriter.replace_op(op, glow.RescaleQuantizedOp(op.input, op.result.type))


@dataclass(frozen=True)
class QuantizeFromModel(ModulePass):
    """Quantizes a model that carries its own quantization (ONNX QDQ: QuantizeLinear and
    DequantizeLinear around float ops): every op with an integer kernel between them takes
    the file's scales and zero points, without a profile (see `_ModelQuantizer`), and the
    conversions left between them are optimized as `glow-optimize-quantization` does. A graph
    without such quantize ops (`glow.MODEL_QUANTIZATION` on them) is left as it is."""

    name = "glow-quantize-from-model"

    symmetric_weights: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = QuantizationOptions(profile="(the model)", symmetric_weights=self.symmetric_weights)
        functions = [f for f in op.body.block.ops if isinstance(f, glow.FunctionOp)
                     and any(map(is_model_quantize, f.body.block.ops))]
        for function in functions:
            _ModelQuantizer(function, Profile(tools_version="", graph_hash=0), config).run()
        if functions:
            OptimizeQuantization().apply(ctx, op)
