"""Read a reStructuredText file into a :class:`~xnnguide.doccheck.model.Document`.

docutils parses the text. Sphinx's directives and roles are unknown to plain
docutils, so while parsing, the directives the rules need (code blocks,
literalinclude, include, toctree) are captured as nodes that keep their
arguments, options, body and line; every other unknown directive parses its
body as reStructuredText (so code inside ``.. tab::`` still counts), and
unknown roles (``:doc:``, ``:ref:``, ``:py:func:``...) keep their target.
Nothing is read from disk and nothing is reported by docutils itself.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Iterator

from docutils import nodes
from docutils.parsers.rst import Directive, directives, roles

from xnnguide.doccheck import markers
from xnnguide.doccheck.model import CodeBlock, Directive as Captured, Document, Finding, Link, Paragraph

CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "testcode", "doctest", "ipython", "code-cell"})
CAPTURED = CODE_DIRECTIVES | {"literalinclude", "include", "toctree", "testoutput", "highlight", "automodule",
                              "autoclass", "autofunction", "automethod", "autodata", "autoattribute",
                              "autosummary", "execution-ledger", "fact-table", "verified-stamp"}


class captured(nodes.Element):
    """A directive the reader keeps for the rules (never rendered)."""


class captured_role(nodes.Inline, nodes.TextElement):
    """An interpreted-text role unknown to docutils."""


class _AnyOptions(dict):
    """An option spec that accepts every option name, as text."""

    def __missing__(self, key: str):
        return directives.unchanged


def _options() -> _AnyOptions:
    return _AnyOptions({"class": directives.unchanged})


class _Capture(Directive):
    required_arguments = 0
    optional_arguments = 100
    final_argument_whitespace = True
    has_content = True
    option_spec = _options()

    def run(self) -> list[nodes.Node]:
        node = captured()
        node["name"] = self.name
        node["argument"] = " ".join(self.arguments)
        node["options"] = {key: "" if value is None else str(value) for key, value in self.options.items()}
        node["body"] = list(self.content)
        node["line"] = self.lineno
        node["body_line"] = self.content_offset + 1
        return [node]


class _Container(Directive):
    """Any other unknown directive: its body is parsed, so what is inside counts."""

    required_arguments = 0
    optional_arguments = 100
    final_argument_whitespace = True
    has_content = True
    option_spec = _options()

    def run(self) -> list[nodes.Node]:
        node = nodes.container()
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, node)
        label = self.options.get("name")
        if label:
            node["names"].append(str(label))
        return [node]


def _role(name: str, rawtext: str, text: str, lineno: int, inliner, options=None, content=None):
    node = captured_role(rawtext, text)
    node["role"] = name
    node["line"] = lineno
    return [node], []


@contextlib.contextmanager
def _sphinx_aware() -> Iterator[None]:
    """Make docutils capture Sphinx directives and roles for the duration of a parse."""
    original_directive, original_role = directives.directive, roles.role

    def directive(name, language, document):
        if name in CAPTURED:
            return _Capture, []
        found, messages = original_directive(name, language, document)
        return (found, messages) if found is not None else (_Container, [])

    def role(name, language, lineno, reporter):
        found, messages = original_role(name, language, lineno, reporter)
        return (found, messages) if found is not None else (_role, [])

    directives.directive, roles.role = directive, role
    try:
        yield
    finally:
        directives.directive, roles.role = original_directive, original_role


@functools.lru_cache(maxsize=1)
def _settings():
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    settings = get_default_settings(Parser)
    settings.report_level = 5
    settings.halt_level = 5
    settings.file_insertion_enabled = False
    settings.raw_enabled = False
    settings.syntax_highlight = "none"
    settings.warning_stream = _Discard()
    return settings


class _Discard:
    def write(self, text: str) -> None:
        pass


def _parse(text: str, source: str) -> nodes.document:
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    document = new_document(source, _settings())
    with _sphinx_aware():
        Parser().parse(text, document)
    return document


_SKIP = (nodes.comment, nodes.system_message, nodes.literal_block, nodes.doctest_block, nodes.raw)


def read_into(doc: Document, text: str, offset: int = 0) -> None:
    """Add what *text* (reStructuredText starting at line ``offset + 1``) holds to *doc*."""
    try:
        tree = _parse(text, str(doc.path))
    except Exception as error:  # docutils gave up on this text: report, do not crash
        doc.problems.append(Finding(str(doc.path), offset + 1, "parse",
                                    f"docutils could not parse the reStructuredText ({type(error).__name__}: {error})",
                                    "fix the markup so that docutils can read it"))
        return
    pending = None
    source_lines = text.splitlines()

    def dangle(marker, why):
        doc.problems.append(Finding(str(doc.path), marker.line, "fate", f"the marker '{marker.raw}' {why}",
                                    "put it right above the code block it is about, or delete it"))

    def take(block: CodeBlock) -> None:
        nonlocal pending
        if pending is not None:
            pending.used = True
            block.marker = pending
            pending = None
        doc.blocks.append(block)

    first_body = next((child for child in tree.children if not isinstance(child, (nodes.comment, nodes.target))), None)
    if isinstance(first_body, nodes.field_list):
        for field in first_body.findall(nodes.field_name):
            if field.astext().strip() == "orphan":
                doc.orphan = True

    default_language = ""  # what ``.. highlight::`` set for later ``::`` blocks
    for node in tree.findall(include_self=False):
        if isinstance(node, nodes.system_message) or any(
                isinstance(parent, nodes.system_message) for parent in _ancestors(node)):
            continue  # docutils quoting the source of its own error message
        line = (node.get("line") if isinstance(node, (captured, captured_role)) else node.line) if isinstance(
            node, nodes.Element) else None
        absolute = (line or 1) + offset
        if isinstance(node, nodes.comment):
            # docutils puts a comment on the line after it; find the ".." line that opens it.
            first = (node.astext().splitlines() or [""])[0].strip()
            start = line or 1
            for candidate in range(min(start, len(source_lines)), max(start - 40, 0), -1):
                text_at = source_lines[candidate - 1].strip()
                if text_at.startswith("..") and first in text_at:
                    start = candidate
                    break
            marker = markers.parse(node.astext(), start + offset)
            if marker is not None:
                doc.markers.append(marker)
                if pending is not None:
                    dangle(pending, "is followed by another marker, not by a code block")
                pending = marker
            continue
        if isinstance(node, captured):
            name, argument, options = node["name"], node["argument"], node["options"]
            body, body_line = node["body"], node["body_line"] + offset
            if name in CODE_DIRECTIVES:
                language = (argument.split() or [""])[0].lower()
                if name == "testcode":
                    language = "python"
                elif name == "doctest":
                    language = "pycon"
                take(CodeBlock(absolute, body_line, language, "\n".join(body).rstrip("\n"), "code-block"))
            elif name == "literalinclude":
                directive = Captured(name, absolute, argument, options, body, body_line)
                doc.directives.append(directive)
                take(CodeBlock(absolute, absolute, options.get("language", "").lower(), "", "literalinclude",
                               include=directive))
            elif name == "highlight":
                default_language = (argument.split() or [""])[0].lower()
            elif name in ("include", "toctree"):
                if pending is not None:
                    dangle(pending, "is not followed by a code block")
                    pending = None
                doc.directives.append(Captured(name, absolute, argument, options, body, body_line))
            continue
        if isinstance(node, nodes.literal_block):
            language = ""
            classes = node.get("classes", [])
            if "code" in classes and len(classes) > 1:
                language = classes[1]
            elif default_language not in ("", "default", "python", "python3", "py", "py3"):
                language = default_language
            take(CodeBlock(absolute, absolute, language.lower(), node.astext(), "literal"))
            continue
        if isinstance(node, nodes.doctest_block):
            take(CodeBlock(absolute, absolute, "pycon", node.astext(), "doctest-block"))
            continue
        if isinstance(node, captured_role):
            role = node["role"].split(":")[-1]
            if role in ("doc", "ref"):
                doc.links.append(Link(absolute, role, node.astext()))
            continue
        if isinstance(node, nodes.target) and not node.get("refuri"):
            for name in node.get("names", []):
                doc.labels.add(name)
            continue
        if isinstance(node, nodes.container) and node.get("names"):
            doc.labels.update(node["names"])
        if isinstance(node, nodes.section):
            doc.anchors.update(node.get("ids", []))
            continue
        if isinstance(node, nodes.paragraph):
            if pending is not None:
                dangle(pending, "is not followed by a code block")
                pending = None
            if not any(isinstance(parent, _SKIP) for parent in _ancestors(node)):
                doc.paragraphs.append(Paragraph(absolute, node.astext()))
    if pending is not None:
        dangle(pending, "is not followed by a code block")


def _ancestors(node: nodes.Node) -> Iterator[nodes.Node]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def read(path: Path, text: str) -> Document:
    document = Document(path, "rst")
    read_into(document, text, 0)
    return document
