"""Read a Markdown (MyST) file into a :class:`~xnnguide.doccheck.model.Document`.

The text is tokenised by markdown-it-py configured the way myst-parser
configures it, so fences, colon fences, directives, roles, targets and
comments are recognised exactly as Sphinx will see them. Directive bodies
that hold Markdown (admonitions, cards, tabs...) are tokenised again, with
their line offset, so code blocks and paragraphs inside them count too;
``{eval-rst}`` bodies go to the reStructuredText reader.
"""

from __future__ import annotations

import functools
from pathlib import Path

from markdown_it.token import Token

from xnnguide.doccheck import markers
from xnnguide.doccheck.model import CodeBlock, Directive, Document, Finding, Link, Marker, Paragraph

#: Directives whose body is code: the argument is the language.
CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "code-cell", "testcode", "doctest", "ipython"})
#: Directives whose body is neither Markdown nor code a reader runs.
OPAQUE_DIRECTIVES = frozenset({
    "math", "raw", "csv-table", "mermaid", "graphviz", "digraph", "graph", "plantuml", "testoutput",
    "toctree", "include", "literalinclude", "glossary", "autosummary", "fact-table", "verified-stamp",
    "execution-ledger", "image", "jupyter-execute", "highlight", "bibliography", "card-carousel",
})
DEFAULT_EXTENSIONS = ("colon_fence", "deflist")


@functools.lru_cache(maxsize=8)
def _parser(extensions: tuple[str, ...]):
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    known = {"amsmath", "attrs_inline", "attrs_block", "colon_fence", "deflist", "dollarmath", "fieldlist",
             "html_admonition", "html_image", "linkify", "replacements", "smartquotes", "strikethrough",
             "substitution", "tasklist"}
    config = MdParserConfig(enable_extensions=set(extensions) & (known - {"linkify"}))
    return create_md_parser(config, RendererHTML)


def slugify(title: str) -> str:
    """The anchor GitHub and MyST (``myst_heading_anchors``) give a heading."""
    from myst_parser.slugs import github_slugify

    return github_slugify(title)


def split_directive(content: str) -> tuple[dict[str, str], list[str], int]:
    """A directive body's options, its remaining lines and how many lines precede them."""
    lines = content.splitlines()
    options: dict[str, str] = {}
    consumed = 0
    if lines and lines[0].startswith("---"):
        end = next((i for i in range(1, len(lines)) if lines[i].startswith("---")), None)
        if end is not None:
            import yaml

            try:
                loaded = yaml.safe_load("\n".join(lines[1:end]))
            except (yaml.YAMLError, ValueError, RecursionError):
                loaded = None
            if isinstance(loaded, dict):
                options = {str(k): "" if v is None else str(v) for k, v in loaded.items()}
            consumed = end + 1
    else:
        while consumed < len(lines) and lines[consumed].lstrip().startswith(":") \
                and not lines[consumed].lstrip().startswith(":::"):
            consumed += 1
        if consumed:
            options = _option_lines(lines[:consumed])
    if consumed < len(lines) and not lines[consumed].strip():
        consumed += 1
    return options, lines[consumed:], consumed


def _option_lines(lines: list[str]) -> dict[str, str]:
    text = "\n".join(line.lstrip()[1:] for line in lines)
    try:
        from myst_parser.parsers.options import options_to_items

        return {key: value for key, value in options_to_items(text)[0]}
    except Exception:  # malformed options: fall back to the literal text
        options = {}
        for line in text.splitlines():
            key, _, value = line.partition(":")
            options[key.strip()] = value.strip()
        return options


def _plain_text(children: list[Token]) -> str:
    parts = []
    for child in children:
        if child.type in ("text", "code_inline", "myst_role", "math_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.children:
            parts.append(_plain_text(child.children))
    return "".join(parts)


class _Reader:
    def __init__(self, document: Document, extensions: tuple[str, ...]):
        self.doc = document
        self.extensions = extensions
        self.pending: Marker | None = None

    # ---------------------------------------------------------------- markers
    def _marker(self, marker: Marker | None) -> None:
        if marker is None:
            return
        self.doc.markers.append(marker)
        if self.pending is not None:
            self._dangling(self.pending, "is followed by another marker, not by a code block")
        self.pending = marker

    def _dangling(self, marker: Marker, why: str) -> None:
        self.doc.problems.append(Finding(
            str(self.doc.path), marker.line, "fate",
            f"the marker '{marker.raw}' {why}",
            "put it on the line(s) right above the code block it is about, or delete it"))
        self.pending = None

    def _take_marker(self, line: int) -> Marker | None:
        marker, self.pending = self.pending, None
        if marker is not None:
            marker.used = True
            if marker.kind == "snippet" and line != marker.line + 1:
                self.doc.problems.append(Finding(
                    str(self.doc.path), marker.line, "fate",
                    "a snippet comment must be followed directly by the code fence",
                    "remove the lines between the comment and the fence"))
        return marker

    # ---------------------------------------------------------------- blocks
    def read(self, text: str, offset: int) -> None:
        tokens = _parser(self.extensions).parse(text)
        context: list[str] = []
        for token in tokens:
            kind = token.type
            if kind.endswith("_close"):
                if context:
                    context.pop()
                continue
            if kind.endswith("_open"):
                context.append(kind)
            if token.map is None:
                continue
            line = token.map[0] + 1 + offset
            if kind == "front_matter":
                self._front_matter(token.content)
            elif kind == "html_block":
                marker = markers.from_html_block(token.content, line)
                if marker is None:
                    self._interrupt()
                self._marker(marker)
            elif kind == "myst_line_comment":
                self._marker(markers.parse(token.content, line))
            elif kind == "myst_target":
                self.doc.labels.add(token.content.strip())
                self.doc.anchors.add(token.content.strip())
            elif kind in ("fence", "colon_fence"):
                self._fence(token, line)
            elif kind == "code_block":
                self._block(CodeBlock(line, line, "", token.content.rstrip("\n"), "indented"))
            elif kind == "inline":
                parent = context[-1] if context else ""
                self._inline(token, line, parent, in_table="table_open" in context)
            elif kind.endswith("_open") or kind in ("hr", "myst_block_break"):
                self._interrupt()
        # A marker at the very end has nothing to speak about.
        if self.pending is not None:
            self._dangling(self.pending, "is not followed by a code block")

    def _interrupt(self) -> None:
        if self.pending is not None:
            self._dangling(self.pending, "is not followed by a code block")

    def _front_matter(self, content: str) -> None:
        import yaml

        try:
            data = yaml.safe_load(content)
        except (yaml.YAMLError, ValueError, RecursionError):
            return
        if isinstance(data, dict) and data.get("orphan"):
            self.doc.orphan = True

    def _block(self, block: CodeBlock) -> None:
        block.marker = self._take_marker(block.line)
        self.doc.blocks.append(block)

    def _fence(self, token: Token, line: int) -> None:
        info = token.info.strip()
        if not (info.startswith("{") and "}" in info):
            words = info.split()
            language = words[0].strip("{}.").lower() if words else ""
            if token.type == "colon_fence":  # a plain ::: fence is a container, not code
                self._interrupt()
                self.read(token.content, line)
                return
            self._block(CodeBlock(line, line + 1, language, token.content.rstrip("\n"), "fence"))
            return
        name = info[1:info.index("}")].strip()
        argument = info[info.index("}") + 1:].strip()
        options, body, consumed = split_directive(token.content)
        body_line = line + 1 + consumed
        if name in CODE_DIRECTIVES:
            language = (argument.split() or [""])[0].lower()
            if name == "code-cell" and not language:
                language = "python"
            if name in ("testcode", "doctest"):
                language = "python" if name == "testcode" else "pycon"
            self._block(CodeBlock(line, body_line, language, "\n".join(body).rstrip("\n"), "code-block"))
        elif name == "literalinclude":
            directive = Directive(name, line, argument, options, body, body_line)
            self.doc.directives.append(directive)
            self._block(CodeBlock(line, line, options.get("language", "").lower(), "", "literalinclude",
                                  include=directive))
        elif name in ("include", "toctree"):
            self._interrupt()
            self.doc.directives.append(Directive(name, line, argument, options, body, body_line))
        elif name == "eval-rst":
            self._interrupt()
            from xnnguide.doccheck import rst

            rst.read_into(self.doc, "\n".join(body), line + consumed)
        elif name in OPAQUE_DIRECTIVES:
            self._interrupt()
        else:
            self._interrupt()
            label = options.get("name")
            if label:
                self.doc.labels.add(label)
            if body:
                self.read("\n".join(body), body_line - 1)

    def _inline(self, token: Token, line: int, parent: str, in_table: bool) -> None:
        children = token.children or []
        current = line
        for child in children:
            if child.type in ("softbreak", "hardbreak"):
                current += 1
            elif child.type == "link_open":
                self.doc.links.append(Link(current, "url", str(child.attrs.get("href", ""))))
            elif child.type == "myst_role":
                name = child.meta.get("name", "")
                if name in ("doc", "ref", "std:doc", "std:ref"):
                    self.doc.links.append(Link(current, name.split(":")[-1], child.content))
        if parent == "heading_open":
            self._heading(_plain_text(children))
        elif parent == "paragraph_open" and not in_table:
            self.doc.paragraphs.append(Paragraph(line, _plain_text(children)))

    def _heading(self, title: str) -> None:
        slug = slugify(title)
        if not slug:
            return
        unique, number = slug, 1
        while unique in self.doc.anchors:
            unique = f"{slug}-{number}"
            number += 1
        self.doc.anchors.add(unique)


def read_into(document: Document, text: str, offset: int = 0,
              extensions: tuple[str, ...] = DEFAULT_EXTENSIONS) -> None:
    """Add what *text* (Markdown starting at line ``offset + 1``) holds to *document*."""
    _Reader(document, extensions).read(text, offset)


def read(path: Path, text: str, extensions: tuple[str, ...] = DEFAULT_EXTENSIONS) -> Document:
    document = Document(path, "markdown")
    read_into(document, text, 0, extensions)
    return document
