"""`glow-run`: compile a model for a board, run it there on given inputs, print the outputs.

    glow-run -model=lenet_mnist.onnx -board=mps2-an500 -input=digit.png
    glow-run -model=net.onnx -board=host -input=data=x.npy -input=mask=m.npy

Boards: `host` (this machine), QEMU's `mps2-an385` (Cortex-M3, soft float),
`mps2-an385-m0plus` (Cortex-M0+ code on the an385), `mps2-an386` (M4F), `mps2-an500` (M7),
`mps2-an505` (M33), `mps3-an547` (M55), `virt-rv32imc`, `virt-rv32imafc` and `aarch64`
(Linux user mode). On emulated boards it also prints the exact number of instructions one
inference executed; with `-cycles` on the Cortex-M boards, also its estimated core cycles at
zero wait states (`glowmlir.runtime.cycles`: the cores' timing tables, or on the M7 and M55
llvm-mca's models, a "model estimate").

`-profile` also prints a per-layer profile (`glowmlir.layer_profile`): the instructions
each graph node executes on an emulated board, or its time on the host, with each one's
share and a bar; `-profile=FILE.svg` (or `.png`) also draws it there.

    glow-run -model=lenet_mnist.onnx -board=mps2-an500 -input=digit.png -profile=lenet.svg
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Annotated, Optional

import numpy as np
import typer

from glowmlir.cli.common import parse_bool, run_app
from glowmlir.errors import GlowError

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)

def load_input(path: str, placeholder, image_mode: str) -> np.ndarray:
    """A .npy array, or an image scaled to `image_mode` in NCHW layout, RGB (image-classifier's
    rule); a quantized input (`-convert-placeholders`) gets the float values quantized."""
    from glowmlir.datasets import ImageOptions, load_image, read_npy

    if not os.path.isfile(path):
        raise GlowError(f"-input: file \"{path}\" not found")
    if path.endswith(".npy"):
        value = np.asarray(read_npy(path, "-input"))
    else:
        value = load_image(path, placeholder.shape, ImageOptions.parse(image_mode, "NCHW", "RGB"))
    if placeholder.quantization is not None and value.dtype.kind == "f":
        scale, offset = placeholder.quantization
        limits = np.iinfo(placeholder.dtype)
        value = np.clip(np.round(value / np.float32(scale)) + offset, limits.min, limits.max)
    return value.astype(placeholder.dtype)


TARGET_OPTIONS = ("target", "mcpu", "march", "mattr", "target-feature", "float-abi")
"""glow-compile options that choose the code a board runs; without them, the board's CPU decides."""


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run_command(
    context: typer.Context,
    model: Annotated[list[str], typer.Option("--model", help="the model (as glow-compile takes it)")],
    input: Annotated[Optional[list[str]], typer.Option("--input", help="[name=]file.npy|file.png; repeatable")] = None,
    board: Annotated[str, typer.Option("--board",
                                       help="host or an emulated board (see glowmlir.runtime.boards)")] = "host",
    weights_in: Annotated[str, typer.Option("--weights-in", help="flash (const) or ram (copied at start)")] = "flash",
    image_mode: Annotated[str, typer.Option("--image-mode",
                                            help="PNG pixel range: 0to1, 0to255, neg1to1, neg128to127")] = "0to1",
    profile: Annotated[Optional[str], typer.Option("--profile",
                                                   help="per-layer profile: true, or FILE.svg|FILE.png to draw it "
                                                        "too")] = None,
    instrument_debug: Annotated[str, typer.Option("--instrument-debug",
                                                  help="dump every node's output of the run")] = "false",
    instrument_debug_dir: Annotated[str, typer.Option("--instrument-debug-dir",
                                                      help="where the dumps go (default: debug)")] = "debug",
    instrument_debug_format: Annotated[str, typer.Option(
        "--instrument-debug-format", help="console (default), txt, bin, rawtxt, rawbin")] = "console",
    instrument_debug_only: Annotated[Optional[str], typer.Option(
        "--instrument-debug-only", help="dump only these nodes (names, comma-separated)")] = None,
    cycles: Annotated[str, typer.Option("--cycles", help="also print the estimated core cycles of one inference "
                                                      "(Cortex-M boards)")] = "false",
    flash_wait_states: Annotated[int, typer.Option("--flash-wait-states",
                                                   help="with -cycles: cycles each flash access adds")] = 0,
    link: Annotated[Optional[list[str]], typer.Option(
        "--link", help="C sources, objects or archives to link (a kernel library: -use-cmsis, -use-hifi4); "
                       "repeatable")] = None,
) -> None:
    """Run a model on the host or an emulated board; every glow-compile option is taken
    (-load-profile, -use-cmsis, -mcpu, -opt-level, ...)."""
    import dataclasses

    from glowmlir.bundle import StagedFiles
    from glowmlir.cli.compile import parse_compile_options
    from glowmlir.compiler import compile_module, import_network
    from glowmlir.instrument_debug import check_format, dump_node_outputs
    from glowmlir.layer_profile import parse_profile_option
    from glowmlir.runtime.boards import board as board_spec
    from glowmlir.runtime.boards import run_on_board, target_for
    from glowmlir.runtime.host import HostRunner

    if weights_in not in ("flash", "ram"):
        raise GlowError(f"-weights-in=\"{weights_in}\": expected flash or ram")
    show_profile, picture = parse_profile_option(profile)
    count_cycles = parse_bool("cycles", cycles)
    if board != "host":
        board_spec(board)  # an unknown board fails before compiling
    if count_cycles:
        from glowmlir.runtime.boards import cycle_timing

        if board == "host":
            raise GlowError("-cycles: cycles are estimated on the Cortex-M boards only, not on the host")
        cycle_timing(board_spec(board))
        if flash_wait_states < 0:
            raise GlowError(f"-flash-wait-states={flash_wait_states}: expected 0 or more")
        if flash_wait_states:
            from glowmlir.runtime.boards import flash_range

            flash_range(board_spec(board))
    elif flash_wait_states:
        raise GlowError("-flash-wait-states needs -cycles")
    links = [os.path.abspath(path) for path in link or []]
    for path in links:
        if not os.path.isfile(path):
            raise GlowError(f"-link: file \"{path}\" not found")
    compile_arguments = [*(f"--model={path}" for path in model), *context.args]
    _, options = parse_compile_options(compile_arguments)
    given = {argument.removeprefix("--").split("=")[0] for argument in context.args if argument.startswith("--")}
    if board != "host" and not given & set(TARGET_OPTIONS):  # the board's CPU, the other code options kept
        chosen = options.target
        options = dataclasses.replace(options, target=dataclasses.replace(
            target_for(board), opt_level=chosen.opt_level, size_attribute=chosen.size_attribute,
            relocation=chosen.relocation, code_model=chosen.code_model))
    debug_format = check_format(instrument_debug_format)
    if parse_bool("instrument-debug", instrument_debug):
        if debug_format != "console":
            StagedFiles.check(instrument_debug_dir, "-instrument-debug-dir", directory=True)
        run_options = dataclasses.replace(options, save_node_outputs=instrument_debug_only or "")
    elif instrument_debug_only is not None:
        raise GlowError("-instrument-debug-only needs -instrument-debug")
    else:
        run_options = options
    bundle = compile_module(import_network(model, run_options), run_options)
    if any(kind == "library" for _, kind, _ in bundle.library_calls) and not links:
        raise GlowError("the bundle calls a kernel library: give it with -link=<library sources, objects or "
                        "archive> (e.g. the CMSIS-NN sources)")
    placeholders = [p for p in bundle.layout.placeholders if p.kind == "input"]
    inputs = {}
    for spec in input or []:
        name, _, path = spec.rpartition("=")
        if not name:
            if len(placeholders) != 1:
                raise GlowError(f"-input=\"{spec}\": name the input "
                                f"(inputs: {', '.join(p.name for p in placeholders)})")
            name = placeholders[0].name
        placeholder = bundle.layout.placeholder(name)
        value = load_input(path, placeholder, image_mode)
        if value.size != placeholder.size:
            raise GlowError(f"-input=\"{spec}\": {value.size} values, input \"{name}\" needs {list(placeholder.shape)}")
        inputs[placeholder.name] = value.reshape(placeholder.shape)  # the model's name or the bundle's
    missing = [p.name for p in placeholders if p.name not in inputs]
    if missing:
        raise GlowError(f"no -input for {', '.join(missing)}")
    runner = None
    if board == "host":
        runner = HostRunner(bundle.layout, bundle.object_code, link=links)
        outputs, instructions = runner.run(inputs), None
    else:
        result = run_on_board(bundle, board, inputs, weights_in, count_instructions=True, link=links,
                              count_cycles=count_cycles, flash_wait_states=flash_wait_states)
        outputs, instructions = result.outputs, result.instructions
    if run_options is not options:
        outputs = dump_node_outputs(bundle, outputs, instrument_debug_dir, debug_format, sys.stdout)
    np.set_printoptions(precision=6, suppress=True, linewidth=120)
    for key, value in outputs.items():
        flat = value.reshape(-1)
        name = bundle.layout.placeholder(key).given_name  # the model's name for it
        print(f"{name} {list(value.shape)}: {flat}")
        quantization = bundle.layout.placeholder(key).quantization
        if quantization is not None:
            scale, offset = quantization
            print(f"{name} dequantized: {np.float32(scale) * (flat.astype(np.float32) - offset)}")
        if flat.size > 1:
            print(f"{name} argmax: {int(flat.argmax())}")
    if instructions is not None:
        print(f"instructions per inference on {board}: {instructions}")
    if count_cycles:
        print(cycles_line(board, result.cycles, instructions, result.timing, flash_wait_states))
    if show_profile:
        print_profile(model, board, inputs, runner, instructions, weights_in, options, links, picture)


def cycles_line(board: str, cycles, instructions: int, timing, flash_wait_states: int = 0) -> str:
    """What -cycles prints: the estimate, its range, cycles per instruction, the model."""
    from glowmlir.runtime.cycles import cycles_label

    text = f"{cycles_label(timing, flash_wait_states)} per inference on {board}: {round(cycles.estimate):,}"
    if round(cycles.low) != round(cycles.high):
        text += f" (range {round(cycles.low):,}-{round(cycles.high):,})"
    return text + f", {cycles.estimate / instructions:.2f} cycles/instruction [{timing.describe()}]"


def print_profile(model: list[str], board: str, inputs: dict[str, np.ndarray], runner, instructions: int | None,
                  weights_in: str, options, links: list[str], picture: str | None) -> None:
    """`-profile`: the per-layer table (and picture) of one inference."""
    from glowmlir.layer_profile import profile_on_board, profile_on_host, write_picture

    if board == "host":
        layer_profile = profile_on_host(model, inputs, runner, options, links)
    else:
        layer_profile = profile_on_board(model, board, inputs, instructions, options, weights_in, links)
    print()
    layer_profile.print()
    if picture is not None:
        write_picture(layer_profile, picture)
        print(f"profile picture: {picture}")


def main(argv: Sequence[str] | None = None) -> None:
    from glowmlir.cli.compile import BOOLEAN_OPTIONS, FLAG_OPTIONS

    run_app(app, "glow-run", argv, ["profile", "instrument-debug", "cycles", *BOOLEAN_OPTIONS], FLAG_OPTIONS)


if __name__ == "__main__":
    main()
