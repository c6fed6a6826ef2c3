"""The settings docstring lists every environment variable webapp/settings.py reads."""

from __future__ import annotations

import ast
from pathlib import Path

SETTINGS = Path(__file__).resolve().parents[2] / "webapp" / "settings.py"
READERS = {"env_bool", "env_int", "env_list", "get", "getenv"}


def _variables_read(tree: ast.Module) -> set[str]:
    """Names passed as the first argument of os.environ.get / os.getenv / env_* / os.environ[...]."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in READERS and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if ast.unparse(node.value) == "os.environ":
                names.add(str(node.slice.value))
    return names


def test_every_environment_variable_is_documented():
    tree = ast.parse(SETTINGS.read_text())
    documented = {line.split()[0] for line in (ast.get_docstring(tree) or "").splitlines()
                  if line.startswith("    ") and line.split()}
    read = {name for name in _variables_read(tree) if name.isupper()}
    assert read, "no environment reads found: the test is out of date"
    assert read - documented == set(), "add these to the docstring of webapp/settings.py"
