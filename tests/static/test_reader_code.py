"""The reader's copy of a recipe, and the check that it runs without this repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, pasted_in_page_order

from xnnguide.core.reader_copy import ReaderCodeError, reader_lines, reader_source
from xnnguide.core.regions import read_regions
from xnnguide.doccheck.reader_code import (
    PRIVATE_ALLOWED,
    WALKED_THROUGH,
    check,
    walk_through_problems,
    walked_through,
)

pytestmark = pytest.mark.static

RECIPE = '''"""
A recipe
========
"""

# [start model]
import torch

model = torch.nn.Linear(2, 2)
# [end model]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

# sphinx_gallery_parallel = False
facts.record("weights", model.weight.numel())
# sphinx_gallery_end_ignore

print(model(torch.ones(1, 2)))
'''


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_reader_copy_drops_ignore_blocks_markers_and_build_comments():
    copy = reader_source(RECIPE)
    assert "xnnguide" not in copy and "sphinx_gallery" not in copy and "[start" not in copy
    assert "model = torch.nn.Linear(2, 2)" in copy and copy.endswith("print(model(torch.ones(1, 2)))\n")
    # Every kept line keeps its own line number in the recipe.
    numbers = dict((line, number) for number, line in reader_lines(RECIPE))
    assert numbers["print(model(torch.ones(1, 2)))"] == RECIPE.splitlines().index("print(model(torch.ones(1, 2)))") + 1


def test_a_clean_recipe_passes(tmp_path):
    assert check([write(tmp_path, "ok.py", RECIPE)]) == []


def test_a_name_only_an_ignore_block_defines_is_reported_at_its_recipe_line(tmp_path):
    text = RECIPE.replace("print(model(torch.ones(1, 2)))", "facts.record('late', 1)")
    problems = check([write(tmp_path, "late.py", text)])
    line = text.splitlines().index("facts.record('late', 1)") + 1
    assert problems == [f"{tmp_path / 'late.py'}:{line}: reader code: undefined name 'facts'"]


def test_an_import_only_an_ignore_block_uses_is_reported(tmp_path):
    text = RECIPE.replace("# [start model]\n", "# [start model]\nimport os\n")
    text = text.replace("facts.record(\"weights\"", "os.getcwd()\nfacts.record(\"weights\"")
    problems = check([write(tmp_path, "unused.py", text)])
    assert problems == [f"{tmp_path / 'unused.py'}:7: reader code: 'os' imported but unused"]


def test_a_side_effect_import_that_says_so_passes(tmp_path):
    text = RECIPE.replace("import torch\n", "import torch\nimport executorch.kernels.quantized  # noqa: F401\n")
    assert check([write(tmp_path, "noqa.py", text)]) == []


def test_xnnguide_in_visible_code_or_prose_is_reported(tmp_path):
    text = RECIPE.replace("import torch\n", "import torch\n\n# see xnnguide.tools.models\nfrom xnnguide.tools.models import x\n")
    text = text.replace("torch.nn.Linear(2, 2)", "x(torch.nn.Linear(2, 2))")
    problems = check([write(tmp_path, "private.py", text)])
    assert [problem.split(": reader code: ")[0] for problem in problems] == [
        f"{tmp_path / 'private.py'}:9", f"{tmp_path / 'private.py'}:10"]
    assert all("mentions xnnguide" in problem for problem in problems)


def test_a_comment_for_the_checker_in_visible_code_is_reported(tmp_path):
    text = RECIPE.replace("import torch\n", "import torch\n# doccheck: without-transform-passes reason=\"x\"\n", 1)
    problems = check([write(tmp_path, "marker.py", text)])
    line = text.splitlines().index('# doccheck: without-transform-passes reason="x"') + 1
    assert [problem.split(" — ")[0] for problem in problems] == [
        f"{tmp_path / 'marker.py'}:{line}: reader code: a comment for the drift checker in code readers see: "
        '# doccheck: without-transform-passes reason="x"']


def test_unbalanced_ignore_blocks_are_an_error():
    with pytest.raises(ReaderCodeError, match=r":3: sphinx_gallery_start_ignore is never closed"):
        reader_lines("import torch\n\n# sphinx_gallery_start_ignore\nx = 1\n", "r.py")


def test_pages_that_show_xnnguide_code_are_reported(tmp_path):
    page = write(tmp_path, "page.md", "# Page\n\n```{literalinclude} %s\n```\n\n```python\nfrom xnnguide.core import facts\n```\n"
                 % (ROOT / "xnnguide" / "core" / "facts.py"))
    console = write(tmp_path, "tool.md", "```console\n$ python -m xnnguide.tools.run_recipe --help\n```\n")
    problems = check([page, console])
    assert [problem.split(": reader code: ")[0] for problem in problems] == [f"{page}:3", f"{page}:7"]


def test_the_command_names_each_problem_and_fails(tmp_path):
    text = RECIPE.replace("print(model", "print(facts, model")
    bad = write(tmp_path, "bad.py", text)
    line = text.splitlines().index("print(facts, model(torch.ones(1, 2)))") + 1
    done = subprocess.run([sys.executable, "-m", "xnnguide.doccheck.reader_code", str(bad)], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 1 and f"{bad}:{line}: reader code: undefined name 'facts'" in done.stdout
    missing = subprocess.run([sys.executable, "-m", "xnnguide.doccheck.reader_code", str(tmp_path / "nope.py")], cwd=ROOT,
                             capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.startswith("error: no such file or folder")


def test_a_region_that_shows_an_ignore_block_is_reported(tmp_path):
    text = RECIPE.replace("# [end model]\n\n# sphinx_gallery_start_ignore", "\n# sphinx_gallery_start_ignore")
    text = text.replace("# sphinx_gallery_end_ignore\n", "# sphinx_gallery_end_ignore\n# [end model]\n")
    problems = check([write(tmp_path, "region.py", text)])
    line = text.splitlines().index("# sphinx_gallery_start_ignore") + 1
    assert problems == [f"{tmp_path / 'region.py'}:{line}: reader code: region 'model' shows a line of the site's own "
                        "(an ignore block or a build comment): # sphinx_gallery_start_ignore"]


def test_a_code_line_wider_than_88_columns_is_reported_and_prose_is_not(tmp_path):
    wide = "print(" + repr("x" * 90) + ")"
    prose = "# %%\n# " + "A sentence of prose that runs on " * 4 + "\n"
    text = RECIPE.replace("print(model(", prose + wide + "\nprint(model(", 1)
    problems = check([write(tmp_path, "wide.py", text)])
    line = text.splitlines().index(wide) + 1
    assert problems == [f"{tmp_path / 'wide.py'}:{line}: reader code: {len(wide)} columns, wider than 88: "
                        f"{wide[:60]}"]


def test_a_wide_line_of_a_non_python_file_a_page_includes_is_reported_once(tmp_path):
    # The C++ guide shows regions of main.cpp and offers the whole file as a download: its lines are read on a
    # phone as a recipe's are.
    wide = "  std::cerr << " + '"' + "y" * 90 + '";'
    (tmp_path / "main.cpp").write_text("int main() {\n" + wide + "\n}\n", encoding="utf-8")
    include = "```{literalinclude} main.cpp\n:language: c++\n```\n"
    pages = [write(tmp_path, name, f"# {name}\n\n{include}") for name in ("a.md", "b.md")]
    problems = check(pages)
    assert problems == [f"{tmp_path / 'main.cpp'}:2: reader code: {len(wide)} columns, wider than 88: "
                        f"{wide.strip()[:60]}"]


def test_the_new_recipe_template_is_reader_code_without_problems(tmp_path):
    # `make new-recipe` copies the template with the recipe's name in place of the placeholder, so a
    # problem in it reaches every new recipe; the slow test in test_new_recipe.py finds it minutes later.
    from xnnguide.tools.new_recipe import PLACEHOLDER, TEMPLATE

    text = TEMPLATE.read_text(encoding="utf-8").replace(PLACEHOLDER, "lower_a_model_with_a_long_name_fp32")
    assert check([write(tmp_path, "from_template.py", text)]) == []


def undefined_names(code: str) -> list[str]:
    """pyflakes' undefined names in *code*: what a reader who pasted it would meet as a NameError."""
    import io

    from pyflakes import api, reporter

    out = io.StringIO()
    api.check(code, "pasted", reporter.Reporter(out, out))
    return [line for line in out.getvalue().splitlines() if "undefined name" in line]


@pytest.mark.parametrize(("page", "recipe"), [(page, recipe) for page, recipes in WALKED_THROUGH.items()
                                              for recipe in recipes])
def test_a_page_that_walks_through_a_recipe_shows_all_it_needs_in_page_order(page, recipe):
    # The page-order rule leaves a name no block defines alone (a page may quote one step); a walk-through may not.
    code, sources = pasted_in_page_order(ROOT / "docs" / page, ROOT / "snippets" / recipe)
    assert sources, f"docs/{page} shows no region of {recipe}"
    assert not undefined_names(code), f"docs/{page}, pasted in page order: {undefined_names(code)}"


def test_a_walk_through_that_leaves_out_a_set_up_block_is_found():
    page = (ROOT / "docs" / "tutorial" / "get_started.md").read_text(encoding="utf-8")
    code, _ = pasted_in_page_order(ROOT / "docs" / "tutorial" / "get_started.md")
    model = read_regions(ROOT / "snippets" / "lowering" / "lower_mobilenet_v2_fp32.py")["model"].text
    assert model in code and "[start model]" in page
    assert any("'model'" in line for line in undefined_names(code.replace(model, "")))


def test_private_modules_and_names_in_reader_code_are_reported_at_their_recipe_line(tmp_path):
    # The three names issue 51 found: a private module, a private attribute of a public module, a private
    # extension module imported whole.
    text = RECIPE.replace("import torch\n", "import torch\n"
                          "from executorch.exir._serialize._program import deserialize_pte_binary\n"
                          "import executorch.extension.pybindings._C as pybindings\n"
                          "from executorch.extension.llm.export import export_llm as cli\n"
                          "print(deserialize_pte_binary, pybindings, cli._get_output_filename)\n")
    problems = check([write(tmp_path, "private.py", text)])
    line = text.splitlines().index("import torch") + 1
    assert [problem.split(", a private")[0] for problem in problems] == [
        f"{tmp_path / 'private.py'}:{line + 1}: reader code: names executorch.exir._serialize._program",
        f"{tmp_path / 'private.py'}:{line + 2}: reader code: names executorch.extension.pybindings._C",
        f"{tmp_path / 'private.py'}:{line + 4}: reader code: names "
        "executorch.extension.llm.export.export_llm._get_output_filename"]


def test_allowed_private_names_pass_and_each_says_why(tmp_path):
    text = RECIPE.replace("import torch\n", "import torch\n"
                          "from executorch.exir.dialects._ops import ops as exir_ops\n"
                          "torch._check(True)\nprint(exir_ops)\n")
    assert check([write(tmp_path, "allowed.py", text)]) == []
    assert all(len(reason) > 30 for reason in PRIVATE_ALLOWED.values())


def test_underscore_names_of_the_readers_own_objects_and_dunders_pass(tmp_path):
    text = RECIPE.replace("print(model(torch.ones(1, 2)))", "model._cache = 1\nprint(model._cache, torch.__version__)")
    assert check([write(tmp_path, "own.py", text)]) == []


def test_a_hidden_import_the_reader_code_lacks_is_reported(tmp_path):
    # executorch.kernels.quantized registers operators when imported: a hidden import would make the build's
    # run pass where the reader's fails.
    text = RECIPE.replace("from xnnguide.core import facts\n",
                          "from xnnguide.core import facts\nimport json\nimport torch\n"
                          "import executorch.kernels.quantized\n")
    problems = check([write(tmp_path, "hidden.py", text)])
    line = text.splitlines().index("import executorch.kernels.quantized") + 1
    assert [problem.split(", which")[0] for problem in problems] == [
        f"{tmp_path / 'hidden.py'}:{line}: reader code: a hidden block imports executorch.kernels.quantized"]


def test_a_name_a_hidden_block_binds_and_reader_code_reads_later_is_reported(tmp_path):
    text = RECIPE.replace('facts.record("weights", model.weight.numel())\n',
                          'facts.record("weights", model.weight.numel())\nmodel = torch.nn.Linear(2, 3)\n')
    text += "squares = [model for model in range(3)]\n"  # a comprehension's own variable is not the hidden one
    problems = check([write(tmp_path, "rebound.py", text)])
    line = text.splitlines().index("print(model(torch.ones(1, 2)))") + 1
    first = text.splitlines().index("# sphinx_gallery_start_ignore") + 2
    assert problems == [f"{tmp_path / 'rebound.py'}:{line}: reader code: reads 'model', last bound by the hidden "
                        f"block at lines {first}-{first + 4}: the reader's run would differ from the build's"]


# ---------------------------------------------------------------- walk-throughs: the build's run is the reader's

WALK_RECIPE = '''"""
A walked-through recipe
=======================
"""

# [start model]
import torch

model = torch.nn.Linear(2, 2)
# [end model]

# HIDDEN

# [start run]
print(model(torch.ones(1, 2)))
# [end run]

# sphinx_gallery_start_ignore
from xnnguide.core import facts

model.train()
facts.record("weights", model.weight.numel())
# sphinx_gallery_end_ignore
'''

WALK_PAGE = """# A walk-through

```{literalinclude} ../../snippets/task/walked.py
:language: python
:start-after: "# [start model]"
:end-before: "# [end model]"
```

Then run it:

```{literalinclude} ../../snippets/task/walked.py
:language: python
:start-after: "# [start run]"
:end-before: "# [end run]"
```
"""


def walk_through(tmp_path: Path, hidden: str = "", page: str = WALK_PAGE) -> tuple[Path, Path]:
    """A page ``docs/guides/walk.md`` that walks through ``snippets/task/walked.py``, whose left-out code between
    the two shown regions is *hidden* (in an ignore block)."""
    recipe = tmp_path / "snippets" / "task" / "walked.py"
    recipe.parent.mkdir(parents=True)
    block = f"# sphinx_gallery_start_ignore\n{hidden}# sphinx_gallery_end_ignore\n" if hidden else ""
    recipe.write_text(WALK_RECIPE.replace("# HIDDEN\n", block), encoding="utf-8")
    (tmp_path / "docs" / "guides").mkdir(parents=True)
    return write(tmp_path / "docs" / "guides", "walk.md", page), recipe


def line_in(path: Path, text: str) -> int:
    return path.read_text(encoding="utf-8").splitlines().index(text) + 1


def test_every_walk_through_of_the_site_runs_as_the_build_ran_it():
    # The static proof that replaces re-running each walk-through (issue 51): tests/reader/test_walk_throughs.py
    # runs the tutorial's only, as the rule's witness.
    for page, recipes in WALKED_THROUGH.items():
        assert walked_through(ROOT / "docs" / page) == [ROOT / "snippets" / recipe for recipe in recipes]
        for recipe in recipes:
            assert walk_through_problems(ROOT / "docs" / page, ROOT / "snippets" / recipe) == [], (page, recipe)


def test_a_walk_through_whose_left_out_code_touches_nothing_shown_passes(tmp_path):
    # Hidden code that records what the shown code made, with the site's helpers and the standard library, and a
    # hidden tail that changes the model after the last shown block: neither changes the reader's run.
    page, recipe = walk_through(tmp_path, "import json\n\nfrom xnnguide.core import facts\n\n"
                                          "facts.record('size', model.weight.shape[0], json.dumps(2))\n")
    assert walk_through_problems(page, recipe) == []


@pytest.mark.parametrize(("hidden", "finding"), [
    ("import executorch.kernels.quantized\n",
     "imports executorch.kernels.quantized, which the shown code has not imported before it"),
    ("from xnnguide.core import delegation\n",  # a site module that imports what the shown code does not
     "imports executorch.exir.backend.utils, which the shown code has not imported before it"),
    ("model = torch.nn.Linear(2, 2).eval()\n", "binds 'model', which the shown code reads at line"),
    ("model.train()\n", "calls model.train()"),
    ("torch.manual_seed(1)\n", "calls torch.manual_seed()"),
    ("model.weight.data[0] = 0\n", "changes model.weight.data[0]"),
    ("layer = model\nlayer.train()\n", "calls layer.train()"),
    ("setattr(model, 'training', True)\n", "hands model to setattr()"),
])
def test_left_out_code_that_could_change_the_readers_run_is_reported_at_its_recipe_line(tmp_path, hidden, finding):
    page, recipe = walk_through(tmp_path, hidden)
    problems = walk_through_problems(page, recipe)
    last = hidden.splitlines()[-1]
    assert len(problems) == 1 and problems[0].startswith(f"{recipe}:{line_in(recipe, last)}: walk-through: "
                                                        f"{page} leaves out this statement"), problems
    assert finding in problems[0], problems


def test_visible_code_a_page_leaves_out_is_left_out_code_too(tmp_path):
    page, recipe = walk_through(tmp_path)
    recipe.write_text(recipe.read_text(encoding="utf-8").replace("# [start run]", "model = model.double()\n\n"
                                                                                  "# [start run]"), encoding="utf-8")
    problems = walk_through_problems(page, recipe)
    assert [problem.split(": walk-through:")[0] for problem in problems] == [
        f"{recipe}:{line_in(recipe, 'model = model.double()')}"], problems


def test_a_page_that_shows_regions_out_of_the_recipes_order_is_reported_at_its_line(tmp_path):
    swapped = WALK_PAGE.replace("start model", "START").replace("end model", "END")
    swapped = swapped.replace("start run", "start model").replace("end run", "end model")
    swapped = swapped.replace("START", "start run").replace("END", "end run")
    page, recipe = walk_through(tmp_path, page=swapped)
    problems = walk_through_problems(page, recipe)
    second = [n for n, line in enumerate(swapped.splitlines(), 1) if line.startswith("```{literalinclude}")][1]
    assert problems == [f"{page}:{second}: walk-through: a block of {recipe} shows region 'model' after region 'run', "
                        "which the recipe runs after it: pasted in page order, the code runs in another order than "
                        "the build's"]


def test_a_block_that_is_not_one_whole_region_is_reported(tmp_path):
    page, recipe = walk_through(tmp_path, page=WALK_PAGE.replace(':end-before: "# [end run]"',
                                                                 ':end-before: "# [end run]"\n:lines: 1'))
    assert [problem.split(" with ")[1] for problem in walk_through_problems(page, recipe)] == [
        ":lines:; show the region whole"]


def test_make_check_runs_the_walk_through_rule_on_a_real_page(tmp_path):
    # A scratch copy of the export-recipes guide and its first recipe, with a hidden seed between the two blocks
    # the page shows: the checker's command names the recipe's line.
    for page_or_recipe in ["docs/guides/export_recipes.md", *(f"snippets/{recipe}" for recipe in
                                                                WALKED_THROUGH["guides/export_recipes.md"])]:
        (tmp_path / page_or_recipe).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page_or_recipe).write_bytes((ROOT / page_or_recipe).read_bytes())
    recipe = tmp_path / "snippets" / WALKED_THROUGH["guides/export_recipes.md"][0]
    text = recipe.read_text(encoding="utf-8")
    recipe.write_text(text.replace("# [start one_call]", "# sphinx_gallery_start_ignore\ntorch.manual_seed(1)\n"
                                   "# sphinx_gallery_end_ignore\n\n# [start one_call]", 1), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "xnnguide.doccheck.reader_code", str(tmp_path / "docs")], cwd=ROOT,
                          capture_output=True, text=True)
    line = line_in(recipe, "torch.manual_seed(1)")
    assert done.returncode == 1 and done.stdout.startswith(
        f"{recipe}:{line}: walk-through: {tmp_path / 'docs/guides/export_recipes.md'} leaves out this statement, "
        "which runs before shown code and calls torch.manual_seed()"), done.stdout
