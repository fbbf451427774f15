"""The package's layers, read from the import statements (ast, nothing imported; imports inside
functions and under `TYPE_CHECKING` count as any other): dialects import neither transforms nor
lowering; transforms never import lowering; no shared layer imports a backend (only the
registry, `glowmlir.backends`); a backend folder imports no other; and no two modules import each
other, directly or through others."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

import glowmlir

PACKAGE = pathlib.Path(glowmlir.__file__).parent

FORBIDDEN = {
    "dialects": ("glowmlir.transforms", "glowmlir.lowering"),
    "transforms": ("glowmlir.lowering",),
}
"""Layer (a subpackage) -> the packages its modules may not import."""


def imported_modules(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, module) for every import in a file, at any depth (imports inside functions too);
    relative imports resolved against the file's package."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]  # `from glowmlir import lowering`
    return found


def violations(layer: str) -> list[str]:
    forbidden = FORBIDDEN[layer]
    return [f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
            for path in sorted((PACKAGE / layer).rglob("*.py"))
            for line, module in imported_modules(path)
            if any(module == f or module.startswith(f + ".") for f in forbidden)]


SHARED = ("dialects", "transforms", "lowering", "quantization", "importers", "libraries")
"""The layers every backend builds on: they name none (`glowmlir.backends.<name>`), asking the
registry (`glowmlir.backends`) instead."""


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a `from package import name` of a submodule
    is that submodule; a package's own submodules importing it are left out, as Python loads a
    package before its submodules)."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = {resolve(module) for _, module in imported_modules(path) if module.startswith(PACKAGE.name + ".")}
        graph[name] = {t for t in targets if t and t != name and not name.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_cycle_check_sees_a_cycle_hidden_in_a_function(tmp_path, monkeypatch):
    fake = tmp_path / "glowmlir"
    (fake / "lowering").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "lowering" / "__init__.py").write_text("")
    (fake / "lowering" / "dispatch.py").write_text("from glowmlir.lowering import helpers\n")
    (fake / "lowering" / "helpers.py").write_text("import glowmlir.lowering.leaf\n")
    (fake / "lowering" / "leaf.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from glowmlir.lowering.dispatch import X\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    assert cycles(import_graph()) == [["glowmlir.lowering.dispatch", "glowmlir.lowering.helpers",
                                       "glowmlir.lowering.leaf"]]


def backend_imports(layers=SHARED) -> list[str]:
    """Imports of a backend (`glowmlir.backends.<name>...`, a folder) in the shared layers; the
    registry's own names (`from glowmlir.backends import microkernel`) are what they may import."""
    return [f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
            for layer in layers for path in sorted((PACKAGE / layer).rglob("*.py"))
            for line, module in imported_modules(path)
            if module.startswith(f"{PACKAGE.name}.backends.")
            and (PACKAGE / "backends" / module.split(".")[2]).is_dir()]


def test_shared_layers_import_no_backend():
    assert backend_imports() == []


def test_the_backend_check_sees_a_backend(tmp_path, monkeypatch):
    fake = tmp_path / "glowmlir"
    (fake / "dialects").mkdir(parents=True)
    (fake / "backends" / "x86").mkdir(parents=True)
    (fake / "dialects" / "ok.py").write_text("from glowmlir.backends import microkernel\n")
    (fake / "dialects" / "bad.py").write_text("def late():\n    from glowmlir.backends.x86 import layout\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    assert backend_imports(("dialects",)) == ["glowmlir/dialects/bad.py:2 imports glowmlir.backends.x86.layout"]


def backend_folder_imports() -> list[str]:
    """Imports, in a backend folder (`glowmlir/backends/<name>/`), of another backend folder: a
    backend asks another through the registry (`backends.serves`, `backends.microkernel`) and
    shares code through the shared layers, never by importing it."""
    backends = PACKAGE / "backends"
    found = []
    for folder in sorted(p for p in backends.iterdir() if p.is_dir() and p.name != "__pycache__"):
        for path in sorted(folder.rglob("*.py")):
            for line, module in sorted(imported_modules(path)):
                parts = module.split(".")
                if (module.startswith(f"{PACKAGE.name}.backends.") and len(parts) > 2 and parts[2] != folder.name
                        and (backends / parts[2]).is_dir()):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {'.'.join(parts[:4])}")
    return found


def test_backend_folders_import_no_other_backend_folder():
    assert backend_folder_imports() == []


def test_the_backend_folder_check_sees_another_backend(tmp_path, monkeypatch):
    fake = tmp_path / "glowmlir"
    for folder in ("arm_dsp", "x86"):
        (fake / "backends" / folder).mkdir(parents=True)
    (fake / "backends" / "__init__.py").write_text("")
    (fake / "backends" / "x86" / "ok.py").write_text(
        "from glowmlir.backends import serves\nfrom glowmlir.backends.x86 import layout\n"
        "from glowmlir.lowering import kernel_builder\n")
    (fake / "backends" / "x86" / "bad.py").write_text(
        "def late():\n    from glowmlir.backends.arm_dsp.layout import pack_filter\n"
        "import glowmlir.backends.arm_dsp\n")
    (fake / "backends" / "arm_dsp" / "bad.py").write_text("from ...backends.x86 import layout\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    assert backend_folder_imports() == [
        "glowmlir/backends/arm_dsp/bad.py:1 imports glowmlir.backends.x86.layout",
        "glowmlir/backends/x86/bad.py:2 imports glowmlir.backends.arm_dsp.layout",
        "glowmlir/backends/x86/bad.py:3 imports glowmlir.backends.arm_dsp"]


ISA_PATTERN = re.compile(r"arm[-_]dsp|arm[-_]mve|helium|\bmve\b|x86|vnni|vbmi|avx|(?<![a-z])sse\d|smlad|neon"
                         r"|cmsis|hifi", re.IGNORECASE)
"""Names of an instruction set (extension) or a vendor kernel library: what a backend is for. An
architecture in a triple (thumb, aarch64, xtensa) is the target description's, not a backend's."""

TARGET_DATA = ("targets.py",)
"""Top-level modules exempt from the ISA-name check: the CPU presets (`targets.py`: a preset is a
line of data naming its triple and features). The front ends (`cli/`: Glow's flags
`-use-cmsis`, `-use-hifi4`) and the emulator runtime (`runtime/`: boards, instruction counts)
are outside the compiler's layers."""


def isa_names(path: pathlib.Path, pattern: re.Pattern = ISA_PATTERN) -> list[str]:
    """`path:line name` for each identifier, attribute, argument, import or string (docstrings
    excepted: prose may say where a backend helps) that names an ISA (`ISA_PATTERN`)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {id(stmt.value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  for stmt in node.body
                  if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                  and isinstance(stmt.value.value, str)}
    found = []
    for node in ast.walk(tree):
        text = {ast.Name: lambda n: n.id, ast.Attribute: lambda n: n.attr, ast.arg: lambda n: n.arg,
                ast.FunctionDef: lambda n: n.name, ast.ClassDef: lambda n: n.name, ast.keyword: lambda n: n.arg,
                ast.alias: lambda n: f"{n.name} {n.asname or ''}", ast.ImportFrom: lambda n: n.module,
                ast.Constant: lambda n: n.value if isinstance(n.value, str) and id(n) not in docstrings else None,
                }.get(type(node), lambda n: None)(node)
        if text and pattern.search(text):
            found.append((getattr(node, "lineno", 0), text[:60]))
    return [f"{path.relative_to(PACKAGE.parent)}:{line} {text}" for line, text in sorted(found)]


def shared_modules() -> list[pathlib.Path]:
    """The shared layers' modules and the top-level ones (but `TARGET_DATA`)."""
    return ([path for layer in SHARED for path in sorted((PACKAGE / layer).rglob("*.py"))]
            + [path for path in sorted(PACKAGE.glob("*.py")) if path.name not in TARGET_DATA])


def test_shared_modules_name_no_isa():
    """A shared module asks the registry (`backends()`, `microkernel(name)`, `serves(name, target)`,
    `kernel_libraries()`) instead of naming an instruction set or a backend."""
    assert [hit for path in shared_modules() for hit in isa_names(path)] == []


def test_the_isa_check_sees_a_name(tmp_path):
    path = tmp_path / "glowmlir" / "shared.py"
    path.parent.mkdir()
    path.write_text('"""Helium and AVX in prose are fine."""\nfrom glowmlir.backends.x86 import layout\n'
                    'KIND = "arm-mve"\ndef has_avx512(target):\n    """On AVX-512."""\n    return target.neon\n'
                    'def pick(sse4=1): return "cmsis-nn"\n')
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path / "glowmlir")
    try:
        hits = isa_names(path)
    finally:
        monkeypatch.undo()
    assert hits == ["glowmlir/shared.py:2 glowmlir.backends.x86", "glowmlir/shared.py:3 arm-mve",
                    "glowmlir/shared.py:4 has_avx512", "glowmlir/shared.py:6 neon",
                    "glowmlir/shared.py:7 cmsis-nn", "glowmlir/shared.py:7 sse4"]


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_nothing_above_it(layer):
    assert (PACKAGE / layer).is_dir()
    assert violations(layer) == []


def test_the_check_sees_every_import_form(tmp_path, monkeypatch):
    """A guard on the guard: each way of writing the forbidden import is caught."""
    fake = tmp_path / "glowmlir"
    (fake / "transforms").mkdir(parents=True)
    (fake / "transforms" / "bad.py").write_text(
        "import glowmlir.lowering.kernels\n"
        "from glowmlir.lowering import glowll_to_llvm\n"
        "from glowmlir import lowering\n"
        "def late():\n    from ..lowering.kernels import KERNELS\n"
        "from glowmlir.dialects import glow\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    assert [v.split(" imports ")[1] for v in violations("transforms")] == [
        "glowmlir.lowering.kernels", "glowmlir.lowering.glowll_to_llvm", "glowmlir.lowering",
        "glowmlir.lowering.kernels.KERNELS"]


def test_every_rewrite_pattern_is_typed():
    """Each pattern under transforms matches by op type (`@op_type_rewrite_pattern`, whose
    wrapper is named `impl`), so the walker skips other ops before any pattern code runs."""
    import importlib
    import inspect
    import pkgutil

    from xdsl.pattern_rewriter import RewritePattern

    import glowmlir.transforms

    patterns = []
    for info in pkgutil.iter_modules(glowmlir.transforms.__path__):
        module = importlib.import_module(f"glowmlir.transforms.{info.name}")
        patterns += [cls for _, cls in inspect.getmembers(module, inspect.isclass)
                     if issubclass(cls, RewritePattern) and cls.__module__ == module.__name__]
    assert len(patterns) >= 17
    assert [p.__name__ for p in patterns if p.match_and_rewrite.__name__ != "impl"] == []
