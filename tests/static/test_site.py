"""The built pages show the figures the recipes measured, and their stamps."""

from __future__ import annotations

import re

import pytest

from conftest import DOCS, GALLERY, SNIPPETS, page_text, recipe, shown_facts, soup, table_rows
from xnnguide.core import facts
from xnnguide.core.records import records_dir
from xnnguide.core.recipes import recipe_files
from xnnguide.site.timing_sources import shown_value

pytestmark = pytest.mark.static




TUTORIAL = "tutorial/get_started.html"


@pytest.mark.build
def test_tutorial_shows_every_figure_as_measured(built_site):
    recorded = facts.load(records_dir(GALLERY) / "facts" / "lower_mobilenet_v2_fp32.json")
    assert recorded, "the MobileNet V2 recipe recorded no facts"
    shown = shown_facts(built_site / TUTORIAL)
    for key in ("delegated_nodes", "non_delegated_nodes", "pte_size_bytes", "max_abs_error"):
        display = recorded[key]["display"]
        assert display in shown, f"the tutorial does not show {key} = {display!r}: {shown}"
    # Its timings are the benchmark's, the site's one source for them, with their conditions (said once where a
    # paragraph quotes two timings under the same ones: timing_sources.conditions_once).
    timed = facts.load(records_dir(GALLERY) / "facts" / "benchmark_xnnpack_speedup.json")
    for key in ("mobilenet_v2_eager_threads_1_ms", "mobilenet_v2_xnnpack_fp32_threads_1_ms",
                "mobilenet_v2_xnnpack_fp32_speedup"):
        display = timed[key]["display"]
        assert "(batch 1, 1 thread" in display, f"{key} = {display!r} does not name its conditions"
        assert shown_value(display) in {shown_value(text) for text in shown}, f"the tutorial lacks {key} = {display!r}"
    assert timed["mobilenet_v2_xnnpack_fp32_threads_1_ms"]["display"] in shown, "the last timing lost its conditions"


@pytest.mark.build
def test_overview_tutorial_and_every_gallery_page_carry_a_stamp(built_site):
    pages = [built_site / "overview.html", built_site / TUTORIAL] + [
        built_site / "gallery" / source.relative_to(SNIPPETS).with_suffix(".html") for source in recipe_files(SNIPPETS)
    ]
    for page in pages:
        text = page_text(page)
        match = re.search(r"Verified by running (the recipe .+?|this recipe) on (\d{4}-\d\d-\d\d) with torch "
                          r"([\d.]+), executorch ([\d.]+), torchao ([\d.]+), torchvision ([\d.]+)", text)
        assert match, f"{page.name} has no verified stamp"
        assert "snippets/" not in match.group(0), f"{page.name}: the stamp names a file of the site's source"


@pytest.mark.build
def test_tutorial_code_is_the_recipe_code(built_site):
    # The tutorial's code blocks are literal includes of the recipe.
    text = page_text(built_site / TUTORIAL)
    source = recipe("lower_mobilenet_v2_fp32").read_text()
    for region in ("model", "lower", "summary", "run"):
        code = source.split(f"# [start {region}]\n")[1].split(f"# [end {region}]")[0]
        lines = [line.strip() for line in code.splitlines() if line.strip()]
        assert lines, f"region {region} is empty"
        missing = [line for line in lines if line not in text]
        assert not missing, f"the tutorial lacks lines of region {region}: {missing}"


FACT_REFERENCE = re.compile(r"\{fact\}`([A-Za-z0-9_]+)/|```\{fact-(?:table|block)\}\s+([A-Za-z0-9_]+)/")
STAMP = re.compile(r"```\{verified-stamp\}\s+([A-Za-z0-9_]+)")


def test_every_page_quoting_a_recipe_carries_its_stamp():
    # Static: a page that shows figures from a recipe says when and with
    # what that recipe was verified. One line per problem, at the first quote.
    from conftest import DOCS, ROOT

    missing = []
    for page in sorted(DOCS.rglob("*.md")):
        if "gallery" in page.relative_to(DOCS).parts:
            continue
        text = page.read_text(encoding="utf-8")
        stamped = set(STAMP.findall(text))
        first: dict[str, int] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            for a, b in FACT_REFERENCE.findall(line):
                first.setdefault(a or b, number)
        missing += [f"{page.relative_to(ROOT)}:{number}: stamp: quotes recipe {name} without its verified stamp "
                    f"— add the two lines '```{{verified-stamp}} {name}' and '```' above the first quote"
                    for name, number in first.items() if name not in stamped]
    if missing:
        pytest.fail("\n".join(missing), pytrace=False)


def test_the_tutorial_installs_exactly_the_pinned_releases():
    # The tutorial's `pip install` line names the releases of requirements.txt,
    # so what a reader installs is what this site was built and verified with.
    from conftest import DOCS, ROOT

    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "requirements.txt").read_text(), re.M))
    page = DOCS / "tutorial" / "get_started.md"
    lines = [(number, line) for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
             if line.startswith("$ pip install ")]
    assert len(lines) == 1, f"{page.relative_to(ROOT)}: expected one '$ pip install' line, found {len(lines)}"
    number, line = lines[0]
    asked = dict(re.findall(r"([A-Za-z0-9_.-]+)==(\S+)", line))
    problems = [f"{name}=={version} (requirements.txt: {pins.get(name, 'not pinned')})"
                for name, version in asked.items() if pins.get(name) != version]
    problems += [f"{name} is missing" for name in ("torch", "torchvision", "executorch", "torchao") if name not in asked]
    assert not problems, f"{page.relative_to(ROOT)}:{number}: the install line drifted: " + "; ".join(problems)


def _sidebar_entries(page) -> list[str]:
    navigation = soup(page).find("nav", class_="bd-docs-nav")
    return [" ".join(link.get_text().split()) for link in navigation.find_all("a")]


@pytest.mark.build
def test_the_readers_navigation_names_each_page_once_and_leaves_contributing_out(built_site):
    for page in (built_site / "index.html", built_site / "guides" / "quantization.html",
                 built_site / "contributing" / "index.html"):
        entries = _sidebar_entries(page)
        assert entries, f"{page}: no sidebar"
        twice = sorted({entry for entry in entries if entries.count(entry) > 1})
        assert not twice, f"{page.relative_to(built_site)}: the sidebar names {twice} twice"
        assert not [entry for entry in entries if "Contributing" in entry], f"{page}: Contributing in the sidebar"


@pytest.mark.build
def test_next_from_the_tutorial_is_a_guide_and_the_landing_page_links_contributing(built_site):
    following = soup(built_site / TUTORIAL).find("a", class_="right-next")
    assert following is not None and following["href"].startswith("../guides/"), following
    assert soup(built_site / "index.html").find("a", href="contributing/index.html"), "no link to Contributing"


def test_the_why_transform_passes_box_is_on_the_tutorial_and_its_own_page_only():
    # One source for the box (docs/_shared/), and few pages that show it: where a reader first lowers a model,
    # and the page that explains the passes; other pages link there in a sentence.
    include = re.compile(r"^```\{include\} (?:\.\./)*_shared/why_transform_passes\.md$", re.MULTILINE)
    showing = sorted(str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md")
                     if "_shared" not in page.parts and include.search(page.read_text(encoding="utf-8")))
    assert showing == ["explanation/why_transform_passes.md", "tutorial/get_started.md"], showing


@pytest.mark.build
def test_the_sites_own_api_is_documented_for_contributors_only(built_site):
    # Readers' pages show what readers use: the package's classes and functions (ProbeResult, judge()) are
    # documented under contributing/, where the pages that audit the site link to them.
    skipped = {"contributing", "_modules", "_sources", "_static"}
    documented = {}
    for page in sorted(built_site.rglob("*.html")):
        relative = page.relative_to(built_site)
        if skipped & set(relative.parts) or relative.name in {"genindex.html", "py-modindex.html", "search.html"}:
            continue
        found = [tag["id"] for tag in soup(page).select("dt[id^='xnnguide.']")]
        if found:
            documented[str(relative)] = found[:3]
    assert not documented, f"reader pages document the site's package: {documented}"


@pytest.mark.build
def test_a_page_has_one_full_stamp_and_later_ones_are_a_small_link_to_their_recipe(built_site):
    page = soup(built_site / "guides" / "run_pte_from_cpp.html")
    stamps = page.select(".xnnguide-stamp")
    assert len(stamps) >= 3, "the C++ guide quotes several recipes"
    full = [stamp for stamp in stamps if "executorch 1.5.1" in stamp.get_text()]
    assert full == stamps[:1], "the releases and machine are named once, in the first stamp"
    links = [a["href"] for a in full[0].find_all("a")]
    assert any("gallery/performance/" in href for href in links), (full[0].get_text(), links)
    # The two links about stamps are two links, set apart from each other and from the sentence.
    about = full[0].select(".xnnguide-stamp-links a")
    assert [a["href"].rsplit("/", 1)[-1] for a in about] == ["verified.html", "execution_ledger.html"], about
    assert " · " in full[0].select_one(".xnnguide-stamp-links").get_text(), full[0]
    for stamp in stamps[1:]:
        if "xnnguide-not-verified" in stamp["class"]:
            continue  # a recipe this machine could not run says so in full, wherever it is
        assert "xnnguide-stamp-small" in stamp["class"], stamp
        links = [a["href"] for a in stamp.find_all("a")]
        assert len(links) == 1 and "gallery/performance/" in links[0], (stamp.get_text(), links)


# A MyST role or directive that reached the reader as text: a role inside backticks renders as the code
# "{fact}`recipe/key`", a directive fence inside another block as "```{fact-table}". Contributor pages show
# that syntax on purpose; sphinx-gallery pages come from reStructuredText, whose roles fail the build instead.
_UNRENDERED_ROLE = re.compile(r"\{[a-z][a-z:-]*\}`|:(?:fact|doc|ref|download|quoted-error):`")
_UNRENDERED_FENCE = re.compile(r"(?:```|:::)\s*\{[a-z][a-z-]*\}")


def unrendered_markup(html: str) -> list[str]:
    """Each role or directive that a built page shows as text, with the text around it."""
    from bs4 import BeautifulSoup

    page = BeautifulSoup(html, "html.parser")
    found = [match.group(0) for block in page.find_all("pre") for match in _UNRENDERED_FENCE.finditer(block.text)]
    for block in page.find_all("pre"):
        block.decompose()
    text = page.get_text()
    found += [text[max(match.start() - 30, 0):match.end() + 30].strip()
              for pattern in (_UNRENDERED_ROLE, _UNRENDERED_FENCE) for match in pattern.finditer(text)]
    return found


def test_unrendered_markup_is_found_where_a_page_shows_it_and_not_where_it_is_rendered():
    # The C++ guide's defect of issue 32: a role inside backticks, shown as code in the middle of a sentence.
    assert unrendered_markup("<p>The build used the system's <code>{fact}`run_pte_from_cpp/compiler`</code>.</p>")
    assert unrendered_markup("<div><pre>```{fact-table} recipe/key\n```</pre></div>")
    assert not unrendered_markup('<p>It took <code class="xnnguide-fact">9.0 ms</code> and <a href="x.html">a '
                                 "page</a>; <code>dict{key}</code> stays code.</p><pre>x = {'a': 1}</pre>")


@pytest.mark.build
def test_no_reader_page_shows_a_role_or_directive_as_text(built_site):
    found = {}
    for page in sorted(built_site.rglob("*.html")):
        relative = page.relative_to(built_site)
        if relative.parts[0] in {"contributing", "_sources", "_static", "_downloads", "_modules"}:
            continue
        if shown := unrendered_markup(page.read_text(encoding="utf-8")):
            found[str(relative)] = shown[:3]
    assert not found, f"pages show MyST markup as text: {found}"
