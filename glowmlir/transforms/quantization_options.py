"""`-load-profile` and the options that go with it (Glow's names, defaults and checks);
`quantize.quantization_passes` turns them into passes."""

from __future__ import annotations

from dataclasses import dataclass

from glowmlir.errors import GlowError
from glowmlir.quantization.node_kinds import check_node_kinds
from glowmlir.quantization.params import (
    CALIBRATIONS,
    PERCENTILE,
    SCHEMAS,
)

QUANTIZATION_CHOICES = {"quantization-schema": SCHEMAS, "quantization-precision": ("Int8", "Int16"),
                        "quantization-precision-bias": ("Int8", "Int32"), "quantization-calibration": CALIBRATIONS}
"""The values Glow's quantization options take."""


def check_choice(option: str, value: str) -> None:
    """Refuses a value `-option` (one of `QUANTIZATION_CHOICES`) does not take."""
    if value not in QUANTIZATION_CHOICES[option]:
        raise GlowError(f"-{option}=\"{value}\": expected one of {', '.join(QUANTIZATION_CHOICES[option])}")


def check_percentile(percentile: float) -> None:
    """`-quantization-percentile` keeps a share of each histogram: more than 50 %, at most 100 %."""
    if not 50.0 < percentile <= 100.0:
        raise GlowError(f"-quantization-percentile={percentile:g}: expected a percentage above 50 and at most 100")


@dataclass(frozen=True)
class QuantizationOptions:
    """`-load-profile` and the options that go with it (Glow's names and defaults)."""

    profile: str
    schema: str = "asymmetric"
    precision: str = "Int8"
    precision_bias: str = "Int32"
    channelwise: bool = False
    calibration: str = "None"
    percentile: float = PERCENTILE  # -quantization-percentile (an extension): what Percentile keeps
    calibrate_constants: bool = False  # -calibrate-constants: weights' ranges calibrated too
    keep_original_precision_for_nodes: tuple[str, ...] = ()
    assert_all_nodes_quantized: bool = False
    convert_placeholders: bool = False
    symmetric_weights: bool = False  # set by -use-cmsis / -use-hifi4: the libraries need them, and an Int32
    # bias (an Int8 one is widened to Int32 exactly, `_widened_bias`)
    bias_correction: bool = True  # -quantization-bias-correction (an extension): `_bias_corrected`; a profile
    # without channel means (Glow's) leaves the biases as they are whatever this says

    def check(self) -> None:
        if not self.profile:
            raise GlowError("-load-profile: the path is empty")
        for option, value in (("quantization-schema", self.schema), ("quantization-precision", self.precision),
                              ("quantization-precision-bias", self.precision_bias),
                              ("quantization-calibration", self.calibration)):
            check_choice(option, value)
        check_node_kinds("keep-original-precision-for-nodes", self.keep_original_precision_for_nodes)
        check_percentile(self.percentile)
        if self.channelwise and self.precision_bias != "Int32":
            raise GlowError("-enable-channelwise needs -quantization-precision-bias=Int32")
