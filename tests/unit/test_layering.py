"""The package's layers, read from the import statements (ast, nothing imported): dialects
import neither transforms nor lowering; transforms never import lowering."""

from __future__ import annotations

import ast
import pathlib

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
