"""Which files to check, and what the Sphinx configuration says about them.

The checker works on any tree: it walks the paths it is given, skips what
git ignores and the usual build and environment folders, and reads every
Markdown, reStructuredText and Python file. When a folder holds the root
page of a Sphinx project (``index.md`` / ``index.rst``) it is a *source
folder*: its pages must sit in a toctree. Its ``conf.py`` (in the folder or
one of its parents) is read without being run: literal values only, for
``root_doc``, ``exclude_patterns``, ``extensions``, ``myst_enable_extensions``
and sphinx-gallery's ``examples_dirs`` / ``gallery_dirs``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from xnnguide.doccheck.model import Document, InputError

DOC_SUFFIXES = (".md", ".markdown", ".rst")
# Build output and installed packages; hidden folders and virtual environments are skipped too.
SKIP_DIRS = frozenset({"_build", "node_modules", "__pycache__", "site-packages"})


def display(path: Path) -> str:
    """*path* relative to the working directory when it lies below it, else absolute."""
    absolute = Path(os.path.normpath(os.path.abspath(path)))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        try:
            return str(path.resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(absolute)


@dataclass
class SphinxConf:
    path: Path | None
    values: dict[str, object] = field(default_factory=dict)

    def get(self, name: str, default=None):
        return self.values.get(name, default)


def read_conf(path: Path | None) -> SphinxConf:
    """The literal top-level assignments of a ``conf.py``, without running it."""
    if path is None or not path.is_file():
        return SphinxConf(None)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return SphinxConf(path)
    values: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and node.value is not None:
                    value = _literal(node.value, values)
                    if value is not _UNKNOWN:
                        values[target.id] = value
    return SphinxConf(path, values)


_UNKNOWN = object()


def _literal(node: ast.expr, names: dict[str, object]):
    """The value of a literal, reading names assigned earlier in the file; else ``_UNKNOWN``."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        pass
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Dict):  # keep the literal entries of a partly literal dict
        result = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                continue
            k, v = _literal(key, names), _literal(value, names)
            if k is not _UNKNOWN and v is not _UNKNOWN:
                result[k] = v
        return result
    return _UNKNOWN


def _as_list(value) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Sphinx's exclude-pattern syntax: ``**`` crosses folders, ``*`` does not."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


@dataclass
class SourceDir:
    """A Sphinx source folder and what its configuration says about it."""

    path: Path
    conf: SphinxConf
    root_doc: str = "index"
    exclude: list[re.Pattern[str]] = field(default_factory=list)
    gallery_dirs: list[Path] = field(default_factory=list)  # generated, never scanned
    generated_docs: set[str] = field(default_factory=set)
    generated_labels: set[str] = field(default_factory=set)
    recipes: list[Path] = field(default_factory=list)  # files sphinx-gallery runs

    def docname(self, path: Path) -> str | None:
        try:
            relative = path.resolve().relative_to(self.path.resolve())
        except ValueError:
            return None
        return relative.with_suffix("").as_posix()

    def excluded(self, path: Path) -> bool:
        try:
            relative = path.resolve().relative_to(self.path.resolve()).as_posix()
        except ValueError:
            return False
        parts = relative.split("/")
        candidates = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
        return any(p.match(c) for p in self.exclude for c in candidates)

    @property
    def extensions(self) -> list[str]:
        return [str(e) for e in _as_list(self.conf.get("extensions"))]


def _source_dir(path: Path, conf: SphinxConf) -> SourceDir:
    root_doc = str(conf.get("root_doc") or conf.get("master_doc") or "index")
    source = SourceDir(path, conf, root_doc)
    source.exclude = [glob_to_regex(str(p)) for p in _as_list(conf.get("exclude_patterns"))]
    gallery = conf.get("sphinx_gallery_conf")
    if isinstance(gallery, dict):
        examples = _as_list(gallery.get("examples_dirs", "examples"))
        outputs = _as_list(gallery.get("gallery_dirs", "auto_examples"))
        pattern = re.compile(str(gallery.get("filename_pattern", r"/plot")))
        ignore = re.compile(str(gallery.get("ignore_pattern", r"__init__\.py")))
        for example, output in zip(examples, outputs):
            example_dir = (path / str(example)).resolve()
            output_dir = path / str(output)
            source.gallery_dirs.append(output_dir)
            output_name = Path(str(output)).as_posix()
            source.generated_docs.add(f"{output_name}/index")
            if not example_dir.is_dir():
                continue
            for script in sorted(example_dir.rglob("*.py")):
                if ignore.search(str(script)):
                    continue
                relative = script.relative_to(example_dir)
                source.generated_docs.add(f"{output_name}/{relative.with_suffix('').as_posix()}")
                if relative.parent != Path("."):
                    source.generated_docs.add(f"{output_name}/{relative.parent.as_posix()}/index")
                label_dir = output_name.replace("/", "_")
                source.generated_labels.add(f"sphx_glr_{label_dir}_{relative.as_posix().replace('/', '_')}")
                if pattern.search(str(script)):
                    source.recipes.append(script)
        source.generated_docs.add("sg_execution_times")
        source.generated_labels.add("sphx_glr_sg_execution_times")
        for output in outputs:
            label_dir = Path(str(output)).as_posix().replace("/", "_")
            source.generated_labels.update({f"sphx_glr_{label_dir}", f"sphx_glr_{label_dir}_sg_execution_times"})
            source.generated_docs.add(f"{Path(str(output)).as_posix()}/sg_execution_times")
    return source


def find_conf(start: Path, stop: Path) -> Path | None:
    """``conf.py`` in *start* or a parent folder, not above *stop*."""
    start, stop = start.resolve(), stop.resolve()
    current = start
    while True:
        candidate = current / "conf.py"
        if candidate.is_file():
            return candidate
        if current == stop or current.parent == current or stop not in current.parents:
            return None
        current = current.parent


def _is_source_dir(path: Path, conf: SphinxConf) -> bool:
    root_doc = str(conf.get("root_doc") or conf.get("master_doc") or "index")
    return any((path / f"{root_doc}{suffix}").is_file() for suffix in DOC_SUFFIXES)


def _git_ignored(paths: list[Path], cwd: Path) -> set[Path]:
    here = cwd.resolve()
    if not paths or not any((folder / ".git").exists() for folder in (here, *here.parents)):
        return set()
    try:
        result = subprocess.run(["git", "check-ignore", "--stdin", "-z"], cwd=cwd, capture_output=True,
                                input=b"\0".join(str(p.resolve()).encode() for p in paths), timeout=30)
    except (OSError, subprocess.SubprocessError):
        return set()
    if result.returncode not in (0, 1):  # 128: not a repository
        return set()
    return {Path(p.decode()).resolve() for p in result.stdout.split(b"\0") if p}


@dataclass
class Project:
    root: Path
    paths: list[Path]
    source_dirs: list[SourceDir]
    doc_files: list[Path]
    python_files: list[Path]
    documents: dict[Path, Document] = field(default_factory=dict)  # by resolved path

    def source_dir_of(self, path: Path) -> SourceDir | None:
        resolved = path.resolve()
        best = None
        for source in self.source_dirs:
            if source.path.resolve() in resolved.parents:
                if best is None or len(source.path.resolve().parts) > len(best.path.resolve().parts):
                    best = source
        return best

    @property
    def recipes(self) -> list[Path]:
        return [recipe for source in self.source_dirs for recipe in source.recipes]

    @property
    def myst_extensions(self) -> tuple[str, ...]:
        found: set[str] = {"colon_fence", "deflist"}
        for source in self.source_dirs:
            found.update(str(e) for e in _as_list(source.conf.get("myst_enable_extensions")))
        return tuple(sorted(found))


def discover(paths: list[Path], root: Path, conf_path: Path | None = None,
             source_dirs: list[Path] | None = None, exclude: list[str] | None = None) -> Project:
    """Everything below *paths* the checker reads; :class:`InputError` for a missing path."""
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
    explicit_conf = read_conf(conf_path) if conf_path else None
    sources: list[SourceDir] = []
    candidates = list(source_dirs or [])
    for path in paths:
        if path.is_dir() and not source_dirs:
            conf = explicit_conf or read_conf(find_conf(path, root if root.resolve() in path.resolve().parents
                                                        or root.resolve() == path.resolve() else path))
            if _is_source_dir(path, conf):
                candidates.append(path)
            else:  # a project folder: look one or two levels down for docs/conf.py + index
                for conf_file in sorted(path.glob("*/conf.py")) + sorted(path.glob("*/*/conf.py")):
                    if _is_source_dir(conf_file.parent, read_conf(conf_file)):
                        candidates.append(conf_file.parent)
    seen = set()
    for candidate in candidates:
        if candidate.resolve() in seen:
            continue
        seen.add(candidate.resolve())
        conf = explicit_conf or read_conf(find_conf(candidate, root if root.resolve() in candidate.resolve().parents
                                                    or root.resolve() == candidate.resolve() else candidate))
        sources.append(_source_dir(candidate, conf))

    skipped = {g.resolve() for s in sources for g in s.gallery_dirs}
    generated_files = {(s.path / "sg_execution_times.rst").resolve() for s in sources if s.gallery_dirs}
    excluded = [glob_to_regex(p) for p in exclude or []]
    docs, pythons = [], []

    def wanted(path: Path) -> bool:
        return not any(p.search(path.as_posix()) for p in excluded)

    for path in paths:
        if path.is_file():
            if path.suffix in DOC_SUFFIXES:
                docs.append(path)
            elif path.suffix == ".py":
                pythons.append(path)
            else:
                raise InputError(f"{path}: not a Markdown, reStructuredText or Python file")
            continue
        for folder, dirnames, filenames in os.walk(path):
            folder_path = Path(folder)
            dirnames[:] = sorted(
                d for d in dirnames
                if not d.startswith(".") and d not in SKIP_DIRS and (folder_path / d).resolve() not in skipped
                and not (folder_path / d / "pyvenv.cfg").exists()
            )
            for name in sorted(filenames):
                file = folder_path / name
                if not wanted(file) or file.resolve() in generated_files:
                    continue
                if file.suffix in DOC_SUFFIXES:
                    docs.append(file)
                elif file.suffix == ".py":
                    pythons.append(file)
    ignored = _git_ignored(docs + pythons, root)
    # Files named on the command line are checked even when git ignores them.
    named = {p.resolve() for p in paths if p.is_file()}
    docs = _unique([d for d in docs if d.resolve() not in ignored or d.resolve() in named])
    pythons = _unique([p for p in pythons if p.resolve() not in ignored or p.resolve() in named])
    return Project(root, paths, sources, docs, pythons)


def _unique(paths: list[Path]) -> list[Path]:
    seen, out = set(), []
    for path in paths:
        if path.resolve() not in seen:
            seen.add(path.resolve())
            out.append(path)
    return out
