"""Checks that a recipe's own ``read_delegation`` counts what the site's helpers and ExecuTorch's devtools count."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from executorch.devtools.backend_debug import get_delegation_info

from xnnguide.core.delegation import delegate_calls, ops_inside_delegates, ops_outside_delegates


def assert_read_delegation_agrees(read_delegation: Callable[[Any], tuple], edge_programs: Iterable[Any]) -> None:
    """Fail unless ``read_delegation(graph_module)`` gives, for each lowered program, the delegate calls, the
    operators outside and inside the delegates that :mod:`xnnguide.core.delegation` finds, and as many delegate
    calls as ``get_delegation_info`` counts subgraphs."""
    for edge_program in edge_programs:
        graph_module = edge_program.exported_program().graph_module
        found = read_delegation(graph_module)
        expected = (delegate_calls(graph_module), ops_outside_delegates(graph_module), ops_inside_delegates(graph_module))
        assert found == expected, (found, expected)
        assert found[0] == get_delegation_info(graph_module).num_delegated_subgraphs, found
