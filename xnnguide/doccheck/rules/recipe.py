"""``recipe`` (with ``--build``): every recipe passed its last run in its current form.

The run records the last build left are read by :func:`xnnguide.core.results.check_recipes`, which also gives
``make html`` its closing report; a failure is reported at the recipe's own line that made the failing call.
"""

from __future__ import annotations

from xnnguide.doccheck.context import Context
from xnnguide.doccheck.pages import Finding

NAME = "recipe"


def check(context: Context) -> list[Finding]:
    from xnnguide.core.results import check_recipes  # reads run records: only a check with --build needs it

    project = context.project
    if not context.options.build or project.gallery is None:
        return []  # without a gallery there are no run records; the ledger rule says so
    findings = []
    for folder in sorted({recipe.parent for recipe in project.recipes}):
        for problem in check_recipes(folder, project.gallery, context.options.root.resolve()):
            message, _, fix = problem.message.partition(" — ")
            findings.append(Finding(str(problem.path), problem.line, NAME, message, fix or "fix the recipe"))
    return findings
