"""Rule 1: every XNNPACK lowering runs the XNNPACK pre-partition transforms, read from the syntax tree.

* ``to_edge_transform_and_lower(program, transform_passes=..., partitioner=[...])`` must get passes
  (keyword, second positional argument, or a ``**`` dict the checker can see) built with
  ``get_transform_passes(...)``, unless its partitioners are visibly not XNNPACK's; without a
  partitioner it delegates nothing;
* ``<edge>.to_backend(<XNNPACK partitioner>)`` (or ``to_backend(edge, ...)``) must be reached from
  ``to_edge(...)`` through ``.transform(get_transform_passes(...))``.

Names are followed through earlier assignments, loops and imports of the same unit. A lowering without
the passes on purpose says why, on the call or the comment lines right above it; exemptions are listed::

    # doccheck: without-transform-passes reason="the baseline the page compares against"
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict

from xnnguide.doccheck.pages import Finding
from xnnguide.doccheck.pycode import Unit, walk_in_order

RULE = "transform-passes"
HOW = ("pass transform_passes=get_transform_passes() "
       "(from executorch.backends.xnnpack.utils.configs import get_transform_passes)")


class _Scope:
    def __init__(self, unit: Unit):
        self.assignments: dict[str, list[tuple[int, ast.expr]]] = defaultdict(list)
        self.origins: dict[str, str] = {}  # imported name -> "module.name"
        for node in walk_in_order(unit.statements):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.assignments[target.id].append((node.lineno, node.value))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                self.assignments[node.target.id].append((node.lineno, node.value))
            elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                self.assignments[node.target.id].append((node.lineno, node.value))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                # A loop variable takes its values from the iterable: follow the names to it.
                line = getattr(node, "lineno", None) or node.iter.lineno
                for target in ast.walk(node.target):
                    if isinstance(target, ast.Name):
                        self.assignments[target.id].append((line, node.iter))
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.origins[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.origins[alias.asname or alias.name.split(".")[0]] = alias.name

    def assignment(self, name: str, before: int) -> tuple[int, ast.expr | None]:
        """The line and value of the last assignment to *name* above line *before*."""
        earlier = [(line, value) for line, value in self.assignments.get(name, []) if line < before]
        return earlier[-1] if earlier else (before, None)

    def callee(self, call: ast.Call) -> str:
        """The last name of what *call* calls, seen through import aliases."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.origins.get(func.id, func.id).rsplit(".", 1)[-1]
        if isinstance(func, ast.Attribute):
            return func.attr
        return ""

    def mentions(self, expr: ast.AST | None, word: str, before: int, depth: int = 0) -> bool:
        """Whether *expr* (following names) calls or names something containing *word*."""
        if expr is None or depth > 8:
            return False
        for node in ast.walk(expr):
            if isinstance(node, ast.Call) and word in self.callee(node).lower():
                return True
            if isinstance(node, ast.Attribute) and word in node.attr.lower():
                return True
            if isinstance(node, ast.Name):
                if word in node.id.lower() or word in self.origins.get(node.id, "").lower():
                    return True
                line, value = self.assignment(node.id, before)
                if self.mentions(value, word, line, depth + 1):
                    return True
        return False

    def resolved(self, expr: ast.AST, before: int) -> bool:
        """Whether every name in *expr* is an import or an earlier assignment."""
        return all(node.id in self.origins or self.assignment(node.id, before)[1] is not None
                   for node in ast.walk(expr) if isinstance(node, ast.Name))


def _argument(call: ast.Call, keyword: str, position: int, scope: _Scope) -> tuple[ast.expr | None, bool]:
    """The expression given for a parameter, and whether the checker could tell."""
    for item in call.keywords:
        if item.arg == keyword:
            return item.value, True
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return call.args[position], True
    for item in call.keywords:
        if item.arg is None:  # **options
            mapping = item.value
            if isinstance(mapping, ast.Name):
                mapping = scope.assignment(mapping.id, call.lineno)[1] or mapping
            if isinstance(mapping, ast.Dict):
                pairs = [(k.value, v) for k, v in zip(mapping.keys, mapping.values) if isinstance(k, ast.Constant)]
            elif isinstance(mapping, ast.Call) and isinstance(mapping.func, ast.Name) and mapping.func.id == "dict":
                pairs = [(kw.arg, kw.value) for kw in mapping.keywords]
            else:
                return None, False
            return next((value for key, value in pairs if key == keyword), None), True
    return None, True


def _check_lower(call: ast.Call, scope: _Scope, path: str) -> Finding | None:
    partitioner, seen = _argument(call, "partitioner", 2, scope)
    if seen and partitioner is None:
        return None  # no partitioner: nothing is delegated, everything runs on portable kernels
    if (partitioner is not None and not scope.mentions(partitioner, "xnnpack", call.lineno)
            and scope.resolved(partitioner, call.lineno)):
        return None  # visibly another backend's partitioner
    passes, visible = _argument(call, "transform_passes", 1, scope)
    if not visible:
        return Finding(path, call.lineno, RULE,
                       "to_edge_transform_and_lower(...) gets its arguments from a ** mapping the checker "
                       "cannot read, so it cannot see the XNNPACK transform passes",
                       "pass transform_passes=get_transform_passes() as a keyword argument")
    if passes is None:
        return Finding(path, call.lineno, RULE,
                       "to_edge_transform_and_lower(...) lowers to XNNPACK without transform_passes=, "
                       "so XNNPACK's pre-partition transforms never run", HOW)
    opaque = isinstance(passes, ast.Name) and not scope.resolved(passes, call.lineno)
    if not opaque and not scope.mentions(passes, "get_transform_passes", call.lineno):
        # (A bare name the unit never assigns, such as a function's parameter, cannot be followed.)
        return Finding(path, call.lineno, RULE,
                       "transform_passes= of to_edge_transform_and_lower(...) does not come from "
                       "get_transform_passes(...), so XNNPACK's pre-partition transforms are missing",
                       "build the list with get_transform_passes(additional_passes=[...])")
    return None


def _trace(expr: ast.expr | None, scope: _Scope, before: int, depth: int = 0) -> str:
    """Follow an Edge program back to where it came from.

    Returns ``"ok"`` (a ``.transform(get_transform_passes(...))`` on the way),
    ``"bad-transform"`` (transformed, but not with them), ``"to_edge"`` (reached
    ``to_edge`` with no transform) or ``"unknown"``.
    """
    if expr is None or depth > 12:
        return "unknown"
    if isinstance(expr, ast.Name):
        line, value = scope.assignment(expr.id, before)
        return _trace(value, scope, line, depth + 1)
    if isinstance(expr, ast.Call):
        name = scope.callee(expr)
        if name == "transform":
            if any(scope.mentions(arg, "get_transform_passes", before) for arg in expr.args) or any(
                    scope.mentions(kw.value, "get_transform_passes", before) for kw in expr.keywords):
                return "ok"
            inner = _trace(expr.func.value, scope, before, depth + 1) if isinstance(expr.func, ast.Attribute) \
                else "unknown"
            return "ok" if inner == "ok" else "bad-transform"
        if name in ("to_edge", "_to_edge"):
            return "to_edge"
        if name == "to_edge_transform_and_lower":
            return "unknown"  # checked on its own
        if isinstance(expr.func, ast.Attribute) and name in ("exported_program", "to_backend"):
            return _trace(expr.func.value, scope, before, depth + 1)
    return "unknown"


def _check_to_backend(call: ast.Call, scope: _Scope, path: str) -> Finding | None:
    if isinstance(call.func, ast.Attribute):
        receiver = call.func.value
        partitioner, _ = _argument(call, "partitioner", 0, scope)
    else:  # to_backend(edge_program, partitioner) from executorch.exir.backend.backend_api
        receiver = call.args[0] if call.args else None
        partitioner, _ = _argument(call, "partitioner", 1, scope)
    if partitioner is None or not scope.mentions(partitioner, "xnnpack", call.lineno):
        return None
    verdict = _trace(receiver, scope, call.lineno)
    if verdict == "to_edge":
        return Finding(path, call.lineno, RULE,
                       "to_edge(...) is followed by .to_backend(<XNNPACK partitioner>) with no "
                       ".transform(get_transform_passes()) in between, so XNNPACK's pre-partition "
                       "transforms never run",
                       "call .transform(get_transform_passes()) on the Edge program before .to_backend(...), "
                       "or use to_edge_transform_and_lower(..., transform_passes=get_transform_passes())")
    if verdict == "bad-transform":
        return Finding(path, call.lineno, RULE,
                       "the Edge program given to .to_backend(<XNNPACK partitioner>) was transformed without "
                       "get_transform_passes(...)",
                       "include get_transform_passes(...) in the passes given to .transform(...)")
    return None


EXEMPTION = re.compile(r"#\s*doccheck:\s*without-transform-passes\b\s*(?:reason=(?P<reason>.*))?$")


def exemption(unit: Unit, node: ast.Call) -> tuple[int, str] | None:
    """A ``# doccheck: without-transform-passes reason=...`` comment on the call or right above it."""
    candidates, above = list(range(node.lineno, (node.end_lineno or node.lineno) + 1)), node.lineno - 1
    while 1 <= above <= len(unit.lines) and unit.lines[above - 1].strip().startswith("#"):
        candidates.append(above)
        above -= 1
    for number in (n for n in candidates if n <= len(unit.lines)):
        if match := EXEMPTION.search(unit.lines[number - 1]):
            return number, (match.group("reason") or "").strip().strip("\"'")
    return None


def check(unit: Unit, exemptions: list[tuple[str, int, str]] | None = None) -> list[Finding]:
    """Findings of rule 2; deliberate lowerings without the passes are added to *exemptions*."""
    scope = _Scope(unit)
    findings = []
    for node in walk_in_order(unit.statements):
        if not isinstance(node, ast.Call):
            continue
        name = scope.callee(node)
        if name == "to_edge_transform_and_lower":
            finding = _check_lower(node, scope, unit.path)
        elif name == "to_backend":
            finding = _check_to_backend(node, scope, unit.path)
        else:
            continue
        if not finding:
            continue
        exempt = exemption(unit, node)
        if exempt is None:
            findings.append(finding)
        elif not exempt[1]:
            findings.append(Finding(unit.path, exempt[0], RULE, "a without-transform-passes exemption without a "
                                    "reason", 'say why: # doccheck: without-transform-passes reason="..."'))
        elif exemptions is not None:
            exemptions.append((unit.path, node.lineno, exempt[1]))
    return findings

