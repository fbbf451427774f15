"""Per-layer profiles: where one inference spends its instructions on an emulated board, or
its time on the host (`glow-run -profile`).

A layer is one glowll instruction: one graph node (a fused convolution carries its
convolution's name). The profile runs a layer-profiling build of the model
(`CompileOptions.layer_profile`, see `glowmlir.lowering.glowll_to_llvm`), in which every
instruction has a function of its own that LLVM does not inline; the normal build inlines
them all into the entry point, so its code has no layer boundaries. The profiling build's
code is otherwise the same, and its outputs are bit-identical.

On a board, QEMU counts the instructions each function executes (`embedded/blockcount.c`)
in builds running the inference once and twice, and the profile is the difference, as
for `glow-run`'s instruction count. An instruction outside every layer's function (a
soft-float helper such as `__aeabi_fmul`, `memcpy`, libm) counts for the function that ran
last: its cost lands on the layer that called it. Two rows are no layer: the entry point
(the address arithmetic and calls between layers) and the harness (main.c's loop around
the entry point). Every instruction counts once, so the rows sum exactly to the
profiling build's instructions per inference, which is printed with the normal build's.

On the host, the entry point of a `timed` build reads a clock before the first layer and
after each (`embedded/layer_timer.c`); a layer's time is the difference of its two marks.
The inference is repeated and each layer's median taken; the total is the sum of those
medians, printed with the median wall time of one normal inference.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from glowmlir.errors import GlowError
from glowmlir.instrumentation import Instrumentation, instrumented

PICTURE_FORMATS = (".svg", ".png")
HOST_TIME_BUDGET = 0.5
"""Seconds the host profile spends on repeated inferences (at least `HOST_MIN_REPEATS`)."""
HOST_MIN_REPEATS = 11
HOST_MAX_REPEATS = 2001
BAR_WIDTH = 24


@dataclass(frozen=True)
class Layer:
    """One glowll instruction: the graph node it computes and its kind (`convolution`)."""

    node: str
    kind: str


@dataclass(frozen=True)
class Row:
    """A line of the profile: a layer, or what else the inference ran (`layer` False)."""

    name: str
    kind: str
    amount: float
    layer: bool = True
    cycles: float | None = None  # on a Cortex-M board: the estimated core cycles (glowmlir.runtime.cycles)


@dataclass
class LayerProfile:
    """One inference of `network` on `where` (a board, or "host"), per layer."""

    network: str
    where: str
    unit: str  # "instructions" or "µs"
    rows: list[Row]
    reference: float  # the normal build's instructions per inference, or its median wall time (µs)
    repeats: int  # inferences each host layer time is the median of (1 on a board: counts are exact)
    outputs: dict[str, np.ndarray]  # the profiling build's
    cycles_label: str | None = None  # what the rows' cycles are ("estimated core cycles at zero wait states")
    timing: str | None = None  # the timing model, described

    @property
    def total(self) -> float:
        return sum(row.amount for row in self.rows)

    @property
    def total_cycles(self) -> float:
        return sum(row.cycles for row in self.rows) if self.cycles_label else 0.0

    def measure(self, row: Row) -> float:
        """What the shares and bars show: cycles where estimated, else the amount."""
        return row.cycles if self.cycles_label else row.amount

    def amount_text(self, amount: float) -> str:
        return f"{int(amount):,}" if self.unit == "instructions" else f"{amount:,.1f}"

    def summary(self) -> str:
        """What the total is, and the normal build's figure to compare it with."""
        if self.unit == "instructions":
            text = (f"instructions per inference of the profiling build on {self.where}: {int(self.total):,} "
                    f"(the sum of the rows); the normal build, kernels inlined: {int(self.reference):,}")
            if self.cycles_label:
                text += (f"\n{self.cycles_label} per inference of the profiling build: {round(self.total_cycles):,} "
                         f"({self.total_cycles / self.total:.2f} cycles/instruction) [{self.timing}]")
            return text
        return (f"time per inference of the profiling build on the host: {self.total:,.1f} µs (the sum of the "
                f"layers' median times over {self.repeats} inferences); one normal inference: "
                f"{self.reference:,.1f} µs (median wall time)")

    def table(self):
        """The profile as a rich table: node, kind, amount, share and a bar per row."""
        from rich.bar import Bar
        from rich.table import Table

        measured = [self.measure(row) for row in self.rows]
        total, largest = sum(measured), max(measured, default=0) or 1
        what = "cycles" if self.cycles_label else self.unit
        table = Table(title=f"{self.network} on {self.where}: {what} per layer", title_justify="left",
                      show_footer=True)
        table.add_column("#", justify="right", no_wrap=True)
        table.add_column("node", footer="total", no_wrap=True, overflow="ellipsis", ratio=1)
        table.add_column("kind", no_wrap=True, overflow="ellipsis", max_width=22)
        table.add_column(self.unit, justify="right", footer=self.amount_text(self.total), no_wrap=True,
                         min_width=len(self.amount_text(self.total)))
        if self.cycles_label:
            table.add_column("cycles", justify="right", footer=f"{round(self.total_cycles):,}", no_wrap=True,
                             min_width=len(f"{round(self.total_cycles):,}"))
        table.add_column("share", justify="right", footer="100.0%", no_wrap=True, min_width=6)
        table.add_column("", width=BAR_WIDTH, no_wrap=True)
        for index, (row, amount) in enumerate(zip(self.rows, measured)):
            cycles = [f"{round(row.cycles):,}"] if self.cycles_label else []
            table.add_row(str(index) if row.layer else "", short_name(row.name), row.kind,
                          self.amount_text(row.amount), *cycles, _share(amount, total),
                          Bar(largest, 0, max(amount, 0), width=BAR_WIDTH))
        return table

    def print(self, file=None) -> None:
        from rich.console import Console

        console = Console(file=file, width=max(100, Console().width), highlight=False)
        console.print(self.table())
        console.print(self.summary(), soft_wrap=True)

    def picture(self, extension: str) -> bytes:
        """A horizontal bar chart of the rows, as `.svg` or `.png` bytes; each bar is an SVG
        group with id `layer-<index>` (`other-<n>` for a row that is no layer)."""
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
        from matplotlib.ticker import EngFormatter

        measured = [self.measure(row) for row in self.rows]
        total = sum(measured)
        labels = [f"{short_name(row.name)}  ({row.kind})" if row.kind else row.name for row in self.rows]
        figure = Figure(figsize=(12, 1.6 + 0.45 * len(self.rows)), layout="constrained")
        axes = figure.add_subplot()
        positions = np.arange(len(self.rows))
        colors = ["#3b75af" if row.layer else "#a0a0a0" for row in self.rows]
        bars = axes.barh(positions, measured, color=colors, height=0.7)
        text = (lambda value: f"{round(value):,}") if self.cycles_label else self.amount_text
        for index, (bar, row, amount) in enumerate(zip(bars, self.rows, measured)):
            bar.set_gid(f"layer-{index}" if row.layer else f"other-{index}")
            axes.annotate(f" {text(amount)} ({_share(amount, total)})",
                          (bar.get_width(), bar.get_y() + bar.get_height() / 2), va="center", fontsize=9)
        axes.set_yticks(positions, labels, fontsize=9)
        axes.invert_yaxis()
        what = self.cycles_label or self.unit
        axes.set_xlabel(what)
        axes.xaxis.set_major_formatter(EngFormatter(sep=""))
        axes.margins(x=0.25)
        axes.spines[["top", "right"]].set_visible(False)
        axes.set_title(f"{self.network} on {self.where}: {what} per layer (total {text(total)})", loc="left",
                       fontsize=11)
        buffer = io.BytesIO()
        with matplotlib.rc_context({"svg.hashsalt": "glowmlir"}):  # fixed SVG ids
            figure.savefig(buffer, format=extension.lstrip("."), dpi=120, metadata=_picture_metadata(extension))
        return buffer.getvalue()


SHORT_NAME = 40
"""Characters of a node name the table and picture show (TFLite's run to ~200)."""


def short_name(name: str, width: int = SHORT_NAME) -> str:
    """A node name cut to `width` characters: of TFLite's `a/b/conv2d/Relu;a/b/conv2d/BiasAdd;...`
    its first op whole (`a/b/conv2d/Relu;…`) or that op's last path components
    (`…/conv2d/Relu`); a long name without paths its end; a short name stays whole."""
    if len(name) <= width:
        return name
    first = name.split(";")[0]
    if len(first) <= width - 2:
        return f"{first};…"
    parts = first.split("/")
    kept = parts[-1][-(width - 1):]
    for part in reversed(parts[:-1]):
        if len(part) + len(kept) + 3 > width:
            break
        kept = f"{part}/{kept}"
    return f"…/{kept}" if len(parts) > 1 and len(kept) + 2 <= width else f"…{kept}"


def _share(amount: float, total: float) -> str:
    """A row's share of the total, in percent: a small one is not shown as 0.0%."""
    if not total:
        return "-"
    share = 100 * amount / total
    return f"{share:.1f}%" if abs(share) >= 0.1 or share == 0 else "<0.1%"


def _picture_metadata(extension: str) -> dict:
    """No date or version in the file, so the same profile makes the same picture."""
    return {"Date": None, "Creator": None} if extension == ".svg" else {"Software": None}


def parse_profile_option(value: str | None) -> tuple[bool, str | None]:
    """`-profile`: off (absent, "false"), a table ("true", or the option given bare), or a
    table and a picture written to a path ending .svg or .png; checked before any work."""
    from glowmlir.bundle import StagedFiles

    if value is None or value == "false":
        return False, None
    if value == "true":
        return True, None
    if os.path.splitext(value)[1].lower() not in PICTURE_FORMATS:
        raise GlowError(f"-profile=\"{value}\": expected true, false or a picture file ending "
                        f"{' or '.join(PICTURE_FORMATS)}")
    StagedFiles.check(value, "-profile")
    return True, value


def write_picture(profile: LayerProfile, path: str) -> None:
    """Writes the profile's picture to `path` all at once, or not at all."""
    from glowmlir.bundle import StagedFiles

    files = StagedFiles()
    files.add(path, profile.picture(os.path.splitext(path)[1].lower()), "-profile")
    files.commit()


def profiling_build(model: str, layer_profile: str, options):
    """The model's layer-profiling build (`layer_profile` "kernels" or "timed") with the
    `CompileOptions` of its normal build, and its layers, in the order the entry point runs them."""
    import dataclasses

    from glowmlir.compiler import compile_module, import_network
    from glowmlir.dialects import glow, glowll

    compile_options = dataclasses.replace(options, layer_profile=layer_profile)
    last_glowll_pass = compile_options.pipeline().glowll[-1].name
    layers: list[Layer] = []

    class LayerRecorder(Instrumentation):
        """Reads the layers off the allocated glowll function."""

        def after_pass(self, compiler_pass, module) -> None:
            if compiler_pass.name != last_glowll_pass:
                return
            function = next(op for op in module.body.block.ops if isinstance(op, glowll.FunctionOp))
            instructions = [op for op in function.body.block.ops if isinstance(op, glowll.InstructionOp)]
            layers[:] = [Layer(_node_name(op, glow.NODE_NAME, index), op.name.removeprefix("glowll."))
                         for index, op in enumerate(instructions)]

    with instrumented(LayerRecorder()):
        bundle = compile_module(import_network(model, compile_options), compile_options)
    return bundle, layers


def _node_name(op, attribute: str, index: int) -> str:
    name = op.attributes.get(attribute)
    return name.data if name is not None else f"({op.name.removeprefix('glowll.')} {index})"


def profile_on_board(model: str, board_name: str, inputs: Mapping[str, np.ndarray], normal_instructions: int,
                     options, weights_in: str = "flash", link: Sequence[str] = ()) -> LayerProfile:
    """Instructions per layer of one inference on an emulated board (see the module docstring);
    `options`: the `CompileOptions` of the normal build (its target the board's), `link` what
    the program links besides the bundle (a kernel library)."""
    from glowmlir.lowering.glowll_to_llvm import layer_kernel_name
    from glowmlir.runtime.boards import board, run_on_board
    from glowmlir.runtime.cycles import cycles_label, timing_of

    bundle, layers = profiling_build(model, "kernels", options)
    entry = bundle.layout.entry_point
    kernels = [layer_kernel_name(entry, index, layer.kind) for index, layer in enumerate(layers)]
    spec = board(board_name)
    timing = timing_of(spec.cpu) if spec.counts_multiplies else None
    result = run_on_board(bundle, board_name, dict(inputs), weights_in, link=link,
                          count_functions=[*kernels, entry, "main"], count_cycles=timing is not None)
    counts = result.function_instructions
    cycles = ({name: amount.estimate for name, amount in result.function_cycles.items()} if timing
              else dict.fromkeys(counts))
    rows = [Row(layer.node, layer.kind, counts[kernel], cycles=cycles[kernel])
            for layer, kernel in zip(layers, kernels)]
    rows += [Row("(entry point)", "calls between layers", counts[entry], layer=False, cycles=cycles[entry]),
             Row("(harness)", "main.c's loop", counts["main"], layer=False, cycles=cycles["main"])]
    if counts[""]:  # before any layer ran: nothing, when the 1- and 2-inference builds start alike
        rows.append(Row("(before the entry point)", "", counts[""], layer=False, cycles=cycles[""]))
    if sum(row.amount for row in rows) != result.instructions:  # a bug in blockcount.c or here
        raise RuntimeError(f"layer profile on {board_name}: the rows sum to {sum(r.amount for r in rows):,}, "
                           f"not the {result.instructions:,} instructions counted")
    label = cycles_label(timing) if timing is not None else None
    return LayerProfile(bundle.name, board_name, "instructions", rows, normal_instructions, 1, result.outputs,
                        label, timing.describe() if timing else None)


def profile_on_host(model: str, inputs: Mapping[str, np.ndarray], normal_runner, options,
                    link: Sequence[str] = ()) -> LayerProfile:
    """Time per layer of one inference on this machine: medians over repeated inferences;
    `normal_runner` runs the normal build (a `HostRunner`), built with `options`."""
    from glowmlir.runtime.host import LAYER_TIMER, HostRunner

    bundle, layers = profiling_build(model, "timed", options)
    runner = HostRunner(bundle.layout, bundle.object_code, link=[LAYER_TIMER, *link])
    outputs = runner.run(dict(inputs))
    normal_runner.run(dict(inputs))
    repeats = _repeats(normal_runner.time_calls)
    wall_time = float(np.median(normal_runner.time_calls(repeats))) / 1000
    medians = np.median(runner.time_layers(len(layers), repeats), axis=0) / 1000
    rows = [Row(layer.node, layer.kind, float(time)) for layer, time in zip(layers, medians)]
    return LayerProfile(bundle.name, "host", "µs", rows, wall_time, repeats, outputs)


def _repeats(time_calls: Callable[[int], list[int]]) -> int:
    """How many inferences fit in `HOST_TIME_BUDGET` (within the minimum and maximum)."""
    once = max(min(time_calls(3)), 1) / 1e9
    return int(np.clip(HOST_TIME_BUDGET / once, HOST_MIN_REPEATS, HOST_MAX_REPEATS))
