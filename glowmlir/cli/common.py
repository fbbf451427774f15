"""What the command-line tools share: Glow's option spelling and one-line errors."""

from __future__ import annotations

import contextlib
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import NoReturn

import typer
from typer._click.exceptions import UsageError  # typer 0.29 vendors click; pinned in pyproject

from glowmlir.errors import GlowError, GlowWarning

_BOOL = {"true": True, "1": True, "false": False, "0": False}


def parse_bool(option: str, value: str) -> bool:
    """An LLVM cl boolean option's value (`true`, `false`, `1`, `0`)."""
    if value.lower() not in _BOOL:
        raise GlowError(f"-{option}=\"{value}\": expected true or false")
    return _BOOL[value.lower()]


OBSERVER_OPTIONS = ("time", "verbose")
"""The boolean options of `observed`, shared by glow-compile and glow-profile."""


@contextlib.contextmanager
def observed(program: str, time: str, verbose: str) -> Iterator[None]:
    """Runs the block with the compiler observed: rich progress on stderr when it is a
    terminal (nothing extra on a pipe), `-verbose` naming each stage and pass on stderr as it
    starts, and `-time` printing the seconds of each stage and pass on stderr at the end
    (as Glow's `-time` prints its timers)."""
    from rich.console import Console

    from glowmlir.instrumentation import PassTimer, StageProgress, VerbosePasses, instrumented

    timer = PassTimer() if parse_bool("time", time) else None
    talker = VerbosePasses(program, sys.stderr) if parse_bool("verbose", verbose) else None
    console = Console(stderr=True)
    with StageProgress(console) as progress, instrumented(progress, talker, timer):
        yield
    if timer is not None:
        console.print(timer.table(f"{program}: seconds per stage and pass"))


def glow_style_arguments(argv: Sequence[str], boolean_options: Sequence[str] = ()) -> list[str]:
    """`-model=x` and `-model x` (LLVM cl style) become `--model=x` / `--model x`; a bare
    boolean option (`-enable-channelwise`) becomes `--enable-channelwise=true`, as in LLVM."""
    arguments = [f"-{arg}" if re.match(r"^-[A-Za-z][\w-]", arg) else arg for arg in argv]
    return [f"{arg}=true" if arg.lstrip("-") in boolean_options and arg.startswith("--") else arg
            for arg in arguments]


def one_line(message: str) -> str:
    """A message as the single line the tools print (a multi-line message keeps its first line)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return lines[0] if lines else "unknown error"


def model_input_options(model_input: Sequence[str] | None, onnx_define_symbol: Sequence[str] | None) -> dict:
    """`-model-input` and `-onnx-define-symbol` as `CompileOptions` fields; each input or
    symbol may be given once."""
    from glowmlir.importers.onnx import ModelInput, parse_define_symbol

    inputs = [ModelInput.parse(spec) for spec in model_input or []]
    symbols = [parse_define_symbol(spec) for spec in onnx_define_symbol or []]
    for option, names in (("model-input", [i.name for i in inputs]), ("onnx-define-symbol", [s for s, _ in symbols])):
        twice = next((name for index, name in enumerate(names) if name in names[:index]), None)
        if twice is not None:
            raise GlowError(f"-{option}: \"{twice}\" is given twice")
    return {"model_inputs": inputs, "symbols": dict(symbols)}


def fail(program: str, message: str) -> NoReturn:
    print(f"{program}: error: {one_line(message)}", file=sys.stderr)
    sys.exit(2)


@contextlib.contextmanager
def warnings_as_lines(program: str) -> Iterator[None]:
    """Prints each GlowWarning raised inside as one `<program>: warning: ...` line on stderr
    once the block has succeeded; a failing command prints its one error line only."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, GlowWarning):
            pending.append(f"{program}: warning: {one_line(str(message))}")
        else:
            original(message, category, filename, lineno, file, line)

    pending: list[str] = []
    original = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always", GlowWarning)
        warnings.showwarning = show
        yield
    for text in pending:
        print(text, file=sys.stderr)


def run_app(app: typer.Typer, program: str, argv: Sequence[str] | None, boolean_options: Sequence[str] = ()) -> None:
    """Runs a typer app; a user error (GlowError, or a bad command line) becomes one
    `<program>: error: ...` line and exit status 2, a GlowWarning one `<program>: warning: ...`
    line. Anything else is a bug in glowmlir and keeps its traceback. `boolean_options` take
    `=true|false` but may be given bare."""
    argv = glow_style_arguments(sys.argv[1:] if argv is None else argv, boolean_options)
    try:
        with warnings_as_lines(program):
            app(argv, prog_name=program, standalone_mode=False)
    except GlowError as error:
        fail(program, str(error))
    except UsageError as error:
        fail(program, error.format_message())
