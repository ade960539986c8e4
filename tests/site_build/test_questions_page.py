"""The questions page (docs/help/questions.md): every entry links the public thread where it was asked and a recipe
of this site whose run record passed in its current form. Reads the page's source and the build's run records;
runs no recipe."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import DOCS, GALLERY, HTML, ROOT, SNIPPETS, soup
from xnnguide.core.results import check_runs

pytestmark = pytest.mark.build

PAGE = DOCS / "help" / "questions.md"
#: The issue says the page starts with its seven questions and the ten the site already answered.
MIN_ENTRIES = 17
THREAD = re.compile(r"\]\((https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+)\)")
#: The target of a ``{doc}`` role, with or without a title: ``{doc}`/gallery/x/y``` or ``{doc}`text </guides/llm>```.
DOC_TARGET = re.compile(r"\{doc\}`(?:[^`<]*<)?(/[^`>]+)>?`")


def entries(text: str) -> list[tuple[str, str]]:
    """Each ``## `` section of the page: (question, body)."""
    sections = re.split(r"(?m)^## ", text)[1:]
    return [(section.split("\n", 1)[0].strip(), section.split("\n", 1)[1]) for section in sections]


def entry_problems(body: str, gallery: Path, snippets: Path = SNIPPETS, root: Path = ROOT) -> list[str]:
    """What is wrong with one entry: not exactly one thread, a link to no page of the site, no recipe, or a recipe
    that did not pass in its current form according to the run records under *gallery*."""
    problems = []
    threads = THREAD.findall(body)
    if len(threads) != 1:
        problems.append(f"links {len(threads)} GitHub threads, not one")
    recipes = []
    for target in DOC_TARGET.findall(body):
        if target.startswith("/gallery/"):
            found = sorted(snippets.glob(f"*/{Path(target).name}.py"))
            if not found:
                problems.append(f"links {target}, which no recipe of snippets/ builds")
            recipes += found
        elif not (DOCS / f"{target.lstrip('/')}.md").is_file():
            problems.append(f"links {target}, which is no page of the site")
    if not recipes:
        problems.append("links no recipe of the site as its proof")
    problems += [f"its recipe {problem}" for problem in map(str, check_runs(recipes, gallery, root))]
    return problems


def test_every_entry_links_its_thread_and_a_recipe_that_passed(built_site):
    found = entries(PAGE.read_text(encoding="utf-8"))
    assert len(found) >= MIN_ENTRIES, f"{PAGE.name} has {len(found)} entries, fewer than {MIN_ENTRIES}"
    problems = [f"{question}: {problem}" for question, body in found for problem in entry_problems(body, GALLERY)]
    assert not problems, "\n" + "\n".join(problems)


def test_the_built_page_shows_every_question_as_a_heading(built_site):
    shown = {" ".join(heading.get_text(" ").split()).rstrip("#¶ ")
             for heading in soup(HTML / "help" / "questions.html").select("h2")}
    asked = [question.replace("`", "") for question, _ in entries(PAGE.read_text(encoding="utf-8"))]
    assert set(asked) <= shown, f"questions missing from the built page: {sorted(set(asked) - shown)}"


def test_an_entry_without_proof_or_with_a_recipe_that_never_ran_is_a_problem(tmp_path):
    thread = "Asked in [a/b#1](https://github.com/a/b/issues/1)."
    assert entry_problems(f"{thread}\n\nNo link.\n", GALLERY) == ["links no recipe of the site as its proof"]
    unknown = entry_problems(f"{thread}\n\n{{doc}}`/gallery/lowering/no_such_recipe`.\n", GALLERY)
    assert unknown[0] == "links /gallery/lowering/no_such_recipe, which no recipe of snippets/ builds", unknown
    # An empty gallery folder holds no run record: the recipe counts as not passed.
    never_ran = entry_problems(f"{thread}\n\n{{doc}}`/gallery/lowering/lower_lstm_and_gru_layers`.\n", tmp_path)
    assert len(never_ran) == 1 and never_ran[0].startswith("its recipe "), never_ran
