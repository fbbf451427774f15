"""`python -m glowmlir --cmake-dir`: the directory of glowmlir's CMake package, for
`find_package(glowmlir CONFIG)` (as `glow-compile -print-cmake-dir`); `--version`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m glowmlir", description=__doc__.splitlines()[0])
    parser.add_argument("--cmake-dir", action="store_true", help="print the directory of glowmlirConfig.cmake")
    parser.add_argument("--version", action="store_true", help="print glowmlir's version")
    arguments = parser.parse_args(argv)
    if not (arguments.cmake_dir or arguments.version):
        parser.error("give --cmake-dir or --version (the tools: glow-compile, glow-opt, glow-run, glow-profile)")
    if arguments.version:
        from glowmlir import __version__

        print(__version__)
    if arguments.cmake_dir:
        from glowmlir.cli.common import CMAKE_DIR

        print(CMAKE_DIR)


if __name__ == "__main__":
    main()
