"""Craig's modules import each other without cycles, counting every import (a function-local
import that would hide a cycle included)."""

from __future__ import annotations

import grimp


def test_no_module_of_craig_is_part_of_an_import_cycle() -> None:
    graph = grimp.build_graph("craig", cache_dir=None)
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                chain = graph.find_shortest_chain(importer=imported, imported=module) or ()
                cycles.append(" -> ".join((module, *chain)))
    assert cycles == []
