"""The autotuner's cache: estimated cycles per layer signature and kernel, a JSON file.

    {"format": "glowmlir-autotune", "version": 1,
     "layers": {"<signature key>": {"signature": {...}, "cycles": {"generic": 5400, "arm-dsp": 1900}}}}

A file that is not such a cache stops the build with one line naming it (`GlowError`): a
cache is a build input, and a silently ignored one would change the kernels a build gets.
"""

from __future__ import annotations

import json
import os
import tempfile

from glowmlir.errors import GlowError

ENVIRONMENT = "GLOWMLIR_AUTOTUNE_CACHE"
"""The environment variable naming the cache file (`-autotune-cache` overrides it)."""
FORMAT = "glowmlir-autotune"
VERSION = 1


def default_path() -> str:
    """`$GLOWMLIR_AUTOTUNE_CACHE`, else `autotune.json` in the user's cache directory
    (`$XDG_CACHE_HOME/glowmlir`, else `~/.cache/glowmlir`)."""
    if os.environ.get(ENVIRONMENT):
        return os.environ[ENVIRONMENT]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "glowmlir", "autotune.json")


class TuningCache:
    """Measured cycles by layer signature key and kernel (`layers`), read from and written to `path`."""

    def __init__(self, path: str, layers: dict | None = None):
        self.path = path
        self.layers: dict[str, dict] = layers or {}

    @classmethod
    def load(cls, path: str) -> TuningCache:
        """The cache in `path` (empty when there is no file)."""
        if not os.path.exists(path):
            return cls(path)
        try:
            with open(path) as f:
                content = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise GlowError(f"autotune cache {path}: not readable JSON ({str(error).splitlines()[0]}); delete it "
                            f"or give another with -autotune-cache") from None
        if not (isinstance(content, dict) and content.get("format") == FORMAT and content.get("version") == VERSION
                and isinstance(content.get("layers"), dict)
                and all(isinstance(entry, dict) and isinstance(entry.get("cycles"), dict)
                        and all(isinstance(c, int | float) for c in entry["cycles"].values())
                        for entry in content["layers"].values())):
            raise GlowError(f"autotune cache {path}: not a {FORMAT} cache of version {VERSION}; delete it or give "
                            f"another with -autotune-cache")
        return cls(path, content["layers"])

    def record(self, key: str, signature: dict, kernel: str, cycles: float) -> None:
        entry = self.layers.setdefault(key, {"signature": signature, "cycles": {}})
        entry["cycles"][kernel] = round(cycles)

    def measured(self, key: str) -> dict[str, int]:
        """Kernel -> estimated cycles of the layer of this key ({} when not measured)."""
        return dict(self.layers.get(key, {}).get("cycles", {}))

    def fastest(self, key: str, candidates: tuple[str, ...]) -> tuple[str, int] | None:
        """The candidate measured fastest on the layer of this key, and its cycles (ties: the
        earlier candidate); None when none was measured."""
        measured = self.measured(key)
        found = [(measured[kernel], index, kernel) for index, kernel in enumerate(candidates) if kernel in measured]
        if not found:
            return None
        cycles, _, kernel = min(found)
        return kernel, cycles

    def save(self) -> None:
        """Writes the cache, merged with what the file holds by then (another build's layers:
        this one's figures win), atomically: a file beside it, then renamed."""
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        layers = {**TuningCache.load(self.path).layers, **self.layers}
        with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".tmp", delete=False) as f:
            json.dump({"format": FORMAT, "version": VERSION, "layers": layers}, f, indent=1, sort_keys=True)
        os.replace(f.name, self.path)
