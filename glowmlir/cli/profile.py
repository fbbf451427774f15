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

import dataclasses
import functools
import warnings
from collections.abc import Sequence
from typing import Annotated, Optional

import typer

from glowmlir.cli import common
from glowmlir.cli.common import (
    BOOLEAN_QUANTIZATION_OPTIONS,
    OBSERVER_OPTIONS,
    QuantizationArguments,
    model_input_options,
    observed,
    parse_bool,
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
    dump_profile: Annotated[Optional[str], typer.Option(
        "--dump-profile", help="profile file to write (YAML); without it the images are only classified, as "
                               "image-classifier does")] = None,
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
    quantization_schema: common.SchemaOption = None,
    quantization_precision: common.PrecisionOption = None,
    quantization_precision_bias: common.PrecisionBiasOption = None,
    quantization_calibration: common.CalibrationOption = None,
    quantization_percentile: common.PercentileOption = None,
    enable_channelwise: common.ChannelwiseOption = "false",
    keep_original_precision_for_nodes: common.KeepPrecisionOption = None,
    convert_placeholders: common.ConvertPlaceholdersOption = "false",
    assert_all_nodes_quantized: common.AssertQuantizedOption = "false",
    calibrate_constants: common.CalibrateConstantsOption = "false",
    quantization_bias_correction: common.BiasCorrectionOption = None,
    do_not_lower_nodes_for_profiling: Annotated[Optional[str], typer.Option(
        "--do-not-lower-nodes-for-profiling", help="Glow node kinds profiled unlowered (glowmlir profiles every "
                                                   "node unlowered: checked, changes nothing)")] = None,
    input_image_dir: Annotated[Optional[list[str]], typer.Option("--input-image-dir",
                                                                 help="a directory of images; repeatable")] = None,
    minibatch: Annotated[int, typer.Option("--minibatch", help="images per inference (the named input's batch; "
                                           "0: the model's own)")] = 0,
    input_values_range: Annotated[Optional[str], typer.Option(
        "--input-values-range", help="U8 (8-bit images; the only kind read)")] = None,
    topk: Annotated[Optional[int], typer.Option("--topk", help="print the k most likely labels of each image")] = None,
    expected_labels: Annotated[Optional[list[str]], typer.Option(
        "--expected-labels", help="each image's label, comma-separated: count those not in the top k")] = None,
    label_offset: Annotated[int, typer.Option("--label-offset", help="subtracted from each label (TF models with "
                                              "1001 classes)")] = 0,
    compute_softmax: Annotated[str, typer.Option("--compute-softmax", help="softmax the output before "
                                                 "ranking")] = "false",
    output_name: Annotated[Optional[str], typer.Option("--output-name", help="the output classified (default: "
                                                       "the model's only one)")] = None,
    load_profile: Annotated[Optional[str], typer.Option("--load-profile", help="classify with the model "
                                                        "quantized by this profile (no -dump-profile)")] = None,
    time_passes: common.TimeOption = "false",
    verbose: common.VerboseOption = "false",
) -> None:
    """Profile a float model over calibration inputs."""
    from glowmlir.bundle import StagedFiles
    from glowmlir.classification import Classifier, parse_labels
    from glowmlir.compiler import CompileOptions, compile_module, import_network
    from glowmlir.datasets import (
        ImageOptions,
        calibration_samples,
        image_files,
        image_input_shape,
        parse_input_dataset,
    )
    from glowmlir.importers import model_format
    from glowmlir.instrumentation import stage, step
    from glowmlir.profiling import Profiler
    from glowmlir.quantization.node_kinds import check_node_kinds
    from glowmlir.quantization.profile import MAX_NUM_BINS, write_profile

    if not 1 <= num_histogram_bins <= MAX_NUM_BINS:
        raise GlowError(f"-num-histogram-bins={num_histogram_bins}: must be between 1 and {MAX_NUM_BINS} (2^20)")
    if dump_profile is not None:
        StagedFiles.check(dump_profile, "-dump-profile")  # before the profiling run, not after it
    if dump_profile is not None and load_profile is not None:
        raise GlowError("-load-profile classifies with a quantized model: not with -dump-profile")
    if input_values_range not in (None, "U8"):
        raise GlowError(f"-input-values-range=\"{input_values_range}\": only U8 (8-bit images are read; "
                        f"-image-mode scales them)")
    if minibatch < 0:
        raise GlowError(f"-minibatch={minibatch}: must be 0 or more")
    image_options = ImageOptions.parse(image_mode, image_layout, image_channel_order, mean, stddev)
    datasets = [parse_input_dataset(spec) for spec in input_dataset or []]
    entries = [*(inputs or []), *(input_image_dir or [])]
    if not entries and not datasets:
        raise GlowError("no calibration inputs: give images, .npy/.npz files or -input-dataset")
    quantization = QuantizationArguments(quantization_schema, quantization_precision, quantization_precision_bias,
                                         quantization_calibration, keep_original_precision_for_nodes,
                                         enable_channelwise, convert_placeholders, assert_all_nodes_quantized,
                                         calibrate_constants, quantization_percentile, quantization_bias_correction)
    if do_not_lower_nodes_for_profiling is not None:  # Glow lowers before profiling; glowmlir never does
        check_node_kinds("do-not-lower-nodes-for-profiling", [k for k in do_not_lower_nodes_for_profiling.split(",")
                                                               if k])
    if quantization.given() and load_profile is None:  # Glow's tools share the loader's options
        warnings.warn(GlowWarning(f"{', '.join('-' + o for o in quantization.given())}: no effect when profiling "
                                  f"(give them to glow-compile with -load-profile)"))
    images = [entry for entry in entries if not _is_array(entry)]
    classifying = dump_profile is None or topk is not None or expected_labels is not None
    classifier = Classifier(1 if topk is None else topk, label_offset, parse_bool("compute-softmax", compute_softmax),
                            [label for text in expected_labels or [] for label in parse_labels(text)])
    files = image_files(images) if classifying else []
    if classifying:
        if datasets or len(images) != len(entries):
            raise GlowError("classifying (-topk, -expected-labels, or no -dump-profile) takes images only")
        classifier.check_count(len(files))
    # `-model-input-name=data` alone names the input the images feed, as in image-classifier:
    # its shape is the model's, or the images' for a Caffe2 model (which shapes no input) and
    # with -minibatch (the images' shape, batch N).
    named_only = [spec for spec in model_input or [] if "," not in spec]
    specs = [spec for spec in model_input or [] if "," in spec]
    if minibatch and not named_only:
        raise GlowError("-minibatch needs -model-input-name=<input> (the input whose batch it sets)")
    if named_only and images and (minibatch or model_format(model) == "caffe2"):
        shape = (minibatch or 1, *image_input_shape(images, image_options)[1:])
        specs += [f"{name},float,[{','.join(map(str, shape))}]" for name in named_only]
    options = CompileOptions(**model_input_options(specs, onnx_define_symbol))
    with observed("glow-profile", time_passes, verbose):
        if dump_profile is not None:
            profiler = Profiler.for_model(model, options, num_histogram_bins)
            bundle, run = profiler.bundle, profiler.run
        else:
            if load_profile is not None:
                options = dataclasses.replace(options, quantization=quantization.options(load_profile))
            bundle = compile_module(import_network(model, options), options)
            run = functools.partial(map, bundle.run)
        shapes = {p.name: p.shape for p in bundle.layout.placeholders if p.kind == "input"}
        unknown = [name for name in named_only if name not in shapes]
        if unknown:
            raise GlowError(f"-model-input-name=\"{unknown[0]}\": the model has no input \"{unknown[0]}\" "
                            f"(inputs: {', '.join(shapes)})")
        outputs = [p.given_name for p in bundle.layout.placeholders if p.kind == "output" and
                   (dump_profile is None or p.name not in profiler.keys)]
        classified = output_name or (outputs[0] if len(outputs) == 1 else None)
        if classifying and classified not in outputs:
            raise GlowError(f"-output-name=\"{output_name}\": no such output (outputs: {', '.join(outputs)})"
                            if output_name else f"the model has {len(outputs)} outputs ({', '.join(outputs)}): "
                                                f"name the one to classify with -output-name")
        count, feeds = calibration_samples(shapes, images, datasets, [e for e in entries if _is_array(e)],
                                           image_options)
        batch = len(files) // count if classifying else 0
        with stage("profiling" if dump_profile is not None else "classifying", steps=count):
            for index, results in enumerate(run(feeds)):
                if classifying:
                    for line in classifier.classify(results[classified], files[index * batch:(index + 1) * batch]):
                        print(line)
                step()
    if classifier.expected:
        print(classifier.summary())
    if dump_profile is None:
        if classifier.mismatches:
            raise typer.Exit(1)  # as image-classifier: the mismatches are its exit status
        return
    write_profile(dump_profile, profiler.profile)
    print(f"profiled {len(profiler.profile.entries)} values over {count} inferences; wrote {dump_profile}")


def main(argv: Sequence[str] | None = None) -> None:
    run_app(app, "glow-profile", argv, (*BOOLEAN_QUANTIZATION_OPTIONS, *OBSERVER_OPTIONS, "compute-softmax"))


if __name__ == "__main__":
    main()
