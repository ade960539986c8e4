"""Every built page is usable with assistive technology and the keyboard.

axe-core (shipped inside the ``axe-playwright-python`` package, injected
into the page, never fetched) runs its WCAG 2 A and AA rules on every HTML
page the build wrote, in the light and in the dark colour scheme. A second
test walks a page with the Tab key alone.
"""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe

from test_browser import ALL_PAGES, COPY_PAGE, click_copy_and_read

pytestmark = pytest.mark.build

WCAG_A_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa"]}, "resultTypes": ["violations"]}


def violations(page) -> list[str]:
    """One line per element axe finds in violation: rule, impact, element."""
    found = Axe().run(page, options=WCAG_A_AA).response["violations"]
    return [f"{violation['id']} ({violation['impact']}): {' '.join(node['target'])}: {node['html'][:160]}"
            for violation in found for node in violation["nodes"]]


def open_in_scheme(tab, page_path: str, scheme: str) -> None:
    tab.page.emulate_media(color_scheme=scheme)
    tab.goto(page_path)
    # The theme picks light or dark from the reader's system ("auto").
    tab.page.wait_for_function("scheme => document.documentElement.dataset.theme === scheme", arg=scheme)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("page_path", ALL_PAGES)
def test_page_has_no_accessibility_violation(tab, page_path, scheme):
    open_in_scheme(tab, page_path, scheme)
    found = violations(tab.page)
    assert not found, f"{page_path} ({scheme}): {len(found)} violation(s):\n" + "\n".join(found)


def test_axe_reports_a_thumbnail_link_without_text(tab):
    # The check above, tried on what it must catch: a gallery thumbnail whose
    # link has lost its text is a link a screen reader cannot name.
    open_in_scheme(tab, "gallery/index.html", "light")
    assert not violations(tab.page)
    tab.page.evaluate("document.querySelector('.sphx-glr-thumbcontainer a').replaceChildren()")
    found = violations(tab.page)
    assert found and all(line.startswith("link-name") for line in found), found


def focused(page) -> dict:
    return page.evaluate("""() => { const e = document.activeElement; return {
        tag: e.tagName.toLowerCase(), classes: e.className || '', name: e.getAttribute('name') || '',
        text: (e.textContent || '').trim().slice(0, 60),
        in_sidebar: e.closest('.bd-sidebar-primary') !== null,
        first_copy: e === document.querySelector('div.highlight button.copybtn') };
    }""")


def test_tab_reaches_search_navigation_and_copy_button_and_enter_copies(tab):
    tab.goto(COPY_PAGE)
    page = tab.page
    reached = {"search": False, "navigation": False}
    for _ in range(400):
        page.keyboard.press("Tab")
        element = focused(page)
        if "search-button" in element["classes"] or element["name"] == "q":
            reached["search"] = True
        if element["in_sidebar"] and element["tag"] == "a":
            reached["navigation"] = True
        if element["first_copy"]:
            break
    else:
        pytest.fail(f"400 presses of Tab never reached the first code block's copy button; reached {reached}")
    assert reached == {"search": True, "navigation": True}, f"Tab did not pass through {reached}"
    # A sighted keyboard user sees where the focus is: the button shows itself
    # (it fades in over 0.3 s, as on hover).
    page.wait_for_function("getComputedStyle(document.activeElement).opacity === '1'", timeout=3000)
    # The tutorial's first block is the console commands that set up the
    # environment; Enter copies the commands, without their "$ " prompts.
    shown = page.inner_text("div.highlight pre")
    assert shown.startswith("$ "), f"{COPY_PAGE}'s first code block is not console commands: {shown!r}"
    copied = click_copy_and_read(page, "div.highlight button.copybtn", keyboard=True)
    assert copied.splitlines() == [line[2:] for line in shown.splitlines() if line.startswith("$ ")], copied


def test_every_recipe_figure_has_alternative_text_that_describes_it(built_site):
    # sphinx-gallery takes a figure's alt text from its titles; without titles
    # it falls back on the file name ("benchmark xnnpack speedup"), which says
    # nothing of what the figure shows.
    from conftest import soup

    figures = []
    for page in sorted((built_site / "gallery").rglob("*.html")):
        for image in soup(page).select('img[src*="sphx_glr_"]:not([src*="_thumb"])'):
            stem = image["src"].rsplit("/", 1)[-1].rsplit(".", 1)[0]
            figures.append((page.name, image.get("alt", ""), stem[len("sphx_glr_"):-len("_001")].replace("_", " ")))
    assert figures, "no recipe page shows a figure"
    undescribed = [(page, alt) for page, alt, fallback in figures if alt == fallback or len(alt.split()) < 8]
    assert not undescribed, f"figures whose alt text does not say what they show: {undescribed}"
