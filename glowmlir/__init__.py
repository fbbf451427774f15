"""glowmlir: an ahead-of-time neural-network compiler producing Glow-compatible bundles."""

# The one place the version is written: setuptools reads it for the package metadata
# (pyproject.toml), `-version` and profiles print it, the CMake package (glowmlir/cmake) checks
# it. Set before the imports below, so that the modules they load may import it.
__version__ = "0.1.0"

from glowmlir.compiler import Bundle, CompileOptions, compile  # noqa: A004, E402
from glowmlir.errors import GlowError, GlowWarning  # noqa: E402

__all__ = ["Bundle", "CompileOptions", "GlowError", "GlowWarning", "__version__", "compile"]
