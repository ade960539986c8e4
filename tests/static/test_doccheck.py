"""The drift checker: each rule on a tree with exactly its defect and on a clean twin,
our own README, pages and recipes, a foreign tree, and the command line.

Fixture trees live in ``tests/fixtures/doccheck/<rule>-<case>/{defect,clean}``,
named by the rule they are about; the case's ``EXPECTED`` file gives the mode
(static, run, build) and every finding the defect must produce, as
``path:line: rule``. Nothing else may fire, and the clean twin must produce
nothing at all.
"""

from __future__ import annotations

import inspect
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import GALLERY, ROOT
from xnnguide.doccheck import Options, check, rules
from xnnguide.doccheck.__main__ import write_ledger

pytestmark = pytest.mark.static

FIXTURES = ROOT / "tests" / "fixtures" / "doccheck"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "EXPECTED").is_file())
FINDING = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+): (?P<rule>[a-z-]+): .+ — .+$")
OUR_TREE = [ROOT / "README.md", ROOT / "docs", ROOT / "snippets"]


def expected(case: str) -> tuple[str, set[str]]:
    lines = (FIXTURES / case / "EXPECTED").read_text().splitlines()
    mode = lines[0].removeprefix("# mode:").strip()
    return mode, {line.strip() for line in lines[1:] if line.strip()}


def write_records(tree: Path, status: str) -> None:
    """What a build leaves for the recipe of the build-mode case: passed, or failed at line 7."""
    from xnnguide.core.recipes import dependency_key

    recipe = tree / "snippets" / "recipe.py"
    runs = tree / "docs" / "gallery" / "_records" / "runs"
    runs.mkdir(parents=True)
    error = None
    if status == "failed":
        error = (f'Traceback (most recent call last):\n  File "{recipe}", line 7, in <module>\n'
                 "    assert total == 6\nAssertionError\n")
    record = {"recipe": "recipe", "source": str(recipe), "status": status, "error": error, "seconds": 0.1,
              "finished": "2026-01-01T00:00:00+00:00", "dependency_key": dependency_key(recipe)}
    (runs / "recipe.json").write_text(json.dumps(record))
    (runs.parent / "facts").mkdir()
    (runs.parent / "facts" / "recipe.json").write_text("{}")  # what the build leaves for a recipe that ran
    (runs.parent / "executions.log").write_text("recipe\t1\t2026-01-01T00:00:00\n")


def run_case(tree: Path, mode: str, monkeypatch) -> set[str]:
    monkeypatch.chdir(tree)
    options = Options([Path(".")], root=Path("."))
    if mode == "run":
        options.run = True
    if mode == "build":
        write_records(tree, (tree / "RECORD").read_text().strip())
        # What the build's execution-ledger directive does, then what `make test` checks.
        ledger = check(Options([Path(".")], root=Path("."), run=True, rules=frozenset({"fate", "run"})))
        write_ledger(ledger, Path("docs/gallery/_records/ledger.json"))
        options.build = True
    report = check(options)
    for finding in report.findings:
        assert FINDING.match(str(finding)), f"badly formatted finding: {finding}"
    return {f"{f.path}:{f.line}: {f.rule}" for f in report.findings}


@pytest.mark.parametrize("case", CASES)
def test_rule_fires_on_its_defect_at_the_right_line(case, tmp_path, monkeypatch):
    mode, want = expected(case)
    assert want, f"{case}/EXPECTED lists no finding"
    tree = tmp_path / "defect"
    shutil.copytree(FIXTURES / case / "defect", tree)
    assert run_case(tree, mode, monkeypatch) == want


@pytest.mark.parametrize("case", CASES)
def test_rule_is_silent_on_the_clean_twin(case, tmp_path, monkeypatch):
    mode, _ = expected(case)
    tree = tmp_path / "clean"
    shutil.copytree(FIXTURES / case / "clean", tree)
    assert run_case(tree, mode, monkeypatch) == set()


def test_every_rule_has_a_fixture():
    covered = {rule for case in CASES for rule in (line.split(": ")[1] for line in expected(case)[1])}
    assert set(rules.NAMES) <= covered, f"no fixture finds {sorted(set(rules.NAMES) - covered)}"


def rule_of_fixture(case: str) -> str | None:
    """The rule a fixture folder ``<rule>-<case>`` names (the longest name that fits), or None."""
    return max((name for name in rules.NAMES if case.startswith(f"{name}-")), key=len, default=None)


def test_every_fixture_folder_names_a_rule_it_finds():
    for case in CASES:
        rule = rule_of_fixture(case)
        assert rule is not None, f"fixture folder {case!r} names no rule; the rules are {', '.join(rules.NAMES)}"
        found = {line.split(": ")[1] for line in expected(case)[1]}
        assert rule in found, f"fixture {case!r} is named after {rule!r}, but its EXPECTED lists only {found}"


@pytest.mark.parametrize("name", rules.NAMES)
def test_every_rule_module_has_the_common_shape(name):
    """NAME is the file's name, the docstring starts with it, and check takes the context and returns findings."""
    module = rules.load(name)
    assert getattr(module, "NAME", None) == name, f"{module.__file__}: NAME must be {name!r}"
    assert (module.__doc__ or "").startswith(f"``{name}``"), f"{module.__file__}: the docstring must start ``{name}``"
    check_rule = getattr(module, "check", None)
    assert callable(check_rule), f"{module.__file__}: no check(context) function"
    signature = inspect.signature(check_rule)
    assert list(signature.parameters) == ["context"], f"{module.__file__}: check{signature} must be check(context)"
    assert (signature.parameters["context"].annotation, signature.return_annotation) == ("Context", "list[Finding]"), \
        f"{module.__file__}: check{signature} must be check(context: Context) -> list[Finding]"


def test_the_block_rules_the_ledger_publishes_are_rules():
    assert set(rules.BLOCK_RULES) <= set(rules.NAMES)


def test_the_contributing_page_explains_every_rule():
    page = (ROOT / "docs" / "contributing" / "index.md").read_text(encoding="utf-8")
    section = page.split("## When a drift check fails", 1)[1].split("\n## ", 1)[0]
    explained = set(re.findall(r"^- `([a-z-]+)`", section, re.M))
    assert explained == set(rules.NAMES)


# ------------------------------------------------------------------ our tree

def test_our_readme_pages_and_recipes_pass_the_static_rules():
    report = check(Options(OUR_TREE, root=ROOT))
    assert not report.findings, "\n" + "\n".join(map(str, report.findings))
    # It really read them: every Python block of the README and pages has a fate.
    assert report.ledger and all(entry["fate"] for entry in report.ledger)
    assert any(entry["fate"] == "copy" and entry["path"] == "README.md" for entry in report.ledger)


@pytest.mark.build
def test_the_last_build_accounted_for_every_block(built_site):
    """The ledger and recipe rules: the build's ledger covers every block, and every recipe passed in its current
    form."""
    report = check(Options(OUR_TREE, root=ROOT, build=True))
    assert not report.findings, "\n" + "\n".join(map(str, report.findings))
    published = json.loads((GALLERY / "_records" / "ledger.json").read_text())
    python = [e for e in published["entries"] if e["fate"] != "other"]
    assert python and all(entry["ok"] for entry in python)
    assert (built_site / "contributing" / "execution_ledger.html").is_file()


# ------------------------------------------------------------------ a tree that is not ours

FOREIGN = FIXTURES / "foreign"


def test_a_foreign_tree_is_read_without_crashing(monkeypatch):
    monkeypatch.chdir(FOREIGN)
    report = check(Options([Path(".")], root=Path("."), run=True))
    found = {f"{f.path}:{f.line}: {f.rule}" for f in report.findings}
    # A sample of what a reader of that tree should be told.
    assert "docs/guide/deep/nested.md:61: syntax" in found  # the fence that is never closed
    assert "docs/broken.rst:13: fate" in found  # literalinclude of a missing file
    assert "docs/broken.rst:33: fate" in found  # a not-run marker above a paragraph
    assert "docs/guide/usage.rst:12: run" in found  # its own package is not installed here
    languages = {entry["language"] for entry in report.ledger}
    assert {"bash", "yaml", "json", "cpp", "c++", "mermaid", "console", "pycon"} <= languages
    # Code nested in tabs, lists, quotes and admonitions is found, on the right lines.
    lines = {(entry["path"], entry["line"]) for entry in report.ledger if entry["language"] == "python"}
    assert {("docs/guide/deep/nested.md", 5), ("docs/guide/deep/nested.md", 19),
            ("docs/guide/usage.rst", 8)} <= lines


def test_mangled_versions_of_the_foreign_tree_do_not_crash_the_readers(tmp_path):
    """Truncate, drop and swap lines of every page at random: a finding is fine, a crash is not."""
    from xnnguide.doccheck import pages

    rng = random.Random(6)
    for page in sorted(FOREIGN.rglob("*")):
        if page.suffix not in (".md", ".rst"):
            continue
        lines = page.read_text().splitlines()
        for _ in range(6):
            mangled = list(lines)
            action = rng.choice(["truncate", "drop", "swap", "indent"])
            if action == "truncate":
                mangled = mangled[: rng.randrange(len(mangled) + 1)]
            elif action == "drop" and mangled:
                del mangled[rng.randrange(len(mangled))]
            elif action == "swap" and len(mangled) > 1:
                i, j = rng.randrange(len(mangled)), rng.randrange(len(mangled))
                mangled[i], mangled[j] = mangled[j], mangled[i]
            elif mangled:
                i = rng.randrange(len(mangled))
                mangled[i] = " " * rng.randrange(1, 6) + mangled[i]
            text = "\n".join(mangled)
            document = pages.read(page, text)
            for block in document.blocks:
                assert 1 <= block.line <= max(len(mangled), 1), (page, action, block)


def test_reading_rst_leaves_docutils_as_it_was():
    """The reST reader knows Sphinx's directives through its own states, not by patching docutils."""
    from docutils.parsers.rst import directives, roles, states

    from xnnguide.doccheck import pages

    before = (directives.directive, roles.role, states.state_classes, list(states.Body.explicit.constructs),
              dict(directives._directives))
    usage = FOREIGN / "docs" / "guide" / "usage.rst"
    document = pages.read(usage, usage.read_text())
    assert [(b.line, b.language) for b in document.blocks][:3] == [(8, "python"), (15, "python"), (23, "console")]
    after = (directives.directive, roles.role, states.state_classes, list(states.Body.explicit.constructs),
             dict(directives._directives))
    assert after == before
    assert "literalinclude" not in directives._directives and "tab-set" not in directives._directives


# ------------------------------------------------------------------ command line

def cli(*args, cwd=ROOT, monkeypatch=None, capsys=None):
    """Run the command line in this process; returns (status, stdout, stderr)."""
    from xnnguide.doccheck.__main__ import main

    monkeypatch.chdir(cwd)
    try:
        status = main([str(a) for a in args])
    except SystemExit as exit:  # argparse's usage errors
        status = exit.code
    out, err = capsys.readouterr()
    return status, out, err


def test_python_dash_m_runs_the_checker():
    """`make check` runs it this way over our tree; here over a small tree (the clean twin runs in process)."""
    done = subprocess.run([sys.executable, "-m", "xnnguide.doccheck", "--rules", "duplicate", "."],
                          capture_output=True, cwd=FIXTURES / "duplicate-paragraph" / "defect", text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1 and done.stdout.startswith("docs/b.md:5: duplicate: "), done.stdout + done.stderr
    assert "1 finding(s)" in done.stderr


def test_cli_exit_status_and_output_format(tmp_path, monkeypatch, capsys):
    run = lambda *args, cwd=ROOT: cli(*args, cwd=cwd, monkeypatch=monkeypatch, capsys=capsys)  # noqa: E731
    status, out, err = run(".", cwd=FIXTURES / "transform-passes-to-backend-without-transform" / "defect")
    assert status == 1
    assert out.splitlines() and all(FINDING.match(line) for line in out.splitlines())
    status, out, err = run(tmp_path / "absent")
    assert status == 2 and "no such file" in err and not out
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"# Title\n\n\xff\xfe not UTF-8\n")
    status, out, err = run(bad)
    assert status == 2 and "not UTF-8" in err and not out
    for unknown in ("fate,no-such-rule", "5"):  # rules have names; the numbers of issue 15 are gone
        status, out, err = run("--rules", unknown, "docs")
        assert status == 2 and not out and err.count("\n") == 1, err
        assert err.startswith(f"doccheck: unknown rule {unknown.split(',')[-1]!r}; the rules are api, "), err


def test_not_run_markers_are_counted_and_reported(tmp_path, monkeypatch, capsys):
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n<!-- doccheck: not-run reason=\"needs a phone on USB\" -->\n"
                    "```python\nimport android\n```\n\n% doccheck: not-run reason=needs a GPU\n"
                    "```python\nimport cuda_thing\n```\n")
    monkeypatch.chdir(tmp_path)
    report = check(Options([Path("page.md")], root=Path(".")))
    assert not report.findings
    not_run = [(e["line"], e["detail"]) for e in report.ledger if e["fate"] == "not-run"]
    assert not_run == [(4, "not run: needs a phone on USB"), (9, "not run: needs a GPU")]
    status, out, err = cli(page, cwd=tmp_path, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 0 and "2 not-run marker(s)" in err and "needs a GPU" in err


# ------------------------------------------------------------------ transform-passes details

LOWERING_VARIANTS = {
    # name: (code, number of findings)
    "alias import and a passes variable": ("""
from executorch.exir import to_edge_transform_and_lower as lower
from executorch.backends.xnnpack.utils.configs import get_transform_passes
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
passes = get_transform_passes()
edge = lower(program, passes, [XnnpackPartitioner()])
""", 0),
    "extra passes added to the XNNPACK ones": ("""
edge = to_edge_transform_and_lower(program, transform_passes=[*get_transform_passes(), MyPass()],
                                   partitioner=[XnnpackPartitioner()])
""", 0),
    "another backend's partitioner": ("""
from executorch.backends.apple.coreml.partition import CoreMLPartitioner
edge = to_edge_transform_and_lower(program, partitioner=[CoreMLPartitioner()])
""", 0),
    "passes that are not XNNPACK's": ("""
edge = to_edge_transform_and_lower(program, transform_passes=[MyPass()], partitioner=[XnnpackPartitioner()])
""", 1),
    "arguments from a mapping it can read": ("""
options = {"partitioner": [XnnpackPartitioner()]}
edge = to_edge_transform_and_lower(program, **options)
""", 1),
    "arguments from a mapping it cannot read": ("""
edge = to_edge_transform_and_lower(program, **make_options())
""", 1),
    "chained transform then to_backend": ("""
edge = to_edge(program).transform(get_transform_passes()).to_backend(XnnpackPartitioner())
""", 0),
    "chained to_backend without transform": ("""
edge = to_edge(program).to_backend(XnnpackPartitioner())
""", 1),
    "transform result thrown away": ("""
edge = to_edge(program)
edge.transform(get_transform_passes())
lowered = edge.to_backend(XnnpackPartitioner())
""", 1),
    "function form of to_backend": ("""
from executorch.exir.backend.backend_api import to_backend
edge = to_edge(program)
lowered = to_backend(edge.exported_program(), XnnpackPartitioner())
""", 1),
    "to_backend with another partitioner": ("""
edge = to_edge(program).to_backend(VulkanPartitioner())
""", 0),
    "no partitioner: nothing is delegated": ("""
portable = to_edge_transform_and_lower(program)
""", 0),
    "passes chosen in a loop over get_transform_passes lists": ("""
alone = get_transform_passes()
mine = get_transform_passes(additional_passes=[MyPass()])
for name, passes in [("alone", alone), ("mine", mine)]:
    edge = to_edge_transform_and_lower(program, transform_passes=passes, partitioner=[XnnpackPartitioner()])
""", 0),
    "a loop over passes that are not XNNPACK's": ("""
for passes in ([MyPass()], [OtherPass()]):
    edge = to_edge_transform_and_lower(program, transform_passes=passes, partitioner=[XnnpackPartitioner()])
""", 1),
    "a deliberate baseline, exempted with a reason": ("""
# Without transform_passes, on purpose: the baseline the page compares against.
baseline = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
""", 0),
    "an exemption without a reason": ("""
baseline = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])  # without transform_passes, on purpose
""", 1),
}


@pytest.mark.parametrize("name", sorted(LOWERING_VARIANTS))
def test_transform_passes_rule_reads_the_code_not_its_text(name, tmp_path, monkeypatch):
    code, count = LOWERING_VARIANTS[name]
    (tmp_path / "lower.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    report = check(Options([Path("lower.py")], root=Path("."), rules=frozenset({"transform-passes"})))
    assert len(report.findings) == count, report.findings
    if "exempted with a reason" in name:
        assert report.exemptions == [("lower.py", 3, "the baseline the page compares against")]


def test_the_contributing_pages_example_report_is_what_the_checks_print(tmp_path):
    """The example failure on the Contributing page names a real assert, and is the line check_recipes prints."""
    import ast

    from xnnguide.core.records import write_run_record
    from xnnguide.core.results import check_recipes

    page = (ROOT / "docs" / "contributing" / "index.md").read_text(encoding="utf-8")
    prose = re.search(r"whose assertion at line (\d+) failed", page)
    example = re.search(r"^(snippets/\S+\.py):(\d+): recipe: .*$", page, re.M)
    assert prose and example, "the Contributing page lost its example report"
    source, line = ROOT / example.group(1), int(example.group(2))
    assert int(prose.group(1)) == line, "the prose and the example name different lines"
    statement = next(node for node in ast.walk(ast.parse(source.read_text())) if getattr(node, "lineno", 0) == line)
    assert isinstance(statement, ast.Assert), f"{example.group(1)}:{line} is not an assert statement"
    gallery = tmp_path / "gallery"
    error = f'Traceback (most recent call last):\n  File "{source}", line {line}, in <module>\nAssertionError\n'
    write_run_record(gallery / "_records", {"recipe": source.stem, "status": "failed", "error": error})
    printed = [str(problem) for problem in check_recipes(source.parent, gallery, ROOT)
               if problem.path == source.relative_to(ROOT)]
    assert printed == [example.group(0)]


def test_a_recipe_not_run_on_this_machine_is_not_run_in_the_ledger_with_its_reason(tmp_path, monkeypatch):
    # The build records a recipe whose declared requirements are missing (xnnguide_requires) as "not-run",
    # with the reason; the ledger gives the blocks it shows that fate and reason instead of "no fate", and the
    # recipe rule still reports it, as a recipe that did not pass in its current form.
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "recipe-failed" / "clean", tree)
    write_records(tree, "not-run")
    record_path = tree / "docs" / "gallery" / "_records" / "runs" / "recipe.json"
    record = json.loads(record_path.read_text())
    record["error"] = "qemu-aarch64 is not on the PATH (`make aarch64` installs them)"
    record_path.write_text(json.dumps(record))
    monkeypatch.chdir(tree)
    report = check(Options([Path(".")], root=Path("."), run=True, build=False, rules=frozenset({"fate", "ledger"})))
    [entry] = [e for e in report.ledger if e["path"] == "docs/index.md" and e["language"] == "python"]
    assert entry["fate"] == "not-run" and entry["ok"], entry
    assert "recipe recipe.py was not run on this machine: qemu-aarch64 is not on the PATH" in entry["detail"]
    assert not report.findings
    build = check(Options([Path(".")], root=Path("."), build=True, rules=frozenset({"recipe"})))
    assert [str(f) for f in build.findings] == [
        "snippets/recipe.py:1: recipe: it was not run on this machine: qemu-aarch64 is not on the PATH "
        "(`make aarch64` installs them); run `make html` — fix the recipe"], build.findings
