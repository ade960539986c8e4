"""Run records' view of a recipe's dependencies: the helper modules it imports are part of its key."""

from __future__ import annotations

import pytest
from conftest import ROOT

from xnnguide.core.recipes import helper_modules

pytestmark = pytest.mark.static


def test_the_helper_modules_a_recipe_imports_are_found_wherever_they_live(tmp_path):
    recipe = tmp_path / "recipe.py"
    recipe.write_text("from xnnguide.core import facts\nfrom xnnguide.recipe_checks.quantization import record_results\n"
                      "import torch\n")
    found = {path.relative_to(ROOT).as_posix() for path in helper_modules(recipe)}
    assert {"xnnguide/core/facts.py", "xnnguide/recipe_checks/quantization.py"} <= found, found
    assert all(path.startswith("xnnguide/") for path in found), found


def test_a_recipe_declares_what_it_needs_and_the_set_up_step_that_provides_it(tmp_path, monkeypatch):
    from xnnguide.core.recipes import missing_requirements

    monkeypatch.delenv("XNNGUIDE_UNSET", raising=False)
    monkeypatch.setenv("XNNGUIDE_HERE", str(tmp_path))
    (tmp_path / "present.cmake").write_text("")
    recipe = tmp_path / "recipe.py"
    recipe.write_text("# sphinx_gallery_start_ignore\n"
                      "# xnnguide_requires = sh no-such-command-29 $XNNGUIDE_HERE/present.cmake\n"
                      "# xnnguide_requires = $XNNGUIDE_UNSET/lib $XNNGUIDE_HERE/absent.cmake\n"
                      "# xnnguide_setup = make aarch64\n# sphinx_gallery_end_ignore\n")
    assert missing_requirements(recipe) == (
        f"no-such-command-29 is not on the PATH; $XNNGUIDE_UNSET/lib: $XNNGUIDE_UNSET is not set; "
        f"{tmp_path}/absent.cmake does not exist (`make aarch64` installs them)")
    recipe.write_text("# xnnguide_requires = sh $XNNGUIDE_HERE/present.cmake\n")
    assert missing_requirements(recipe) is None
    recipe.write_text("print('needs nothing')\n")
    assert missing_requirements(recipe) is None


def test_a_recipe_recorded_as_not_run_runs_again_and_says_why(tmp_path):
    import json

    from xnnguide.core.records import stale_reason, write_run_record

    write_run_record(tmp_path / "_records", {"recipe": "arm", "status": "not-run",
                                             "error": "qemu-aarch64 is not on the PATH"})
    assert stale_reason(tmp_path, tmp_path / "arm.py") == (
        "it was not run on this machine: qemu-aarch64 is not on the PATH")
    assert json.loads((tmp_path / "_records" / "runs" / "arm.json").read_text())["status"] == "not-run"


def test_the_build_leaves_out_a_recipe_this_machine_cannot_run_and_records_why(tmp_path):
    import json
    import re

    from xnnguide.site.build import leave_out_unrunnable

    gallery, snippets = tmp_path / "gallery", tmp_path / "snippets"
    snippets.mkdir()
    arm, plain = snippets / "arm.py", snippets / "plain.py"
    arm.write_text("# xnnguide_requires = no-such-command-29\n# xnnguide_setup = make aarch64\n")
    plain.write_text("print(1)\n")
    pattern = leave_out_unrunnable(gallery, [arm, plain], r"__init__\.py$")
    assert re.search(pattern, "arm.py") and not re.search(pattern, "plain.py") and re.search(pattern, "__init__.py")
    record = json.loads((gallery / "_records" / "runs" / "arm.json").read_text())
    assert record["status"] == "not-run"
    assert record["error"] == "no-such-command-29 is not on the PATH (`make aarch64` installs them)"
    assert not (gallery / "_records" / "runs" / "plain.json").exists()
    assert leave_out_unrunnable(gallery, [plain], "x") == "x"
