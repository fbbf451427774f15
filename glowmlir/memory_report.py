"""The memory report: what a bundle needs in flash and RAM, and whether it fits a board.

The table follows NXP's application note on Glow's memory use: weights (CONSTANT),
inputs/outputs (MUTABLE), activations, code (.text + .rodata of the object), then for
the two usual ways of holding weights — read from flash in place, or copied to RAM —
Flash = weights + code and RAM = I/O + activations (+ weights when copied to RAM).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from glowmlir.elf import code_size
from glowmlir.errors import GlowError

KIB, MIB = 1024, 1024 * 1024


@dataclass(frozen=True)
class Board:
    name: str
    ram: int
    flash: int
    note: str


BOARDS = {
    "imxrt1060": Board("i.MX RT1060", 1 * MIB, 8 * MIB, "1 MB on-chip SRAM (TCM + OCRAM); 8 MB QSPI flash on the EVK"),
    "imxrt685": Board("i.MX RT685", 4608 * KIB, 64 * MIB, "4.5 MB on-chip SRAM; 64 MB octal flash on the EVK"),
    "mps2-an385": Board("QEMU mps2-an385 (Cortex-M3)", 4 * MIB, 4 * MIB, "SSRAM2/3 data RAM; SSRAM1 code"),
    "mps2-an386": Board("QEMU mps2-an386 (Cortex-M4)", 4 * MIB, 4 * MIB, "SSRAM2/3 data RAM; SSRAM1 code"),
    "mps2-an500": Board("QEMU mps2-an500 (Cortex-M7)", 4 * MIB, 4 * MIB, "SSRAM2/3 data RAM; SSRAM1 code"),
    "mps2-an505": Board("QEMU mps2-an505 (Cortex-M33)", 4 * MIB, 4 * MIB, "SSRAM2/3 data RAM; SSRAM1 code"),
}


def board_preset(name: str) -> Board:
    if name not in BOARDS:
        raise GlowError(f"-board=\"{name}\": unknown board (known: {', '.join(BOARDS)})")
    return BOARDS[name]


def parse_size(option: str, text: str) -> int:
    """`524288`, `512K`, `512KB`, `1M`, `4.5MB` → bytes."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KkMm]?)(?:i?B)?\s*", text)
    if not match:
        raise GlowError(f"-{option}=\"{text}\": expected a size such as 524288, 512K or 1M")
    number, unit = float(match.group(1)), match.group(2).upper()
    size = number * {"": 1, "K": KIB, "M": MIB}[unit]
    if size >= 2**64:
        raise GlowError(f"-{option}=\"{text}\": larger than any memory a target can address (2^64 bytes)")
    return int(size)


@dataclass(frozen=True)
class Placement:
    """Flash and RAM for one way of holding the weights, and the fit on the target."""

    flash: int
    ram: int
    flash_margin: int | None = None
    ram_margin: int | None = None

    @property
    def fits(self) -> bool | None:
        if self.flash_margin is None and self.ram_margin is None:
            return None
        return ((self.flash_margin is None or self.flash_margin >= 0)
                and (self.ram_margin is None or self.ram_margin >= 0))


@dataclass(frozen=True)
class MemoryReport:
    network: str
    weights: int
    io: int
    activations: int
    activations_lower_bound: int
    code: int
    weights_in_flash: Placement
    weights_in_ram: Placement
    board: str | None = None
    ram_size: int | None = None
    flash_size: int | None = None
    library_scratch: int = 0  # of the activations: the largest scratch a library call asks for
    plan: str = "layer by layer"  # the plan chosen to fit the RAM (plan_choice)
    plan_extra_cycles: int = 0  # its estimated cycles over layer by layer
    plan_extra_macs: int = 0  # the multiply-accumulates it adds (a patched plan's halos)

    def as_json(self) -> dict:
        report = asdict(self)
        for key in ("weights_in_flash", "weights_in_ram"):
            report[key]["fits"] = getattr(self, key).fits
        return report


def memory_report(bundle, board: str | None = None, ram_size: int | None = None,
                  flash_size: int | None = None) -> MemoryReport:
    if board is not None:
        preset = board_preset(board)
        ram_size = ram_size if ram_size is not None else preset.ram
        flash_size = flash_size if flash_size is not None else preset.flash
    layout = bundle.layout
    code = code_size(bundle.object_code) if bundle.object_code else 0  # LLVM IR bundles: the vendor compiles it
    weights, io, activations = layout.constant_size, layout.mutable_size, layout.activations_size

    def placement(flash: int, ram: int) -> Placement:
        return Placement(flash, ram, None if flash_size is None else flash_size - flash,
                         None if ram_size is None else ram_size - ram)

    return MemoryReport(layout.name, weights, io, activations, layout.activations_lower_bound, code,
                        weights_in_flash=placement(weights + code, io + activations),
                        weights_in_ram=placement(weights + code, weights + io + activations),
                        board=board, ram_size=ram_size, flash_size=flash_size, library_scratch=layout.library_scratch,
                        **({} if bundle.plan is None else {"plan": bundle.plan.name,
                                                           "plan_extra_cycles": bundle.plan.extra_cycles,
                                                           "plan_extra_macs": bundle.plan.extra_macs}))


def _fit_text(margin: int | None) -> str:
    if margin is None:
        return ""
    return f"fits, {margin:,} left" if margin >= 0 else f"does not fit, {-margin:,} over"


def report_table(report: MemoryReport):
    """The report as a rich table."""
    from rich.table import Table

    target = report.board and BOARDS[report.board].name
    title = f"memory of bundle {report.network}" + (f" on {target}" if target else "")
    table = Table(title=title, title_justify="left")
    table.add_column("")
    table.add_column("bytes", justify="right")
    table.add_column("target", justify="right")
    table.add_row("weights (CONSTANT_MEM_SIZE)", f"{report.weights:,}", "")
    table.add_row("inputs/outputs (MUTABLE_MEM_SIZE)", f"{report.io:,}", "")
    table.add_row("activations (ACTIVATIONS_MEM_SIZE)", f"{report.activations:,}",
                  f"lower bound {report.activations_lower_bound:,}")
    if report.library_scratch:
        table.add_row("  of which library scratch (largest call)", f"{report.library_scratch:,}", "")
    cost = f"~{report.plan_extra_cycles:,} cycles over layer by layer" if report.plan_extra_cycles else ""
    if report.plan_extra_macs:
        cost += f", {report.plan_extra_macs:,} MACs more"
    table.add_row("plan", report.plan, cost)
    table.add_row("code (.text + .rodata)", f"{report.code:,}", "", end_section=True)
    for label, placement in (("weights in flash", report.weights_in_flash), ("weights in RAM", report.weights_in_ram)):
        table.add_row(f"{label}: Flash", f"{placement.flash:,}", _fit_text(placement.flash_margin))
        table.add_row(f"{label}: RAM", f"{placement.ram:,}", _fit_text(placement.ram_margin))
    return table
