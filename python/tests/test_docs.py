"""The README's Python examples run; the native module's stub matches the module."""

from __future__ import annotations

import ast
import os
import pathlib
import re

import pytest

import stcheck
from stcheck import _native

from conftest import ROOT


def _python_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("\n## Python\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_readme_python_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", _python_section(), flags=re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)


def test_readme_install_command_names_the_package_directory() -> None:
    assert "pip install ./python" in _python_section()
    assert (ROOT / "python" / "pyproject.toml").exists()


def test_native_stub_matches_the_module() -> None:
    stub = ast.parse((pathlib.Path(stcheck.__file__).parent / "_native.pyi").read_text())
    declared = set()
    for node in stub.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if not node.target.id.startswith("_") or node.target.id == "__version__":
                declared.add(node.target.id)
    public = {n for n in dir(_native) if not n.startswith("_") or n == "__version__"}
    assert declared == public


def test_package_is_typed_and_exports_what_it_lists() -> None:
    here = pathlib.Path(stcheck.__file__).parent
    assert (here / "py.typed").exists()
    for name in stcheck.__all__:
        assert hasattr(stcheck, name), name
    assert os.path.basename(stcheck._native.__file__).endswith(".abi3.so")


def test_options_show_the_library_defaults() -> None:
    """``stcheck.options()`` shows the limits the library applies by default (the constants
    of validator/src/limits.rs), not ``None``."""
    limits = (ROOT / "validator" / "src" / "limits.rs").read_text()

    def constant(name: str) -> int:
        m = re.search(rf"pub const {name}: \w+ = ([0-9_]+);", limits)
        assert m, name
        return int(m.group(1).replace("_", ""))

    o = stcheck.options()
    assert o["max_header_size"] == constant("DEFAULT_MAX_HEADER_SIZE")
    assert o["max_warnings_per_rule"] == constant("DEFAULT_MAX_WARNINGS_PER_RULE")


def test_docs_function_table_is_complete() -> None:
    """Every public function of the package is in docs/python.md's function tables."""
    import inspect

    doc = (ROOT / "docs" / "python.md").read_text()
    rows = set(re.findall(r"^\| `([a-z_]+)\(", doc, flags=re.M))
    functions = {n for n in stcheck.__all__ if inspect.isfunction(getattr(stcheck, n))}
    assert functions <= rows, sorted(functions - rows)
