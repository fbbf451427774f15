"""Streaming state: a TFLite model keeping state in resource variables runs frame by frame.

The model is written here with the `tflite` schema (tests/support/tflite_models.ModelBuilder),
as TFLite's converter writes a streaming (kws_streaming, microWakeWord) int8 model: a
CALL_ONCE running an initialisation subgraph that assigns each variable its initial value,
then per call READ_VARIABLE of each state, CONCATENATION of it with the new frames,
STRIDED_SLICE of the newest ones ASSIGN_VARIABLE'd back, and the convolutions over the
concatenation. Random weights, 20 consecutive random frames: the bundle's outputs equal
ai-edge-litert's and TFLite Micro's (which runs resource variables as it does on a device)
bit for bit, frame by frame; on a Cortex-M7 board too (the harness runs the frames in one
program).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite_micro.python.tflite_micro import runtime

import glowmlir
from glowmlir.errors import GlowError
from glowmlir.runtime.boards import run_frames_on_board, target_for
from tests.support import tflite_models as tm
from tests.support.tflite_micro import tensor_names

FRAMES = 20
FEATURES, CHANNELS, UNITS = 8, 12, 5
INPUT_QUANT = (0.1, -10)


def _conv_valid(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A VALID convolution over time of [1, T, 1, C] by [O, K, 1, C] filters (float)."""
    k = w.shape[1]
    return np.stack([np.einsum("tc,okc->o", x[0, t:t + k, 0], w[:, :, 0]) for t in range(x.shape[1] - k + 1)])


def _range_quant(values: np.ndarray, relu: bool = False) -> tuple[float, int]:
    """(scale, zero point) of int8 levels spanning the values' range (widened to hold 0)."""
    low, high = (0.0 if relu else min(float(values.min()), 0.0)), max(float(values.max()), 0.0)
    scale = (high - low) / 255 or 1.0
    return scale, int(np.clip(round(-128 - low / scale), -128, 127))


def streaming_model(seed: int = 7, first_level: int | None = None) -> bytes:
    """An int8 streaming model: x [1, 2, 1, 8] per call; state "stream/states" (the last 3 input
    steps, random initial levels or `first_level` everywhere) feeds a 4-step CONV_2D (per-channel weights, RELU), state
    "stream_1/states" (its last 2 outputs, initially zero) a 3-step DEPTHWISE_CONV_2D, then a
    FULLY_CONNECTED. A second output reads "stream/states" after its ASSIGN_VARIABLE."""
    rng = np.random.default_rng(seed)
    w1 = rng.integers(-127, 128, (CHANNELS, 4, 1, FEATURES)).astype(np.int8)
    w1_scales = rng.uniform(0.002, 0.01, CHANNELS).astype(np.float32)
    w2 = rng.integers(-127, 128, (1, 3, 1, CHANNELS)).astype(np.int8)
    w2_scales = rng.uniform(0.005, 0.02, CHANNELS).astype(np.float32)
    w3 = rng.integers(-127, 128, (UNITS, 2 * CHANNELS)).astype(np.int8)
    w3_scale = 0.01

    # The activations' ranges, from the float model on random steps (a calibration).
    s_in, z_in = INPUT_QUANT
    steps = (rng.integers(-128, 128, (1, 40, 1, FEATURES)) - z_in) * s_in
    conv = np.maximum(_conv_valid(steps, w1 * w1_scales[:, None, None, None]), 0)  # [T, O]
    q_conv = _range_quant(conv, relu=True)
    taps = w2[0, :, 0] * w2_scales
    depthwise = np.stack([np.einsum("kc,kc->c", conv[t:t + 3], taps) for t in range(len(conv) - 2)])
    q_depthwise = _range_quant(depthwise)
    dense = np.stack([(depthwise[t:t + 2].reshape(-1)) @ (w3.T * w3_scale) for t in range(len(depthwise) - 1)])
    q_dense = _range_quant(dense)

    b = tm.ModelBuilder("streaming test model")
    x = b.input("input_audio", [1, 2, 1, FEATURES], "int8", INPUT_QUANT)
    handle_1 = b.tensor("stream/states", [], "resource")
    handle_2 = b.tensor("stream_1/states", [], "resource")
    state_1 = b.tensor("stream/concat/ReadVariableOp", [1, 3, 1, FEATURES], "int8", INPUT_QUANT)
    state_2 = b.tensor("stream_1/concat/ReadVariableOp", [1, 2, 1, CHANNELS], "int8", q_conv)
    window_1 = b.tensor("stream/concat", [1, 5, 1, FEATURES], "int8", INPUT_QUANT)
    next_1 = b.tensor("stream/strided_slice", [1, 3, 1, FEATURES], "int8", INPUT_QUANT)
    conv_out = b.tensor("conv", [1, 2, 1, CHANNELS], "int8", q_conv)
    window_2 = b.tensor("stream_1/concat", [1, 4, 1, CHANNELS], "int8", q_conv)
    next_2 = b.tensor("stream_1/strided_slice", [1, 2, 1, CHANNELS], "int8", q_conv)
    depthwise_out = b.tensor("depthwise", [1, 2, 1, CHANNELS], "int8", q_depthwise)
    flat = b.tensor("flatten", [1, 2 * CHANNELS], "int8", q_depthwise)
    output = b.tensor("output", [1, UNITS], "int8", q_dense)
    state_after = b.tensor("state_after", [1, 3, 1, FEATURES], "int8", INPUT_QUANT)

    def const(name, values):
        return b.constant(name, np.asarray(values, np.int32))

    b.op("CALL_ONCE", [], [], "CallOnceOptions", init_subgraph_index=1)
    b.op("VAR_HANDLE", [], [handle_1], "VarHandleOptions", shared_name="stream/states")
    b.op("VAR_HANDLE", [], [handle_2], "VarHandleOptions", shared_name="stream_1/states")
    b.op("READ_VARIABLE", [handle_1], [state_1])
    b.op("READ_VARIABLE", [handle_2], [state_2])
    b.op("CONCATENATION", [state_1, x], [window_1], "ConcatenationOptions", axis=1)
    b.op("STRIDED_SLICE", [window_1, const("begin_1", [0, 2, 0, 0]), const("end_1", [1, 5, 1, FEATURES]),
                           const("strides", [1, 1, 1, 1])], [next_1], "StridedSliceOptions")
    b.op("ASSIGN_VARIABLE", [handle_1, next_1], [])
    filter_1 = b.constant("conv/filter", w1, (w1_scales, np.zeros(CHANNELS), 0))
    bias_1 = b.constant("conv/bias", rng.integers(-2000, 2000, CHANNELS).astype(np.int32),
                        (w1_scales * s_in, np.zeros(CHANNELS), 0))
    b.op("CONV_2D", [window_1, filter_1, bias_1], [conv_out], "Conv2DOptions", padding="VALID", stride_w=1,
         stride_h=1, fused_activation_function="RELU")
    b.op("CONCATENATION", [state_2, conv_out], [window_2], "ConcatenationOptions", axis=1)
    b.op("STRIDED_SLICE", [window_2, const("begin_2", [0, 2, 0, 0]), const("end_2", [1, 4, 1, CHANNELS]),
                           const("strides_2", [1, 1, 1, 1])], [next_2], "StridedSliceOptions")
    b.op("ASSIGN_VARIABLE", [handle_2, next_2], [])
    filter_2 = b.constant("depthwise/filter", w2, (w2_scales, np.zeros(CHANNELS), 3))
    bias_2 = b.constant("depthwise/bias", rng.integers(-500, 500, CHANNELS).astype(np.int32),
                        (w2_scales * q_conv[0], np.zeros(CHANNELS), 0))
    b.op("DEPTHWISE_CONV_2D", [window_2, filter_2, bias_2], [depthwise_out], "DepthwiseConv2DOptions",
         padding="VALID", stride_w=1, stride_h=1, depth_multiplier=1)
    b.op("RESHAPE", [depthwise_out, const("shape", [1, 2 * CHANNELS])], [flat])
    weights = b.constant("dense/weights", w3, (w3_scale, 0))
    bias_3 = b.constant("dense/bias", rng.integers(-500, 500, UNITS).astype(np.int32), (w3_scale * q_depthwise[0], 0))
    b.op("FULLY_CONNECTED", [flat, weights, bias_3], [output], "FullyConnectedOptions")
    b.op("READ_VARIABLE", [handle_1], [state_after])
    b.output(output)
    b.output(state_after)

    init = b.subgraph("NoOp")
    init_1, init_2 = init.tensor("stream/states1", [], "resource"), init.tensor("stream_1/states1", [], "resource")
    first = (np.full((1, 3, 1, FEATURES), first_level, np.int8) if first_level is not None
             else rng.integers(-128, 128, (1, 3, 1, FEATURES)).astype(np.int8))
    value_1 = init.constant("tfl.pseudo_qconst", first, INPUT_QUANT)
    value_2 = init.constant("tfl.pseudo_qconst1", np.full((1, 2, 1, CHANNELS), q_conv[1], np.int8), q_conv)
    init.op("VAR_HANDLE", [], [init_1], "VarHandleOptions", shared_name="stream/states")
    init.op("ASSIGN_VARIABLE", [init_1, value_1], [])
    init.op("VAR_HANDLE", [], [init_2], "VarHandleOptions", shared_name="stream_1/states")
    init.op("ASSIGN_VARIABLE", [init_2, value_2], [])
    return b.finish()


def frames(seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, (1, 2, 1, FEATURES)).astype(np.int8) for _ in range(FRAMES)]


def litert_frames(model: bytes, inputs: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
    """ai-edge-litert's reference kernels, one invoke per frame, its variables kept."""
    interpreter = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    results = []
    for frame in inputs:
        interpreter.set_tensor(detail["index"], frame)
        interpreter.invoke()
        results.append({d["name"]: interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()})
    return results


def micro_frames(model: bytes, inputs: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
    """TFLite Micro's interpreter (its resource variables counted from the model by the
    package), one invoke per frame, never reset in between."""
    interpreter = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    _, names = tensor_names(model)
    results = []
    for frame in inputs:
        interpreter.set_input(frame, 0)
        interpreter.invoke()
        results.append({name: np.array(interpreter.get_output(i)) for i, name in enumerate(names)})
    return results


@pytest.fixture(scope="module")
def streaming(tmp_path_factory):
    model = streaming_model()
    path = tmp_path_factory.mktemp("streaming") / "streaming.tflite"
    path.write_bytes(model)
    return model, glowmlir.compile(str(path))


def test_streaming_int8_model_equals_litert_and_tflite_micro_frame_by_frame(streaming):
    model, bundle = streaming
    inputs = frames()
    ours = [bundle.run(input_audio=frame) for frame in inputs]
    for reference in (litert_frames(model, inputs), micro_frames(model, inputs)):
        for frame, (got, expected) in enumerate(zip(ours, reference, strict=True)):
            for name in ("output", "state_after"):
                np.testing.assert_array_equal(got[name], expected[name], err_msg=f"frame {frame}, {name}")
    # The state carries: a frame run from the initial state gives another output.
    alone = []
    for frame in inputs[5:10]:
        bundle.reset_state()
        alone.append(bundle.run(input_audio=frame)["output"])
    assert any((output != ours[5 + k]["output"]).any() for k, output in enumerate(alone))


def test_reset_state_starts_over(streaming):
    model, bundle = streaming
    inputs = frames(seed=5)
    bundle.reset_state()
    first = [bundle.run(input_audio=frame)["output"] for frame in inputs[:6]]
    state = bundle.state()  # the last 3 input steps: one of frame 4, both of frame 5
    np.testing.assert_array_equal(state["stream_states"][0, :, 0], np.concatenate([inputs[4][0, 1:, 0],
                                                                                  inputs[5][0, :, 0]]))
    bundle.reset_state()
    again = [bundle.run(input_audio=frame)["output"] for frame in inputs[:6]]
    np.testing.assert_array_equal(np.array(first), np.array(again))
    expected = litert_frames(model, inputs[:6])
    np.testing.assert_array_equal(np.array(first), np.array([e["output"] for e in expected]))


def test_reset_state_is_tflite_micro_reset_for_states_starting_at_zero(tmp_path):
    """TFLite Micro's `reset()` sets every variable to its zero point (real 0) and does not run
    CALL_ONCE again; `reset_state` goes back to the CALL_ONCE values: the same where those are
    real 0, as in the converter's streaming models."""
    model = streaming_model(first_level=INPUT_QUANT[1])
    path = tmp_path / "zero_state.tflite"
    path.write_bytes(model)
    bundle = glowmlir.compile(str(path))
    interpreter = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    inputs = frames(seed=11)[:6]
    for _ in range(2):
        for frame, x in enumerate(inputs):
            interpreter.set_input(x, 0)
            interpreter.invoke()
            got = bundle.run(input_audio=x)
            for position, name in enumerate(("output", "state_after")):
                np.testing.assert_array_equal(got[name], interpreter.get_output(position), err_msg=f"frame {frame}")
        interpreter.reset()
        bundle.reset_state()


def test_uniform_initial_state_is_a_fill(tmp_path):
    """An initial value of one level everywhere is written by the first call, no weight kept."""
    path = tmp_path / "uniform.tflite"
    model = streaming_model(first_level=5)
    path.write_bytes(model)
    bundle = glowmlir.compile(str(path))
    assert "fill = 5.0" in bundle.ir["glowll"]
    assert not any(name.endswith("_initial") for name, _, _ in bundle.layout.weights)
    inputs = frames(seed=9)[:4]
    ours = [bundle.run(input_audio=frame)["output"] for frame in inputs]
    np.testing.assert_array_equal(np.array(ours), np.array([e["output"] for e in micro_frames(model, inputs)]))


def test_header_gives_the_state_span_and_reset(streaming):
    _, bundle = streaming
    layout = bundle.layout
    header = bundle.files()[f"{bundle.name}.h"].decode()
    upper = bundle.name.upper()
    assert f"#define {upper}_STATE_OFFSET  {layout.state_offset}" in header
    assert f"#define {upper}_STATE_SIZE    {layout.state_size}" in header
    assert f"#define {upper}_RESET_STATE(mutableWeight)" in header
    # The state lies after the inputs and outputs, inside MUTABLE_MEM_SIZE, never in activations.
    ends = [p.offset + p.byte_size for p in layout.placeholders]
    assert layout.state_offset >= max(ends)
    assert layout.state_offset + layout.state_size <= layout.mutable_size
    assert {p.name for p in layout.states} == {"stream_states", "stream_1_states"}
    assert all(p.offset >= layout.state_offset + 4 for p in layout.states)
    assert "Name: \"stream_states\"" in header
    assert [name for name, _, _ in layout.weights if name.endswith("_initial")] == ["stream_states_initial"]


def _variable_model(call_once: bool = True, init_input: bool = False, read_scale: float = 0.5) -> bytes:
    """y = v + x, v = y: a variable read, then assigned (an accumulator)."""
    b = tm.ModelBuilder()
    x = b.input("x", [1, 4], "int8", (0.5, 0))
    handle = b.tensor("v", [], "resource")
    read = b.tensor("read", [1, 4], "int8", (read_scale, 0))
    y = b.tensor("y", [1, 4], "int8", (0.5, 0))
    if call_once:
        b.op("CALL_ONCE", [], [], "CallOnceOptions", init_subgraph_index=1)
    b.op("VAR_HANDLE", [], [handle], "VarHandleOptions", shared_name="v")
    b.op("READ_VARIABLE", [handle], [read])
    b.op("ADD", [read, x], [y], "AddOptions")
    b.op("ASSIGN_VARIABLE", [handle, y], [])
    b.output(y)
    init = b.subgraph("init")
    init_handle = init.tensor("v1", [], "resource")
    init.op("VAR_HANDLE", [], [init_handle], "VarHandleOptions", shared_name="v")
    source = init.input("computed", [1, 4], "int8", (0.5, 0)) if init_input else \
        init.constant("zeros", np.zeros((1, 4), np.int8), (0.5, 0))
    init.op("ASSIGN_VARIABLE", [init_handle, source], [])
    return b.finish()


def test_accumulator_variable_equals_tflite_micro(tmp_path):
    """A variable read first and assigned last (no concatenation): y = v + x, then v = y."""
    model = _variable_model()
    path = tmp_path / "accumulator.tflite"
    path.write_bytes(model)
    bundle = glowmlir.compile(str(path))
    rng = np.random.default_rng(1)
    inputs = [rng.integers(-20, 21, (1, 4)).astype(np.int8) for _ in range(FRAMES)]
    interpreter = runtime.Interpreter.from_bytes(model, arena_size=1 << 16)
    for frame, x in enumerate(inputs):
        interpreter.set_input(x, 0)
        interpreter.invoke()
        np.testing.assert_array_equal(bundle.run(x=x)["y"], interpreter.get_output(0), err_msg=f"frame {frame}")


@pytest.mark.parametrize("options, message", [
    ({"call_once": False}, r"^TFLite operator 1 \(READ_VARIABLE, output \"read\"\): variable \"v\" is read before "
                           r"any value is given to it \(no CALL_ONCE initialises it\)$"),
    ({"read_scale": 0.25}, r"^TFLite operator 2 \(READ_VARIABLE, output \"read\"\): variable \"v\" holds INT8 "
                           r"\[1, 4\]"),
    ({"init_input": True}, r"^TFLite operator 0 \(CALL_ONCE, output \"\"\): init subgraph 1 has inputs or outputs"),
])
def test_variable_errors_name_the_operator(options, message, tmp_path):
    path = tmp_path / "variable.tflite"
    path.write_bytes(_variable_model(**options))
    with pytest.raises(GlowError, match=message):
        glowmlir.compile(str(path))


@pytest.mark.skipif(not (shutil.which("qemu-system-arm") and shutil.which("arm-none-eabi-gcc")),
                    reason="needs qemu-system-arm and arm-none-eabi-gcc (scripts/setup.sh)")
def test_streaming_model_on_a_cortex_m7_board_equals_tflite_micro(tmp_path):
    """The bundle for the Cortex-M7 (its DSP-extension kernels) runs the 20 frames in one
    program, one mutableWeight kept, as a device does: each frame's outputs equal TFLite Micro's."""
    model = streaming_model()
    path = tmp_path / "streaming.tflite"
    path.write_bytes(model)
    device = glowmlir.compile(str(path), target=target_for("mps2-an500"))
    inputs = frames()
    outputs = run_frames_on_board(device, "mps2-an500", [{"input_audio": frame} for frame in inputs])
    for frame, (got, expected) in enumerate(zip(outputs, micro_frames(model, inputs), strict=True)):
        for name in ("output", "state_after"):
            np.testing.assert_array_equal(got[name], expected[name], err_msg=f"frame {frame}, {name}")
