"""Profile-guided quantization of the `glow` graph (Glow's FunctionQuantizer), `glow-quantize`;
`quantization_passes` gives it with the passes that follow it.

* `glow-quantize{profile=F schema=... precision=... ...}` — every op that has an integer
  kernel and whose values the profile covers gets quantized types
  (`!quant.uniform<i8:f32, scale:offset>`); `glow.quantize`/`glow.dequantize` appear at
  the boundaries with float ops and graph I/O, constants are quantized at compile time;
* `glow-optimize-quantization` (`optimize_quantization`) — removes conversion pairs that cancel and folds the rest
  (Glow's OptimizeQuantization);
* `glow-convert-placeholders` (`convert_placeholders`) — graph inputs and outputs take the quantized types
  themselves (`-convert-placeholders`), so no conversion runs in the bundle.

Parameters follow Glow (glow-quantization.md): activations use the profiled range and the
schema; weights their own range; a bias is int32 with scale = input scale x weight scale
(what CMSIS-NN adds straight into its accumulators) and offset 0. `-enable-channelwise`
gives convolution filters one symmetric scale per output channel (axis 0, OIHW);
bias correction (an extension, on by default; `-quantization-bias-correction=false`) moves each
Convolution/FullyConnected bias by the mean error of the op's integer form, from the profile's
channel means (`_bias_corrected`; a profile Glow wrote has none: its biases stay).
Max/AvgPool, Reshape, Transpose, Slice and Pad keep their input's type (but an int8 average
whose profiled range is much narrower, a global average pool's, takes its own: `_averaged`); Concat rescales its
inputs to its own type; SoftMax outputs have scale 1/256 and offset -128 (TFLite's rule).
A value read only by lookup tables (HardSwish, HardSigmoid, ...) is quantized over the span of
its profiled range where their functions still change (`_varying_span`).

`-quantization-precision=Int16` follows TFLite's 16x8 scheme (CMSIS-NN's s16 functions):
activations are int16 and symmetric (offset 0: the asymmetric schemas become `symmetric`),
weights stay int8 (per the schema, symmetric per channel), biases int32; SoftMax outputs
have scale 1/32768 and offset 0; lookup-table ops get 513-entry interpolated int16 tables
(`quantization.lookup_tables`). Div by a tensor has no int16 kernel and stays float.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.passes import ModulePass

from glowmlir.dialects import glow
from glowmlir.errors import GlowError, GlowWarning
from glowmlir.quantization.glow_names import PROFILE_NAME, written_by_glowmlir
from glowmlir.quantization.params import (
    KL_QUANTIZED_BINS,
    PERCENTILE,
)
from glowmlir.quantization.profile import Profile, read_profile
from glowmlir.transforms.convert_placeholders import ConvertPlaceholders
from glowmlir.transforms.optimize_quantization import OptimizeQuantization
from glowmlir.transforms.profile_keys import graph_hash, profile_entry, value_key
from glowmlir.transforms.quantization_options import QuantizationOptions
from glowmlir.transforms.quantized_conversion import FunctionQuantizer

KL_BINS = 2048
"""The histogram bins KL calibration is meant for (TensorRT's count): the window search sees
quantization error only where a window holds several bins per int8 level."""


def warn_coarse_histograms(profile: Profile) -> None:
    """KL narrows a range only down to 255 of its histogram's bins: with fewer than 2 x 255 it
    can hardly narrow at all (with 255, never), which deserves a word."""
    bins = min((entry.histogram.size for entry in profile.entries.values()), default=KL_BINS)
    if bins < 2 * KL_QUANTIZED_BINS:
        warnings.warn(GlowWarning(f"-quantization-calibration=KL: the profile's histograms have {bins} bins; KL "
                                  f"narrows a range to no fewer than {KL_QUANTIZED_BINS} of them (profile with "
                                  f"-num-histogram-bins={KL_BINS})"))


def check_profile_matches(module: ModuleOp, profile: Profile, path: str) -> None:
    """A profile made by glowmlir must be for this graph; any profile must name its values.
    The hash of a profile Glow wrote is of Glow's graph and cannot be compared (Glow's own
    loader refuses a mismatch): its entries are matched by name alone."""
    if written_by_glowmlir(profile.tools_version) and profile.graph_hash != graph_hash(module):
        raise GlowError(f"-load-profile: \"{path}\" was made for another graph (graph hash mismatch; "
                        f"profile again with the same model and options)")
    for op in module.walk():
        if isinstance(op, glow.PlaceholderOp) or (type(op) in glow.glow_kinds() and glow.NODE_NAME in op.attributes):
            value = op.results[0]
            if value.type.element_type == f32 and profile_entry(value, profile) is None:
                glow_name = op.attributes.get(PROFILE_NAME)
                also = f" (or Glow's \"{glow_name.data}:0\")" if glow_name and \
                    not written_by_glowmlir(profile.tools_version) else ""
                raise GlowError(f"-load-profile: \"{path}\" has no entry \"{value_key(value)}\"{also}: "
                                f"it was made for another model")


@dataclass(frozen=True)
class Quantize(ModulePass):
    """Quantizes every op with an integer kernel, using a Glow profile (see module doc)."""

    name = "glow-quantize"

    profile: str = ""
    schema: str = "asymmetric"
    precision: str = "Int8"
    precision_bias: str = "Int32"
    channelwise: bool = False
    calibration: str = "None"
    percentile: float = PERCENTILE
    calibrate_constants: bool = False
    keep_original_precision_for_nodes: str = ""
    assert_all_nodes_quantized: bool = False
    symmetric_weights: bool = False
    bias_correction: bool = True

    def config(self) -> QuantizationOptions:
        options = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        kinds = tuple(kind for kind in self.keep_original_precision_for_nodes.split(",") if kind)
        return QuantizationOptions(**options | {"keep_original_precision_for_nodes": kinds})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.profile:
            raise GlowError("glow-quantize needs profile=<file>")
        config = self.config()
        config.check()
        profile = read_profile(self.profile)
        check_profile_matches(op, profile, self.profile)
        if config.calibration == "KL":
            warn_coarse_histograms(profile)
        for function in [f for f in op.body.block.ops if isinstance(f, glow.FunctionOp)]:
            FunctionQuantizer(function, profile, config).run()


def quantization_passes(options: QuantizationOptions) -> list[ModulePass]:
    """glow-quantize, glow-optimize-quantization and, if asked, glow-convert-placeholders."""
    fields = {field.name: getattr(options, field.name) for field in dataclasses.fields(Quantize)}
    quantize = Quantize(**fields | {"keep_original_precision_for_nodes":
                                    ",".join(options.keep_original_precision_for_nodes)})
    return [quantize, OptimizeQuantization()] + ([ConvertPlaceholders()] if options.convert_placeholders else [])
