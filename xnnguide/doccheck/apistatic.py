"""Answer "does this name exist, and what keywords does it take?" from installed sources.

Importing torch, executorch, torchao and torchvision takes many seconds, so
rule 3 first reads the installed packages' source files (syntax trees only,
nothing runs): module files, top-level bindings, ``from x import *`` with
``__all__``, class bodies and their bases, ``def`` signatures, dataclass
fields, and ``.pyi`` stubs next to compiled modules. Where the source cannot
decide (a module-level ``__getattr__``, names written through ``globals()``,
a compiled module without a stub, a base class it cannot follow) the answer
is :data:`UNKNOWN`, and :mod:`.apiprobe` imports the package to decide.
"""

from __future__ import annotations

import ast
import builtins
import importlib.machinery
import sys
from dataclasses import dataclass, field
from pathlib import Path

UNKNOWN = "unknown"
MISSING = "missing"
FOUND = "found"

_BUILTIN_BASES = {"object", "ABC", "Generic", "Protocol"}


@dataclass
class Module:
    name: str
    path: Path | None  # None for a namespace package
    is_package: bool
    bindings: dict[str, tuple] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)
    all: list[str] | None = None
    dynamic: bool = False
    # Every def of a name (stubs list one per @overload): keywords are their union.
    defs: dict[str, list] = field(default_factory=dict)
    # What ``if TYPE_CHECKING:`` imports: a dynamic module's own account of the names it creates.
    typing: "Module | None" = None


@dataclass
class Answer:
    status: str  # FOUND, MISSING or UNKNOWN
    kind: str = ""  # "module", "class", "function", "value"
    missing_at: str = ""  # for MISSING: the dotted prefix that lacks the next name
    missing_name: str = ""
    names: list[str] = field(default_factory=list)  # what the prefix has, for suggestions
    node: object = None  # ("def"/"class", ast node, Module) when FOUND


@dataclass
class Params:
    names: list[tuple[str, str]]  # (name, kind): kind in po, pk, vp, ko, vk

    @property
    def accepts_any_keyword(self) -> bool:
        return any(kind == "vk" for _, kind in self.names)

    def keywords(self) -> list[str]:
        return [name for name, kind in self.names if kind in ("pk", "ko")]

    def describe(self) -> str:
        parts = []
        for name, kind in self.names:
            parts.append({"vp": f"*{name}", "vk": f"**{name}"}.get(kind, name))
        return ", ".join(parts)


class StaticIndex:
    def __init__(self, search_path: list[str] | None = None):
        self.search_path = search_path if search_path is not None else sys.path
        self._modules: dict[str, Module | None] = {}
        self._locations: dict[str, tuple[Path | None, bool, bool] | None] = {}

    # ------------------------------------------------------------ modules
    def _locate(self, name: str) -> tuple[Path | None, bool, bool] | None:
        """(file, is_package, is_compiled) of module *name*, or None if there is none."""
        if name in self._locations:
            return self._locations[name]
        parts = name.split(".")
        found = None
        if len(parts) == 1:
            try:
                spec = importlib.machinery.PathFinder.find_spec(name, self.search_path)
            except (ImportError, ValueError):
                spec = None
            if spec is not None:
                origin = Path(spec.origin) if spec.origin and spec.origin not in ("namespace", "built-in") else None
                is_package = spec.submodule_search_locations is not None
                compiled = origin is not None and origin.suffix not in (".py", ".pyi")
                found = (origin, is_package, compiled)
        else:
            parent = self._locate(".".join(parts[:-1]))
            if parent is not None and parent[1]:
                folders = self._package_dirs(".".join(parts[:-1]))
                for folder in folders:
                    package = folder / parts[-1]
                    if (package / "__init__.py").is_file():
                        found = (package / "__init__.py", True, False)
                    elif (folder / f"{parts[-1]}.py").is_file():
                        found = (folder / f"{parts[-1]}.py", False, False)
                    elif any(folder.glob(f"{parts[-1]}.*.so")) or any(folder.glob(f"{parts[-1]}.*.pyd")) \
                            or (folder / f"{parts[-1]}.so").is_file():
                        binary = next(iter(sorted(folder.glob(f"{parts[-1]}.*so"))), None) or folder / f"{parts[-1]}.so"
                        # A compiled module with a folder of stubs (torch._C) has stub submodules.
                        found = (binary, (package / "__init__.pyi").is_file(), True)
                    elif (folder / f"{parts[-1]}.pyi").is_file():
                        found = (folder / f"{parts[-1]}.pyi", False, False)
                    elif package.is_dir() and any(package.iterdir()):
                        found = (None, True, False)  # namespace package
                    if found:
                        break
        self._locations[name] = found
        return found

    def _package_dirs(self, name: str) -> list[Path]:
        location = self._locate(name)
        if location is None:
            return []
        path, is_package, compiled = location
        if compiled and is_package and path is not None:
            return [path.parent / name.rsplit(".", 1)[-1]]
        if path is not None:
            return [path.parent]
        if "." not in name:
            spec = importlib.machinery.PathFinder.find_spec(name, self.search_path)
            return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
        return [folder / name.rsplit(".", 1)[1] for folder in self._package_dirs(name.rsplit(".", 1)[0])]

    def module_exists(self, name: str) -> bool | None:
        """True or False; None when a compiled parent module may create it at import time."""
        if self._locate(name) is not None:
            return True
        parts = name.split(".")
        for end in range(len(parts) - 1, 0, -1):
            parent = self._locate(".".join(parts[:end]))
            if parent is not None:
                module = self.module(".".join(parts[:end]))
                # A compiled module without stubs may create submodules when imported.
                return None if module is not None and module.dynamic else False
        return False

    def module(self, name: str) -> Module | None:
        if name in self._modules:
            return self._modules[name]
        location = self._locate(name)
        if location is None:
            self._modules[name] = None
            return None
        path, is_package, compiled = location
        module = Module(name, path, is_package)
        self._modules[name] = module
        source = path
        if compiled and path is not None:
            stem = path.name.split(".")[0]
            stubs = [path.parent / f"{stem}.pyi", path.parent / stem / "__init__.pyi"]
            source = next((stub for stub in stubs if stub.is_file()), None)
            if source is None:
                module.dynamic = True
        if source is not None:
            try:
                tree = ast.parse(source.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
                module.dynamic = True
            else:
                self._collect(module, tree.body)
        return module

    def _collect(self, module: Module, body: list[ast.stmt]) -> None:
        package = module.name if module.is_package else module.name.rpartition(".")[0]
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name == "__getattr__":
                    module.dynamic = True
                module.bindings[node.name] = ("def", node, module)
                module.defs.setdefault(node.name, []).append(node)
                for inner in ast.walk(node):  # ``global x`` inside a function binds x when it runs
                    if isinstance(inner, ast.Global):
                        for name in inner.names:
                            module.bindings.setdefault(name, ("value", None, module))
            elif isinstance(node, ast.ClassDef):
                module.bindings[node.name] = ("class", node, module)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in _target_names(target):
                        module.bindings[name] = ("value", node.value, module)
                        if name == "__all__":
                            module.all = _string_list(node.value, module.all, isinstance(node, ast.AugAssign))
                if node.value is not None and _uses_globals(node.value):
                    module.dynamic = True
                if any(_uses_globals(t) for t in targets):
                    module.dynamic = True
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        module.bindings[alias.asname] = ("module", alias.name, module)
                    else:
                        top = alias.name.split(".")[0]
                        module.bindings[top] = ("module", top, module)
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(node, package)
                if source is None:
                    continue
                for alias in node.names:
                    if alias.name == "*":
                        module.stars.append(source)
                    else:
                        module.bindings[alias.asname or alias.name] = ("alias", f"{source}:{alias.name}", module)
            elif isinstance(node, ast.If):
                if _is_type_checking(node.test):
                    if module.typing is None:
                        module.typing = Module(module.name, module.path, module.is_package)
                    self._collect(module.typing, node.body)
                    self._collect(module, node.orelse)
                else:
                    self._collect(module, node.body)
                    self._collect(module, node.orelse)
            elif isinstance(node, ast.Try):
                self._collect(module, node.body)
                for handler in node.handlers:
                    self._collect(module, handler.body)
                self._collect(module, node.orelse)
                self._collect(module, node.finalbody)
            elif isinstance(node, (ast.With, ast.For, ast.While)):
                self._collect(module, node.body)
                if isinstance(node, ast.For) and _uses_globals_anywhere(node):
                    module.dynamic = True
            elif isinstance(node, ast.Expr) and _uses_globals(node.value):
                module.dynamic = True
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                call = node.value  # __all__.extend([...]) / __all__.append("x")
                func = call.func
                if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                        and func.value.id == "__all__" and call.args:
                    if func.attr == "extend":
                        module.all = _string_list(call.args[0], module.all, True)
                    elif func.attr == "append" and isinstance(call.args[0], ast.Constant):
                        module.all = (module.all or []) + [str(call.args[0].value)]

    # ------------------------------------------------------------ lookup
    def lookup(self, module: Module, name: str, seen: frozenset = frozenset()) -> Answer:
        key = (id(module), name)
        if key in seen:
            if module.is_package and self.module_exists(f"{module.name}.{name}"):
                return Answer(FOUND, "module", node=("module", f"{module.name}.{name}", None))
            return Answer(UNKNOWN)
        seen = seen | {key}
        binding = module.bindings.get(name)
        if binding is not None:
            return self._follow(binding, seen)
        unknown = False
        for star in reversed(module.stars):
            source = self.module(star)
            if source is None:
                unknown = True
                continue
            allowed = name in source.all if source.all is not None else not name.startswith("_")
            if not allowed and source.all is not None:
                continue
            answer = self.lookup(source, name, seen)
            if answer.status == FOUND:
                return answer
            if answer.status == UNKNOWN:
                unknown = True
        exists = self.module_exists(f"{module.name}.{name}") if module.is_package else False
        if exists:
            return Answer(FOUND, "module", node=("module", f"{module.name}.{name}", None))
        if module.dynamic and module.typing is not None:
            hinted = self.lookup(module.typing, name, seen)
            if hinted.status == FOUND:
                return hinted
        if module.dynamic or unknown or exists is None:
            return Answer(UNKNOWN)
        return Answer(MISSING, missing_at=module.name, missing_name=name, names=self.names(module))

    def names(self, module: Module) -> list[str]:
        names = set(module.bindings)
        for star in module.stars:
            source = self.module(star)
            if source is not None:
                names.update(source.all if source.all is not None else
                              [n for n in source.bindings if not n.startswith("_")])
        return sorted(n for n in names if not n.startswith("_"))

    def _follow(self, binding: tuple, seen: frozenset) -> Answer:
        kind, target, module = binding
        if kind == "def":
            return Answer(FOUND, "function", node=binding)
        if kind == "class":
            return Answer(FOUND, "class", node=binding)
        if kind == "module":
            return Answer(FOUND, "module", node=("module", target, None)) if self.module_exists(target) \
                else Answer(UNKNOWN)
        if kind == "alias":  # ``from source import name``: import source, then its attribute or submodule
            source, _, name = target.partition(":")
            imported = self.module(source) if self.module_exists(source) else None
            if imported is None:
                return Answer(UNKNOWN)
            answer = self.lookup(imported, name, seen)
            if answer.status != FOUND and self.module_exists(f"{source}.{name}"):
                return Answer(FOUND, "module", node=("module", f"{source}.{name}", None))
            return answer if answer.status == FOUND else Answer(UNKNOWN)
        # A plain value: an alias of another binding when it is a dotted name.
        if isinstance(target, (ast.Name, ast.Attribute)):
            parts = _dotted(target)
            if parts:
                first = module.bindings.get(parts[0])
                if first is not None and first[2] is module and first[1] is not target:
                    answer = self._follow(first, seen)
                    for part in parts[1:]:
                        if answer.status != FOUND:
                            return Answer(UNKNOWN)
                        answer = self.attribute(answer, part, seen)
                    return answer if answer.status == FOUND else Answer(UNKNOWN)
        return Answer(FOUND, "value", node=binding)

    def resolve(self, dotted: str, seen: frozenset = frozenset()) -> Answer:
        """Whether ``a.b.c`` exists: modules, then attributes of what was found."""
        parts = dotted.split(".")
        if not self.module_exists(parts[0]):
            return Answer(MISSING, missing_at="", missing_name=parts[0])
        answer = Answer(FOUND, "module", node=("module", parts[0], None))
        for part in parts[1:]:
            answer = self.attribute(answer, part, seen)
            if answer.status != FOUND:
                return answer
        return answer

    def resolve_in(self, module_name: str, attributes: str) -> Answer:
        """``attributes`` (dotted, may be empty) of the module *module_name*, as an import finds it."""
        exists = self.module_exists(module_name)
        if exists is None:
            return Answer(UNKNOWN)
        if not exists:
            parent, _, last = module_name.rpartition(".")
            return Answer(MISSING, missing_at=parent, missing_name=last or module_name)
        answer = Answer(FOUND, "module", node=("module", module_name, None))
        for part in attributes.split(".") if attributes else []:
            answer = self.attribute(answer, part)
            if answer.status != FOUND:
                return answer
        return answer

    def attribute(self, owner: Answer, name: str, seen: frozenset = frozenset()) -> Answer:
        if owner.kind == "module":
            module = self.module(owner.node[1])
            if module is None:
                return Answer(UNKNOWN)
            return self.lookup(module, name, seen)
        if owner.kind == "class":
            return self.class_attribute(owner.node, name, seen)
        return Answer(UNKNOWN)

    # ------------------------------------------------------------ classes
    def _bases(self, binding: tuple, seen: frozenset) -> list[Answer | str]:
        """Each base class as an Answer, or a builtin's name."""
        _, node, module = binding
        bases = []
        for base in node.bases:
            if isinstance(base, ast.Subscript):
                base = base.value
            parts = _dotted(base)
            if not parts:
                bases.append(Answer(UNKNOWN))
                continue
            if len(parts) == 1 and parts[0] not in module.bindings and hasattr(builtins, parts[0]):
                bases.append(parts[0])
                continue
            if parts[-1] in _BUILTIN_BASES:
                bases.append("object")
                continue
            first = module.bindings.get(parts[0])
            if first is None:
                answer = self.lookup(module, parts[0], seen)
            else:
                answer = self._follow(first, seen)
            for part in parts[1:]:
                if answer.status != FOUND:
                    break
                answer = self.attribute(answer, part, seen)
            bases.append(answer)
        return bases

    def _class_names(self, node: ast.ClassDef) -> tuple[set[str], bool]:
        names, dynamic = set(), False

        def collect(body):
            nonlocal dynamic
            for item in body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(item.name)
                    if item.name in ("__getattr__", "__getattribute__"):
                        dynamic = True
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    for target in targets:
                        names.update(_target_names(target))
                elif isinstance(item, ast.If):
                    collect(item.body)
                    collect(item.orelse)
                elif isinstance(item, ast.Try):
                    collect(item.body)
                    for handler in item.handlers:
                        collect(handler.body)

        collect(node.body)
        if any(kw.arg == "metaclass" for kw in node.keywords):
            dynamic = True
        return names, dynamic

    def class_attribute(self, binding: tuple, name: str, seen: frozenset = frozenset()) -> Answer:
        _, node, module = binding
        key = (module.name, node.name, name, "attr")
        if key in seen:
            return Answer(UNKNOWN)
        seen = seen | {key}
        methods = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and item.name == name]
        if methods:
            return Answer(FOUND, "function", node=("def", methods[-1], module, binding, methods))
            if isinstance(item, ast.ClassDef) and item.name == name:
                return Answer(FOUND, "class", node=("class", item, module))
        names, dynamic = self._class_names(node)
        if name in names:
            return Answer(FOUND, "value")
        unknown = dynamic
        for base in self._bases(binding, seen):
            if isinstance(base, str):
                real = getattr(builtins, base, None)
                if real is None or isinstance(real, type) and hasattr(real, name):
                    return Answer(FOUND, "value") if real is not None else Answer(UNKNOWN)
                continue
            if base.status != FOUND or base.kind != "class":
                unknown = True
                continue
            answer = self.class_attribute(base.node, name, seen)
            if answer.status == FOUND:
                return answer
            if answer.status == UNKNOWN:
                unknown = True
        if unknown or name.startswith("__"):
            return Answer(UNKNOWN)
        return Answer(MISSING, missing_at=f"{module.name}.{node.name}", missing_name=name,
                      names=sorted(n for n in names if not n.startswith("_")))

    # ------------------------------------------------------------ instances
    def instance_type(self, answer: Answer, owner: tuple | None = None) -> tuple | None:
        """The class of what calling *answer* returns: the class itself, or a return annotation."""
        if answer.status != FOUND or answer.node is None:
            return None
        if answer.kind == "class":
            return answer.node
        if answer.node[0] != "def":
            return None
        function, module = answer.node[1], answer.node[2]
        if function.returns is None:
            return None
        return self._annotation_class(function.returns, module, answer.node[3] if len(answer.node) > 3 else owner)

    def _annotation_class(self, expr, module: Module, owner: tuple | None, depth: int = 0) -> tuple | None:
        if depth > 4:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            try:
                expr = ast.parse(expr.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):  # X | None
            sides = [e for e in (expr.left, expr.right) if not (isinstance(e, ast.Constant) and e.value is None)]
            return self._annotation_class(sides[0], module, owner, depth + 1) if len(sides) == 1 else None
        if isinstance(expr, ast.Subscript) and (_dotted(expr.value) or [""])[-1] == "Optional":
            return self._annotation_class(expr.slice, module, owner, depth + 1)
        parts = _dotted(expr)
        if not parts:
            return None
        if parts == ["Self"] and owner is not None:
            return owner
        first = module.bindings.get(parts[0])
        answer = self._follow(first, frozenset()) if first is not None else self.lookup(module, parts[0])
        for part in parts[1:]:
            if answer.status != FOUND:
                return None
            answer = self.attribute(answer, part)
        return answer.node if answer.status == FOUND and answer.kind == "class" else None

    def _self_attributes(self, binding: tuple, seen: frozenset = frozenset()) -> set[str] | None:
        """Names a class and its bases assign as ``self.name``; None when a base cannot be read."""
        _, node, module = binding[:3]
        key = (id(node), "self")
        if key in seen:
            return set()
        seen = seen | {key}
        names: set[str] = set()
        for item in ast.walk(node):
            if isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store) \
                    and isinstance(item.value, ast.Name) and item.value.id == "self":
                names.add(item.attr)
            if isinstance(item, ast.Call) and (_dotted(item.func) or [""])[-1] == "setattr":
                return None
        for base in self._bases(binding, seen):
            if isinstance(base, str):
                continue
            if base.status != FOUND or base.kind != "class":
                return None
            more = self._self_attributes(base.node, seen)
            if more is None:
                return None
            names |= more
        return names

    def instance_attribute(self, binding: tuple, name: str) -> Answer:
        """*name* on an instance of the class *binding*: class attributes, then ``self.name`` ones."""
        answer = self.class_attribute(binding, name)
        if answer.status != MISSING:
            return answer
        assigned = self._self_attributes(binding)
        if assigned is None or name in assigned:
            return Answer(UNKNOWN) if assigned is None else Answer(FOUND, "value")
        return answer

    # ------------------------------------------------------------ signatures
    def parameters(self, answer: Answer, seen: frozenset = frozenset()) -> Params | None:
        """Parameters of what *answer* found, or ``None`` when the source cannot tell."""
        if answer.status != FOUND or answer.node is None:
            return None
        kind = answer.node[0]
        if kind == "def":
            function, module = answer.node[1], answer.node[2]
            owner = answer.node[3] if len(answer.node) > 3 else None
            siblings = answer.node[4] if len(answer.node) > 4 else module.defs.get(function.name, [function])
            merged: list[tuple[str, str]] = []
            for candidate in siblings or [function]:
                params = _params(candidate)
                decorators = {(_dotted(d) or [""])[-1] for d in candidate.decorator_list}
                if owner is not None and "staticmethod" not in decorators and params.names:
                    params = Params(params.names[1:])
                merged.extend(p for p in params.names if p not in merged)
            return Params(merged)
        if kind == "class":
            return self._class_params(answer.node, seen)
        return None

    def _class_params(self, binding: tuple, seen: frozenset) -> Params | None:
        _, node, module = binding
        key = (module.name, node.name, "init")
        if key in seen:
            return None
        seen = seen | {key}
        decorators = {(_dotted(d.func if isinstance(d, ast.Call) else d) or [""])[-1] for d in node.decorator_list}
        if any(kw.arg == "metaclass" for kw in node.keywords):
            return None
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                params = _params(item)
                return Params(params.names[1:])
        if any(isinstance(i, ast.FunctionDef) and i.name == "__new__" for i in node.body):
            return None
        fields = self._fields(node) if "dataclass" in decorators or _is_named_tuple(node) else None
        if fields is not None:
            inherited = []
            for base in self._bases(binding, seen):
                if isinstance(base, Answer) and base.status == FOUND and base.kind == "class":
                    more = self._class_params(base.node, seen)
                    if more is None:
                        return None
                    inherited.extend(more.names)
            names = {n for n, _ in inherited}
            return Params(inherited + [(f, "pk") for f in fields if f not in names])
        for base in self._bases(binding, seen):
            if isinstance(base, str):
                return Params([]) if base == "object" else None
            if base.status != FOUND or base.kind != "class":
                return None
            return self._class_params(base.node, seen)
        return Params([])  # a class with no bases takes no arguments

    def _fields(self, node: ast.ClassDef) -> list[str]:
        fields = []
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                annotation = ast.unparse(item.annotation)
                if "ClassVar" in annotation:
                    continue
                if isinstance(item.value, ast.Call) and (_dotted(item.value.func) or [""])[-1] == "field" and any(
                        kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False
                        for kw in item.value.keywords):
                    continue
                fields.append(item.target.id)
        return fields


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Params:
    args = function.args
    names = [(a.arg, "po") for a in args.posonlyargs] + [(a.arg, "pk") for a in args.args]
    if args.vararg:
        names.append((args.vararg.arg, "vp"))
    names += [(a.arg, "ko") for a in args.kwonlyargs]
    if args.kwarg:
        names.append((args.kwarg.arg, "vk"))
    return Params(names)


def _is_named_tuple(node: ast.ClassDef) -> bool:
    return any((_dotted(b) or [""])[-1] == "NamedTuple" for b in node.bases)


def _dotted(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for item in target.elts for n in _target_names(item)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _string_list(node, current: list[str] | None, extend: bool) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        values = [e.value for e in node.elts]
        return (current or []) + values if extend else values
    if isinstance(node, ast.BinOp):  # __all__ = a + b
        left = _string_list(node.left, None, False)
        right = _string_list(node.right, None, False)
        if left is not None and right is not None:
            return (current or []) + left + right if extend else left + right
    return None if not extend else current


def _uses_globals(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("globals", "exec")
               or isinstance(n, ast.Subscript) and (_dotted(n.value) or [""]) == ["sys", "modules"]
               for n in ast.walk(node))


def _uses_globals_anywhere(node: ast.AST) -> bool:
    return _uses_globals(node)


def _is_type_checking(test: ast.expr) -> bool:
    return (_dotted(test) or [""])[-1] == "TYPE_CHECKING"


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    if node.level == 0:
        return node.module
    parts = package.split(".") if package else []
    if node.level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (node.level - 1)]
    if node.module:
        base.append(node.module)
    return ".".join(base) or None
