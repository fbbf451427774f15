"""The op facts registry (`FACTS` on the glow op classes) and the tables derived from it: the
passes' op and kind tables are the derived ones, and every kind in them reaches every stage
(lowering to glowll, the glowll verifier, a float kernel for the float kinds) — a kind missing
from one fails here."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
from xdsl.dialects.builtin import MemRefType, ModuleOp, f32, i1, i8, i32
from xdsl.ir import Block, Region
from xdsl.irdl import irdl_op_definition

from glowmlir import reference
from glowmlir.compiler import CompileOptions, compile_module
from glowmlir.dialects import glow, glowll
from glowmlir.lowering import glow_to_glowll
from glowmlir.lowering.glowll_to_llvm import lower_instruction

# ----------------------------------------------------------------------------- every kind reaches every stage


def test_every_elementwise_op_lowers_to_its_kind():
    kinds = glow.elementwise_kinds()
    for op_type, kind in glow.elementwise_ops().items():
        assert op_type not in glow_to_glowll._LOWERINGS, op_type.name  # lowered by its facts, not a table
        assert kind in kinds, op_type.name
        assert op_type.FACTS.arity == len(op_type.get_irdl_definition().operands), op_type.name
    for facts in glow.KINDS_WITHOUT_OP:
        assert facts.kind in kinds


def test_the_sinkable_ops_include_div_and_log():
    """Once hand-kept, the list of ops a transpose sinks through had lost Div and Log."""
    assert {glow.DivOp, glow.LogOp, glow.MulOp, glow.ExpOp} <= set(glow.layout_agnostic_ops())


FLOAT_KINDS = sorted(kind for kind, facts in glow.elementwise_facts().items() if facts.float_kernel is not None)


def test_every_float_op_with_reference_semantics_has_a_float_kernel():
    for kind, facts in glow.elementwise_facts().items():
        if facts.numpy is not None and not facts.mixed_types:
            assert facts.float_kernel is not None, kind


@pytest.mark.parametrize("kind", FLOAT_KINDS)
def test_every_float_kind_verifies_and_has_a_kernel(kind):
    """A glowll.elementwise of each float kind, with the properties its facts require, verifies
    and lowers to a float kernel (a kind the kernel does not know fails here)."""
    arity = glow.elementwise_kinds()[kind]
    buffers = Block(arg_types=[MemRefType(f32, [4])] * (arity + 1)).args
    required = {name: 0.5 for name in glow.elementwise_required_properties().get(kind, ())}
    op = glowll.ElementwiseOp(buffers[0], buffers[1:], kind, **required)
    op.verify()
    kernel = lower_instruction(op, "kernel", [("activations", 16 * i) for i in range(arity + 1)])
    assert any(o.name == "llvm.store" for o in kernel.walk())


def test_a_kind_without_its_required_property_is_refused():
    for kind, required in glow.elementwise_required_properties().items():
        arity = glow.elementwise_kinds()[kind]
        element = i1 if kind == "compare" else f32
        dest, *sources = Block(arg_types=[MemRefType(element, [4])] + [MemRefType(f32, [4])] * arity).args
        with pytest.raises(Exception, match=required[0]):
            glowll.ElementwiseOp(dest, sources, kind).verify()


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


@irdl_op_definition
class ScaledSoftsignOp(glow.UnaryOp):
    """Test only, as docs/architecture.md "Adding an op" adds it: x / (2 + |x|)."""

    name = "glow.scaled_softsign"
    FACTS: ClassVar[glow.OpFacts] = glow.ElementwiseFacts(
        kind="scaled_softsign", arity=1, in_place=True, layout_agnostic=True,
        numpy=lambda op, x: x / (2 + np.abs(x)),
        float_kernel=lambda m, x: m.div(x, m.add(m.f32(2.0), m.max(x, m.sub(m.f32(0.0), x)))))


def test_an_op_added_to_the_dialect_compiles_and_runs(monkeypatch):
    """The one place to edit: the op class with its facts, listed in the dialect. Importing,
    then every stage — verifiers, lowering to glowll, buffer sharing, the float kernel — takes
    it from there; the bundle computes what its numpy semantics say."""
    monkeypatch.setattr(glow.Glow, "_operations", [*glow.Glow._operations, ScaledSoftsignOp])
    x = glow.PlaceholderOp("x", glow.tensor((3, 8)))
    scaled = ScaledSoftsignOp(x.result)
    relu = glow.ReluOp(scaled.result)
    module = ModuleOp([glow.FunctionOp("net", Region(Block([x, scaled, relu, glow.SaveOp(relu.result, "y")])))])
    bundle = compile_module(module, CompileOptions(network_name="net"))
    glowll_ir = bundle.ir["glowll"]
    assert 'glowll.elementwise %1, %0 {kind = "scaled_softsign"} : memref<3x8xf32>, memref<3x8xf32>' in glowll_ir
    assert 'glowll.elementwise %1, %1 {kind = "relu"}' in glowll_ir  # in place, after it
    data = np.random.default_rng(7).normal(scale=4.0, size=(3, 8)).astype(np.float32)
    expected = np.maximum(ScaledSoftsignOp.FACTS.numpy(None, data), 0)
    np.testing.assert_allclose(bundle.run(x=data)["y"], expected, rtol=1e-6, atol=1e-7)


def _argument(shape, element=f32):
    return Block(arg_types=[glow.tensor(shape, element)]).args[0]


@pytest.mark.parametrize("element", [i1, i8])
def test_compare_and_select_types(element):
    lhs, rhs = _argument((2, 1), element), _argument((1, 3), element)
    compare = glow.CompareOp(lhs, rhs, "lt")
    assert compare.result.type == glow.tensor((2, 3), i1)
    select = glow.SelectOp(compare.result, lhs, rhs)
    assert select.result.type == glow.tensor((2, 3), element)
