"""Rule 4: no API drift against the installed torch, executorch, torchao, torchvision.

For each unit (a page's Python, or a ``.py`` file) the checker lists, in
source order, every module imported from a tracked package, every name
imported from one, every attribute path hanging off such a name
(``torch.export.export``), every call of one with its keyword arguments, and
the attributes of what such a call returns (``edge.to_executorch()``). Each
must exist in the installed packages, read statically by griffe: no tracked
package is imported. Only the modules a path goes through are parsed. Where
the sources cannot decide (compiled modules, names made with ``globals()``
or a module ``__getattr__``, bases griffe cannot find), nothing is reported.
"""

from __future__ import annotations

import ast
import difflib
import importlib.machinery
import functools
import logging
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import griffe

from xnnguide.doccheck.pages import Finding
from xnnguide.doccheck.pycode import Unit, dotted

RULE = "api"
TRACKED = ("torch", "executorch", "torchao", "torchvision")
UNKNOWN = "unknown"
logging.getLogger("griffe").setLevel(logging.CRITICAL)


@dataclass
class Use:
    path: str
    line: int
    kind: str  # "module", "name" (from-import), "attr", "call", "method" (on a value a tracked call returned)
    module: str  # the module an import statement names
    attributes: str = ""  # dotted path inside it ("" for the module itself)
    written: str = ""  # how the code spells it
    keywords: list[str] = field(default_factory=list)
    chain: tuple[str, ...] = ()  # "method": attributes taken, in turn, of what the call returned

    @property
    def target(self) -> str:
        return f"{self.module}.{self.attributes}" if self.attributes else self.module


def collect(unit: Unit, tracked: tuple[str, ...] = TRACKED) -> list[Use]:
    """The uses of tracked packages in *unit*, in source order.

    Besides names reached from imports, a variable assigned the result of a
    tracked call (``edge = to_edge_transform_and_lower(...)``), or of a method
    of such a value (``program = edge.to_executorch()``), is followed: its
    attributes and method keywords are checked against the class the installed
    code says the call returns.
    """
    bindings: dict[str, tuple[str, str]] = {}  # local name -> (module, attributes)
    typed: dict[str, tuple[str, str, tuple[str, ...]]] = {}  # local name -> (module, attributes, chain)
    uses: list[Use] = []

    def is_tracked(name: str) -> bool:
        return name.split(".")[0] in tracked

    def target_of(node: ast.expr) -> tuple[str, str, str] | None:
        parts = dotted(node)
        if not parts or parts[0] not in bindings:
            return None
        module, attributes = bindings[parts[0]]
        return module, ".".join(p for p in [attributes, *parts[1:]] if p), ".".join(parts)

    def typed_of(node: ast.expr) -> tuple[str, str, tuple[str, ...], str] | None:
        parts = dotted(node)
        if not parts or len(parts) < 2 or parts[0] not in typed or parts[0] in bindings:
            return None
        module, attributes, chain = typed[parts[0]]
        return module, attributes, chain + tuple(parts[1:]), ".".join(parts)

    def result_of(value: ast.expr) -> tuple[str, str, tuple[str, ...]] | None:
        if not isinstance(value, ast.Call):
            return None
        found = target_of(value.func)
        if found:
            return found[0], found[1], ()
        found = typed_of(value.func)
        return (found[0], found[1], found[2]) if found else None

    def forget(target: ast.expr) -> None:
        for name_node in ast.walk(target):
            if isinstance(name_node, ast.Name):
                bindings.pop(name_node.id, None)
                typed.pop(name_node.id, None)

    def chain_head(node: ast.Attribute) -> ast.expr:
        value = node.value
        while isinstance(value, ast.Attribute):
            value = value.value
        return value

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_tracked(alias.name):
                    uses.append(Use(unit.path, node.lineno, "module", alias.name, written=f"import {alias.name}"))
                    local = alias.asname or alias.name.split(".")[0]
                    bindings[local] = (alias.name, "") if alias.asname else (local, "")
                    typed.pop(local, None)
                else:
                    forget(ast.Name(alias.asname or alias.name.split(".")[0]))
            return
        if isinstance(node, ast.ImportFrom):
            if node.level or not node.module or not is_tracked(node.module):
                for alias in node.names:
                    forget(ast.Name(alias.asname or alias.name))
                return
            uses.append(Use(unit.path, node.lineno, "module", node.module, written=f"from {node.module} import ..."))
            for alias in node.names:
                if alias.name == "*":
                    continue
                uses.append(Use(unit.path, node.lineno, "name", node.module, alias.name,
                                f"from {node.module} import {alias.name}"))
                bindings[alias.asname or alias.name] = (node.module, alias.name)
                typed.pop(alias.asname or alias.name, None)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            # The value is evaluated before the names are bound.
            if node.value is not None:
                visit(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    visit(target)
                forget(target)
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and (result := result_of(node.value)) is not None):
                typed[node.targets[0].id] = result
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            forget(ast.Name(node.name))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr)):
            pass
        elif isinstance(node, ast.Call):
            keywords = [kw.arg for kw in node.keywords if kw.arg]
            found = target_of(node.func)
            if found:
                uses.append(Use(unit.path, node.lineno, "call", found[0], found[1], found[2], keywords))
            elif (typed_call := typed_of(node.func)) is not None:
                uses.append(Use(unit.path, node.lineno, "method", typed_call[0], typed_call[1], typed_call[3],
                                keywords, typed_call[2]))
            if isinstance(node.func, ast.Attribute):  # the chain itself was checked as the call
                visit(chain_head(node.func))
            else:
                visit(node.func)
            for argument in [*node.args, *(kw.value for kw in node.keywords)]:
                visit(argument)
            return
        elif isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Load):
                found = target_of(node)
                if found:
                    uses.append(Use(unit.path, node.lineno, "attr", found[0], found[1], found[2]))
                elif (typed_attr := typed_of(node)) is not None:
                    uses.append(Use(unit.path, node.lineno, "method", typed_attr[0], typed_attr[1], typed_attr[3],
                                    chain=typed_attr[2]))
            visit(chain_head(node))
            return
        if isinstance(node, (ast.For, ast.AsyncFor)):
            visit(node.iter)
            forget(node.target)
            for child in [*node.body, *node.orelse]:
                visit(child)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                visit(item.context_expr)
                if item.optional_vars is not None:
                    forget(item.optional_vars)
            for child in node.body:
                visit(child)
            return
        if isinstance(node, ast.NamedExpr):
            visit(node.value)
            forget(node.target)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in unit.statements:
        visit(statement)
    return uses


@dataclass
class Missing:
    at: str  # the module or class that lacks the name ("" for a top-level module)
    name: str
    names: list[str] = field(default_factory=list)  # what it has, for suggestions


class Index:
    """The installed packages as griffe objects, each module parsed on first use."""

    def __init__(self) -> None:
        self.collection = griffe.ModulesCollection()
        self.lines = griffe.LinesCollection()
        self.extensions = griffe.load_extensions()
        self.modules: dict[str, object] = {}  # dotted name -> griffe.Module, UNKNOWN or None (absent)
        self.dynamic: set[str] = set()  # modules that make names at run time
        self.resolving: set[str] = set()

    def _visit(self, name: str, path: Path, parent) -> object:
        try:
            code = path.read_text(encoding="utf-8-sig")
            with warnings.catch_warnings():  # the packages' own invalid escapes
                warnings.simplefilter("ignore")
                module = griffe.visit(name.rpartition(".")[2], path, code, extensions=self.extensions, parent=parent,
                                      lines_collection=self.lines, modules_collection=self.collection)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            return UNKNOWN
        if "globals()" in code or "__getattr__" in module.members:
            self.dynamic.add(name)
        if parent is None:
            self.collection.set_member(name, module)
        else:
            parent.set_member(module.name, module)
        return module

    def module(self, name: str) -> object:
        if name in self.modules:
            return self.modules[name]
        parent_name, _, last = name.rpartition(".")
        found: object = None
        if not parent_name:
            spec = importlib.machinery.PathFinder.find_spec(name)
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                found = self._visit(name, Path(spec.origin), None)
            elif spec is not None and spec.origin in (None, "namespace") and spec.submodule_search_locations:
                found = griffe.Module(name, filepath=[Path(p) for p in spec.submodule_search_locations],
                                      lines_collection=self.lines, modules_collection=self.collection)
                self.collection.set_member(name, found)
            elif spec is not None:
                found = UNKNOWN
        else:
            parent = self.module(parent_name)
            if parent is UNKNOWN:
                found = UNKNOWN
            elif isinstance(parent, griffe.Module) and _folders(parent):
                for folder, path in ((f, p) for f in _folders(parent) for p in (
                        f / last / "__init__.py", f / last / "__init__.pyi", f / f"{last}.py", f / f"{last}.pyi")):
                    if path.is_file():
                        found = self._visit(name, path, parent)
                        break
                else:
                    if any((f / last).is_dir() or any(f.glob(f"{last}.*.so")) for f in _folders(parent)):
                        found = UNKNOWN
        self.modules[name] = found
        return found

    def resolve(self, path: str) -> object:
        """The object at a dotted *path*, a :class:`Missing`, or UNKNOWN."""
        if path in self.resolving:  # an alias cycle
            return UNKNOWN
        self.resolving.add(path)
        try:
            parts = path.split(".")
            obj = self.module(parts[0])
            if obj is None:
                return Missing("", parts[0])
            for part in parts[1:]:
                if not isinstance(obj, griffe.Object):
                    return obj
                obj = self.member(obj, part)
            return obj
        finally:
            self.resolving.discard(path)

    def target(self, obj: object) -> object:
        while isinstance(obj, griffe.Alias):
            obj = self.resolve(obj.target_path)
        return obj

    def member(self, obj: object, name: str) -> object:
        obj = self.target(obj)
        if not isinstance(obj, griffe.Object):
            return obj
        if obj.is_module:
            sub = self.module(f"{obj.path}.{name}")
            if sub is not None:
                return sub
            if name in obj.members or name in obj.overloads:
                return self._own(obj, name)
            for wildcard in [m.wildcard for m in obj.members.values() if m.is_alias and m.wildcard]:
                found = self.member(self.resolve(wildcard), name)
                if not isinstance(found, Missing):
                    return found
            if obj.path in self.dynamic:
                return UNKNOWN
            return Missing(obj.path, name, list(obj.members))
        if not obj.is_class:
            return UNKNOWN
        if name in obj.members or name in obj.overloads:
            return self._own(obj, name)
        names = list(obj.members)
        if "__getattr__" in obj.members or "__getattribute__" in obj.members:
            return UNKNOWN
        for base in obj.bases:
            base_path = getattr(base, "canonical_path", str(base))
            if base_path in ("object", "typing.Generic", "abc.ABC"):
                continue
            found = self.member(self.resolve(base_path), name)
            if isinstance(found, Missing):
                names += found.names
            else:
                return found
        return Missing(obj.path, name, names)

    def _own(self, obj: griffe.Object, name: str) -> object:
        # A stub may define a name only through @overload: griffe keeps those apart.
        return self.target(obj.members[name]) if name in obj.members else obj.overloads[name][0]

    def parameters(self, obj: object) -> list[griffe.Parameter] | None:
        """The parameters of a function or class; None when unknown."""
        obj = self.target(obj)
        if isinstance(obj, griffe.Function):
            owner = obj.parent.overloads.get(obj.name, []) if obj.parent is not None else []
            functions = [obj, *(obj.overloads or []), *owner]
            return [p for f in functions for p in f.parameters]
        if isinstance(obj, griffe.Class):
            if any("dataclass" in str(d.value) for d in obj.decorators):
                return None
            for special in ("__init__", "__new__"):
                found = self.member(obj, special)
                if isinstance(found, griffe.Function):
                    return [p for p in self.parameters(found) or [] if p.name not in ("self", "cls")]
        return None

    def returned(self, obj: object) -> object:
        """The class of what calling *obj*, or reading it, gives; UNKNOWN when it cannot tell."""
        obj = self.target(obj)
        if isinstance(obj, griffe.Class):
            return obj
        annotation = obj.returns if isinstance(obj, griffe.Function) else getattr(obj, "annotation", None)
        if isinstance(annotation, str) or not hasattr(annotation, "canonical_path"):
            return UNKNOWN
        found = self.resolve(annotation.canonical_path)
        return found if isinstance(found, griffe.Class) else UNKNOWN


def _folders(module: griffe.Module) -> list[Path]:
    if isinstance(module.filepath, list):  # a namespace package
        return module.filepath
    return [module.filepath.parent] if module.filepath.stem == "__init__" else []


def _versions() -> dict[str, str]:
    versions = {}
    for name in TRACKED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _suggest(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, sorted(set(names)), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def _lookup(index: Index, use: Use) -> tuple[object, str]:
    """What *use* names, and how to call it in a message."""
    if use.kind == "module":
        return index.resolve(use.module), use.module
    obj = index.resolve(use.target)
    if not use.chain:
        return obj, use.target
    subject = use.target
    for position, name in enumerate(use.chain):
        owner = index.returned(obj)
        if not isinstance(owner, griffe.Class):
            return UNKNOWN, subject
        obj = index.member(owner, name)
        subject = f"{owner.path}.{name}"
        if isinstance(obj, Missing):
            obj.at = owner.path
            return obj, subject
    return obj, subject


@functools.lru_cache(maxsize=1)
def shared_index() -> Index:
    """One index per process: the installed packages do not change under it."""
    return Index()


def check(units: list[Unit], index: Index | None = None) -> list[Finding]:
    index = index or shared_index()
    versions = _versions()
    findings, reported = [], set()
    for use in (use for unit in units for use in collect(unit, TRACKED)):
        found, subject = _lookup(index, use)
        installed = f"installed {use.module.split('.')[0]} {versions.get(use.module.split('.')[0], '?')}"
        if isinstance(found, Missing):
            key = (use.path, found.at, found.name)
            if key not in reported:
                reported.add(key)
                findings.append(_missing(use, found, installed))
            continue
        if not use.keywords or not isinstance(found, griffe.Object):
            continue
        params = index.parameters(found)
        if params is None or any(p.kind is griffe.ParameterKind.var_keyword for p in params):
            continue
        valid = {p.name for p in params if p.kind is not griffe.ParameterKind.positional_only}
        names = ", ".join(dict.fromkeys(p.name for p in params))
        for keyword in use.keywords:
            if keyword not in valid:
                findings.append(Finding(
                    use.path, use.line, RULE,
                    f"{use.written}({keyword}=...): {subject} has no parameter '{keyword}' "
                    f"({installed}; it takes: {names or 'nothing'})",
                    f"use a parameter it has{_suggest(keyword, sorted(valid))}, or update the code "
                    "to the installed API"))
    return findings


def _missing(use: Use, missing: Missing, installed: str) -> Finding:
    where, name = missing.at, missing.name
    if use.kind == "method":
        returned = f"{use.target}(...)" + "".join(f".{part}(...)" for part in use.chain[:-1])
        return Finding(use.path, use.line, RULE,
                       f"{use.written}: {where} (what {returned} returns) has no attribute '{name}' ({installed})",
                       f"use the name the installed class has{_suggest(name, missing.names)}, "
                       "or update the code to the installed API")
    if use.kind == "module" or not where:
        top = use.module.split(".")[0]
        what = (f"{use.written}: {top} is not installed" if installed.endswith("not installed")
                else f"{use.written}: there is no module {use.module} in the {installed}")
        return Finding(use.path, use.line, RULE, what, "import it from where the installed package defines it "
                       "(search its sources), or drop the import")
    return Finding(use.path, use.line, RULE, f"{use.written}: {where} has no attribute '{name}' ({installed})",
                   f"use the name the installed package has{_suggest(name, missing.names)}, "
                   "or update the code to the installed API")
