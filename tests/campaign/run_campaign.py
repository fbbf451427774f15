"""The bad-input campaign of issue 12: every case of `tests/campaign/cases.py` run as a new user
would (CLI subprocesses, Python API calls in a child process), each outcome classified.

    .venv/bin/python tests/campaign/run_campaign.py --jobs 2 --json campaign.json
    .venv/bin/python tests/campaign/run_campaign.py --filter options/mcpu --keep /tmp/campaign

Prints a table of outcome counts per category and every case that is not clean, with a
one-line reason and the command that reproduces it. Exit status 1 if any case is not clean.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from tests.campaign.cases import Case, Work, all_cases  # noqa: E402

BIN = os.path.join(REPO, ".venv", "bin")
PYTHON = os.path.join(BIN, "python") if os.path.exists(os.path.join(BIN, "python")) else sys.executable
TIMEOUT = 300

CLEAN_ERROR = "clean error"
CORRECT_SUCCESS = "correct success"
OUTCOMES = [CLEAN_ERROR, CORRECT_SUCCESS, "Python traceback", "native abort", "silent wrong success",
            "non-GlowError API exception", "leftover files", "uncompilable header",
            "unclear error message", "refused valid input", "timeout"]
"""The first two are clean; "unclear error message" (not one line, or not naming the culprit)
and "refused valid input" (a clean error where success is right) complete the issue's list."""


@dataclass
class Result:
    name: str
    category: str
    expect: str
    outcome: str
    reason: str
    command: str
    seconds: float

    @property
    def clean(self) -> bool:
        return self.outcome in (CLEAN_ERROR, CORRECT_SUCCESS)


# ----------------------------------------------------------------------------- running one case


def _child(*arguments: str) -> list[str]:
    return [PYTHON, os.path.abspath(__file__), *arguments]


def run_case(case: Case, root: str) -> Result:
    """Sets up `case` in `root/<name>`, runs it, classifies the outcome."""
    work = Work(os.path.join(root, case.name.replace("/", "__")))
    shutil.rmtree(work.dir, ignore_errors=True)
    os.makedirs(work.dir)
    start = time.perf_counter()
    try:
        arguments = case.setup(work)
    except Exception as error:  # a bug in the case itself, not in the compiler
        return Result(case.name, case.category, case.expect, "setup failed",
                      f"{type(error).__name__}: {error}", "", 0.0)
    if case.tool == "api":
        command = _child("--api-case", case.name, work.dir)
    else:
        command = [os.path.join(BIN, case.tool), *arguments]
    shown = shlex.join(command)
    try:
        process = subprocess.run(command, capture_output=True, cwd=work.dir, timeout=TIMEOUT,
                                 env={**os.environ, "COLUMNS": "200", "PYTHONHASHSEED": "0"})
    except subprocess.TimeoutExpired:
        return Result(case.name, case.category, case.expect, "timeout", f"no answer in {TIMEOUT} s", shown,
                      time.perf_counter() - start)
    outcome, reason = classify(case, work, process, arguments)
    return Result(case.name, case.category, case.expect, outcome, reason, shown, time.perf_counter() - start)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def classify(case: Case, work: Work, process: subprocess.CompletedProcess, arguments=()) -> tuple[str, str]:
    stdout, stderr = _text(process.stdout), _text(process.stderr)
    last = (stderr.strip().splitlines() or stdout.strip().splitlines() or [""])[-1][:200]
    if process.returncode < 0 or "LLVM ERROR" in stderr + stdout:
        return "native abort", f"exit {process.returncode}: {last}"
    if case.tool == "api":
        return _classify_api(case, work, process, stdout, stderr, last)
    if "Traceback" in stderr + stdout:
        return "Python traceback", last
    if process.returncode != 0:
        return _classify_error(case, work, stderr, f"{case.tool}: error: ")
    if case.expect == "error":
        return "silent wrong success", "exit 0 where an error is right"
    return _check_success(case, work, stdout, arguments)


def _classify_error(case: Case, work: Work, message: str, prefix: str) -> tuple[str, str]:
    lines = message.strip().splitlines()
    if case.expect == "success":
        return "refused valid input", (lines or ["(no message)"])[0][:200]
    if len(lines) != 1 or not lines[0].startswith(prefix):
        return "unclear error message", f"{len(lines)} lines: {' | '.join(lines)[:200]}"
    missing = [fragment for fragment in case.contains if fragment not in lines[0]]
    if missing:
        return "unclear error message", f"does not name {missing}: {lines[0][:200]}"
    left = _leftovers(case, work)
    if left:
        return "leftover files", f"left {left} after: {lines[0][:150]}"
    return CLEAN_ERROR, lines[0][:200]


def _leftovers(case: Case, work: Work) -> list[str]:
    found = []
    for output in case.outputs:
        path = output if os.path.isabs(output) else work.path(output)
        if os.path.isfile(path) or (os.path.isdir(path) and os.listdir(path)):
            found.append(output)
    return found


def _classify_api(case, work, process, stdout, stderr, last) -> tuple[str, str]:
    try:
        report = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "native abort", f"the API child died (exit {process.returncode}): {last}"
    if report["status"] == "raised":
        if not report["glow_error"]:
            return "non-GlowError API exception", f"{report['type']}: {report['message']}"[:200]
        return _classify_error(case, work, report["message"], "")
    if case.expect == "error":
        return "silent wrong success", f"returned {report['returned']}"
    if report.get("verify") is not None and not report["verify"]["ok"]:
        return "silent wrong success", report["verify"]["detail"]
    return _check_success(case, work, "", verified=True)


# ----------------------------------------------------------------------------- checking a success


def _check_success(case: Case, work: Work, stdout: str, arguments=(), verified: bool = False) -> tuple[str, str]:
    headers = [f for f in os.listdir(work.out) if f.endswith(".h")] if os.path.isdir(work.out) else []
    if case.tool in ("glow-compile", "api") and os.path.isdir(work.out):
        if len(headers) != 1:
            return "uncompilable header", f"bundle directory holds {len(headers)} headers"
        problem = header_compile_error(work.out, headers[0])
        if problem:
            return "uncompilable header", problem
    if case.verify and not verified:
        if case.verify == "offsets":
            problem = offsets_problem(os.path.join(work.out, headers[0]), stdout)
        else:
            problem = _verify_in_child(case, work, arguments)
        if problem:
            return "silent wrong success", problem
    return CORRECT_SUCCESS, "exit 0" + (f", {case.verify} checked" if case.verify else "")


def header_compile_error(directory: str, header: str) -> str | None:
    """`cc -fsyntax-only` of a main.c that includes the header and takes the entry point's address."""
    with open(os.path.join(directory, header), encoding="utf-8", errors="replace") as f:
        text = f.read()
    entry = re.search(r"^int (\w+)\(uint8_t \*constantWeight", text, re.M)
    use = f"  void *entry = (void *)&{entry.group(1)};\n  (void)entry;\n" if entry else ""
    source = os.path.join(directory, "..", "campaign_main.c")
    with open(source, "w") as f:
        f.write(f'#include "{header}"\nint main(void) {{\n{use}  return 0;\n}}\n')
    process = subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-fsyntax-only", "-I", directory, source],
                             capture_output=True, text=True)
    if process.returncode != 0:
        first = next((line for line in process.stderr.splitlines() if "error" in line), process.stderr.strip())
        return f"cc: {first[:200]}"
    if not entry:
        return "the header declares no entry point"
    return None


def offsets_problem(header_path: str, llvm_ir: str) -> str | None:
    """Every placeholder inside the mutable region; no address below a region in the LLVM IR."""
    with open(header_path, encoding="utf-8") as f:
        text = f.read()
    sizes = dict(re.findall(r"//\s+Name: \"(\w+)\"\n.*?Size: (\d+) \(bytes\)", text, re.S))
    offsets = dict(re.findall(r"//\s+Name: \"(\w+)\"\n(?:.*\n){3}//\s+Offset: (\d+)", text))
    mutable = re.search(r"#define \w+_MUTABLE_MEM_SIZE\s+(\d+)", text)
    if not mutable or not offsets:
        return "no placeholder offsets or MUTABLE_MEM_SIZE in the header"
    for name, offset in offsets.items():
        if int(offset) + int(sizes.get(name, 0)) > int(mutable.group(1)):
            return f"placeholder {name} at {offset} + {sizes.get(name)} past MUTABLE_MEM_SIZE {mutable.group(1)}"
    if not llvm_ir.strip():
        return "no LLVM IR printed (-dump-llvm-ir) to check the addresses"
    negative = re.search(r"getelementptr[^\n]*, i(?:32|64) (-\d+)", llvm_ir)
    if negative:
        return f"negative address offset {negative.group(1)} in the LLVM IR"
    return None


def _verify_in_child(case: Case, work: Work, arguments: list[str]) -> str | None:
    compiled = next(a.removeprefix("-model=") for a in arguments if a.startswith("-model="))
    process = subprocess.run(_child("--verify", case.name, work.dir, compiled), capture_output=True, text=True,
                             timeout=TIMEOUT)
    try:
        report = json.loads(process.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return (f"the check itself failed (exit {process.returncode}): "
                f"{(process.stderr.strip().splitlines() or [''])[-1][:150]}")
    return None if report["ok"] else report["detail"]


# ----------------------------------------------------------------------------- child processes


def _find(name: str) -> Case:
    return next(case for case in all_cases() if case.name == name)


def compare_with_reference(case: Case, work: Work, bundle=None, compiled: str | None = None) -> tuple[bool, str]:
    """The bundle's outputs (of `bundle`, or of `compiled` compiled through the Python API with the
    case's `verify_options`) against onnxruntime (or TFLite's kernels) on random inputs."""
    import numpy as np

    import glowmlir

    if case.verify in ("tflite", "tflite-int8"):
        from tests.support.tflite_models import random_inputs, run_reference_float

        with open(work.path("model.tflite"), "rb") as f:
            data = f.read()
        try:
            inputs = random_inputs(data, as_float=True)
            expected = run_reference_float(data, inputs)
        except Exception as error:  # noqa: BLE001
            return False, f"compiled a file TFLite refuses ({type(error).__name__}: {str(error)[:80]})"
        bundle = bundle or glowmlir.compile(compiled or work.path("model.tflite"), **case.verify_options)
        placeholder_of = functools.partial(_placeholder, bundle)
    else:
        import onnx

        from tests.support.models import onnxruntime_outputs, random_inputs

        source = work.path("mutated.onnx") if case.verify == "onnxruntime-mutated" else work.path("model.onnx")
        try:
            model = onnx.load(source)
            symbols = case.verify_options.get("symbols", {})
            for graph_input in model.graph.input:
                for dim in graph_input.type.tensor_type.shape.dim:
                    if dim.dim_param in symbols:
                        dim.dim_value = symbols[dim.dim_param]
            inputs = random_inputs(model)
            expected = onnxruntime_outputs(model, inputs)
        except Exception as error:  # noqa: BLE001
            return False, f"compiled a model onnxruntime refuses ({type(error).__name__}: {str(error)[:80]})"
        if bundle is None:
            bundle = glowmlir.compile(compiled or source, **case.verify_options)
        placeholder_of = lambda name: name  # noqa: E731 - Bundle.run takes and gives the model's names
    actual = bundle.run({placeholder_of(k): v for k, v in inputs.items()})
    for name, value in expected.items():
        placeholder = placeholder_of(name)
        if placeholder not in actual:
            return False, f"output {name} missing from the bundle (has {sorted(actual)})"
        got = actual[placeholder].reshape(value.shape)
        scale = max(float(np.abs(value).max()) if value.size else 0.0, 1e-6)
        # "tflite-int8": a softmax dequantized from int8 levels of 1/256, within one level of
        # TFLite's (which rounds a requantization once, where we round twice as TFLite Micro does)
        level = 1.001 / 256 if case.verify == "tflite-int8" else 0.0
        if not np.allclose(got, value, atol=max(1e-4 * scale, level), rtol=1e-4, equal_nan=True):
            error = float(np.nanmax(np.abs(got - value)))
            return False, f"output {name} differs from the reference by {error:.3g} (scale {scale:.3g})"
    return True, "matches the reference"


def _placeholder(bundle, model_name: str) -> str:
    """The bundle's name for a TFLite model's input or output (legalized, maybe made unique)."""
    from glowmlir.names import legalize_name

    names = [p.name for p in bundle.layout.placeholders]
    if model_name in names:
        return model_name
    legal = legalize_name(model_name)
    return legal if legal in names else next((n for n in names if n.startswith(legal)), legal)


def api_child(name: str, directory: str) -> None:
    """Runs an API case's call; prints one JSON line: what it returned or raised."""
    from glowmlir import Bundle, GlowError

    case, work = _find(name), Work(directory)
    try:
        value = case.call(work)
    except Exception as error:  # noqa: BLE001 - classifying any exception is the point
        message = str(error).strip()
        print(json.dumps({"status": "raised", "type": type(error).__name__, "message": message,
                          "glow_error": isinstance(error, GlowError),
                          "traceback": traceback.format_exc()[-2000:]}))
        return
    report = {"status": "returned", "returned": type(value).__name__, "verify": None}
    if isinstance(value, Bundle) and case.expect != "error":
        value.save(work.out)
        if case.verify:
            ok, detail = compare_with_reference(case, work, value)
            report["verify"] = {"ok": ok, "detail": detail}
    print(json.dumps(report))


def verify_child(name: str, directory: str, compiled: str) -> None:
    case, work = _find(name), Work(directory)
    try:
        ok, detail = compare_with_reference(case, work, compiled=compiled)
    except Exception as error:  # noqa: BLE001
        ok, detail = False, f"the API compile of the same model failed: {type(error).__name__}: {str(error)[:120]}"
    print(json.dumps({"ok": ok, "detail": detail}))


# ----------------------------------------------------------------------------- the campaign


def run_campaign(cases: list[Case], jobs: int, root: str, progress=None) -> list[Result]:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_case, case, root) for case in cases]
        results = []
        for future in futures:
            results.append(future.result())
            if progress:
                progress(results[-1], len(results), len(cases))
    return results


def counts_table(results: list[Result]) -> str:
    categories = sorted({r.category for r in results}, key=lambda c: [r.category for r in results].index(c))
    counts = Counter((r.category, r.outcome) for r in results)
    outcomes = [o for o in OUTCOMES if any(r.outcome == o for r in results)]
    outcomes += sorted({r.outcome for r in results} - set(outcomes))
    width = max(len(o) for o in outcomes + ["outcome"])
    header = f"{'outcome':<{width}} " + " ".join(f"{c:>12}" for c in categories) + f" {'total':>7}"
    lines = [header, "-" * len(header)]
    for outcome in outcomes:
        row = [counts[(c, outcome)] for c in categories]
        lines.append(f"{outcome:<{width}} " + " ".join(f"{n:>12}" for n in row) + f" {sum(row):>7}")
    lines.append("-" * len(header))
    totals = [sum(1 for r in results if r.category == c) for c in categories]
    lines.append(f"{'cases':<{width}} " + " ".join(f"{n:>12}" for n in totals) + f" {len(results):>7}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="cases run in parallel")
    parser.add_argument("--filter", action="append", default=[],
                        help="only cases whose name contains this (repeatable)")
    parser.add_argument("--json", help="write every result to this JSON file")
    parser.add_argument("--keep", help="work directory to keep (default: a temporary one, removed)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--api-case", nargs=2, metavar=("NAME", "DIR"), help=argparse.SUPPRESS)
    parser.add_argument("--verify", nargs=3, metavar=("NAME", "DIR", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.api_case:
        api_child(*args.api_case)
        return 0
    if args.verify:
        verify_child(*args.verify)
        return 0
    cases = [c for c in all_cases() if not args.filter or any(f in c.name for f in args.filter)]
    if args.list:
        for case in cases:
            print(f"{case.name:60} {case.tool:13} {case.expect:8} {case.note}")
        return 0
    root = args.keep or tempfile.mkdtemp(prefix="glowmlir-campaign-")
    os.makedirs(root, exist_ok=True)

    def progress(result: Result, done: int, total: int) -> None:
        mark = "." if result.clean else "F"
        print(mark, end="\n" if done % 80 == 0 or done == total else "", flush=True, file=sys.stderr)

    start = time.perf_counter()
    try:
        results = run_campaign(cases, args.jobs, root, progress)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(counts_table(results))
    failing = [r for r in results if not r.clean]
    print(f"\n{len(results)} cases in {time.perf_counter() - start:.0f} s; {len(failing)} not clean")
    for result in failing:
        print(f"  [{result.outcome}] {result.name}: {result.reason}")
        print(f"      reproduce: .venv/bin/python tests/campaign/run_campaign.py --filter {result.name} --keep /tmp/c"
              f"   # runs: {result.command[:300]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{**asdict(r), "clean": r.clean} for r in results], f, indent=1)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
