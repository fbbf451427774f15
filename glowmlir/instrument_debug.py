"""`glow-run -instrument-debug`: every node's output of one run, written as Glow's
`-instrument-debug` writes its dumps — the way a Glow user finds where a quantized model departs
from the float one.

The run's bundle is built with `glow-save-node-outputs` (each node's result is an output too).
`-instrument-debug-format`:

* `console`: each tensor printed on stdout;
* `txt` / `bin`: one file per node output, `data0000.txt` (its type line, then its values) or
  `data0000.bin` (its type line, then its bytes);
* `rawtxt` / `rawbin`: the values only (comma-separated text, or the bytes).

Files go to `-instrument-debug-dir` (`debug` by default) with `instrument-debug.info` naming, for
each file, the node kind, node name and tensor type, in Glow's layout. Unlike Glow, which dumps
every operand of every low-level instruction before and after it runs, a node's result is dumped
once: the values a graph node computed (a fused node's, e.g. a convolution with its pool, is its
fused result).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

import numpy as np

from glowmlir.errors import GlowError

FORMATS = ("console", "bin", "txt", "rawbin", "rawtxt")


def check_format(value: str) -> str:
    if value not in FORMATS:
        raise GlowError(f"-instrument-debug-format=\"{value}\": expected one of {', '.join(FORMATS)}")
    return value


def dump_node_outputs(bundle, outputs: Mapping[str, np.ndarray], directory: str, fmt: str,
                      stream: TextIO) -> dict[str, np.ndarray]:
    """Writes the node outputs among `outputs` in `fmt`; returns the model's own outputs."""
    from glowmlir.bundle import StagedFiles
    from glowmlir.transforms.save_node_outputs import debug_output_node

    dumped = sorted((debug_output_node(name), name) for name in outputs if debug_output_node(name) is not None)
    files = StagedFiles()
    info = [f"Format: {fmt}"]
    for index, ((_, kind, node), name) in enumerate(dumped):
        value = outputs[name]
        type_text = bundle.layout.placeholder(name).type_string()
        if fmt == "console":
            flat = np.array2string(value.reshape(-1), threshold=64, separator=", ", max_line_width=120)
            print(f"{kind} {node}: {type_text}\n{flat}", file=stream)
            continue
        filename = f"data{index:04d}.{'bin' if fmt.endswith('bin') else 'txt'}"
        info += ["", f"Kind: {kind}", f"Name: {node}", f"[0] {'dest:':<10} {filename}    {type_text}"]
        if fmt.endswith("bin"):
            contents = (b"" if fmt == "rawbin" else f"{type_text}\n".encode()) + value.tobytes()
        else:
            values = ", ".join(str(v) for v in value.reshape(-1).tolist())
            contents = (values if fmt == "rawtxt" else f"{type_text}\n{values}").encode() + b"\n"
        files.add(os.path.join(directory, filename), contents, "-instrument-debug-dir")
    if fmt != "console":
        files.add(os.path.join(directory, "instrument-debug.info"), ("\n".join(info) + "\n").encode(),
                  "-instrument-debug-dir")
        files.commit()
    return {name: value for name, value in outputs.items() if debug_output_node(name) is None}
