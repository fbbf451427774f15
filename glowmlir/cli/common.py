"""What the command-line tools share: Glow's option spelling and one-line errors."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, NoReturn, Optional

import typer
from typer._click.exceptions import UsageError  # typer 0.29 vendors click; pinned in pyproject

from glowmlir.errors import GlowError, GlowWarning

CMAKE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cmake")
"""glowmlir's CMake package (glowmlirConfig.cmake: `glowmlir_add_bundle`), package data beside
the Python code: `glow-compile -print-cmake-dir` and `python -m glowmlir --cmake-dir` print it."""

_BOOL = {"true": True, "1": True, "false": False, "0": False}


def parse_bool(option: str, value: str) -> bool:
    """An LLVM cl boolean option's value (`true`, `false`, `1`, `0`)."""
    if value.lower() not in _BOOL:
        raise GlowError(f"-{option}=\"{value}\": expected true or false")
    return _BOOL[value.lower()]


QUANTIZATION_FLAGS = ("enable-channelwise", "convert-placeholders", "assert-all-nodes-quantized", "calibrate-constants")
"""Glow's boolean quantization options (off by default)."""
BOOLEAN_QUANTIZATION_OPTIONS = (*QUANTIZATION_FLAGS, "quantization-bias-correction")
"""The quantization options given bare for true: Glow's flags and -quantization-bias-correction
(an extension, on by default)."""

_WITH_PROFILE = "; used with -load-profile, changes nothing when profiling"
SchemaOption = Annotated[Optional[str], typer.Option(
    "--quantization-schema", help="asymmetric (default), symmetric, symmetric_with_uint8, symmetric_with_power2_scale"
                                  + _WITH_PROFILE)]
PrecisionOption = Annotated[Optional[str], typer.Option("--quantization-precision",
                                                        help="Int8 (default) or Int16" + _WITH_PROFILE)]
PrecisionBiasOption = Annotated[Optional[str], typer.Option("--quantization-precision-bias",
                                                            help="Int32 (default) or Int8" + _WITH_PROFILE)]
CalibrationOption = Annotated[Optional[str], typer.Option("--quantization-calibration",
                                                          help="None (default), KL, or Percentile (the central "
                                                               "99.99% of the profiled histogram; an extension)"
                                                          + _WITH_PROFILE)]
PercentileOption = Annotated[Optional[float], typer.Option(
    "--quantization-percentile", help="the % of each histogram -quantization-calibration=Percentile keeps "
                                      "(default 99.99; an extension)" + _WITH_PROFILE)]
ChannelwiseOption = Annotated[str, typer.Option("--enable-channelwise",
                                                help="per-channel convolution filters" + _WITH_PROFILE)]
KeepPrecisionOption = Annotated[Optional[str], typer.Option(
    "--keep-original-precision-for-nodes", help="Glow node kinds kept float, e.g. SoftMax,Add" + _WITH_PROFILE)]
ConvertPlaceholdersOption = Annotated[str, typer.Option("--convert-placeholders",
                                                        help="quantized inputs/outputs" + _WITH_PROFILE)]
AssertQuantizedOption = Annotated[str, typer.Option(
    "--assert-all-nodes-quantized", help="fail if a node not kept float stays float" + _WITH_PROFILE)]
CalibrateConstantsOption = Annotated[str, typer.Option(
    "--calibrate-constants", help="calibrate the weights' ranges too (-quantization-calibration=KL)" + _WITH_PROFILE)]
BiasCorrectionOption = Annotated[Optional[str], typer.Option(
    "--quantization-bias-correction", help="true (default) or false: biases cancel the mean error of weight "
                                           "rounding, from the profile's channel means (an extension; a profile "
                                           "Glow wrote has none)" + _WITH_PROFILE)]


@dataclass(frozen=True)
class QuantizationArguments:
    """Glow's quantization options as given on a command line (None: not given). Every value
    is checked whether or not it takes effect, as Glow's option parser does."""

    schema: str | None = None
    precision: str | None = None
    precision_bias: str | None = None
    calibration: str | None = None
    keep_original_precision_for_nodes: str | None = None
    channelwise: str = "false"
    convert_placeholders: str = "false"
    assert_all_nodes_quantized: str = "false"
    calibrate_constants: str = "false"
    percentile: float | None = None
    bias_correction: str | None = None  # -quantization-bias-correction: on unless "false"

    def __post_init__(self) -> None:
        from glowmlir.quantization.node_kinds import check_node_kinds
        from glowmlir.transforms.quantization_options import check_choice

        for option, value in self.values().items():
            check_choice(option, value)
        if self.keep_original_precision_for_nodes is not None:
            if not self.keep_original_precision_for_nodes.strip(","):
                raise GlowError(f"-keep-original-precision-for-nodes=\"{self.keep_original_precision_for_nodes}\": "
                                f"empty value (expected node kinds such as SoftMax,Relu)")
            check_node_kinds("keep-original-precision-for-nodes", self.kinds_kept())
        self.flags()
        if self.percentile is not None:
            from glowmlir.transforms.quantization_options import check_percentile

            check_percentile(self.percentile)

    def values(self) -> dict[str, str]:
        """The value options given, by option name (calibration as Glow spells it: None or KL)."""
        spelled = {"none": "None", "kl": "KL", "percentile": "Percentile"}
        calibration = self.calibration and spelled.get(self.calibration.lower(), self.calibration)
        values = {"quantization-schema": self.schema, "quantization-precision": self.precision,
                  "quantization-precision-bias": self.precision_bias, "quantization-calibration": calibration}
        return {option: value for option, value in values.items() if value is not None}

    def kinds_kept(self) -> tuple[str, ...]:
        return tuple(kind for kind in (self.keep_original_precision_for_nodes or "").split(",") if kind)

    def flags(self) -> dict[str, bool]:
        """Glow's quantization flags, true where set on the command line."""
        values = (self.channelwise, self.convert_placeholders, self.assert_all_nodes_quantized,
                  self.calibrate_constants)
        return {option: parse_bool(option, value) for option, value in zip(QUANTIZATION_FLAGS, values)}

    def corrects_biases(self) -> bool | None:
        """-quantization-bias-correction's value; None where not given (on by default)."""
        if self.bias_correction is None:
            return None
        return parse_bool("quantization-bias-correction", self.bias_correction)

    def given(self) -> list[str]:
        """The options given a value (Glow's flags: set true)."""
        kept = ["keep-original-precision-for-nodes"] if self.keep_original_precision_for_nodes is not None else []
        kept += ["quantization-percentile"] if self.percentile is not None else []
        kept += ["quantization-bias-correction"] if self.corrects_biases() is not None else []
        return [*self.values(), *kept, *(option for option, on in self.flags().items() if on)]

    def options(self, profile: str):
        """The `QuantizationOptions` of `-load-profile=<profile>` with these options."""
        from glowmlir.transforms.quantization_options import QuantizationOptions

        values, flags = self.values(), self.flags()
        if flags["calibrate-constants"] and values.get("quantization-calibration", "None") == "None":
            warnings.warn(GlowWarning("-calibrate-constants: no effect without -quantization-calibration=KL "
                                      "(or Percentile)"))
        if self.percentile is not None and values.get("quantization-calibration") != "Percentile":
            warnings.warn(GlowWarning("-quantization-percentile: no effect without -quantization-calibration="
                                      "Percentile"))
        chosen = {field: values[option] for field, option in (
            ("schema", "quantization-schema"), ("precision", "quantization-precision"),
            ("precision_bias", "quantization-precision-bias"), ("calibration", "quantization-calibration"))
            if option in values}
        return QuantizationOptions(profile, **chosen, channelwise=flags["enable-channelwise"],
                                   keep_original_precision_for_nodes=self.kinds_kept(),
                                   assert_all_nodes_quantized=flags["assert-all-nodes-quantized"],
                                   convert_placeholders=flags["convert-placeholders"],
                                   calibrate_constants=flags["calibrate-constants"],
                                   bias_correction=self.corrects_biases() is not False,
                                   **({"percentile": self.percentile} if self.percentile is not None else {}))


TimeOption = Annotated[str, typer.Option("--time", help="print the seconds of each stage and pass on stderr")]
VerboseOption = Annotated[str, typer.Option("--verbose", help="name each stage and pass on stderr as it starts")]
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


GLOW_ALIASES = {"m": "model", "model-input-name": "model-input", "mattr": "target-feature", "i": "image-mode",
                "l": "image-layout"}
"""Every `llvm::cl::alias` Glow's tools declare (tools/loader/Loader.cpp, lib/Base/Image.cpp,
lib/LLVMIRCodeGen/CommandLine.cpp): alias → option."""


def glow_style_arguments(argv: Sequence[str], boolean_options: Sequence[str] = (),
                         flag_options: Sequence[str] = ()) -> list[str]:
    """`-model=x` and `-model x` (LLVM cl style) become `--model=x` / `--model x`; Glow's
    aliases become their option (`-m=x` → `--model=x`); a bare boolean option
    (`-enable-channelwise`) becomes `--enable-channelwise=true`, as in LLVM, and a flag
    (`flag_options`, typer's on/off options) given `=true` or `=false` is set or left out."""
    arguments = []
    for argument in argv:
        match = re.fullmatch(r"--?([A-Za-z][\w-]*)(=.*)?", argument, re.DOTALL)
        if match:
            name, value = GLOW_ALIASES.get(match.group(1), match.group(1)), match.group(2) or ""
            argument = f"--{name}{value}"
            if not value and name in boolean_options:
                argument += "=true"
            if value and name in flag_options:
                if not parse_bool(name, value[1:]):
                    continue
                argument = f"--{name}"
        arguments.append(argument)
    return arguments


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


FIXED_GLOW_OPTIONS = {
    "enable-rowwise": ("false", "rowwise-quantized FullyConnected has no kernel here (per-channel convolution "
                                "filters: -enable-channelwise)"),
    "convert-to-fp16": ("false", "there are no float16 compute kernels (float16 inputs: "
                                 "-model-input=<name>,float16,[...])"),
    "tflite-uint8-to-int8": ("true", "UINT8 TFLite tensors are always converted to INT8: there are no uint8 kernels"),
    "bundle-objects": (None, "Glow archives objects pre-registered in its own build into the bundle; a glowmlir "
                             "bundle is one self-contained object (link other objects with your firmware)"),
}
"""Glow options taken only at the value glowmlir always has (None: at no value), and why."""


def fixed_glow_options(argv: Sequence[str]) -> list[str]:
    """`argv` (after `glow_style_arguments`) without the `FIXED_GLOW_OPTIONS` given at the value
    glowmlir has; any other value is refused with the reason."""
    kept = []
    for argument in argv:
        name, _, value = argument.removeprefix("--").partition("=")
        if argument.startswith("--") and name in FIXED_GLOW_OPTIONS:
            accepted, why = FIXED_GLOW_OPTIONS[name]
            value = value or "true"
            if accepted is None or value.lower() not in (accepted, {"true": "1", "false": "0"}[accepted]):
                shown = f"-{name}" + (f"=\"{value}\"" if accepted is not None else "")
                raise GlowError(f"{shown} is not supported: {why}")
            continue
        kept.append(argument)
    return kept


def version_text(program: str) -> str:
    """`-version`: the tool, glowmlir's version and the LLVM it generates code with, as Glow's
    tools print LLVM's version."""
    import importlib.metadata

    from llvmlite import binding

    from glowmlir import __version__

    llvm = ".".join(map(str, binding.llvm_version_info))
    return (f"{program} (glowmlir {__version__}, Glow model-compiler compatible)\n"
            f"  LLVM version {llvm} (llvmlite {importlib.metadata.version('llvmlite')}), "
            f"xDSL {importlib.metadata.version('xdsl')}")


def run_app(app: typer.Typer, program: str, argv: Sequence[str] | None, boolean_options: Sequence[str] = (),
            flag_options: Sequence[str] = ()) -> None:
    """Runs a typer app; a user error (GlowError, or a bad command line) becomes one
    `<program>: error: ...` line and exit status 2, a GlowWarning one `<program>: warning: ...`
    line. Anything else is a bug in glowmlir and keeps its traceback. `boolean_options` take
    `=true|false` but may be given bare, `flag_options` (on/off) may be given `=true|false`;
    `-version` prints `version_text`."""
    argv = sys.argv[1:] if argv is None else argv
    if any(argument.lstrip("-") == "version" for argument in argv):
        print(version_text(program))
        return
    try:
        argv = fixed_glow_options(glow_style_arguments(argv, boolean_options, flag_options))
        with warnings_as_lines(program):
            status = app(argv, prog_name=program, standalone_mode=False)
        if isinstance(status, int) and status:  # a command's own exit status (typer.Exit), e.g. mismatches
            sys.exit(status)
    except GlowError as error:
        fail(program, str(error))
    except UsageError as error:
        fail(program, error.format_message())
