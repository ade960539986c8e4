"""The CI workflow: actionlint passes it, catches a broken copy, and it runs what the README says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.static

WORKFLOW = ROOT / ".github" / "workflows" / "site.yml"
ACTIONLINT = Path(sys.executable).parent / "actionlint"


def actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ACTIONLINT), "-no-color", str(path)], capture_output=True, text=True, timeout=60)


def test_actionlint_passes_the_workflow():
    result = actionlint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_fails_a_broken_copy(tmp_path):
    # A job that needs one that does not exist, and an expression on an unknown context.
    broken = tmp_path / ".github" / "workflows" / "site.yml"
    broken.parent.mkdir(parents=True)
    text = WORKFLOW.read_text().replace("needs: [plan, shard]", "needs: [plan, shards]")
    broken.write_text(text.replace("${{ matrix.shard }}/", "${{ matrix.shards }}/", 1))
    result = actionlint(broken)
    assert result.returncode != 0
    assert '"shards"' in result.stdout and "matrix.shards" in result.stdout, result.stdout


def test_the_workflow_runs_the_readme_commands_and_caches_recipe_results():
    text = WORKFLOW.read_text()
    for command in ("make html SHARD=", "make merge-shards", "run: make html\n"):
        assert command in text, command
    key = "hashFiles('requirements.txt', 'conf.py', 'snippets/**', 'docs/build_steps/**', 'xnnguide/**')"
    assert text.count(f"recipes-${{{{ {key} }}}}") == 2, "both cache steps key recipe results by what invalidates them"
    assert "actions/deploy-pages@" in text and "github.ref == 'refs/heads/main'" in text


def test_the_workflow_tests_with_what_ci_runs():
    """The site job runs `.ci/run`, CI's one command, and runs no test command of its own beside it."""
    import yaml

    runs = [step["run"].strip() for step in yaml.safe_load(WORKFLOW.read_text())["jobs"]["site"]["steps"]
            if "run" in step]
    assert "bash .ci/run" in runs, f"the site job's steps run {runs}, not .ci/run"
    assert not [run for run in runs if "make test" in run or "pytest" in run], runs
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == "exec make test", ".ci/run must end in make test, the README's command"
