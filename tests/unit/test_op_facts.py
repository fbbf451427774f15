"""The op facts registry (`FACTS` on the glow op classes) against the tables that are still kept
by hand in the passes: every derived table must equal its hand-kept twin (a kind or op missing
on either side fails), except for the differences documented here. Once a module takes the
derived table instead, its comparison here becomes trivially true and can go."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
from xdsl.dialects.builtin import f32, i1, i8, i32
from xdsl.ir import Block
from xdsl.irdl import irdl_op_definition

from glowmlir import reference
from glowmlir.dialects import glow, glowll
from glowmlir.lowering import glow_to_glowll, integer_kernels
from glowmlir.transforms import layout, quantize, share_buffers

# ----------------------------------------------------------------------------- the derived tables vs the hand-kept ones


def test_elementwise_kinds_and_arities_are_glowlls():
    assert glow.elementwise_kinds() == glowll.ELEMENTWISE_KINDS


def test_required_properties_are_glowlls():
    assert glow.elementwise_required_properties() == glowll.ELEMENTWISE_PROPERTIES


def test_lowering_kinds_are_glow_to_glowlls():
    derived = glow.elementwise_ops()
    # Documented difference: ModOp's kind depends on its `fmod` flag, so glow_to_glowll lowers it
    # with a function of its own (`_lower_mod`) rather than through `_ELEMENTWISE`.
    assert derived.pop(glow.ModOp) == "mod"
    assert glow_to_glowll._LOWERINGS[glow.ModOp] is glow_to_glowll._lower_mod
    assert derived == glow_to_glowll._ELEMENTWISE


def test_in_place_kinds_are_share_buffers():
    derived = glow.in_place_kinds()
    assert len(derived) == len(set(derived))
    assert set(derived) == set(share_buffers.IN_PLACE_KINDS)


def test_mixed_type_kinds_are_integer_kernels():
    derived = glow.mixed_type_kinds()
    assert len(derived) == len(set(derived))
    assert set(derived) == set(integer_kernels.MIXED_TYPE_KINDS)


def test_layout_agnostic_ops_are_layouts_plus_div_and_log():
    derived = set(glow.layout_agnostic_ops())
    # Documented difference: a transpose sinks through Div and Log as through Mul and Exp, but
    # layout._ELEMENTWISE leaves them out.
    missing_by_hand = {glow.DivOp, glow.LogOp}
    assert not missing_by_hand & set(layout._ELEMENTWISE)
    assert derived == set(layout._ELEMENTWISE) | missing_by_hand


def test_glow_kinds_are_quantizes():
    assert glow.glow_kinds() == quantize.GLOW_KINDS


def test_reference_semantics_come_from_the_facts():
    numpy = glow.numpy_semantics()
    assert set(reference.EVALUATORS) == set(reference.STRUCTURED) | set(numpy)
    assert not set(reference.STRUCTURED) & set(glow.elementwise_ops())
    for op_type, semantics in numpy.items():
        assert reference.EVALUATORS[op_type] is semantics is op_type.FACTS.numpy


# ----------------------------------------------------------------------------- the facts themselves


def test_arity_is_the_number_of_operands():
    for op_type, kind in glow.elementwise_ops().items():
        assert len(op_type.get_irdl_definition().operands) == glow.elementwise_kinds()[kind], op_type.name


def test_kind_lookups_both_ways():
    for op_type, kind in glow.elementwise_ops().items():
        assert glow.glow_op_for_kind(kind) is op_type
    assert glow.glow_op_for_kind("fmod") is glow.ModOp
    assert glow.glow_op_for_kind("splat") is None and glow.glow_op_for_kind("copy") is None
    assert glow.glow_op_for_kind("no_such_kind") is None


def test_mod_kind_follows_its_flag():
    x = _argument((4,), i32)
    assert glow.elementwise_kind(glow.ModOp(x, x)) == "mod"
    assert glow.elementwise_kind(glow.ModOp(x, x, fmod=True)) == "fmod"
    assert glow.elementwise_kind(glow.ConcatOp([x, x], 0)) is None


def test_quantizable_ops_have_distinct_glow_kinds():
    kinds = glow.glow_kinds()
    assert all(kinds.values()) and len(set(kinds.values())) == len(kinds)


def test_numpy_semantics_evaluate():
    x = _argument((2, 3))
    a = np.array([[-2.0, -0.5, 0.0], [0.5, 2.0, 7.0]], np.float32)
    add = glow.AddOp(x, x, activation="clip", clip_min=-1.0, clip_max=6.0)
    np.testing.assert_array_equal(reference.evaluate(add, a, a), np.clip(a + a, -1, 6))
    np.testing.assert_array_equal(reference.evaluate(glow.ReluOp(x), a), np.maximum(a, 0))
    np.testing.assert_allclose(reference.evaluate(glow.LeakyReluOp(x, 0.25), a), np.where(a >= 0, a, a / 4))


# ----------------------------------------------------------------------------- a new op appears everywhere


def _softsign2(op, x):
    return x / (2 + np.abs(x))


@irdl_op_definition
class Softsign2Op(glow.UnaryOp):
    """Test only: x / (2 + |x|)."""

    name = "glow.softsign2"
    FACTS: ClassVar[glow.OpFacts] = glow.ElementwiseFacts(
        kind="softsign2", arity=1, in_place=True, layout_agnostic=True, mixed_types=True, quantizable=True,
        glow_kind="Softsign2", required=("alpha",), numpy=_softsign2)


def test_a_new_op_with_facts_is_in_every_derived_table():
    ops = (*glow.Glow.operations, Softsign2Op)
    assert glow.elementwise_kinds(ops) == glow.elementwise_kinds() | {"softsign2": 1}
    assert glow.elementwise_required_properties(ops)["softsign2"] == ("alpha",)
    assert glow.elementwise_ops(ops)[Softsign2Op] == "softsign2"
    assert glow.glow_op_for_kind("softsign2", ops) is Softsign2Op
    assert set(glow.in_place_kinds(ops)) == set(glow.in_place_kinds()) | {"softsign2"}
    assert set(glow.mixed_type_kinds(ops)) == set(glow.mixed_type_kinds()) | {"softsign2"}
    assert set(glow.layout_agnostic_ops(ops)) == set(glow.layout_agnostic_ops()) | {Softsign2Op}
    assert glow.glow_kinds(ops) == glow.glow_kinds() | {Softsign2Op: "Softsign2"}
    assert glow.numpy_semantics(ops)[Softsign2Op] is _softsign2
    evaluate = reference.evaluators(ops)[Softsign2Op]
    op = Softsign2Op(_argument((3,)))  # the builder and shape rule come with UnaryOp
    assert op.result.type == glow.tensor((3,)) and glow.elementwise_kind(op) == "softsign2"
    np.testing.assert_array_equal(evaluate(op, np.array([-2.0, 0.0, 6.0], np.float32)), [-0.5, 0.0, 0.75])
    # The dialect's own tables stay as they were.
    assert "softsign2" not in glow.elementwise_kinds() and Softsign2Op not in reference.EVALUATORS


def _argument(shape, element=f32):
    return Block(arg_types=[glow.tensor(shape, element)]).args[0]


@pytest.mark.parametrize("element", [i1, i8])
def test_compare_and_select_types(element):
    lhs, rhs = _argument((2, 1), element), _argument((1, 3), element)
    compare = glow.CompareOp(lhs, rhs, "lt")
    assert compare.result.type == glow.tensor((2, 3), i1)
    select = glow.SelectOp(compare.result, lhs, rhs)
    assert select.result.type == glow.tensor((2, 3), element)
