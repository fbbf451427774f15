"""A host's vector unit (SSE/AVX/AVX-512, NEON): float convolutions on register tiles, int8 depthwise ones."""
