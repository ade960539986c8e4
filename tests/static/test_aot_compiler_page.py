"""The AOT compiler page against the script it offers: every option described, the script a public download.

Static: the script is read as a syntax tree, never run (``tests/site_build/test_aot_compiler.py`` runs it).
"""

from __future__ import annotations

import ast
import re
import sys

import pytest
from conftest import DOCS

pytestmark = pytest.mark.static

PAGE = DOCS / "guides" / "aot_compiler.md"
SCRIPT = DOCS / "guides" / "aot_compiler" / "xnnpack_aot_compile.py"
PUBLIC_PACKAGES = {"torch", "torchvision", "executorch", "torchao"}


def script_options(source: str) -> set[str]:
    """The ``--options`` of every ``add_argument`` call in *source*."""
    return {arg.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"
            for arg in node.args if isinstance(arg, ast.Constant) and str(arg.value).startswith("--")}


def described_options(page: str) -> set[str]:
    """The options the page's Options section describes, one definition term each: `--name VALUE`."""
    section = page.split("\n## Options\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^`(--[a-z-]+)[^`]*`$", section, re.M))


def private_or_foreign_names(source: str) -> set[str]:
    """Imports of anything but the public packages and the standard library, and underscore names."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module]
            names = modules + [alias.name for alias in node.names]
            found |= {m for m in modules if m.split(".")[0] not in PUBLIC_PACKAGES | sys.stdlib_module_names}
            found |= {n for n in names if any(part.startswith("_") for part in n.split("."))}
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            found.add(node.attr)
    return found


def test_the_page_describes_every_option_of_the_script():
    options = script_options(SCRIPT.read_text(encoding="utf-8"))
    assert len(options) >= 7, options
    assert described_options(PAGE.read_text(encoding="utf-8")) == options


def test_the_option_check_fails_on_an_option_the_page_leaves_out():
    source = SCRIPT.read_text(encoding="utf-8").replace(
        'parser.add_argument("--traceback"', 'parser.add_argument("--threads", type=int)\n    parser.add_argument("--traceback"')
    assert script_options(source) - described_options(PAGE.read_text(encoding="utf-8")) == {"--threads"}


def test_the_page_offers_the_script_for_download():
    page = PAGE.read_text(encoding="utf-8")
    assert "{download}`Download xnnpack_aot_compile.py <aot_compiler/xnnpack_aot_compile.py>`" in page
    assert "xnnguide" not in page and not re.search(r"\bmake (html|test|check|venv|recipe|bench)", page)


def test_the_script_uses_public_packages_only():
    assert private_or_foreign_names(SCRIPT.read_text(encoding="utf-8")) == set()


def test_the_package_check_fails_on_the_sites_package_and_a_private_name():
    source = "import xnnguide.core\nfrom torch._dynamo import config\nimport torch\ntorch._C\n"
    assert private_or_foreign_names(source) == {"xnnguide.core", "torch._dynamo", "_C"}
