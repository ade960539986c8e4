"""Every built page is usable with assistive technology and the keyboard.

axe-core (shipped inside the ``axe-playwright-python`` package, injected
into the page, never fetched) runs its WCAG 2 A and AA rules on every HTML
page the build wrote, in the light and in the dark colour scheme: that runs
in ``test_browser.py``, on the same two loads of each page as its other
checks. Here, axe is shown to catch what it must, a page is walked with the
Tab key alone, and the figures' alternative text is read.
"""

from __future__ import annotations

import pytest
from test_browser import COPY_PAGE, click_copy_and_read, open_in_scheme, violations

pytestmark = pytest.mark.build


def test_axe_reports_a_thumbnail_link_without_text(tab):
    # The per-page axe check of test_browser.py, tried on what it must catch: a gallery thumbnail whose
    # link has lost its text is a link a screen reader cannot name.
    open_in_scheme(tab, "gallery/index.html", "light")
    assert not violations(tab.page)
    tab.page.evaluate("document.querySelector('.sphx-glr-thumbcontainer a').replaceChildren()")
    found = violations(tab.page)
    assert found and all(line.startswith("link-name") for line in found), found


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_reports_a_code_token_without_contrast_though_its_look_repeats(tab, scheme):
    # Tokens whose look an earlier token already showed are left out of axe's run (test_browser.py); a look
    # with too little contrast must still be reported, on the first token that has it. Here every keyword
    # of the tutorial's code is drawn in a grey close to its block's background (a colour equal to it would
    # be "needs review" for axe, hidden text perhaps, not a violation).
    open_in_scheme(tab, COPY_PAGE, scheme)
    keywords = tab.page.evaluate("""faint => {
        const keywords = [...document.querySelectorAll('div.highlight pre span.k')];
        for (const keyword of keywords) keyword.style.color = faint;
        return keywords.length;
    }""", "#bbbbbb" if scheme == "light" else "#444444")
    assert keywords > 1, f"{COPY_PAGE} has too few keywords for the check to mean anything"
    found = violations(tab.page)
    assert found and all(line.startswith("color-contrast") and "span class=\"k\"" in line for line in found), found
    assert len(found) < keywords, "every keyword was checked: the repeated looks were not left out"


def test_axe_reports_inline_code_without_contrast_though_its_look_repeats(tab):
    # The words of inline code (span.pre) whose look an earlier word showed are left out too, but for those that
    # name a link, heading or the like (test_browser.py): a faint look must still be reported, on one word a look.
    open_in_scheme(tab, COPY_PAGE, "light")
    words, looks = tab.page.evaluate("""() => {
        const words = [...document.querySelectorAll('p code.literal span.pre')].filter(word => !word.closest('a'));
        for (const word of words) word.style.color = '#bbbbbb';
        const looks = new Set(words.filter(word => word.checkVisibility()).map(word => {
            let behind = word.parentElement;
            while (getComputedStyle(behind).backgroundColor === 'rgba(0, 0, 0, 0)') behind = behind.parentElement;
            const style = getComputedStyle(word);
            return [style.fontSize, style.fontWeight, getComputedStyle(behind).backgroundColor].join('|');
        }));
        return [words.length, looks.size];
    }""")
    assert words > 2 * looks, f"{COPY_PAGE} has too few words of inline code for the check to mean anything"
    found = violations(tab.page)
    assert found and all(line.startswith("color-contrast") and "span class=\"pre\"" in line for line in found), found
    assert len(found) <= looks, f"{len(found)} words reported, {looks} looks: the repeated looks were not left out"


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
    import re

    from conftest import soup

    figures = []
    for page in sorted((built_site / "gallery").rglob("*.html")):
        # Only a page whose markup has an image from sphinx-gallery is parsed (seconds for all of them): Sphinx
        # writes an attribute's underscores as they are, so a page without this text has no figure to read.
        if not re.search(r"<img [^>]*src=\"[^\"]*sphx_glr_", page.read_text(encoding="utf-8")):
            continue
        for image in soup(page).select('img[src*="sphx_glr_"]:not([src*="_thumb"])'):
            stem = image["src"].rsplit("/", 1)[-1].rsplit(".", 1)[0]
            figures.append((page.name, image.get("alt", ""), stem[len("sphx_glr_"):-len("_001")].replace("_", " ")))
    assert figures, "no recipe page shows a figure"
    undescribed = [(page, alt) for page, alt, fallback in figures if alt == fallback or len(alt.split()) < 8]
    assert not undescribed, f"figures whose alt text does not say what they show: {undescribed}"
