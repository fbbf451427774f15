"""Records what Arm's own CMSIS-NN returns for the functions our stand-ins replace
(tests/support/cmsis_nn/standins.c), on random int8 data, in
tests/support/cmsis_nn/cmsis_nn_outputs.json: every `*_get_buffer_size` and every call's
status and output, for a DSP build (Cortex-M4, mps2-an386) and a Helium build (Cortex-M55,
mps3-an547) of the library. tests/unit/test_cmsis_standins.py runs the stand-ins on the
same inputs and compares.

CMSIS-NN is not part of this repository: build it yourself (every Source/*.c but the f16
ones, with the flags you pass here) into one archive per core, then

    .venv/bin/python bench/cmsis_nn_outputs.py --cmsis-nn ~/CMSIS-NN \\
        --dsp cmsis-nn-m4.a "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard -mthumb -O3" \\
        --mve cmsis-nn-m55.a "-mcpu=cortex-m55 -mfloat-abi=hard -mthumb -O3" [--out table.json]

On the Helium build `arm_fully_connected_s8` reads per-row kernel sums from its context
buffer (bias + input_offset x the row's weight sum; the build ignores the bias argument),
which the program fills with the library's own `arm_vector_sum_s8` and records.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from glowmlir.runtime.boards import EMBEDDED, MemoryNeeds, board, memory_values  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "support", "cmsis_nn", "cmsis_nn_outputs.json")


def requantization(rng, channels: int, accumulator_std: float) -> tuple[list[int], list[int]]:
    """Per-channel multipliers in [2^30, 2^31) and shifts that map the accumulators' spread to
    about 40 output levels, so that outputs are neither all clamped nor all zero."""
    shift = -int(np.round(np.log2(max(accumulator_std, 1.0) / 40.0)))
    multipliers = rng.integers(1 << 30, (1 << 31) - 1, size=channels)
    shifts = shift + rng.integers(-1, 2, size=channels)
    return [int(m) for m in multipliers], [int(s) for s in shifts]


def conv_case(rng, name, n, h, w, c, out_c, k_h, k_w, stride, pad, dilation=(1, 1), depthwise=False):
    """A convolution (or depthwise, out_c = c x ch_mult) with TFLite's SAME/VALID-style sizes."""
    out_h = (h + 2 * pad[0] - dilation[0] * (k_h - 1) - 1) // stride[0] + 1
    out_w = (w + 2 * pad[1] - dilation[1] * (k_w - 1) - 1) // stride[1] + 1
    taps = k_h * k_w * (1 if depthwise else c)
    filter_shape = (1, k_h, k_w, out_c) if depthwise else (out_c, k_h, k_w, c)
    multipliers, shifts = requantization(rng, out_c, np.sqrt(taps) * 70 * 60)
    return {"name": name, "function": "arm_depthwise_conv_wrapper_s8" if depthwise else "arm_convolve_wrapper_s8",
            "input_dims": [n, h, w, c], "filter_dims": list(filter_shape), "output_dims": [n, out_h, out_w, out_c],
            "input_offset": int(rng.integers(-20, 21)), "output_offset": int(rng.integers(-10, 11)),
            "ch_mult": out_c // c if depthwise else None,
            "stride": list(stride), "padding": list(pad), "dilation": list(dilation),
            "activation": [-128, 127] if rng.random() < 0.5 else [-100, 90],
            "multipliers": multipliers, "shifts": shifts,
            "input": rng.integers(-128, 128, size=n * h * w * c).tolist(),
            "filter": rng.integers(-127, 128, size=int(np.prod(filter_shape))).tolist(),
            "bias": rng.integers(-3000, 3001, size=out_c).tolist()}


def cases(seed: int = 41) -> list[dict]:
    rng = np.random.default_rng(seed)
    table = [
        conv_case(rng, "conv 3x3 pad 1, 3 channels", 1, 6, 5, 3, 4, 3, 3, (1, 1), (1, 1)),
        conv_case(rng, "conv 3x3 stride 2, 5 channels", 1, 7, 7, 5, 3, 3, 3, (2, 2), (0, 0)),
        conv_case(rng, "conv 5x5 pad 2, 20 channels", 1, 6, 6, 20, 6, 5, 5, (1, 1), (2, 2)),
        conv_case(rng, "conv 1x1, 8 channels", 1, 4, 4, 8, 5, 1, 1, (1, 1), (0, 0)),
        conv_case(rng, "conv 1x1 stride 2, batch 2", 2, 5, 5, 6, 7, 1, 1, (2, 2), (0, 0)),
        conv_case(rng, "conv 1x3 on one row, 16 channels", 1, 1, 9, 16, 4, 1, 3, (1, 1), (0, 1)),
        conv_case(rng, "conv 3x3 dilation 2", 1, 8, 8, 4, 3, 3, 3, (1, 1), (2, 2), (2, 2)),
        conv_case(rng, "depthwise 3x3 pad 1, 8 channels", 1, 6, 6, 8, 8, 3, 3, (1, 1), (1, 1), depthwise=True),
        conv_case(rng, "depthwise 5x5 pad 2, 6 channels", 1, 7, 7, 6, 6, 5, 5, (1, 1), (2, 2), depthwise=True),
        conv_case(rng, "depthwise 3x3 stride 2, 20 channels", 1, 9, 9, 20, 20, 3, 3, (2, 2), (0, 0), depthwise=True),
        conv_case(rng, "depthwise multiplier 2", 1, 5, 5, 3, 6, 3, 3, (1, 1), (1, 1), depthwise=True),
        conv_case(rng, "depthwise one input channel to 12", 1, 6, 6, 1, 12, 3, 3, (1, 1), (1, 1), depthwise=True),
    ]
    for name, rows, depth, columns in (("fully connected 2x37 -> 11", 2, 37, 11),
                                       ("fully connected 1x64 -> 16", 1, 64, 16)):
        (multiplier,), (shift,) = requantization(rng, 1, np.sqrt(depth) * 70 * 60)
        table.append({"name": name, "function": "arm_fully_connected_s8", "input_dims": [rows, 1, 1, depth],
                      "filter_dims": [depth, 1, 1, columns], "output_dims": [rows, 1, 1, columns],
                      "input_offset": int(rng.integers(-20, 21)), "output_offset": int(rng.integers(-10, 11)),
                      "activation": [-128, 127], "multiplier": multiplier, "shift": shift,
                      "input": rng.integers(-128, 128, size=rows * depth).tolist(),
                      "filter": rng.integers(-127, 128, size=depth * columns).tolist(),
                      "bias": rng.integers(-3000, 3001, size=columns).tolist()})
    for name, function, (h, w, c), (k_h, k_w), stride, pad in (
            ("max pool 3x3 stride 2 pad 1", "arm_max_pool_s8", (7, 7, 5), (3, 3), (2, 2), (1, 1)),
            ("max pool 2x2", "arm_max_pool_s8", (6, 6, 20), (2, 2), (2, 2), (0, 0)),
            ("average pool 2x2", "arm_avgpool_s8", (6, 6, 7), (2, 2), (2, 2), (0, 0)),
            ("average pool 3x3 pad 1, 20 channels", "arm_avgpool_s8", (5, 5, 20), (3, 3), (1, 1), (1, 1))):
        out_h, out_w = (h + 2 * pad[0] - k_h) // stride[0] + 1, (w + 2 * pad[1] - k_w) // stride[1] + 1
        table.append({"name": name, "function": function, "input_dims": [1, h, w, c], "filter_dims": [1, k_h, k_w, 1],
                      "output_dims": [1, out_h, out_w, c], "stride": list(stride), "padding": list(pad),
                      "activation": [-120, 110], "input": rng.integers(-128, 128, size=h * w * c).tolist()})
    table.append({"name": "softmax 3 rows of 20", "function": "arm_softmax_s8", "rows": 3, "row_size": 20,
                  "mult": 1717986944, "shift": 23, "diff_min": -248,
                  "input": rng.integers(-128, 128, size=60).tolist()})
    size = 37
    table.append({"name": "add of 37", "function": "arm_elementwise_add_s8", "size": size,
                  "input_1_offset": 7, "input_1_mult": 1623821475, "input_1_shift": -2,
                  "input_2_offset": -12, "input_2_mult": 1073741824, "input_2_shift": 0, "left_shift": 20,
                  "output_offset": -3, "output_mult": 1992864825, "output_shift": -19, "activation": [-128, 127],
                  "input_1": rng.integers(-128, 128, size=size).tolist(),
                  "input_2": rng.integers(-128, 128, size=size).tolist()})
    table.append({"name": "mul of 37", "function": "arm_elementwise_mul_s8", "size": size,
                  "input_1_offset": 5, "input_2_offset": -9, "output_offset": 4, "output_mult": 1518500250,
                  "output_shift": -8, "activation": [-110, 127],
                  "input_1": rng.integers(-128, 128, size=size).tolist(),
                  "input_2": rng.integers(-128, 128, size=size).tolist()})
    return table


def c_array(kind: str, name: str, values) -> str:
    return f"static {kind} {name}[] = {{{', '.join(str(int(v)) for v in values)}}};"


def dims(name: str, values) -> str:
    return f"static const cmsis_nn_dims {name} = {{{', '.join(map(str, values))}}};"


def case_source(index: int, case: dict) -> tuple[list[str], list[str]]:
    """The declarations and the statements of one case: prints `<index> size <n>`,
    `<index> status <s>` and `<index> output <hex>` lines (and `sums` for a fully connected)."""
    p, f = f"c{index}_", case["function"]
    decls, body = [], []
    out_size = int(np.prod(case["output_dims"])) if "output_dims" in case else case.get("size") or 60
    decls.append(f"static int8_t {p}out[{out_size}];")
    body.append(f"memset({p}out, 0x55, sizeof {p}out);")
    if "input_dims" in case:
        decls += [dims(f"{p}in_dims", case["input_dims"]), dims(f"{p}filter_dims", case["filter_dims"]),
                  dims(f"{p}out_dims", case["output_dims"]), c_array("int8_t", f"{p}in", case["input"])]
    if f in ("arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8"):
        depthwise = f == "arm_depthwise_conv_wrapper_s8"
        low, high = case["activation"]
        window = (f"{{{case['stride'][1]}, {case['stride'][0]}}}, {{{case['padding'][1]}, {case['padding'][0]}}}, "
                  f"{{{case['dilation'][1]}, {case['dilation'][0]}}}, {{{low}, {high}}}")
        if depthwise:
            decls.append(f"static const cmsis_nn_dw_conv_params {p}params = {{{case['input_offset']}, "
                         f"{case['output_offset']}, {case['ch_mult']}, {window}}};")
        else:
            decls.append(f"static const cmsis_nn_conv_params {p}params = {{{case['input_offset']}, "
                         f"{case['output_offset']}, {window}}};")
        decls += [c_array("int8_t", f"{p}filter", case["filter"]), c_array("int32_t", f"{p}bias", case["bias"]),
                  c_array("int32_t", f"{p}mult", case["multipliers"]), c_array("int32_t", f"{p}shift", case["shifts"]),
                  dims(f"{p}bias_dims", [1, 1, 1, case["output_dims"][3]])]
        body += [f"int32_t {p}size = {f}_get_buffer_size(&{p}params, &{p}in_dims, &{p}filter_dims, &{p}out_dims);",
                 f"cmsis_nn_per_channel_quant_params {p}quant = {{{p}mult, {p}shift}};",
                 f"cmsis_nn_context {p}ctx = {{{p}size > 0 ? scratch : NULL, {p}size}};",
                 f"status = {f}(&{p}ctx, &{p}params, &{p}quant, &{p}in_dims, {p}in, &{p}filter_dims, {p}filter, "
                 f"&{p}bias_dims, {p}bias, &{p}out_dims, {p}out);"]
    elif f == "arm_fully_connected_s8":
        low, high = case["activation"]
        columns, depth = case["output_dims"][3], case["filter_dims"][0]
        decls += [f"static const cmsis_nn_fc_params {p}params = {{{case['input_offset']}, 0, "
                  f"{case['output_offset']}, {{{low}, {high}}}}};",
                  f"static const cmsis_nn_per_tensor_quant_params {p}quant = {{{case['multiplier']}, "
                  f"{case['shift']}}};",
                  c_array("int8_t", f"{p}filter", case["filter"]), c_array("int32_t", f"{p}bias", case["bias"]),
                  dims(f"{p}bias_dims", [1, 1, 1, columns])]
        body += [f"int32_t {p}size = {f}_get_buffer_size(&{p}filter_dims);",
                 f"cmsis_nn_context {p}ctx = {{{p}size > 0 ? scratch : NULL, {p}size}};",
                 f"if ({p}size > 0) {{ arm_vector_sum_s8((int32_t *)scratch, {depth}, {columns}, {p}filter, "
                 f"{case['input_offset']}, 0, {p}bias); print_bytes(\"{index} sums\", scratch, {p}size); }}",
                 f"status = {f}(&{p}ctx, &{p}params, &{p}quant, &{p}in_dims, {p}in, &{p}filter_dims, {p}filter, "
                 f"&{p}bias_dims, {p}bias, &{p}out_dims, {p}out);"]
    elif f in ("arm_max_pool_s8", "arm_avgpool_s8"):
        low, high = case["activation"]
        decls.append(f"static const cmsis_nn_pool_params {p}params = {{{{{case['stride'][1]}, {case['stride'][0]}}}, "
                     f"{{{case['padding'][1]}, {case['padding'][0]}}}, {{{low}, {high}}}}};")
        size = (f"arm_avgpool_s8_get_buffer_size({case['output_dims'][2]}, {case['input_dims'][3]})"
                if f == "arm_avgpool_s8" else "0")
        body += [f"int32_t {p}size = {size};",
                 f"cmsis_nn_context {p}ctx = {{{p}size > 0 ? scratch : NULL, {p}size}};",
                 f"status = {f}(&{p}ctx, &{p}params, &{p}in_dims, {p}in, &{p}filter_dims, &{p}out_dims, {p}out);"]
    elif f == "arm_softmax_s8":
        decls.append(c_array("int8_t", f"{p}in", case["input"]))
        body += [f"int32_t {p}size = 0;",
                 f"{f}({p}in, {case['rows']}, {case['row_size']}, {case['mult']}, {case['shift']}, "
                 f"{case['diff_min']}, {p}out); status = 0;"]
    else:
        decls += [c_array("int8_t", f"{p}a", case["input_1"]), c_array("int8_t", f"{p}b", case["input_2"])]
        low, high = case["activation"]
        if f == "arm_elementwise_add_s8":
            call = (f"{f}({p}a, {p}b, {case['input_1_offset']}, {case['input_1_mult']}, {case['input_1_shift']}, "
                    f"{case['input_2_offset']}, {case['input_2_mult']}, {case['input_2_shift']}, {case['left_shift']}, "
                    f"{p}out, {case['output_offset']}, {case['output_mult']}, {case['output_shift']}, {low}, {high}, "
                    f"{case['size']})")
        else:
            call = (f"{f}({p}a, {p}b, {case['input_1_offset']}, {case['input_2_offset']}, {p}out, "
                    f"{case['output_offset']}, {case['output_mult']}, {case['output_shift']}, {low}, {high}, "
                    f"{case['size']})")
        body += [f"int32_t {p}size = 0;", f"status = {call};"]
    body += [f'printf("{index} size %ld\\n", (long){p}size);', f'printf("{index} status %d\\n", (int)status);',
             f'print_bytes("{index} output", {p}out, sizeof {p}out);']
    return decls, ["{", *body, "}"]


def program(table: list[dict]) -> str:
    decls, body = [], []
    for index, case in enumerate(table):
        d, b = case_source(index, case)
        decls += d
        body += b
    return "\n".join([
        '#include "arm_nnfunctions.h"', "#include <stdio.h>", "#include <string.h>",
        "static int8_t scratch[65536] __attribute__((aligned(16)));",
        "static void print_bytes(const char *label, const void *data, int size) {",
        "    const unsigned char *bytes = data; printf(\"%s \", label);",
        "    for (int i = 0; i < size; i++) printf(\"%02x\", bytes[i]);", "    printf(\"\\n\");", "}",
        *decls, "int main(void) {", "arm_cmsis_nn_status status;", *body, "return 0;", "}", ""])


def run(table: list[dict], cmsis_nn: str, library: str, flags: str, board_name: str, directory: str) -> list[dict]:
    spec = board(board_name)
    source = os.path.join(directory, f"{board_name}.c")
    with open(source, "w") as f:
        f.write(program(table))
    with open(os.path.join(EMBEDDED, "mps2.ld.in")) as f:
        script = f.read()
    for key, value in memory_values(spec, MemoryNeeds(200_000, 200_000, 0, 0)).items():
        script = script.replace(f"@{key}@", value)
    linker_script = os.path.join(directory, f"{board_name}.ld")
    with open(linker_script, "w") as f:
        f.write(script)
    elf = os.path.join(directory, f"{board_name}.elf")
    board_flags = [flag for flag in spec.compiler_flags if not flag.startswith(("-mcpu", "-mfpu", "-mfloat-abi", "-O"))]
    subprocess.run([spec.compiler, *flags.split(), *board_flags, "-I", os.path.join(cmsis_nn, "Include"),
                    "-T", linker_script, source, os.path.join(EMBEDDED, "startup.c"), library, "-lm", "-o", elf],
                   check=True)
    result = subprocess.run([*spec.qemu, "-nographic", "-semihosting-config", "enable=on,target=native",
                             "-kernel", elf], capture_output=True, text=True, timeout=120, check=True)
    outcomes = [{} for _ in table]
    for line in result.stdout.splitlines():
        index, key, value = line.split(" ", 2)
        outcomes[int(index)][key] = value if key in ("output", "sums") else int(value)
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmsis-nn", required=True, help="a CMSIS-NN checkout (its Include/ and git commit)")
    parser.add_argument("--dsp", nargs=2, metavar=("ARCHIVE", "FLAGS"), required=True)
    parser.add_argument("--mve", nargs=2, metavar=("ARCHIVE", "FLAGS"), required=True)
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", args.cmsis_nn, "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    compiler = subprocess.run(["arm-none-eabi-gcc", "-dumpfullversion"], capture_output=True, text=True,
                              check=True).stdout.strip()
    table = cases()
    builds = {}
    with tempfile.TemporaryDirectory() as directory:
        for build, (library, flags), board_name in (("dsp", args.dsp, "mps2-an386"),
                                                    ("mve", args.mve, "mps3-an547")):
            builds[build] = {"flags": flags, "board": board_name,
                             "outcomes": run(table, args.cmsis_nn, library, flags, board_name, directory)}
            print(f"{build}: {len(table)} cases on {board_name}", flush=True)
    header = {"comment": __doc__.split("\n\n")[0].replace("\n", " "),
              "cmsis_nn": {"repository": "https://github.com/ARM-software/CMSIS-NN", "commit": commit},
              "compiler": f"arm-none-eabi-gcc {compiler}",
              "builds": {name: {key: value for key, value in build.items() if key != "outcomes"}
                         for name, build in builds.items()}}
    rows = [json.dumps(case | {"real": {name: build["outcomes"][index] for name, build in builds.items()}})
            for index, case in enumerate(table)]
    with open(args.out, "w") as f:  # one case a line
        f.write(json.dumps(header)[:-1] + ',\n "cases": [\n' + ",\n".join(rows) + "\n]}\n")

if __name__ == "__main__":
    main()
