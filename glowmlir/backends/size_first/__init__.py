"""Size-first builds (-Os/-Oz): quantization numbers as data, kernels whose shapes are data, shared by layers."""
