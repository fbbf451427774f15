"""`glow-profile`: Glow's model-profiler — runs the float model over a calibration set and
writes a quantization profile (Glow's YAML format) for `glow-compile -load-profile`.

    glow-profile -model=lenet_mnist.onnx -image-mode=0to1 images/ -dump-profile=lenet.yaml
    glow-profile -model=net.onnx -input-dataset=data,rawbin,dir,calib/ -dump-profile=net.yaml
    glow-profile -model=net.onnx calibration.npz -dump-profile=net.yaml

Positional arguments are images (files or directories, image-classifier's pre-processing)
or `.npy`/`.npz` arrays, each optionally `name=`-prefixed; `-input-dataset` reads raw
tensors as model-profiler does.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Annotated, Optional

import typer

from glowmlir.cli.common import (
    OBSERVER_OPTIONS,
    QUANTIZATION_FLAGS,
    AssertQuantizedOption,
    CalibrateConstantsOption,
    CalibrationOption,
    ChannelwiseOption,
    ConvertPlaceholdersOption,
    KeepPrecisionOption,
    PrecisionBiasOption,
    PrecisionOption,
    QuantizationArguments,
    SchemaOption,
    model_input_options,
    observed,
    run_app,
)
from glowmlir.errors import GlowError, GlowWarning

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


def _is_array(entry: str) -> bool:
    return entry.rsplit("=", 1)[-1].endswith((".npy", ".npz"))


@app.command()
def profile_command(
    model: Annotated[list[str], typer.Option("--model", "-m", help="ONNX (.onnx, .onnxtxt) or TFLite (.tflite) file, "
                                             "or Caffe2 directory (or net and weights: -model twice)")],
    dump_profile: Annotated[str, typer.Option("--dump-profile", help="profile file to write (YAML)")],
    inputs: Annotated[Optional[list[str]], typer.Argument(help="[name=]image|dir|file.npy|file.npz")] = None,
    input_dataset: Annotated[Optional[list[str]], typer.Option(
        "--input-dataset", help="name,rawbin|rawtxt,file|dir,path[,dir]; repeatable")] = None,
    model_input: Annotated[Optional[list[str]], typer.Option("--model-input", "--model-input-name",
                                                             help="name,float,[d0,d1,...]; repeatable")] = None,
    onnx_define_symbol: Annotated[Optional[list[str]], typer.Option("--onnx-define-symbol",
                                                                    help="symbol,value")] = None,
    image_mode: Annotated[Optional[str], typer.Option("--image-mode",
                                                      help="0to1, 0to255 (default), neg1to1, neg128to127")] = None,
    image_layout: Annotated[Optional[str], typer.Option("--image-layout", help="NCHW (default) or NHWC")] = None,
    image_channel_order: Annotated[Optional[str], typer.Option("--image-channel-order",
                                                               help="BGR (default) or RGB")] = None,
    mean: Annotated[Optional[str], typer.Option("--mean",
                                                help="per-channel mean, 0..255 units, e.g. 104,117,123")] = None,
    stddev: Annotated[Optional[str], typer.Option("--stddev",
                                                  help="per-channel standard deviation, 0..255 units")] = None,
    num_histogram_bins: Annotated[int, typer.Option("--num-histogram-bins",
                                                    help="histogram bins per value (KL needs >= 255)")] = 10,
    quantization_schema: SchemaOption = None,
    quantization_precision: PrecisionOption = None,
    quantization_precision_bias: PrecisionBiasOption = None,
    quantization_calibration: CalibrationOption = None,
    enable_channelwise: ChannelwiseOption = "false",
    keep_original_precision_for_nodes: KeepPrecisionOption = None,
    convert_placeholders: ConvertPlaceholdersOption = "false",
    assert_all_nodes_quantized: AssertQuantizedOption = "false",
    calibrate_constants: CalibrateConstantsOption = "false",
    do_not_lower_nodes_for_profiling: Annotated[Optional[str], typer.Option(
        "--do-not-lower-nodes-for-profiling", help="Glow node kinds profiled unlowered (glowmlir profiles every "
                                                   "node unlowered: checked, changes nothing)")] = None,
    time_passes: Annotated[str, typer.Option("--time", help="print the seconds of each stage and pass "
                                             "on stderr")] = "false",
    verbose: Annotated[str, typer.Option("--verbose", help="name each stage and pass on stderr as it "
                                         "starts")] = "false",
) -> None:
    """Profile a float model over calibration inputs."""
    from glowmlir.bundle import StagedFiles
    from glowmlir.compiler import CompileOptions
    from glowmlir.datasets import ImageOptions, calibration_samples, image_input_shape, parse_input_dataset
    from glowmlir.importers import model_format
    from glowmlir.instrumentation import stage, step
    from glowmlir.profiling import Profiler
    from glowmlir.quantization.node_kinds import check_node_kinds
    from glowmlir.quantization.profile import MAX_NUM_BINS, write_profile

    if not 1 <= num_histogram_bins <= MAX_NUM_BINS:
        raise GlowError(f"-num-histogram-bins={num_histogram_bins}: must be between 1 and {MAX_NUM_BINS} (2^20)")
    StagedFiles.check(dump_profile, "-dump-profile")  # before the profiling run, not after it
    image_options = ImageOptions.parse(image_mode, image_layout, image_channel_order, mean, stddev)
    datasets = [parse_input_dataset(spec) for spec in input_dataset or []]
    entries = inputs or []
    if not entries and not datasets:
        raise GlowError("no calibration inputs: give images, .npy/.npz files or -input-dataset")
    quantization = QuantizationArguments(quantization_schema, quantization_precision, quantization_precision_bias,
                                         quantization_calibration, keep_original_precision_for_nodes,
                                         enable_channelwise, convert_placeholders, assert_all_nodes_quantized,
                                         calibrate_constants)
    if do_not_lower_nodes_for_profiling is not None:  # Glow lowers before profiling; glowmlir never does
        check_node_kinds("do-not-lower-nodes-for-profiling", [k for k in do_not_lower_nodes_for_profiling.split(",")
                                                               if k])
    if quantization.given():  # Glow's tools share the loader's options; these apply when quantizing
        warnings.warn(GlowWarning(f"{', '.join('-' + o for o in quantization.given())}: no effect when profiling "
                                  f"(give them to glow-compile with -load-profile)"))
    # `-model-input-name=data` alone names the input the images feed, as in image-classifier:
    # its shape is the model's, or the images' for a Caffe2 model (which shapes no input).
    named_only = [spec for spec in model_input or [] if "," not in spec]
    specs = [spec for spec in model_input or [] if "," in spec]
    images = [entry for entry in entries if not _is_array(entry)]
    if named_only and images and model_format(model) == "caffe2":
        shape = ",".join(map(str, image_input_shape(images, image_options)))
        specs += [f"{name},float,[{shape}]" for name in named_only]
    options = CompileOptions(**model_input_options(specs, onnx_define_symbol))
    with observed("glow-profile", time_passes, verbose):
        profiler = Profiler.for_model(model, options, num_histogram_bins)
        unknown = [name for name in named_only if name not in profiler.input_shapes()]
        if unknown:
            raise GlowError(f"-model-input-name=\"{unknown[0]}\": the model has no input \"{unknown[0]}\" "
                            f"(inputs: {', '.join(profiler.input_shapes())})")
        count, feeds = calibration_samples(profiler.input_shapes(), [e for e in entries if not _is_array(e)],
                                           datasets, [e for e in entries if _is_array(e)], image_options)
        with stage("profiling", steps=count):
            for _ in profiler.run(feeds):
                step()
    write_profile(dump_profile, profiler.profile)
    print(f"profiled {len(profiler.profile.entries)} values over {count} inferences; wrote {dump_profile}")


def main(argv: Sequence[str] | None = None) -> None:
    run_app(app, "glow-profile", argv, (*QUANTIZATION_FLAGS, *OBSERVER_OPTIONS))


if __name__ == "__main__":
    main()
