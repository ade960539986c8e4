"""``transform-passes``: every XNNPACK lowering runs the XNNPACK pre-partition transforms, read from the syntax tree.

``to_edge_transform_and_lower(program, transform_passes=..., partitioner=[...])`` with a partitioner
that may be XNNPACK's must get passes built with ``get_transform_passes(...)``; ``<edge>.to_backend(<XNNPACK
partitioner>)`` must be reached from ``to_edge(...)`` through ``.transform(get_transform_passes(...))``.
Names are followed through earlier assignments, loops and imports of the unit. A lowering without the passes
on purpose says why, to the reader, in a comment on the call or right above it:
``# Without transform_passes, on purpose: <why>``.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict

from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Finding, Unit

NAME = "transform-passes"
PASSES = "get_transform_passes"
EXEMPTION = re.compile(r"#\s*without transform_passes, on purpose\b:?\s*(?P<reason>.*?)[\s.]*$", re.IGNORECASE)


class Scope:
    """What the names of a unit were bound to: assignments (with their lines), loop targets and imports."""

    def __init__(self, unit: Unit):
        self.assignments: dict[str, list[tuple[int, ast.expr]]] = defaultdict(list)
        self.origins: dict[str, str] = {}  # imported name -> "module.name"
        self.calls: list[ast.Call] = []
        for node in (node for statement in unit.statements for node in ast.walk(statement)):
            if isinstance(node, ast.Call):
                self.calls.append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        self.assignments[target.id].append((node.lineno, node.value))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                # A loop variable takes its values from the iterable: follow the names to it.
                for target in (t for t in ast.walk(node.target) if isinstance(t, ast.Name)):
                    self.assignments[target.id].append((getattr(node, "lineno", None) or node.iter.lineno, node.iter))
            elif isinstance(node, ast.ImportFrom) and node.module:
                self.origins.update((a.asname or a.name, f"{node.module}.{a.name}") for a in node.names)
            elif isinstance(node, ast.Import):
                self.origins.update((a.asname or a.name.split(".")[0], a.name) for a in node.names)

    def assignment(self, name: str, before: int) -> tuple[int, ast.expr | None]:
        """The line and value of the last assignment to *name* above line *before*."""
        earlier = [(line, value) for line, value in self.assignments.get(name, []) if line < before]
        return max(reversed(earlier), key=lambda item: item[0], default=(before, None))  # the last of a line

    def callee(self, call: ast.Call) -> str:
        """The last name of what *call* calls, seen through import aliases."""
        if isinstance(call.func, ast.Name):
            return self.origins.get(call.func.id, call.func.id).rsplit(".", 1)[-1]
        return call.func.attr if isinstance(call.func, ast.Attribute) else ""

    def mentions(self, expr: ast.AST | None, word: str, before: int, depth: int = 0) -> bool:
        """Whether *expr* (following names) calls or names something containing *word*."""
        if expr is None or depth > 8:
            return False
        for node in ast.walk(expr):
            if (isinstance(node, ast.Call) and word in self.callee(node).lower()) or (
                    isinstance(node, ast.Attribute) and word in node.attr.lower()):
                return True
            if isinstance(node, ast.Name):
                line, value = self.assignment(node.id, before)
                if (word in node.id.lower() or word in self.origins.get(node.id, "").lower()
                        or self.mentions(value, word, line, depth + 1)):
                    return True
        return False

    def resolved(self, expr: ast.AST, before: int) -> bool:
        """Whether every name in *expr* is an import or an earlier assignment."""
        return all(node.id in self.origins or self.assignment(node.id, before)[1] is not None
                   for node in ast.walk(expr) if isinstance(node, ast.Name))

    def argument(self, call: ast.Call, keyword: str, position: int) -> tuple[ast.expr | None, bool]:
        """The expression given for a parameter, and whether the checker could tell."""
        for item in call.keywords:
            if item.arg == keyword:
                return item.value, True
        if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
            return call.args[position], True
        for mapping in (item.value for item in call.keywords if item.arg is None):  # **options
            if isinstance(mapping, ast.Name):
                mapping = self.assignment(mapping.id, call.lineno)[1] or mapping
            if not isinstance(mapping, ast.Dict):
                return None, False
            return next((v for k, v in zip(mapping.keys, mapping.values) if isinstance(k, ast.Constant)
                         and k.value == keyword), None), True
        return None, True


def _check_lower(call: ast.Call, scope: Scope, path: str) -> Finding | None:
    partitioner, seen = scope.argument(call, "partitioner", 2)
    if seen and partitioner is None:
        return None  # no partitioner: nothing is delegated, everything runs on portable kernels
    if (partitioner is not None and not scope.mentions(partitioner, "xnnpack", call.lineno)
            and scope.resolved(partitioner, call.lineno)):
        return None  # visibly another backend's partitioner
    passes, visible = scope.argument(call, "transform_passes", 1)
    if not visible:
        return Finding(path, call.lineno, NAME, "to_edge_transform_and_lower(...) gets its arguments from a ** "
                       "mapping the checker cannot read, so it cannot see the XNNPACK transform passes",
                       "pass transform_passes=get_transform_passes() as a keyword argument")
    if passes is None:
        return Finding(path, call.lineno, NAME, "to_edge_transform_and_lower(...) lowers to XNNPACK without "
                       "transform_passes=, so XNNPACK's pre-partition transforms never run",
                       "pass transform_passes=get_transform_passes() "
                       "(from executorch.backends.xnnpack.utils.configs import get_transform_passes)")
    # (A bare name the unit never assigns, such as a function's parameter, cannot be followed.)
    opaque = isinstance(passes, ast.Name) and not scope.resolved(passes, call.lineno)
    if not opaque and not scope.mentions(passes, PASSES, call.lineno):
        return Finding(path, call.lineno, NAME, "transform_passes= of to_edge_transform_and_lower(...) does not "
                       "come from get_transform_passes(...), so XNNPACK's pre-partition transforms are missing",
                       "build the list with get_transform_passes(additional_passes=[...])")
    return None


def _trace(expr: ast.expr | None, scope: Scope, before: int, depth: int = 0) -> str:
    """Follow an Edge program back to where it came from: ``"ok"`` (a ``.transform(get_transform_passes(...))``
    on the way), ``"bad-transform"`` (transformed, but not with them), ``"to_edge"`` (reached ``to_edge`` with
    no transform) or ``"unknown"``."""
    if expr is None or depth > 12:
        return "unknown"
    if isinstance(expr, ast.Name):
        line, value = scope.assignment(expr.id, before)
        return _trace(value, scope, line, depth + 1)
    if not isinstance(expr, ast.Call):
        return "unknown"
    name, receiver = scope.callee(expr), expr.func.value if isinstance(expr.func, ast.Attribute) else None
    if name == "transform":
        if any(scope.mentions(arg, PASSES, before) for arg in [*expr.args, *(kw.value for kw in expr.keywords)]):
            return "ok"
        return "ok" if receiver is not None and _trace(receiver, scope, before, depth + 1) == "ok" else "bad-transform"
    if name in ("to_edge", "_to_edge"):
        return "to_edge"
    if receiver is not None and name in ("exported_program", "to_backend"):
        return _trace(receiver, scope, before, depth + 1)
    return "unknown"  # to_edge_transform_and_lower(...) among others: checked on its own


def _check_to_backend(call: ast.Call, scope: Scope, path: str) -> Finding | None:
    if isinstance(call.func, ast.Attribute):
        receiver, (partitioner, _) = call.func.value, scope.argument(call, "partitioner", 0)
    else:  # to_backend(edge_program, partitioner) from executorch.exir.backend.backend_api
        receiver, (partitioner, _) = call.args[0] if call.args else None, scope.argument(call, "partitioner", 1)
    if partitioner is None or not scope.mentions(partitioner, "xnnpack", call.lineno):
        return None
    message = {"to_edge": "to_edge(...) is followed by .to_backend(<XNNPACK partitioner>) with no .transform("
                          "get_transform_passes()) in between, so XNNPACK's pre-partition transforms never run",
               "bad-transform": "the Edge program given to .to_backend(<XNNPACK partitioner>) was transformed "
                                "without get_transform_passes(...)"}.get(_trace(receiver, scope, call.lineno))
    return message and Finding(path, call.lineno, NAME, message, "call .transform(get_transform_passes(...)) on the "
                               "Edge program before .to_backend(...), or use to_edge_transform_and_lower(...)")


def exemption(unit: Unit, node: ast.Call) -> tuple[int, str] | None:
    """A ``# Without transform_passes, on purpose: <why>`` comment on the call or right above it."""
    number = node.lineno - 1
    while 1 <= number <= len(unit.lines) and unit.lines[number - 1].strip().startswith("#"):
        number -= 1
    for number in range(number + 1, min(node.end_lineno or node.lineno, len(unit.lines)) + 1):
        if match := EXEMPTION.search(unit.lines[number - 1]):
            return number, match.group("reason").strip()
    return None


def check(context: Context) -> list[Finding]:
    """The lowerings without the passes; those without them on purpose are added to the context's exemptions."""
    return [finding for unit, _ in context.units for finding in check_unit(unit, context.exemptions)]


def check_unit(unit: Unit, exemptions: list[tuple[str, int, str]]) -> list[Finding]:
    """The findings of one unit; deliberate lowerings without the passes are added to *exemptions*."""
    if "to_edge_transform_and_lower" not in unit.text and "to_backend" not in unit.text:
        return []  # every call the rule looks at names one of them, or is imported under one of them
    scope, findings = Scope(unit), []
    for node in scope.calls:
        check_call = {"to_edge_transform_and_lower": _check_lower, "to_backend": _check_to_backend}.get(
            scope.callee(node))
        if check_call is None or (finding := check_call(node, scope, unit.path)) is None:
            continue
        if (exempt := exemption(unit, node)) is not None and exempt[1]:
            exemptions.append((unit.path, node.lineno, exempt[1]))
        else:
            findings.append(finding if exempt is None else Finding(unit.path, exempt[0], NAME, "a without-transform-"
                            "passes exemption without a reason", "say why: # Without transform_passes, on purpose: "
                            "<why>"))
    return findings
