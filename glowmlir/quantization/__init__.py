"""Glow's quantization arithmetic in pure Python/numpy, free of xDSL: `params` chooses scale and
offset from a profiled range exactly as Glow's `chooseQuantizationParams` (with the four schemas,
Int8/Int16/Int32 ranges and optional KL calibration), quantizes and dequantizes tensors, and turns
real rescaling factors into the TFLite/CMSIS-NN (multiplier, shift) pairs together with a bit-exact
model of `arm_nn_requantize`; `profile` accumulates Glow's per-value min/max/histogram profiles and
reads and writes them in Glow's three-document YAML profile format (`-dump-profile`/`-load-profile`).
"""
