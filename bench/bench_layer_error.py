"""Per-layer error vs float of our int8 build and of onnxruntime's static int8 quantization
(QDQ) of the same random-weight net with the same calibration data (issue 17): where the two
int8 nets depart from float, layer by layer.

For every ONNX node output, over the held-out inputs: the relative RMS error against float
(RMS of the error over RMS of the float values) of ours (the value our bundle computes,
dequantized: `glow-save-node-outputs`, as `glow-run -instrument-debug` dumps it) and of
onnxruntime's (the output of the DequantizeLinear after that tensor's QuantizeLinear), and
the same of the error's mean over the inputs (the part that is the same for every input,
which bias correction targets). A value our graph does not keep under its node's name is
shown as "-" (a lookup-table activation; a Relu fused into its convolution is the
convolution's result); a convolution whose Relu onnxruntime removed (its output quantized
with the Relu's range) is not listed, and a value read only by a HardSwish or HardSigmoid
(which we quantize only where that function changes) is compared through it: the function
applied to ours, onnxruntime's and float's. `*` marks the layers where ours is more than 5 % above onnxruntime's.

    .venv/bin/python bench/bench_layer_error.py [--net MobileNetV3|DS-CNN] [--seed N] [--held-out N]
                                                [--channelwise] [--markdown]
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glowmlir  # noqa: E402
from bench.bench_integer_only import Net, profiled, random_net  # noqa: E402
from bench.tables import print_columns  # noqa: E402
from glowmlir.compiler import QuantizationOptions  # noqa: E402
from glowmlir.transforms.save_node_outputs import debug_output_node  # noqa: E402
from tests.support.models import ds_cnn_style, mobilenet_v3_style, quantized_by_onnxruntime  # noqa: E402

LOOKUP_TABLE_READERS = ("HardSwish", "HardSigmoid")
"""Ops our int8 graph computes as lookup tables, whose input we quantize only over the span
where they change (`quantized_conversion._varying_span`): such an input is compared as its reader sees
it, the reader applied to it (below that span ours saturates, and the reader's result does
not change)."""

NETS = {"MobileNetV3": (mobilenet_v3_style, (1, 3, 64, 64)), "DS-CNN": (ds_cnn_style, (1, 1, 49, 10))}


def onnxruntime_values(model: onnx.ModelProto, tensors: dict[str, str], net: Net) -> dict[str, np.ndarray]:
    """{name: [inputs, ...] float64} of the model's tensors `tensors` ({name: tensor in the
    model}), each made an output, over the held-out inputs."""
    import onnxruntime

    model = onnx.ModelProto.FromString(model.SerializeToString())
    outputs = {output.name for output in model.graph.output}
    model.graph.output.extend(onnx.helper.make_tensor_value_info(tensor, onnx.TensorProto.FLOAT, None)
                              for tensor in dict.fromkeys(tensors.values()) if tensor not in outputs)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.log_severity_level = 1, 3
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    runs = [dict(zip(names, session.run(None, sample))) for sample in net.held_out]
    return {name: np.stack([run[tensor] for run in runs]).astype(np.float64) for name, tensor in tensors.items()}


def our_values(bundle: glowmlir.Bundle, net: Net) -> dict[str, np.ndarray]:
    """{node name: [inputs, ...] float64}: each saved node's result, dequantized, and the
    net's output under its own name."""
    values: dict[str, list[np.ndarray]] = {}
    for sample in net.held_out:
        for output, value in bundle.run(sample).items():
            node = debug_output_node(output)
            if node is None and output != net.output:
                continue
            quantization = bundle.layout.placeholder(output).quantization
            real = np.asarray(value, np.float64)
            if quantization is not None:
                real = quantization[0] * (real - quantization[1])
            values.setdefault(output if node is None else node[2], []).append(real)
    return {name: np.stack(arrays) for name, arrays in values.items()}


def through(reader: onnx.NodeProto, values: np.ndarray) -> np.ndarray:
    """`values` as the one-input node `reader` sees them: the node applied (onnx's reference)."""
    from onnx.reference import ReferenceEvaluator

    node = onnx.NodeProto.FromString(reader.SerializeToString())
    node.input[0], node.output[0] = "t", "u"
    model = onnx.helper.make_model(onnx.helper.make_graph(
        [node], "reader", [onnx.helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, None)],
        [onnx.ValueInfoProto(name="u")]), opset_imports=[onnx.helper.make_opsetid("", 14)], ir_version=8)
    return ReferenceEvaluator(model).run(None, {"t": values.astype(np.float32)})[0].astype(np.float64)


def relative_errors(values: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(RMS error, RMS of the error's mean over the inputs), each over the reference's RMS."""
    error = values.reshape(reference.shape) - reference
    scale = np.sqrt(np.mean(reference ** 2))
    return float(np.sqrt(np.mean(error ** 2)) / scale), float(np.sqrt(np.mean(error.mean(axis=0) ** 2)) / scale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--net", choices=tuple(NETS), default="MobileNetV3")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--held-out", type=int, default=100)
    parser.add_argument("--channelwise", action="store_true",
                        help="ours with -enable-channelwise, onnxruntime's with per_channel")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    build, shape = NETS[args.net]
    net = random_net(args.net, build(seed=args.seed), shape, args.held_out)
    tensors = [node.output[0] for node in net.model.graph.node]
    relu_inputs = {node.output[0]: node.input[0] for node in net.model.graph.node if node.op_type == "Relu"}
    with tempfile.TemporaryDirectory() as directory:
        path, profile = profiled(net, directory)
        bundle = glowmlir.compile(path, quantization=QuantizationOptions(profile, channelwise=args.channelwise),
                                  save_node_outputs="")
        ours = our_values(bundle, net)
        for relu, source in relu_inputs.items():  # a Relu fused into its convolution: the convolution's result
            if relu not in ours and source in ours:
                ours[relu] = ours.pop(source)
        quantized = onnx.load(quantized_by_onnxruntime(net.model, net.calibration, directory, "QDQ",
                                                       args.channelwise))
    produced = {output for node in quantized.graph.node for output in node.output}
    tensors = [t for t in tensors if t in produced]  # onnxruntime folds a Relu into its convolution's output
    dequantized = {t: f"{t}_DequantizeLinear_Output" if f"{t}_DequantizeLinear_Output" in produced else t
                   for t in tensors}
    reference = onnxruntime_values(net.model, dict(zip(tensors, tensors)), net)
    theirs = onnxruntime_values(quantized, dequantized, net)
    readers = {}
    for node in net.model.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    rows = []
    for tensor in tensors:
        label, seen = tensor, (lambda values: values)
        table_readers = [node for node in readers.get(tensor, []) if node.op_type in LOOKUP_TABLE_READERS]
        if len(table_readers) == 1 and len(readers[tensor]) == 1:
            label, seen = f"{tensor} (through {table_readers[0].op_type})", functools.partial(through, table_readers[0])
        other = relative_errors(seen(theirs[tensor]), seen(reference[tensor]))
        if tensor not in ours:
            rows.append([label, "-", f"{other[0]:.4f}", "-", f"{other[1]:.4f}", ""])
            continue
        mine = relative_errors(seen(ours[tensor]), seen(reference[tensor]))
        rows.append([label, f"{mine[0]:.4f}", f"{other[0]:.4f}", f"{mine[1]:.4f}", f"{other[1]:.4f}",
                     "*" if mine[0] > 1.05 * other[0] or mine[1] > 1.05 * other[1] else ""])
    print_columns(["value", "ours", "onnxruntime", "ours, mean part", "onnxruntime, mean part", ""], rows,
                  args.markdown)


if __name__ == "__main__":
    main()
