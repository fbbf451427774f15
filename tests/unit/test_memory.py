"""Memory planning: the allocator's invariants, the planned sizes, and the memory report."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glowmlir
from glowmlir.dialects.memory import ALIGNMENT
from glowmlir.errors import GlowError
from glowmlir.memory_report import BOARDS, memory_report, parse_size
from glowmlir.transforms.allocate_memory import (
    STRATEGIES,
    Interval,
    allocate_intervals,
    lower_bound,
    place,
)
from tests.support.forks import run_module
from tests.support.models import LENET


@st.composite
def interval_sets(draw):
    count = draw(st.integers(1, 25))
    intervals = []
    for key in range(count):
        start = draw(st.integers(0, 30))
        stop = draw(st.integers(start, 31))
        size = draw(st.integers(1, 40)) * ALIGNMENT
        intervals.append(Interval(key, size, start, stop))
    return intervals


def assert_valid(intervals, offsets, size):
    for interval in intervals:
        assert offsets[interval.key] % ALIGNMENT == 0
        assert offsets[interval.key] + interval.size <= size
    for a in intervals:
        for b in intervals:
            if a is not b and a.overlaps(b):
                a_start, b_start = offsets[a.key], offsets[b.key]
                assert a_start + a.size <= b_start or b_start + b.size <= a_start, (a, b, offsets)


@settings(max_examples=200, deadline=None)
@given(interval_sets())
def test_every_strategy_places_live_buffers_apart(intervals):
    bound = lower_bound(intervals)
    for name, order in STRATEGIES.items():
        offsets, size = place(order(intervals))
        assert_valid(intervals, offsets, size)
        assert size >= bound, name


@settings(max_examples=200, deadline=None)
@given(interval_sets())
def test_the_allocator_keeps_the_smallest_strategy(intervals):
    allocation = allocate_intervals(intervals)
    assert_valid(intervals, allocation.offsets, allocation.size)
    assert allocation.lower_bound == lower_bound(intervals) <= allocation.size
    assert allocation.size <= min(place(order(intervals))[1] for order in STRATEGIES.values())


def max_live_size_order(intervals, prefer):
    """Glow's MaxLiveSize ordering as its definition reads, recomputing the live bytes at every step."""
    remaining, order = list(intervals), []
    while remaining:
        steps = range(min(i.start for i in remaining), max(i.stop for i in remaining) + 1)
        busiest = max(steps, key=lambda t: sum(i.extent for i in remaining if i.start <= t <= i.stop))
        order.append(max((i for i in remaining if i.start <= busiest <= i.stop), key=prefer))
        remaining.remove(order[-1])
    return order


@settings(max_examples=200, deadline=None)
@given(interval_sets())
def test_max_live_size_orders_follow_their_definition(intervals):
    """The allocator keeps the live bytes per instruction up to date instead of recomputing them."""
    assert STRATEGIES["glow-max-live-size-max-buffer-size"](intervals) == max_live_size_order(
        intervals, lambda i: (i.size, i.stop - i.start))
    assert STRATEGIES["glow-max-live-size-max-buffer-time"](intervals) == max_live_size_order(
        intervals, lambda i: (i.stop - i.start, i.size))


def test_lower_bound_of_crafted_live_ranges():
    # a:[0,1] 128B, b:[1,2] 64B, c:[2,3] 128B: at most a+b or b+c live together
    intervals = [Interval("a", 128, 0, 1), Interval("b", 64, 1, 2), Interval("c", 128, 2, 3)]
    assert lower_bound(intervals) == 192
    allocation = allocate_intervals(intervals)
    assert allocation.size == 192
    assert allocation.offsets["a"] == allocation.offsets["c"]


def test_same_order_fragments_where_another_strategy_reaches_the_bound():
    intervals = [Interval("a", 128, 0, 1), Interval("b", 128, 1, 5), Interval("c", 192, 2, 4), Interval("d", 192, 2, 4)]
    assert place(STRATEGIES["glow-same-order"](intervals))[1] == 640  # c lands above a's freed slot
    allocation = allocate_intervals(intervals)
    assert allocation.size == lower_bound(intervals) == 512
    assert allocation.strategy != "glow-same-order"


@pytest.fixture(scope="module")
def lenet():
    return glowmlir.compile(LENET)


def test_lenet_float_activations_with_fusion(lenet):
    # pool1 output 20x12x12 floats + pool2 output 50x4x4 floats; Glow needs 57,600
    assert lenet.layout.activations_size == 11_520 + 3_200 == 14_720
    assert lenet.layout.activations_lower_bound == 14_720


def test_lenet_float_activations_without_fusion_and_without_reuse():
    assert glowmlir.compile(LENET, memory_fusion=False).layout.activations_size == 57_600
    no_reuse = glowmlir.compile(LENET, memory_fusion=False, reuse_activations=False).layout
    assert no_reuse.activations_size > 57_600


def test_memory_report_rows(lenet):
    report = memory_report(lenet, "imxrt1060")
    assert report.weights_in_flash.flash == report.weights + report.code
    assert report.weights_in_flash.ram == report.io + report.activations == 3_200 + 14_720
    assert report.weights_in_ram.ram == report.weights + report.io + report.activations
    assert report.weights_in_flash.ram_margin == BOARDS["imxrt1060"].ram - 17_920
    assert report.weights_in_flash.fits and not report.weights_in_ram.fits


def test_parse_size():
    assert parse_size("ram-size", "512K") == 524_288
    assert parse_size("ram-size", "4.5MB") == 4_718_592
    assert parse_size("ram-size", "1000") == 1000
    with pytest.raises(GlowError, match="-ram-size"):
        parse_size("ram-size", "lots")


def glow_compile(*arguments):
    return run_module("glowmlir.cli.compile", *arguments)


def test_cli_writes_the_json_report_and_refuses_what_does_not_fit(tmp_path):
    out, report_path = os.path.join(tmp_path, "b"), os.path.join(tmp_path, "memory.json")
    result = glow_compile(f"-model={LENET}", f"-emit-bundle={out}", "-board=mps2-an500",
                          f"-memory-report={report_path}", "-require-fit")
    assert result.returncode == 0, result.stderr
    with open(report_path) as f:
        report = json.load(f)
    assert report["activations"] == 14_720 and report["weights_in_flash"]["fits"] is True
    assert "fits, " in result.stdout
    small = os.path.join(tmp_path, "small")
    result = glow_compile(f"-model={LENET}", f"-emit-bundle={small}", "-ram-size=4K", "-flash-size=2M", "-require-fit")
    assert result.returncode == 2
    assert "does not fit" in result.stderr and not os.path.exists(small)
    result = glow_compile(f"-model={LENET}", f"-emit-bundle={small}", "-board=arduino")
    assert result.returncode == 2 and "-board=\"arduino\"" in result.stderr
