"""``roles``: no role is written inside a code span, where it is shown as text instead of run.

In MyST a role is ``{fact}`target```. Wrapped in single backquotes, as in ```{fact}`target```, the page shows
the characters ``{fact}`` and the target, and no figure; Sphinx raises nothing, since a code span is text. A
role's name alone in backquotes (```{fact}``` followed by a space), and a role's whole syntax in a
double-backquote span, are how a page names or shows a role, and are left alone.
"""

from __future__ import annotations

import re

from xnnguide.core.paths import display
from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Finding

NAME = "roles"

# A single-backquote code span holding only a role's name, glued to its target: `{name}`target``. A page that
# shows a role's syntax uses a double-backquote span, ``{name}`target` ``, whose target stays inside it.
_GLUED = re.compile(r"(?<!`)`\{([\w:-]+)\}`(?=[^\s`.,;:!?)])")


def check(context: Context) -> list[Finding]:
    findings = []
    for document in context.documents:
        if document.path.suffix != ".md":
            continue
        for number, line in document.prose_lines():
            for match in _GLUED.finditer(line):
                findings.append(Finding(display(document.path), number, NAME,
                                        f"the role {{{match.group(1)}}} is inside a code span, so the page shows "
                                        "it as text",
                                        f"drop the backquotes around it: {{{match.group(1)}}}`target`"))
    return findings
