"""The node kinds of Glow's graph IR, as `-keep-original-precision-for-nodes` and
`-do-not-lower-nodes-for-profiling` spell them: every `newNode("...")` of Glow's
tools/ClassGen/NodeGen.cpp. A kind glowmlir has no op for is accepted (nothing of that kind
is in the graph to keep); a name that is no Glow kind is refused."""

from collections.abc import Iterable

from glowmlir.errors import GlowError

GLOW_NODE_KINDS = frozenset({
    "Abs", "Acos", "AdaptiveAvgPool", "Add", "And", "ArgMax", "ArgMin", "Asin", "Atan", "AudioSpectrogram", "AvgPool",
    "BBoxTransform", "BatchBoxCox", "BatchMatMul", "BatchNormalization", "BatchOneHot", "BatchSparseToDense",
    "BatchedAdd", "BatchedMul", "BatchedPairwiseDotProduct", "BatchedPairwiseDotProductGrad", "BatchedReduceAdd",
    "BatchedReduceMax", "BatchedReduceMean", "BatchedReduceMin", "BatchedReduceProd", "BatchedReduceSumSquare",
    "BatchedUnaryEmbeddingsBags", "BinaryCrossEntropyWithLogits", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor",
    "Broadcast", "Bucketize", "Ceil", "ChannelShuffle", "ChannelwiseQuantizedConvolution", "Clip", "CmpEQ", "CmpLT",
    "CmpLTE", "CmpNEQ", "CollectRpnProposals", "Concat", "ConvTranspose", "ConvertTo", "Convolution", "Convolution3D",
    "Cos", "CrossEntropyLoss", "CumSum", "Dequantize", "Div", "DynamicQuantizedFullyConnected",
    "DynamicRowwiseQuantizedFullyConnected", "Embedding", "EmbeddingBag", "EmbeddingBagByteRowwiseOffsets", "Erf",
    "Exp", "ExternalFunctionCall", "FillExamplesWithIndicator", "Flip", "Floor", "FloorDiv", "Fmod", "FullyConnected",
    "FusedRowwiseQuantizedSparseLengthsSum", "FusedRowwiseQuantizedSparseLengthsWeightedSum", "FusionGroup",
    "FusionGroupPlaceholder", "Gather", "GatherElements", "GatherND", "GatherRanges", "GaussianFill", "Gelu", "Gemm",
    "HardSwish", "IndexAdd", "InsertTensor", "InstanceNormalization", "IntLookupTable", "IntNBitSplitEmbeddingBags",
    "IntNBitSplitEmbeddingWeightedBags", "IsNaN", "LSTMUnit", "LayerNormalization", "LeakyRelu", "LengthsRangeFill",
    "LengthsSum", "LengthsToRanges", "LocalResponseNormalization", "Log", "LogSoftMax", "Logit", "LookupTable", "MFCC",
    "MatMul", "Max", "MaxPool", "MeanVarNormalization", "Min", "Modulo", "Mul", "MulConst", "Neg", "NonMaxSuppression",
    "NonZero", "Not", "Or", "PRelu", "Pad", "PermutePooledEmbeddings", "PosWeightBinaryCrossEntropyWithLogits", "Pow",
    "QuantizationProfile", "Quantize", "ROIAlign", "Reciprocal", "Regression", "Relu", "ReplaceNaN", "RescaleQuantized",
    "Reshape", "ResizeBilinear", "ResizeNearest", "Round", "RowwiseQuantizedFullyConnected",
    "RowwiseQuantizedSparseLengthsWeightedSum", "Rsqrt", "RsubConst", "SGD", "Save", "ScatterData", "Select", "Sigmoid",
    "SigmoidCrossEntropyWithLogits", "Sign", "SimpleBinaryCrossEntropyWithLogits", "Sin", "Slice", "SoftMax",
    "SoftPlus", "SpaceToDepth", "SparseLabelSplit", "SparseLengthsSum", "SparseLengthsWeightedSum", "SparseToDenseMask",
    "Splat", "Sqrt", "Sub", "Swish", "TFLiteCustomOperator", "TFLiteDetectionPostProcess", "Tanh", "ThresholdGrad",
    "Tile", "TopK", "Touch", "TraceEvent", "Transpose", "Truncate", "VectorNorm", "WeightBinaryCrossEntropyWithLogits",
    "Xor"
})


def check_node_kinds(option: str, kinds: Iterable[str]) -> None:
    """Refuses the first name in `kinds` that is not a Glow node kind, naming `-option`."""
    unknown = sorted(set(kinds) - GLOW_NODE_KINDS)
    if unknown:
        close = [kind for kind in sorted(GLOW_NODE_KINDS) if kind.lower() == unknown[0].lower()]
        hint = f"did you mean {close[0]}?" if close else "Glow's kinds are spelled as in its graph, e.g. SoftMax, Add"
        raise GlowError(f"-{option}: \"{unknown[0]}\" is not a Glow node kind ({hint})")
