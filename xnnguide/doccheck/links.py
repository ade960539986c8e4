"""Rule 7: links and structure.

* every page of a Sphinx source folder is listed in some toctree, unless it
  is the root page, is marked orphan, or matches ``exclude_patterns``; every
  toctree entry names a page that exists (or that sphinx-gallery generates);
* every relative link of a Markdown file (pages and READMEs alike) points at a
  file that exists, and its ``#anchor`` at a heading or target of that file;
  links into the source folder may also name the page without its suffix or
  as the built ``.html``;
* every ``{doc}`` / ``:doc:`` names an existing page and every ``{ref}`` /
  ``:ref:`` a label defined somewhere (``(label)=``, ``.. _label:``, a
  directive's ``name``, or one sphinx-gallery generates).

The Sphinx build itself (nitpicky, warnings as errors) checks the same for
pages in ``make test``; this rule also covers READMEs and runs in seconds.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from pathlib import Path
from urllib.parse import unquote

from xnnguide.doccheck.model import Document, Finding
from xnnguide.doccheck.project import DOC_SUFFIXES, Project, SourceDir, display

RULE_TOC = "toctree"
RULE_LINK = "links"
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_STD_LABELS = {"genindex", "modindex", "search", "py-modindex"}


def _entry_target(line: str) -> str:
    line = line.strip()
    match = re.match(r"^.*<([^<>]+)>$", line)
    return match.group(1).strip() if match else line


def _docnames(project: Project, source: SourceDir) -> dict[str, Document]:
    names = {}
    for document in project.documents.values():
        name = source.docname(document.path)
        if name is not None:
            names[name] = document
    return names


def _join(base_doc: str, target: str) -> str:
    if target.startswith("/"):
        return posixpath.normpath(target.lstrip("/"))
    return posixpath.normpath(posixpath.join(posixpath.dirname(base_doc), target))


def _strip_suffix(name: str) -> str:
    for suffix in DOC_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def check_toctrees(project: Project) -> list[Finding]:
    findings = []
    for source in project.source_dirs:
        docs = _docnames(project, source)
        known = set(docs) | source.generated_docs
        listed: set[str] = set()
        for name, document in sorted(docs.items()):
            for toctree in document.toctrees():
                patterns = "glob" in toctree.options
                for offset, entry in enumerate(toctree.body):
                    if not entry.strip() or entry.strip().startswith(":"):
                        continue
                    target = _entry_target(entry)
                    if target == "self" or _SCHEME.match(target):
                        continue
                    resolved = _strip_suffix(_join(name, target))
                    if patterns and any(ch in target for ch in "*?["):
                        matches = [d for d in known if fnmatch.fnmatchcase(d, resolved)]
                        listed.update(matches)
                        continue
                    listed.add(resolved)
                    if resolved not in known:
                        findings.append(Finding(display(document.path), toctree.body_line + offset, RULE_TOC,
                                                f"toctree entry {target!r} names no page",
                                                "fix the entry, or create the page"))
        for name, document in sorted(docs.items()):
            if (name == source.root_doc or name in listed or document.orphan or source.excluded(document.path)
                    or any(g.resolve() in document.path.resolve().parents for g in source.gallery_dirs)):
                continue
            findings.append(Finding(display(document.path), 1, RULE_TOC,
                                    "this page is in no toctree, so readers cannot navigate to it",
                                    f"list it in a toctree (the right section of {source.root_doc}), mark it orphan, "
                                    "or add it to exclude_patterns if it is a fragment that pages include"))
    return findings


def _anchors(project: Project, path: Path) -> set[str] | None:
    document = project.documents.get(path.resolve())
    if document is None:
        if path.suffix not in (".md", ".markdown") or not path.is_file():
            return None
        from xnnguide.doccheck import markdown

        try:
            document = markdown.read(path, path.read_text(encoding="utf-8"), project.myst_extensions)
        except (OSError, UnicodeDecodeError):
            return None
    return document.anchors | document.labels


def check_links(project: Project) -> list[Finding]:
    labels: set[str] = set(_STD_LABELS)
    for document in project.documents.values():
        labels |= document.labels
    for source in project.source_dirs:
        labels |= source.generated_labels
    intersphinx = any("intersphinx" in ext for s in project.source_dirs for ext in s.extensions)
    autosection = any("autosectionlabel" in ext for s in project.source_dirs for ext in s.extensions)

    findings = []
    for document in project.documents.values():
        shown = display(document.path)
        source = project.source_dir_of(document.path)
        docs = _docnames(project, source) if source else {}
        known = set(docs) | (source.generated_docs if source else set())
        here = source.docname(document.path) if source else None
        for link in document.links:
            target = link.target.strip()
            if link.kind in ("doc", "ref"):
                match = re.match(r"^.*<([^<>]+)>$", target)
                target = match.group(1).strip() if match else target
                target = target.lstrip("~!")
            if link.kind == "doc":
                if source is None or here is None:
                    continue
                if _strip_suffix(_join(here, target)) not in known:
                    findings.append(Finding(shown, link.line, RULE_LINK, f"{{doc}} target {target!r} names no page",
                                            "use the page's path relative to this page (no suffix), or /path "
                                            "from the source folder"))
            elif link.kind == "ref":
                if target in labels or autosection or (intersphinx and ":" in target):
                    continue
                findings.append(Finding(shown, link.line, RULE_LINK, f"{{ref}} target {target!r} is no label",
                                        "define the label ((label)= in MyST, .. _label: in reST) or fix the name"))
            else:
                problem = _check_url(project, document, source, here, known, target)
                if problem:
                    findings.append(Finding(shown, link.line, RULE_LINK, problem[0], problem[1]))
    return findings


def _check_url(project: Project, document: Document, source: SourceDir | None, here: str | None,
               known: set[str], target: str) -> tuple[str, str] | None:
    if not target:
        return ("empty link target", "give the link a target")
    for scheme in ("project:", "path:"):
        if target.startswith(scheme):
            target = target[len(scheme):]
            break
    else:
        if _SCHEME.match(target) or target.startswith("//"):
            return None
    path_part, _, fragment = target.partition("#")
    path_part = unquote(path_part.split("?")[0])
    if not path_part:
        anchors = document.anchors | document.labels
        if fragment and fragment not in anchors:
            return (f"#{fragment} matches no heading or target of this page",
                    "link to an existing heading's anchor, or add a (label)= target")
        return None
    if path_part.startswith("/") and source is not None:
        candidate = source.path / path_part.lstrip("/")
    else:
        candidate = document.path.parent / path_part
    if candidate.exists():
        if fragment and candidate.is_file():
            anchors = _anchors(project, candidate)
            if anchors is not None and fragment not in anchors:
                return (f"{target}: {path_part} has no heading or target #{fragment}",
                        "link to an existing anchor of that file")
        return None
    # A page named without its suffix, or by its built .html.
    if source is not None and here is not None:
        name = _join(here, path_part)
        for suffix in (".html", "/"):
            if name.endswith(suffix):
                name = name[: -len(suffix)] or "index"
        if name in known or f"{name}/index" in known:
            return None
    return (f"link target {target} does not exist",
            "fix the path (relative to this file), or link the page's source file")
