"""What the command-line tools share: Glow's option spelling and one-line errors."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

import typer
from typer._click.exceptions import UsageError  # typer 0.29 vendors click; pinned in pyproject

from glowmlir.errors import GlowError


def glow_style_arguments(argv: Sequence[str], boolean_options: Sequence[str] = ()) -> list[str]:
    """`-model=x` and `-model x` (LLVM cl style) become `--model=x` / `--model x`; a bare
    boolean option (`-enable-channelwise`) becomes `--enable-channelwise=true`, as in LLVM."""
    arguments = [f"-{arg}" if re.match(r"^-[A-Za-z][\w-]", arg) else arg for arg in argv]
    return [f"{arg}=true" if arg.lstrip("-") in boolean_options and arg.startswith("--") else arg
            for arg in arguments]


def run_app(app: typer.Typer, program: str, argv: Sequence[str] | None, boolean_options: Sequence[str] = ()) -> None:
    """Runs a typer app; any user error becomes `<program>: error: ...` and exit status 2.
    `boolean_options` take `=true|false` but may be given bare."""
    argv = glow_style_arguments(sys.argv[1:] if argv is None else argv, boolean_options)
    try:
        app(argv, prog_name=program, standalone_mode=False)
    except GlowError as error:
        message = str(error)
    except UsageError as error:
        message = error.format_message()
    except OSError as error:
        message = f"{error.strerror}: {error.filename}"
    else:
        return
    print(f"{program}: error: {message}", file=sys.stderr)
    sys.exit(2)
