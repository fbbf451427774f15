"""glowmlir: an ahead-of-time neural-network compiler producing Glow-compatible bundles."""

from glowmlir.compiler import Bundle, CompileOptions, compile  # noqa: A004
from glowmlir.errors import GlowError, GlowWarning

__all__ = ["Bundle", "CompileOptions", "GlowError", "GlowWarning", "compile"]
