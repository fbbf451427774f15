"""What the compiler tells an observer while it works: MLIR's pass instrumentation, plus the
stages that are not passes (import, LLVM optimisation, object emission, profiling runs).

    with instrumented(PassTimer(), VerbosePasses(sys.stderr)):
        bundle = glowmlir.compile("lenet_mnist.onnx")

The observers are ambient (a context variable), so code deep in the compiler reports without
being handed one: `run_passes` calls `before_pass`/`after_pass` around every pass, the
compiler wraps each stage in `stage(...)`, and a stage of many steps (kernels lowered,
inferences profiled) calls `step()` after each. With no observer installed every hook is a
no-op. `glow-compile` and `glow-profile` install:

* `StageProgress`: rich progress bars on stderr when it is a terminal (nothing on a pipe);
* `PassTimer` for `-time`: seconds per pass and per stage, and the process's peak resident
  memory when each ends, printed as a table;
* `VerbosePasses` for `-verbose`: one line naming each pass or stage as it starts (a stage
  with the resident memory then: now and the peak so far);
* `glowmlir.pipeline.IRPrinter` for `-dump-ir-after`.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import resource
import sys
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import TextIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


class Instrumentation:
    """An observer of the compiler; every hook does nothing unless overridden."""

    def stage_started(self, stage: str, steps: int | None = None) -> None:
        """A stage begins; `steps` is its count of `step()` calls, when known."""

    def step(self) -> None:
        """One step of the current stage is done."""

    def stage_finished(self, stage: str) -> None:
        """The stage that began last ends."""

    def stage_ran(self, stage: str, seconds: float) -> None:
        """A stage that ran alongside the current one, on a thread of its own (the weight
        files, written while LLVM generates the code), took `seconds`."""

    def before_pass(self, compiler_pass: ModulePass) -> None:
        """A pass is about to run."""

    def after_pass(self, compiler_pass: ModulePass, module: ModuleOp) -> None:
        """A pass ran, leaving `module`."""


class _Observers(Instrumentation):
    """Several observers, told in order."""

    def __init__(self, observers: Sequence[Instrumentation]):
        self.observers = tuple(observers)

    def stage_started(self, stage: str, steps: int | None = None) -> None:
        for observer in self.observers:
            observer.stage_started(stage, steps)

    def step(self) -> None:
        for observer in self.observers:
            observer.step()

    def stage_finished(self, stage: str) -> None:
        for observer in self.observers:
            observer.stage_finished(stage)

    def stage_ran(self, stage: str, seconds: float) -> None:
        for observer in self.observers:
            observer.stage_ran(stage, seconds)

    def before_pass(self, compiler_pass: ModulePass) -> None:
        for observer in self.observers:
            observer.before_pass(compiler_pass)

    def after_pass(self, compiler_pass: ModulePass, module: ModuleOp) -> None:
        for observer in self.observers:
            observer.after_pass(compiler_pass, module)


_current: ContextVar[Instrumentation] = ContextVar("glowmlir_instrumentation", default=Instrumentation())


def current() -> Instrumentation:
    """The observers installed by the innermost `instrumented` block (a no-op one outside)."""
    return _current.get()


@contextlib.contextmanager
def instrumented(*observers: Instrumentation | None) -> Iterator[None]:
    """Installs the observers (None entries ignored) for the block, after any already installed."""
    present = [observer for observer in observers if observer is not None]
    token = _current.set(_Observers([_current.get(), *present]))
    try:
        yield
    finally:
        _current.reset(token)


@contextlib.contextmanager
def stage(name: str, steps: int | None = None) -> Iterator[None]:
    """Reports the block as the stage `name` to the installed observers."""
    observer = current()
    observer.stage_started(name, steps)
    try:
        yield
    finally:
        observer.stage_finished(name)


def step() -> None:
    """Reports one step of the current stage."""
    current().step()


def stage_ran(name: str, seconds: float) -> None:
    """Reports a stage that ran alongside the current one, on a thread of its own."""
    current().stage_ran(name, seconds)


def resident_memory() -> tuple[int, int]:
    """(bytes of the process resident now, the most resident so far): Linux's VmRSS and VmHWM;
    elsewhere (0, getrusage's maximum)."""
    try:
        with open("/proc/self/status") as status:
            fields = dict(line.split(":", 1) for line in status if line.startswith(("VmRSS:", "VmHWM:")))
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return 0, peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def collect_garbage() -> None:
    """A full cyclic collection, then the C heap's free pages handed back to the system
    (glibc's `malloc_trim`): glibc keeps the memory of freed weights and IR mapped for its
    own reuse, which the next stages (LLVM's allocations) do not take (ResNet-50: 118 MB
    resident after its glowll stage; the trim is a no-op elsewhere)."""
    gc.collect()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


LARGE_ALLOCATION_BYTES = 256 << 10
"""Allocations from this size are mapped pages of their own (`return_large_allocations`)."""


def return_large_allocations() -> None:
    """Makes glibc map every allocation of `LARGE_ALLOCATION_BYTES` or more apart and unmap
    it when freed (`mallopt(M_MMAP_THRESHOLD)`). By default glibc raises that threshold to
    the size of each large block freed, so the weights a pass replaces (the filters batch-norm
    folding scales) are carved out of its heap afterwards and their memory stays with the
    process, fragmented (ResNet-50: 29 MB more at the peak). For a process that compiles
    (glow-compile): it sets the allocator of the whole process; elsewhere a no-op."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(-3, LARGE_ALLOCATION_BYTES)  # M_MMAP_THRESHOLD


def mebibytes(count: int) -> str:
    return f"{count / 2**20:,.0f}"


class PassTimer(Instrumentation):
    """`-time`: wall-clock seconds of each stage and of each pass or inner stage inside it, in
    the order they ran, and the process's peak resident memory when each ended (a row whose
    peak is above the rows before raised it). A pass that runs twice (constant folding) is
    one row with its total."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, ...], float] = {}  # (stage,) or (stage, pass or inner stage) -> seconds
        self.peaks: dict[tuple[str, ...], int] = {}  # the same keys -> peak resident bytes when it ended
        self._open: list[tuple[tuple[str, ...], float]] = []
        self._pass_start = 0.0
        self._high_water = 0

    def _peak(self) -> int:
        """The most resident so far. Linux's VmHWM is the larger of a mark it updates lazily and
        the current resident count, so a later read can be a page or so lower than an earlier
        one (CI saw 180 then 179 MiB); a high-water mark never falls."""
        self._high_water = max(self._high_water, resident_memory()[1])
        return self._high_water

    def stage_started(self, stage: str, steps: int | None = None) -> None:
        key = (*self._open[-1][0][:1], stage) if self._open else (stage,)
        self._open.append((key, time.perf_counter()))
        self.rows.setdefault(key, 0.0)

    def stage_finished(self, stage: str) -> None:
        key, start = self._open.pop()
        self.rows[key] += time.perf_counter() - start
        self.peaks[key] = self._peak()

    def stage_ran(self, stage: str, seconds: float) -> None:
        key = (*self._open[-1][0][:1], stage) if self._open else (stage,)
        self.rows[key] = self.rows.get(key, 0.0) + seconds
        self.peaks[key] = self._peak()

    def _pass_key(self, compiler_pass: ModulePass) -> tuple[str, ...]:
        return (*self._open[-1][0][:1], compiler_pass.name) if self._open else (compiler_pass.name,)

    def before_pass(self, compiler_pass: ModulePass) -> None:
        self.rows.setdefault(self._pass_key(compiler_pass), 0.0)  # listed in the order the passes start
        self._pass_start = time.perf_counter()

    def after_pass(self, compiler_pass: ModulePass, module: ModuleOp) -> None:
        self.rows[self._pass_key(compiler_pass)] += time.perf_counter() - self._pass_start
        self.peaks[self._pass_key(compiler_pass)] = self._peak()

    @property
    def total(self) -> float:
        """The seconds of the outermost stages."""
        return sum(seconds for key, seconds in self.rows.items() if len(key) == 1)

    def table(self, title: str):
        """The timings as a rich table: each stage with its share, its passes indented under it."""
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        table.add_column("stage / pass")
        table.add_column("seconds", justify="right")
        table.add_column("share", justify="right")
        table.add_column("peak RSS MiB", justify="right")
        total = self.total
        for key, seconds in self.rows.items():
            share = f"{100 * seconds / total:.1f}%" if total > 0 else ""
            peak = mebibytes(self.peaks[key]) if key in self.peaks else ""
            table.add_row("  " * (len(key) - 1) + key[-1], f"{seconds:.3f}", share, peak)
        peak = mebibytes(max(self.peaks.values(), default=0))
        table.add_row("total", f"{total:.3f}", "100.0%" if total > 0 else "", peak, end_section=True)
        return table


class VerbosePasses(Instrumentation):
    """`-verbose`: a line naming each stage and each pass as it starts."""

    def __init__(self, program: str, stream: TextIO):
        self.program = program
        self.stream = stream

    def stage_started(self, stage: str, steps: int | None = None) -> None:
        count = f" ({steps})" if steps is not None else ""
        now, peak = resident_memory()
        print(f"{self.program}: {stage}{count} [RSS {mebibytes(now)} MiB, peak {mebibytes(peak)} MiB]",
              file=self.stream, flush=True)

    def stage_ran(self, stage: str, seconds: float) -> None:
        now, peak = resident_memory()
        print(f"{self.program}:   {stage}: {seconds:.1f} s [RSS {mebibytes(now)} MiB, peak {mebibytes(peak)} MiB]",
              file=self.stream, flush=True)

    def before_pass(self, compiler_pass: ModulePass) -> None:
        print(f"{self.program}:   running {compiler_pass.name}", file=self.stream, flush=True)


class StageProgress(Instrumentation):
    """Rich progress on a terminal: the current stage with a spinner, a bar for a stage of
    known steps (kernels lowered n/N, inferences profiled n/N), the pass running. Nothing is
    drawn unless the console is a terminal; the bars disappear when the command ends."""

    def __init__(self, console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        stream = console.file
        # A real terminal only: FORCE_COLOR and the like must not put bars into CI logs.
        self.enabled = console.is_terminal and hasattr(stream, "isatty") and stream.isatty()
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True,
                                 disable=not self.enabled)
        self._tasks: list = []

    def __enter__(self) -> StageProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.progress.stop()

    def stage_started(self, stage: str, steps: int | None = None) -> None:
        self._tasks.append((self.progress.add_task(stage, total=steps), stage))
        self.progress.refresh()

    def step(self) -> None:
        if self._tasks:
            self.progress.advance(self._tasks[-1][0])

    def stage_finished(self, stage: str) -> None:
        task, _ = self._tasks.pop()
        self.progress.remove_task(task)

    def before_pass(self, compiler_pass: ModulePass) -> None:
        if self._tasks:
            task, stage_name = self._tasks[-1]
            self.progress.update(task, description=f"{stage_name}: {compiler_pass.name}", refresh=True)
