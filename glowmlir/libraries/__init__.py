"""Kernel libraries that kernel selection maps quantized instructions onto."""
