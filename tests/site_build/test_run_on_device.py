"""The phone page: linked from the landing page, its app packages pinned to the site's release, its link
figures those the recipe measured."""

from __future__ import annotations

import re

import pytest
from conftest import DOCS, ROOT, page_text, shown_facts, soup

pytestmark = pytest.mark.build

PAGE = "guides/run_on_device.html"
# Every way the built page names a release of ExecuTorch: a pip pin, the Android library's Maven
# coordinates, the Swift package's branch.
RELEASE_MENTIONS = {
    "pip": re.compile(r"executorch==([0-9][0-9A-Za-z.+-]*)"),
    "Maven": re.compile(r"org\.pytorch:executorch-android:([0-9][0-9A-Za-z.+-]*)"),
    "Swift package": re.compile(r"swiftpm-([0-9][0-9A-Za-z.+-]*)"),
}


def pinned_executorch(requirements: str) -> str:
    """The executorch release requirements.txt pins; a one-line error when it pins none."""
    found = re.findall(r"^executorch==(\S+)\s*$", requirements, re.M)
    if len(found) != 1:
        raise ValueError(f"requirements.txt pins executorch {len(found)} times, expected once")
    return found[0]


def release_problems(text: str, pinned: str) -> list[str]:
    """Each release *text* names that is not *pinned*, and each kind of mention *text* lacks."""
    problems = []
    for kind, pattern in RELEASE_MENTIONS.items():
        named = pattern.findall(text)
        if kind != "pip" and not named:
            problems.append(f"the page names no {kind} release")
        problems += [f"{kind} names {release}, requirements.txt pins executorch=={pinned}"
                     for release in named if release != pinned]
    return problems


def test_release_problems_finds_a_drifted_pin():
    text = 'implementation("org.pytorch:executorch-android:1.4.1") branch: "swiftpm-1.5.1"'
    assert release_problems(text, "1.5.1") == [
        "Maven names 1.4.1, requirements.txt pins executorch==1.5.1"]
    assert release_problems("nothing", "1.5.1") == [
        "the page names no Maven release", "the page names no Swift package release"]
    with pytest.raises(ValueError):
        pinned_executorch("torch==2.14.1\n")


@pytest.mark.build
def test_the_app_packages_on_the_page_are_the_pinned_release(built_site):
    pinned = pinned_executorch((ROOT / "requirements.txt").read_text(encoding="utf-8"))
    problems = release_problems(page_text(built_site / PAGE), pinned)
    assert not problems, f"{PAGE}: " + "; ".join(problems)


@pytest.mark.build
def test_the_landing_page_links_the_phone_page_from_step_three(built_site):
    steps = soup(built_site / "index.html").select("ol > li")
    assert len(steps) >= 3, "the landing page lost its numbered steps"
    assert any(link.get("href") == PAGE for link in steps[2].find_all("a")), (
        f"step 3 of the landing page does not link {PAGE}")


def test_the_page_carries_the_label_the_cpp_guide_links():
    text = (DOCS / "guides" / "run_on_device.md").read_text(encoding="utf-8")
    body = re.sub(r"\A---\n.*?\n---\n\n", "", text, flags=re.S)  # the page's front matter, if any
    assert body.startswith("(run-on-device)=\n# "), "the label must stand right above the page's title"


@pytest.mark.build
def test_the_page_shows_the_dropped_and_kept_links_as_measured(built_site):
    from conftest import GALLERY
    from xnnguide.core import facts
    from xnnguide.core.records import records_dir

    recorded = facts.load(records_dir(GALLERY) / "facts" / "link_the_xnnpack_backend_into_an_app.json")
    shown = shown_facts(built_site / PAGE)
    for key in ("dropped_needs", "shipped_libraries", "kept_needs", "plain_archive_backends",
                "whole_archive_backends"):
        assert recorded[key]["display"] in shown, f"{PAGE} does not show {key}"
    # The library the dropped link lost is the backend's, and the kept link has it.
    assert "libexecutorch_backend_xnnpack.so" not in recorded["dropped_needs"]["display"]
    assert "libexecutorch_backend_xnnpack.so" in recorded["kept_needs"]["display"]


# What the page's first section must show: the app side, before any executed experiment.
APP_CODE = {
    "kotlin": ("import org.pytorch.executorch.Module", "Module.load(", "Tensor.fromBlob(", "EValue.from(",
               ".forward("),
    "swift": ("import ExecuTorch", "Module(filePath:", "Tensor<Float>(", ".forward("),
}
APP_PACKAGES = ("match_pte_and_runtime_versions/gradle_dependency", "match_pte_and_runtime_versions/swift_package")
NOT_RUN = "<!-- doccheck: not-run"


def app_code_problems(markdown: str) -> list[str]:
    """What the first ``## `` section of *markdown* lacks of the app side: the Gradle and Swift package lines,
    Kotlin and Swift that load the .pte and call forward (each block marked not run), and no executed code."""
    sections = re.split(r"^## ", markdown, flags=re.M)
    if len(sections) < 2:
        return ["the page has no '## ' section"]
    first = sections[1]
    title = first.splitlines()[0]
    problems = [f"the first section ({title!r}) does not show {package}"
                for package in APP_PACKAGES if f"{{fact-block}} {package}" not in first]
    if "{literalinclude}" in first:
        problems.append(f"the first section ({title!r}) shows executed code before the app code")
    for language, calls in APP_CODE.items():
        blocks = re.findall(rf"^([^\n]*)\n```{language}\n(.*?)^```", first, flags=re.M | re.S)
        code = [body for marker, body in blocks if marker.startswith(NOT_RUN)]
        if len(code) != len(blocks):
            problems.append(f"a {language} block of the first section is not marked not-run")
        problems += [f"the first section's {language} code never has {call!r}"
                     for call in calls if not any(call in body for body in code)]
    return problems


def test_the_page_opens_with_the_app_code():
    problems = app_code_problems((DOCS / "guides" / "run_on_device.md").read_text(encoding="utf-8"))
    assert not problems, "docs/guides/run_on_device.md: " + "; ".join(problems)


def test_app_code_problems_finds_experiments_first_and_missing_calls():
    experiments_first = ("# Page\n## 1. Versions\n```{literalinclude} x.py\n```\n"
                         "## 2. App\n```kotlin\nModule.load(path)\n```\n")
    problems = app_code_problems(experiments_first)
    assert "the first section ('1. Versions') shows executed code before the app code" in problems
    assert "the first section's kotlin code never has 'Module.load('" in problems
    unmarked = "# Page\n## App\n```kotlin\nval m = Module.load(p)\n```\n"
    assert "a kotlin block of the first section is not marked not-run" in app_code_problems(unmarked)
