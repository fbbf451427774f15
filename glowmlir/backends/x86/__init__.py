"""x86-64 AVX-512 VNNI and VBMI: int8 kernels on vpdpbusd, lookup tables on vpermi2b."""
