"""The glow ops' typed builders: each takes operands and Python values, derives its result type
from the op's one shape rule (the one its verifier checks), prints and parses back; the shared
window and padding rules."""

from __future__ import annotations

import math

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp, f32, i1, i8, i32, i64
from xdsl.ir import Block, Region
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from glowmlir.dialects import glow
from glowmlir.dialects.quant import Quant, UniformQuantizedType

Q8 = UniformQuantizedType(i8, 0.5, -3)
Q8_OUT = UniformQuantizedType(i8, 0.25, 1)


def _values(*types):
    return Block(arg_types=list(types)).args


def _t(*shape, element=f32):
    return glow.tensor(shape, element)


def _builds():
    """(op built by its builder, expected result type) for every compute op of the dialect."""
    x, w, b, c8 = _values(_t(1, 4, 8, 8), _t(6, 2, 3, 3), _t(6), _t(8))
    nhwc, ohwi, transposed_filter = _values(_t(1, 8, 8, 4), _t(6, 3, 3, 4), _t(4, 3, 3, 3))
    m, k, v, mat = _values(_t(2, 3), _t(3, 5), _t(5), _t(4, 2, 3))
    q, ints, flags_, idx = _values(_t(2, 3, element=Q8), _t(2, 3, element=i32), _t(2, 3, element=i1),
                                   _t(2, element=i64))
    taps, weights = _values(_t(5, 2, element=i32), _t(5, 2))
    channels = _values(*[_t(4)] * 4)
    return [
        (glow.ConvolutionOp(x, w, b, strides=[2, 2], pads=[1, 1, 1, 1], group=2), _t(1, 6, 4, 4)),
        (glow.ConvolutionOp(x, w, b, pads=[1, 1, 1, 1], group=2, activation="clip", clip_min=0, clip_max=6,
                            pool="max", pool_kernel=[2, 2], pool_strides=[2, 2], pool_pads=[0, 0, 0, 0]),
         _t(1, 6, 4, 4)),
        (glow.ConvolutionOp(nhwc, ohwi, b, layout=glow.Layout.NHWC), _t(1, 6, 6, 6)),
        (glow.ConvTransposeOp(x, transposed_filter, b, strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 1],
                              output_padding=[1, 1], group=2), _t(1, 6, 16, 16)),
        (glow.FullyConnectedOp(m, k, v, activation=glow.Activation.RELU), _t(2, 5)),
        (glow.MatMulOp(mat, k), _t(4, 2, 5)),
        (glow.MaxPoolOp(x, [3, 3], [2, 2], [1, 1, 1, 1]), _t(1, 4, 4, 4)),
        (glow.AvgPoolOp(nhwc, [2, 2], [2, 2], layout="NHWC", count_include_pad=True), _t(1, 4, 4, 4)),
        *[(op_type(m), _t(2, 3)) for op_type in (
            glow.ReluOp, glow.SigmoidOp, glow.TanhOp, glow.HardSwishOp, glow.ExpOp, glow.NegOp, glow.AbsOp,
            glow.SqrtOp, glow.ReciprocalOp, glow.LogOp, glow.SoftplusOp, glow.SoftsignOp, glow.MishOp,
            glow.FloorOp, glow.CeilOp, glow.SignOp, glow.SinOp, glow.CosOp, glow.AtanOp, glow.AsinOp, glow.AcosOp,
            glow.ErfOp)],
        (glow.ReluOp(q, result_element=Q8_OUT), _t(2, 3, element=Q8_OUT)),
        (glow.ClipOp(m, -1, 1), _t(2, 3)),
        *[(op_type(m, 0.5, 0.25), _t(2, 3)) for op_type in (glow.LeakyReluOp, glow.EluOp, glow.SeluOp,
                                                             glow.HardSigmoidOp, glow.CeluOp)],
        (glow.SoftMaxOp(m, 1, log=True), _t(2, 3)),
        (glow.LocalResponseNormalizationOp(x, 3, 1e-4, 0.75, 1.0), _t(1, 4, 8, 8)),
        (glow.BatchNormalizationOp(x, *channels, 1e-5), _t(1, 4, 8, 8)),
        *[(op_type(m, m), _t(2, 3)) for op_type in (glow.AddOp, glow.SubOp, glow.MulOp, glow.DivOp, glow.PowOp,
                                                    glow.MaxOp, glow.MinOp, glow.PReluOp)],
        (glow.AddOp(m, m, activation="relu"), _t(2, 3)),
        (glow.MulOp(mat, _values(_t(2, 1))[0]), _t(4, 2, 3)),  # broadcast
        (glow.ReduceOp(x, "mean", [2, 3], keep_dims=True), _t(1, 4, 1, 1)),
        (glow.ReduceOp(x, glow.ReduceKind.SUM, [1], keep_dims=False), _t(1, 8, 8)),
        (glow.ReshapeOp(x, [4, 64]), _t(4, 64)),
        (glow.TransposeOp(x, [0, 2, 3, 1]), _t(1, 8, 8, 4)),
        (glow.transpose(q, [1, 0]), _t(3, 2, element=Q8)),
        (glow.ConcatOp([m, m, m], 0), _t(6, 3)),
        (glow.SliceOp(x, [0, 1, 2, 0], [1, 2, 3, 4], [1, 2, 2, 2]), _t(1, 2, 3, 4)),
        (glow.PadOp(m, [1, 0, 0, 2], 1.5), _t(3, 5)),
        (glow.ResampleOp(x, taps, weights, 3), _t(1, 4, 8, 5)),
        (glow.QuantizeOp(m, Q8), _t(2, 3, element=Q8)),
        (glow.DequantizeOp(q), _t(2, 3)),
        (glow.RescaleQuantizedOp(q, _t(2, 3, element=Q8_OUT)), _t(2, 3, element=Q8_OUT)),
        (glow.ConvertOp(ints, f32), _t(2, 3)),
        (glow.CompareOp(ints, ints, "ge"), _t(2, 3, element=i1)),
        *[(op_type(flags_, flags_), _t(2, 3, element=i1)) for op_type in (glow.AndOp, glow.OrOp, glow.XorOp)],
        (glow.NotOp(flags_), _t(2, 3, element=i1)),
        *[(op_type(ints, ints), _t(2, 3, element=i32)) for op_type in (glow.ShiftLeftOp, glow.ShiftRightOp)],
        (glow.ModOp(ints, ints), _t(2, 3, element=i32)),
        (glow.ModOp(m, m, fmod=True), _t(2, 3)),
        (glow.SelectOp(flags_, m, m), _t(2, 3)),
        (glow.ArgReduceOp(m, "max", 1, keep_dims=True, select_last_index=True), _t(2, 1, element=i64)),
        (glow.ArgReduceOp(m, glow.ArgReduceKind.MIN, 0, keep_dims=False), _t(3, element=i64)),
        (glow.GatherOp(mat, idx, 2), _t(4, 2, 2)),
        (glow.GatherElementsOp(m, _values(_t(2, 1, element=i32))[0], 1), _t(2, 1)),
        (glow.ScatterNDOp(mat, _values(_t(3, 2, element=i64))[0], _values(_t(3, 3))[0], "add"), _t(4, 2, 3)),
        (glow.IntLookupTableOp(q, _values(_t(256, element=Q8_OUT))[0]), _t(2, 3, element=Q8_OUT)),
    ]


def test_every_op_has_a_builder():
    for op_type in glow.Glow.operations:
        own = op_type.__mro__[:op_type.__mro__.index(IRDLOperation)]
        assert any("__init__" in cls.__dict__ for cls in own), op_type.name
    built = {type(op) for op, _ in _builds()}
    assert built == set(glow.compute_ops())


def test_builders_derive_the_type_the_verifier_accepts():
    for op, expected in _builds():
        assert op.results[0].type == expected, op.name
        op.verify()


def test_built_ops_print_and_parse_back():
    ops = [op for op, _ in _builds()]
    block = Block(arg_types=[])
    function = glow.FunctionOp("f", Region(block))
    placeholders = {}
    for op in ops:  # the builders' block arguments become placeholders of one function
        for operand in op.operands:
            if operand not in placeholders:
                placeholders[operand] = glow.PlaceholderOp(f"p{len(placeholders)}", operand.type)
                block.add_op(placeholders[operand])
        op.operands = [placeholders[v].result for v in op.operands]
        block.add_op(op)
    module = ModuleOp([function])
    module.verify()
    context = Context()
    for dialect in (Builtin, glow.Glow, Quant):
        context.load_dialect(dialect)
    assert str(Parser(context, str(module)).parse_module()) == str(module)


def test_builder_uses_the_shape_rule_and_its_message():
    x, w, b = _values(_t(1, 4, 8, 8), _t(6, 3, 3, 3), _t(6))
    with pytest.raises(ValueError, match=r"filter \[6, 3, 3, 3\] does not fit input channels 4 with group 1"):
        glow.ConvolutionOp(x, w, b)
    created = glow.ConvolutionOp.create(operands=[x, w, b], result_types=[_t(1, 6, 6, 6)], properties={
        "strides": glow.ints([1, 1]), "pads": glow.ints([0, 0, 0, 0]), "dilations": glow.ints([1, 1])})
    with pytest.raises(VerifyException, match=r"filter \[6, 3, 3, 3\] does not fit input channels 4 with group 1"):
        created.verify()
    with pytest.raises(ValueError, match=r"the window \(5\) is larger than the padded input"):
        glow.MaxPoolOp(_values(_t(1, 1, 4, 4))[0], [5, 5])
    with pytest.raises(ValueError, match="reshape must keep the number of elements"):
        glow.ReshapeOp(x, [3, 3])
    with pytest.raises(ValueError, match="cannot reduce axes"):
        glow.ReduceOp(x, "sum", [4], keep_dims=True)


def test_fused_activation_properties():
    assert glow.fused_activation_properties(None) == {}
    assert glow.fused_activation_properties("relu") == {"activation": glow.ActivationAttr(glow.Activation.RELU)}
    clip = glow.fused_activation_properties(glow.Activation.CLIP, 0, 6)
    assert [clip["clip_min"].value.data, clip["clip_max"].value.data] == [0.0, 6.0]
    with pytest.raises(ValueError, match="a clip activation needs clip_min and clip_max"):
        glow.fused_activation_properties("clip", 0)
    with pytest.raises(ValueError, match="clip_min and clip_max go with a clip activation"):
        glow.fused_activation_properties("relu", 0, 6)
    with pytest.raises(ValueError):
        glow.fused_activation_properties("tanh")


def test_property_groups_are_shared():
    groups = {glow.FusedActivation: {"activation", "clip_min", "clip_max"},
              glow.PoolWindow: {"kernel", "strides", "pads"}, glow.LayoutProperty: {"layout"},
              glow.FusedPool: {"pool", "pool_kernel", "pool_strides", "pool_pads", "pool_count_include_pad"},
              glow.ConvolutionWindow: {"strides", "pads", "dilations", "group"}}
    for op_type in glow.Glow.operations:
        properties = set(op_type.get_irdl_definition().properties)
        for group, names in groups.items():
            assert (names <= properties) == issubclass(op_type, group), (op_type.name, group.__name__)


@pytest.mark.parametrize("upper", [True, False])
def test_same_padding_keeps_ceil_size_over_stride(upper):
    for size in range(1, 13):
        for kernel in range(1, 6):
            for stride in range(1, 4):
                for dilation in (1, 2):
                    begin, end = glow.same_padding(size, kernel, stride, dilation, upper)
                    assert (end - begin if upper else begin - end) in (0, 1)
                    assert glow.pooled_size(size, kernel, stride, begin, end, dilation) == math.ceil(size / stride)


def test_same_pads_orders_begins_then_ends():
    # 4 wide, kernel 3, stride 2: two outputs need one pad, at the end (TFLite, SAME_UPPER) or the start.
    assert glow.same_pads([5, 4], [3, 3], [2, 2]) == [1, 0, 1, 1]
    assert glow.same_pads([5, 4], [3, 3], [2, 2], upper=False) == [1, 1, 1, 0]
    assert glow.same_pads([7], [3], [1], [3]) == [3, 3]


def test_pool_shape_rule_in_both_layouts():
    assert glow.PoolOp.shape_rule((1, 4, 9, 7), (3, 3), (2, 2), (0, 1, 0, 1)) == (1, 4, 4, 4)
    assert glow.PoolOp.shape_rule((1, 9, 7, 4), (3, 3), (2, 2), (0, 1, 0, 1), glow.Layout.NHWC) == (1, 4, 4, 4)
    assert glow.pooled_shape((2, 3, 10, 10), (3, 3), (1, 1), (0, 0, 0, 0), (2, 2)) == (2, 3, 6, 6)
