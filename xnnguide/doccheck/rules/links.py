"""``links``: every relative link of a Markdown file that Sphinx does not build (the README) reaches a file.

Sphinx checks the links of the pages it builds, with warnings as errors; a README outside its source folders is
read by GitHub and by the reader of a checkout, never by Sphinx, so a link there to a renamed page breaks
silently. Links with a scheme (``https:``, ``mailto:``) and links to an anchor of the same file are left to the
link check.
"""

from __future__ import annotations

import re

from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Document, Finding

NAME = "links"

# An inline link or image, [text](target "title"), and a reference definition, [label]: target.
_INLINE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def check(context: Context) -> list[Finding]:
    sources = [folder.resolve() for folder in context.project.source_dirs]
    return [finding for document in context.documents if document.path.suffix == ".md"
            and not any(document.path.resolve().is_relative_to(folder) for folder in sources)
            for finding in broken_links(document)]


def broken_links(document: Document) -> list[Finding]:
    """The relative links of *document* whose file does not exist, one finding each, at its line."""
    findings = []
    for number, line in document.prose_lines():
        spans = re.sub(r"`[^`]*`", "", line)  # a link written in a code span is text, not a link
        for target in [*_INLINE.findall(spans), *_DEFINITION.findall(spans)]:
            path = target.split("#", 1)[0]
            if not path or _SCHEME.match(target):
                continue
            if not (document.path.parent / path).exists():
                findings.append(Finding(display(document.path), number, NAME,
                                        f"the link to {target} reaches no file",
                                        "point it at a file of the checkout (a page is docs/<section>/<page>.md)"))
    return findings
