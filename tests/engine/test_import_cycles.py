"""No module of engine/, webapp/ or workers/ is part of an import cycle.

The import graph is grimp's (the library import-linter builds its contracts on), with every
import counted: at module level, inside functions, and under TYPE_CHECKING. A cycle that only
runs because one side imports lazily is still two modules that cannot be read, tested or
moved apart, so it counts too. The layers contracts in pyproject.toml keep the big picture;
this test catches a cycle between two modules that no contract names.
"""

from __future__ import annotations

import grimp
import pytest

PACKAGES = ("engine", "webapp", "workers")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One shortest cycle per set of modules that import each other, each as a module chain."""
    cycles: dict[frozenset[str], list[str]] = {}
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is None:
                continue
            cycle = [module, *back]  # module -> imported -> ... -> module
            cycles.setdefault(frozenset(cycle), cycle)
    return sorted(cycles.values())


def test_the_graph_covers_every_package(graph):
    """A test over an empty graph would pass for the wrong reason."""
    for package in PACKAGES:
        assert graph.find_descendants(package), package
    assert {"engine.train.trainer", "webapp.runs.services", "workers.runs"} <= graph.modules


def test_no_module_is_part_of_an_import_cycle(graph):
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_a_cycle_is_found_and_named():
    """The check itself: two modules that import each other are reported as one cycle."""
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.a")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]
