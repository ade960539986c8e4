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
CACHE_VERSION = "7"


@dataclass
class Use:
    path: str
    line: int
    kind: str  # "module", "name" (from-import), "attr", "call"
    module: str  # the module an import statement names
    attributes: str = ""  # dotted path inside it ("" for the module itself)
    written: str = ""  # how the code spells it
    keywords: list[str] = field(default_factory=list)

    @property
    def target(self) -> str:
        return f"{self.module}.{self.attributes}" if self.attributes else self.module

    @property
    def query(self) -> tuple[str, str]:
        if self.kind == "module":
            return ("m", self.module)
        return ("p" if self.kind == "call" and self.keywords else "a", f"{self.module}:{self.attributes}")


def collect(unit: Unit, tracked: tuple[str, ...] = TRACKED) -> list[Use]:
    """The uses of tracked packages in *unit*, in source order."""
    bindings: dict[str, tuple[str, str]] = {}  # local name -> (module, attributes)
    uses: list[Use] = []
    inner: set[int] = set()

    def is_tracked(name: str) -> bool:
        return name.split(".")[0] in tracked

    def target_of(node: ast.expr) -> tuple[str, str, str] | None:
        parts = dotted(node)
        if not parts or parts[0] not in bindings:
            return None
        module, attributes = bindings[parts[0]]
        return module, ".".join(p for p in [attributes, *parts[1:]] if p), ".".join(parts)

    for node in walk_in_order(unit.statements):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_tracked(alias.name):
                    uses.append(Use(unit.path, node.lineno, "module", alias.name, written=f"import {alias.name}"))
                    if alias.asname:
                        bindings[alias.asname] = (alias.name, "")
                    else:
                        bindings[alias.name.split(".")[0]] = (alias.name.split(".")[0], "")
                else:
                    bindings.pop(alias.asname or alias.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            if node.level or not node.module or not is_tracked(node.module):
                for alias in node.names:
                    bindings.pop(alias.asname or alias.name, None)
                continue
            uses.append(Use(unit.path, node.lineno, "module", node.module, written=f"from {node.module} import ..."))
            for alias in node.names:
                if alias.name == "*":
                    continue
                uses.append(Use(unit.path, node.lineno, "name", node.module, alias.name,
                                f"from {node.module} import {alias.name}"))
                bindings[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bindings.pop(node.name, None)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name_node in ast.walk(target):
                    if isinstance(name_node, ast.Name):
                        bindings.pop(name_node.id, None)
        elif isinstance(node, ast.Call):
            found = target_of(node.func)
            if found:
                keywords = [kw.arg for kw in node.keywords if kw.arg]
                uses.append(Use(unit.path, node.lineno, "call", found[0], found[1], found[2], keywords))
        elif isinstance(node, ast.Attribute) and id(node) not in inner:
            value = node.value
            while isinstance(value, ast.Attribute):
                inner.add(id(value))
                value = value.value
            if isinstance(node.ctx, ast.Load):
                found = target_of(node)
                if found:
                    uses.append(Use(unit.path, node.lineno, "attr", found[0], found[1], found[2]))
    return uses


# ---------------------------------------------------------------- answers

def _versions(tracked: tuple[str, ...]) -> dict[str, str]:
    versions = {}
    for name in tracked:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


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
        self.versions = _versions(tracked)
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
            if answer is None or (kind == "p" and answer.get("params") is None
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

    def _static(self, kind: str, path: str) -> dict | None:
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
        elif answer.get("status") == FOUND and use.kind == "call" and answer.get("params") is not None:
            params = Params([tuple(p) for p in answer["params"]])
            if params.accepts_any_keyword:
                continue
            valid = set(params.keywords())
            for keyword in use.keywords:
                if keyword not in valid:
                    findings.append(Finding(
                        use.path, use.line, RULE,
                        f"{use.written}({keyword}=...): {use.target} has no parameter '{keyword}' "
                        f"({_installed(use.target, resolver.versions)}; it takes: {params.describe() or 'nothing'})",
                        f"use a parameter it has{_suggest(keyword, sorted(valid))}, or update the code "
                        "to the installed API"))
    return findings


def _missing(use: Use, answer: dict, versions: dict[str, str]) -> Finding:
    where, name = answer.get("missing_at") or "", answer.get("missing_name") or use.target
    installed = _installed(use.target, versions)
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
