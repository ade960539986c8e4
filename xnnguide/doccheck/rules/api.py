"""``api``: no API drift against the installed torch, executorch, torchao and torchvision.

Every module imported from a tracked package, every name imported from one, every attribute path off
such a name (``torch.export.export``), every call with its keyword arguments, and the attributes of
what such calls return (``edge = to_edge_transform_and_lower(...)``, then ``edge.to_executorch()``)
must exist in the installed packages. griffe reads their sources: nothing is imported, and only the
modules a path goes through are parsed. Where the sources cannot decide (compiled modules, names made
with ``globals()`` or ``__getattr__``, bases that cannot be found), nothing is reported.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import functools
import hashlib
import importlib.machinery
import json
import logging
import os
import sys
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import griffe

from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Finding, Unit

NAME = "api"
TRACKED = ("torch", "executorch", "torchao", "torchvision")
UNKNOWN = "unknown"
logging.getLogger("griffe").setLevel(logging.CRITICAL)


@dataclass
class Use:
    line: int
    steps: tuple[str, ...]  # a dotted import path, then attribute names and "()" for what a call returns
    written: str  # how the code spells it
    keywords: list[str] = field(default_factory=list)  # of a call
    module: bool = False  # an import of the module steps[0]


def collect(unit: Unit) -> list[Use]:
    """The uses of tracked packages in *unit*, in source order; names bound to them are followed."""
    bound: dict[str, tuple[str, ...]] = {}  # local name -> the steps that reach its value
    uses: list[Use] = []

    def steps_of(node: ast.expr) -> tuple[str, ...] | None:
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        inner = steps_of(node.value if isinstance(node, ast.Attribute) else node.func) if isinstance(
            node, (ast.Attribute, ast.Call)) else None
        return inner and inner + ((node.attr,) if isinstance(node, ast.Attribute) else ("()",))

    def bind(target: ast.expr, steps: tuple[str, ...] | None = None) -> None:
        for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
            bound.pop(name, None)
        if steps and isinstance(target, ast.Name):
            bound[target.id] = steps

    def visit(node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                local, tracked = alias.asname or alias.name.split(".")[0], alias.name.split(".")[0] in TRACKED
                uses.extend([Use(line, (alias.name,), f"import {alias.name}", module=True)] if tracked else [])
                bind(ast.Name(local), ((alias.name if alias.asname else local),) if tracked else None)
        elif isinstance(node, ast.ImportFrom):
            tracked = not node.level and node.module and node.module.split(".")[0] in TRACKED
            uses.extend([Use(line, (node.module,), f"from {node.module} import ...", module=True)] if tracked else [])
            for alias in node.names:
                if tracked and alias.name != "*":
                    uses.append(Use(line, (f"{node.module}.{alias.name}",), f"from {node.module} import {alias.name}"))
                bind(ast.Name(alias.asname or alias.name), (f"{node.module}.{alias.name}",) if tracked else None)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            if node.value is not None:  # the value is evaluated before the names are bound
                visit(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    visit(target)
                bind(target, steps_of(node.value) if len(targets) == 1 and isinstance(node, ast.Assign) else None)
        else:  # a loop's or with's own names are unbound first: they hold what the checker cannot follow
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(ast.Name(node.name))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.withitem)) and (
                    target := getattr(node, "target", None) or getattr(node, "optional_vars", None)) is not None:
                bind(target)
            elif isinstance(node, ast.Call) and (steps := steps_of(node.func)):
                uses.append(Use(line, steps, ast.unparse(node.func), [k.arg for k in node.keywords if k.arg]))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and (steps := steps_of(node)):
                uses.append(Use(line, steps, ast.unparse(node)))
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
        self.collection, self.lines = griffe.ModulesCollection(), griffe.LinesCollection()
        self.extensions = griffe.load_extensions()
        self.dynamic: set[str] = set()  # modules that make names at run time
        self.resolving: set[str] = set()

    def _visit(self, name: str, path: Path, parent) -> object:
        try:
            code = path.read_text(encoding="utf-8-sig")
            with warnings.catch_warnings(action="ignore"):  # the packages' own invalid escapes
                module = griffe.visit(name.rpartition(".")[2], path, code, extensions=self.extensions, parent=parent,
                                      lines_collection=self.lines, modules_collection=self.collection)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            return UNKNOWN
        if "globals()" in code or "__getattr__" in module.members:
            self.dynamic.add(name)
        (self.collection if parent is None else parent).set_member(name if parent is None else module.name, module)
        return module

    @functools.cache  # noqa: B019 (one Index per process)
    def module(self, name: str) -> object:
        """The griffe.Module of the dotted *name*, UNKNOWN, or None when it does not exist."""
        parent_name, _, last = name.rpartition(".")
        if not parent_name:
            spec = importlib.machinery.PathFinder.find_spec(name)
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                return self._visit(name, Path(spec.origin), None)
            if spec is not None and spec.origin in (None, "namespace") and spec.submodule_search_locations:
                found = griffe.Module(name, filepath=[Path(p) for p in spec.submodule_search_locations],
                                      lines_collection=self.lines, modules_collection=self.collection)
                self.collection.set_member(name, found)
                return found
            return None if spec is None else UNKNOWN
        parent = self.module(parent_name)
        if not isinstance(parent, griffe.Module):
            return parent if parent is UNKNOWN else None
        folders = parent.filepath if isinstance(parent.filepath, list) else (  # a namespace package
            [parent.filepath.parent] if parent.filepath.stem == "__init__" else [])
        for path in (f / p for f in folders for p in (f"{last}/__init__.py", f"{last}/__init__.pyi", f"{last}.py",
                                                      f"{last}.pyi")):
            if path.is_file():
                return self._visit(name, path, parent)
        return UNKNOWN if any((f / last).is_dir() or any(f.glob(f"{last}.*.so")) for f in folders) else None

    def resolve(self, path: str) -> object:
        """The object at a dotted *path*, a :class:`Missing`, or UNKNOWN."""
        if path in self.resolving:  # an alias cycle
            return UNKNOWN
        self.resolving.add(path)
        try:
            first, *rest = path.split(".")
            obj = self.module(first)
            return Missing("", first) if obj is None else self.walk(obj, rest)
        finally:
            self.resolving.discard(path)

    def walk(self, obj: object, steps: list[str]) -> object:
        """What attribute names, and calls ("()"), reach from *obj*."""
        for step in steps:
            if not isinstance(obj, griffe.Object):
                break
            obj = self.returned(obj) if step == "()" else self.member(obj, step)
        return obj

    def target(self, obj: object) -> object:
        while isinstance(obj, griffe.Alias):
            obj = self.resolve(obj.target_path)
        return obj

    def member(self, obj: object, name: str) -> object:
        obj = self.target(obj)
        if not isinstance(obj, griffe.Object):
            return obj
        if obj.is_module and (sub := self.module(f"{obj.path}.{name}")) is not None:
            return sub
        if not (obj.is_module or obj.is_class):
            return UNKNOWN
        if name in obj.members or name in obj.overloads:  # a stub may define a name only through @overload
            return self.target(obj.members[name]) if name in obj.members else obj.overloads[name][0]
        if obj.is_module:
            for wildcard in [m.wildcard for m in obj.members.values() if m.is_alias and m.wildcard]:
                if not isinstance(found := self.member(self.resolve(wildcard), name), Missing):
                    return found
            return UNKNOWN if obj.path in self.dynamic else Missing(obj.path, name, list(obj.members))
        if "__getattr__" in obj.members or "__getattribute__" in obj.members:
            return UNKNOWN
        names = list(obj.members)
        for base in obj.bases:
            if (base_path := getattr(base, "canonical_path", str(base))) in ("object", "typing.Generic", "abc.ABC"):
                continue
            if not isinstance(found := self.member(self.resolve(base_path), name), Missing):
                return found
            names += found.names
        return Missing(obj.path, name, names)

    def parameters(self, obj: object) -> list[griffe.Parameter] | None:
        """The parameters of a function or class; None when unknown."""
        obj = self.target(obj)
        if isinstance(obj, griffe.Function):
            owner = obj.parent.overloads.get(obj.name, []) if obj.parent is not None else []
            return [p for f in [obj, *(obj.overloads or []), *owner] for p in f.parameters]
        if isinstance(obj, griffe.Class) and not any("dataclass" in str(d.value) for d in obj.decorators):
            for special in ("__init__", "__new__"):
                if isinstance(found := self.member(obj, special), griffe.Function):
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


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _suggest(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, sorted(set(names)), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


shared_index = functools.lru_cache(maxsize=1)(Index)  # one per process: the installed packages do not change


def _cache_file() -> Path:
    """Answers hold as long as the environment, the tracked packages' versions and this file do."""
    source = Path(__file__).read_text(encoding="utf-8")
    key = json.dumps([sys.prefix, {name: _version(name) for name in TRACKED}, _version("griffe"), source])
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xnnguide-doccheck"
    return folder / f"api-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def _answer(use: Use, versions: dict[str, str]) -> list[list[str]]:
    """What is wrong with *use*, as [key to report once per file ("" for always), message, fix] triples."""
    index, top = shared_index(), use.steps[0].split(".")[0]
    found, installed = index.walk(index.resolve(use.steps[0]), list(use.steps[1:])), f"installed {top} {versions[top]}"
    if isinstance(found, Missing) and (use.module or not found.at):
        absent = versions[top] == "not installed"
        return [[f"{found.at}:{found.name}", f"{use.written}: {top} is not installed" if absent else
                 f"{use.written}: there is no module {use.steps[0]} in the {installed}",
                 "import it from where the installed package defines it (search its sources), or drop the import"]]
    if isinstance(found, Missing):
        where = found.at
        if "()" in use.steps:
            call = ".".join(use.steps[:len(use.steps) - use.steps[::-1].index("()")]).replace(".()", "(...)")
            where += f" (what {call} returns)"
        return [[f"{found.at}:{found.name}", f"{use.written}: {where} has no attribute '{found.name}' ({installed})",
                 f"use the name the installed package has{_suggest(found.name, found.names)}, "
                 "or update the code to the installed API"]]
    params = index.parameters(found) if use.keywords and isinstance(found, griffe.Object) else None
    if params is None or any(p.kind is griffe.ParameterKind.var_keyword for p in params):
        return []
    valid = {p.name for p in params if p.kind is not griffe.ParameterKind.positional_only}
    return [["", f"{use.written}({keyword}=...): {found.path} has no parameter '{keyword}' "
             f"({installed}; it takes: {', '.join(dict.fromkeys(p.name for p in params)) or 'nothing'})",
             f"use a parameter it has{_suggest(keyword, sorted(valid))}, or update the code to the installed API"]
            for keyword in use.keywords if keyword not in valid]


def check(context: Context) -> list[Finding]:
    """The uses the installed packages lack. Answers are cached per unit text and per use, as long as
    :func:`_cache_file` holds."""
    units = [unit for unit, _ in context.units]
    versions, path = {name: _version(name) for name in TRACKED}, _cache_file()
    try:
        cache = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    size, findings = len(cache), []
    for unit in units:
        unit_key = "unit " + hashlib.sha256(unit.text.encode()).hexdigest()
        if unit_key not in cache:
            cache[unit_key], reported = [], set()
            for use in collect(unit):
                key = json.dumps([use.steps, use.written, use.keywords, use.module])
                if key not in cache:
                    cache[key] = _answer(use, versions)
                for once, message, fix in cache[key]:
                    if not once or once not in reported:
                        reported.add(once)
                        cache[unit_key].append([use.line, message, fix])
        findings += [Finding(unit.path, line, NAME, message, fix) for line, message, fix in cache[unit_key]]
    if len(cache) > size:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.with_suffix(f".{os.getpid()}").write_text(json.dumps(cache), encoding="utf-8")
            os.replace(path.with_suffix(f".{os.getpid()}"), path)
    return findings
