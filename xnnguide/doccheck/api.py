"""Rule 3: no API drift against the installed torch, executorch, torchao, torchvision.

For each unit (a page's Python, or a ``.py`` file) the checker lists, in
source order, every module imported from a tracked package, every name
imported from one, every attribute path hanging off such a name
(``torch.export.export``) and every call of one with its keyword arguments.
Each path must resolve in the installed packages, and each keyword must be a
parameter of the callee (``inspect.signature`` semantics: a ``**kwargs``
parameter accepts any keyword).

Answers come from the installed sources (:mod:`.apistatic`), and only when
those cannot decide from importing the package in a separate process
(:mod:`.apiprobe`). Answers are cached on disk
per Python and package versions (``~/.cache/xnnguide-doccheck``, or
``$DOCCHECK_CACHE_DIR``), so an unchanged environment never imports torch twice.
"""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
import importlib.machinery
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from xnnguide.doccheck.apistatic import FOUND, MISSING, UNKNOWN, Answer, Params, StaticIndex
from xnnguide.doccheck.model import Finding
from xnnguide.doccheck.pycode import Unit, dotted, walk_in_order

RULE = "api"
TRACKED = ("torch", "executorch", "torchao", "torchvision")
CACHE_VERSION = "8"


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

    @property
    def query(self) -> tuple[str, str]:
        if self.kind == "module":
            return ("m", self.module)
        if self.chain:
            return ("i", f"{self.module}:{self.attributes}|{'.'.join(self.chain)}")
        return ("p" if self.kind == "call" and self.keywords else "a", f"{self.module}:{self.attributes}")


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


# ---------------------------------------------------------------- answers

@functools.lru_cache(maxsize=8)
def _versions(tracked: tuple[str, ...]) -> dict[str, str]:
    versions = {}
    for name in tracked:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@functools.lru_cache(maxsize=8)
def _cache_file(tracked: tuple[str, ...]) -> Path | None:
    folder = os.environ.get("DOCCHECK_CACHE_DIR")
    if folder == "":
        return None
    if folder is None:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        folder = str(Path(base) / "xnnguide-doccheck")
    stamps = {}
    for name in tracked:  # a reinstall of the same version changes the files' times
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, sys.path)
            stamps[name] = os.stat(spec.origin).st_mtime_ns if spec and spec.origin else 0
        except (ImportError, OSError, ValueError):
            stamps[name] = 0
    key = json.dumps([CACHE_VERSION, sys.version, sys.prefix, _versions(tracked), stamps], sort_keys=True)
    return Path(folder) / f"api-{hashlib.sha256(key.encode()).hexdigest()[:20]}.json"


class Resolver:
    """Static answers first, then the import probe; everything cached."""

    def __init__(self, tracked: tuple[str, ...] = TRACKED, use_cache: bool = True):
        self.tracked = tracked
        self.static = StaticIndex()
        self.cache_path = _cache_file(tracked) if use_cache else None
        self.cache: dict[str, dict] = {}
        self.versions = dict(_versions(tracked))
        self.probed = 0
        if self.cache_path is not None:
            try:
                self.cache = json.loads(self.cache_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.cache = {}
        self._dirty = False

    # A query is (kind, path): kind "m" (module), "a" (attribute path), "p" (parameters).
    def answers(self, queries: set[tuple[str, str]]) -> dict[tuple[str, str], dict]:
        result: dict[tuple[str, str], dict] = {}
        to_probe: list[tuple[str, str]] = []
        for kind, path in sorted(queries):
            key = f"{kind}:{path}"
            if key in self.cache:
                result[(kind, path)] = self.cache[key]
                continue
            answer = self._static(kind, path)
            # Only when the source cannot decide is the package imported.
            if kind == "i":
                result[(kind, path)] = answer
            elif answer is None or (kind == "p" and answer.get("params") is None
                                  and answer.get("kind") in ("function", "class")):
                to_probe.append((kind, path))
            else:
                result[(kind, path)] = answer
        if to_probe:
            probed = self._probe(to_probe)
            for query, answer in zip(to_probe, probed):
                result[query] = answer
        for query, answer in result.items():
            key = f"{query[0]}:{query[1]}"
            if self.cache.get(key) != answer:
                self.cache[key] = answer
                self._dirty = True
        self._save()
        return result

    def _instance(self, path: str) -> dict:
        """An attribute (and its parameters) of what a tracked call returns; never probed."""
        callable_path, _, chain = path.partition("|")
        module, _, attributes = callable_path.partition(":")
        owner = self.static.instance_type(self.static.resolve_in(module, attributes))
        names = chain.split(".")
        for index, name in enumerate(names):
            if owner is None:
                return {"status": UNKNOWN}
            found = self.static.instance_attribute(owner, name)
            kind_name = f"{owner[2].name}.{owner[1].name}"
            if found.status == MISSING:
                return {"status": MISSING, "missing_at": kind_name, "missing_name": name, "names": found.names}
            if found.status != FOUND:
                return {"status": UNKNOWN}
            if index == len(names) - 1:
                params = self.static.parameters(found) if found.kind == "function" else None
                return {"status": FOUND, "kind": found.kind, "type": kind_name,
                        "params": None if params is None else [list(p) for p in params.names]}
            owner = self.static.instance_type(found, owner)
        return {"status": UNKNOWN}

    def _static(self, kind: str, path: str) -> dict | None:
        if kind == "i":
            try:
                return self._instance(path)
            except RecursionError:
                return {"status": UNKNOWN}
        try:
            if kind == "m":
                exists = self.static.module_exists(path)
                if exists is None:
                    return None
                return {"status": FOUND, "kind": "module"} if exists else {
                    "status": MISSING, "missing_at": path.rpartition(".")[0], "missing_name": path}
            module, _, attributes = path.partition(":")
            answer = self.static.resolve_in(module, attributes)
            if answer.status == UNKNOWN:
                return None
            if answer.status == MISSING:
                return {"status": MISSING, "missing_at": answer.missing_at, "missing_name": answer.missing_name,
                        "names": answer.names}
            if kind == "a":
                return {"status": FOUND, "kind": answer.kind}
            params = self.static.parameters(answer)
            if answer.kind in ("module", "value") and params is None:
                return {"status": FOUND, "kind": answer.kind, "params": None}
            return {"status": FOUND, "kind": answer.kind, "params": None if params is None else
                    [list(p) for p in params.names]}
        except RecursionError:
            return None

    def _probe(self, queries: list[tuple[str, str]]) -> list[dict]:
        self.probed += len(queries)
        payload = json.dumps([{"path": path, "module": kind == "m", "params": kind == "p"} for kind, path in queries])
        env = dict(os.environ)
        # The probe must import this very checker, whatever the working folder.
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        try:
            done = subprocess.run([sys.executable, "-m", "xnnguide.doccheck.apiprobe"], input=payload, env=env,
                                  capture_output=True, text=True, timeout=600)
            answers = json.loads(done.stdout)
            if len(answers) == len(queries):
                return answers
            raise ValueError("wrong number of answers")
        except (OSError, subprocess.SubprocessError, ValueError) as error:
            return [{"status": UNKNOWN, "error": f"probe failed: {error}"} for _ in queries]

    def _save(self) -> None:
        if not self._dirty or self.cache_path is None:
            return
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            try:  # keep what a concurrent run added
                merged = json.loads(self.cache_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                merged = {}
            merged.update(self.cache)
            tmp = self.cache_path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(merged, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.cache_path)
        except OSError:
            pass
        self._dirty = False


def _installed(target: str, versions: dict[str, str]) -> str:
    top = target.split(".")[0]
    return f"installed {top} {versions.get(top, '?')}"


def _suggest(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def check(units: list[Unit], resolver: Resolver) -> list[Finding]:
    uses = [use for unit in units for use in collect(unit, resolver.tracked)]
    answers = resolver.answers({use.query for use in uses})
    findings, reported = [], set()
    for use in uses:
        answer = answers.get(use.query) or {}
        if answer.get("status") == MISSING:
            key = (use.path, answer.get("missing_at"), answer.get("missing_name"))
            if key in reported:
                continue
            reported.add(key)
            findings.append(_missing(use, answer, resolver.versions))
        elif answer.get("status") == FOUND and use.keywords and answer.get("params") is not None:
            params = Params([tuple(p) for p in answer["params"]])
            if params.accepts_any_keyword:
                continue
            valid = set(params.keywords())
            subject = f"{answer['type']}.{use.chain[-1]}" if use.chain and answer.get("type") else use.target
            for keyword in use.keywords:
                if keyword not in valid:
                    findings.append(Finding(
                        use.path, use.line, RULE,
                        f"{use.written}({keyword}=...): {subject} has no parameter '{keyword}' "
                        f"({_installed(use.target, resolver.versions)}; it takes: {params.describe() or 'nothing'})",
                        f"use a parameter it has{_suggest(keyword, sorted(valid))}, or update the code "
                        "to the installed API"))
    return findings


def _missing(use: Use, answer: dict, versions: dict[str, str]) -> Finding:
    where, name = answer.get("missing_at") or "", answer.get("missing_name") or use.target
    installed = _installed(use.target, versions)
    if use.kind == "method":
        returned = f"{use.target}(...)" + "".join(f".{part}(...)" for part in use.chain[:-1])
        return Finding(use.path, use.line, RULE,
                       f"{use.written}: {where} (what {returned} returns) has no attribute '{name}' ({installed})",
                       f"use the name the installed class has{_suggest(name, answer.get('names') or [])}, "
                       "or update the code to the installed API")
    if use.kind == "module" or not where:
        what = f"{use.written}: there is no module {name} in the {installed}"
        if versions.get(use.target.split(".")[0]) == "not installed":
            what = f"{use.written}: {use.target.split('.')[0]} is not installed"
        return Finding(use.path, use.line, RULE, what, "import it from where the installed package defines it "
                       "(search its sources), or drop the import")
    return Finding(use.path, use.line, RULE,
                   f"{use.written}: {where} has no attribute '{name}' ({installed})",
                   f"use the name the installed package has{_suggest(name, answer.get('names') or [])}, "
                   "or update the code to the installed API")
