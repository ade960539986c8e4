"""The built site, as a reader's browser sees it: Debian's Chromium, headless.

pytest-playwright drives ``/usr/bin/chromium`` (fixtures in ``conftest.py``;
no browser is ever downloaded) against ``_build/html`` served on a free
localhost port. Every HTML file the build wrote is loaded, not only the
pages of the toctree; every request to another host than localhost is
intercepted and refused, and fails the test. With ``XNNGUIDE_SCREENSHOTS=1`` in
the environment, a screenshot of each page is saved under
``_build/screenshots/`` for review.

``make browser`` (a prerequisite of ``make test``) installs Chromium when it
is missing; without it these tests fail, they never skip.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from conftest import BUILD, DOCS, GALLERY, HTML, SNIPPETS, recipe

from xnnguide.core.reader_copy import reader_source
from xnnguide.core.recipes import recipe_files

pytestmark = pytest.mark.build

SCREENSHOTS = BUILD / "screenshots"
#: Whether :func:`screenshot` saves: only a reviewer looks at the pictures, and saving one costs about half a
#: second a page, a sixth of the every-page test.
SAVE_SCREENSHOTS = os.environ.get("XNNGUIDE_SCREENSHOTS") == "1"

#: Every HTML file the build wrote, as a path relative to the site root,
#: except the theme's template fragments it copies among the static files.
ALL_PAGES = sorted(path.relative_to(HTML).as_posix() for path in HTML.glob("**/*.html")
                   if path.relative_to(HTML).parts[0] != "_static")
#: Recipe pages some tests below open by name.
RECIPE_PAGE = "gallery/lowering/lower_mobilenet_v2_fp32.html"
#: The page whose recipe code the copy-button test compares the clipboard with.
COPY_PAGE, COPY_RECIPE, COPY_REGION = "tutorial/get_started.html", "lower_mobilenet_v2_fp32", "model"
#: A page that shows sphinx-design tabs (side-by-side variants of a step).
TABS_PAGE = "help/troubleshooting.html"


def toctree_sections(index: Path = DOCS / "index.md") -> list[tuple[str, list[str]]]:
    """``(caption, [docname, ...])`` for every toctree block of the root page, in order."""
    sections = []
    text = index.read_text(encoding="utf-8")
    for _fence, block in re.findall(r"^(```|:::)\{toctree\}\n(.*?)^\1", text, re.M | re.S):
        caption = re.search(r"^:caption:\s*(.+)$", block, re.M)
        entries = [line.strip() for line in block.splitlines()
                   if line.strip() and not line.lstrip().startswith((":", "%"))]
        sections.append((caption.group(1).strip() if caption else "", entries))
    return sections


def top_level_pages() -> list[str]:
    return [f"{docname}.html" for _caption, docnames in toctree_sections() for docname in docnames]


def slug(page: str) -> str:
    return page.removesuffix(".html").replace("/", "__")


def screenshot(page, name: str, max_height: int = 8000) -> None:
    """Save the page, up to *max_height* CSS pixels of it, as ``_build/screenshots/<name>.png``, when
    :data:`SAVE_SCREENSHOTS` says to."""
    if not SAVE_SCREENSHOTS:
        return
    height = min(page.evaluate("document.documentElement.scrollHeight"), max_height)
    width = page.viewport_size["width"]
    page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True,
                    clip={"x": 0, "y": 0, "width": width, "height": height})


# ---------------------------------------------------------------- every page the build wrote


def test_every_page_of_the_toctree_and_the_gallery_is_among_the_checked_pages(built_site):
    # The list is read from disk; a page the toctree names but the build did
    # not write, or a gallery that was not generated, must not go unnoticed.
    expected = {"index.html", "search.html", "genindex.html", "gallery/index.html", RECIPE_PAGE,
                *top_level_pages(), *(f"gallery/{path.parent.name}/{path.stem}.html" for path in recipe_files(SNIPPETS))}
    missing = sorted(expected - set(ALL_PAGES))
    assert not missing, f"pages the build should have written but did not: {missing}"


def test_the_request_guard_refuses_and_reports_an_off_site_request(tab):
    # The guard every page test relies on, tried on a request it must catch.
    tab.goto("index.html")
    with tab.page.expect_event("requestfailed"):
        tab.page.evaluate("""() => { const link = document.createElement('link');
            link.rel = 'stylesheet'; link.href = 'https://cdn.jsdelivr.net/npm/bootstrap/dist/css/bootstrap.min.css';
            document.head.append(link); }""")
    assert tab.off_site == ["https://cdn.jsdelivr.net/npm/bootstrap/dist/css/bootstrap.min.css"], tab.off_site


WCAG_A_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa"]}, "resultTypes": ["violations"]}
#: The WCAG 2 A and AA rules whose verdict depends on colours, so on the colour scheme: text contrast, and links
#: told from the text around them by colour alone. The others read the document's structure, which a scheme
#: does not change.
COLOUR_RULES = {"runOnly": {"type": "rule", "values": ["color-contrast", "link-in-text-block"]},
                "resultTypes": ["violations"]}

# axe-core's colour-contrast rule takes most of its time on the thousands of highlighted tokens of a code
# page, and on the words of inline code (Sphinx puts each in a span.pre: over a thousand on the API pages),
# though the tokens of a page share a few dozen looks. A token's contrast depends only on its colour,
# the background behind it (the first ancestor that paints one), its font size and weight, so while axe
# runs, a token whose look an earlier token of the page has is hidden (visibility: hidden keeps the layout,
# and axe passes over hidden text quickly; leaving it out of axe's context costs nearly as much as checking
# it): each look is still checked once, on its first rendered token. Inline code that names an element (a
# link, a heading, a table header, a button) stays: hidden, it would leave the element without a name for
# axe's structure rules, and a link's colour against its paragraph is what link-in-text-block reads.
HIDE_REPEATED_LOOKS = """() => {
    const seen = new Set();
    let repeated = 0;
    for (const token of document.querySelectorAll('div.highlight pre span, span.pre')) {
        // Not rendered (in a closed dropdown): axe skips it, so it cannot stand for its look.
        if (!token.checkVisibility()) continue;
        const names = 'a, h1, h2, h3, h4, h5, h6, th, caption, button, summary, label';
        if (token.matches('span.pre') && token.closest(names)) continue;  // inline code naming an element
        let behind = token.parentElement;
        while (behind && getComputedStyle(behind).backgroundColor === 'rgba(0, 0, 0, 0)') behind = behind.parentElement;
        const style = getComputedStyle(token);
        const look = [style.color, style.backgroundColor, style.fontSize, style.fontWeight, style.opacity,
                      behind ? getComputedStyle(behind).backgroundColor : 'none'].join('|');
        if (!seen.has(look)) { seen.add(look); continue; }
        token.setAttribute('data-xnnguide-repeated-look', '');
        token.style.visibility = 'hidden';
        repeated += 1;
    }
    return repeated;
}"""


@functools.cache
def axe_script() -> str:
    """axe-core, as ``axe-playwright-python`` ships it."""
    from axe_playwright_python.sync_playwright import Axe

    return Axe().axe_script


def violations(page, options: dict = WCAG_A_AA) -> list[str]:
    """One line per element axe-core finds in violation of *options*' rules (WCAG 2 A and AA): rule, impact,
    element.

    axe-core ships inside the ``axe-playwright-python`` package and is injected into the page, never fetched.
    """
    page.evaluate(HIDE_REPEATED_LOOKS)
    if not page.evaluate("() => typeof window.axe === 'object'"):  # once a page: the script is half a megabyte
        page.evaluate(axe_script())
    found = page.evaluate("options => axe.run(document, options)", options)["violations"]
    page.evaluate("""() => document.querySelectorAll('[data-xnnguide-repeated-look]').forEach(token => {
        token.removeAttribute('data-xnnguide-repeated-look');
        token.style.visibility = '';
    })""")
    return [f"{violation['id']} ({violation['impact']}): {' '.join(node['target'])}: {node['html'][:160]}"
            for violation in found for node in violation["nodes"]]


def open_in_scheme(tab, page_path: str, scheme: str) -> None:
    tab.page.emulate_media(color_scheme=scheme)
    tab.goto(page_path)
    # The theme picks light or dark from the reader's system ("auto").
    tab.page.wait_for_function("scheme => document.documentElement.dataset.theme === scheme", arg=scheme)


def switch_scheme(tab, scheme: str) -> None:
    """Set the reader's system colour scheme; the theme ("auto") follows it, on a page already open too.

    Its colours would fade to the new ones (CSS transitions of up to 0.3 s, waited for on every page), and axe
    must read where the fade ends: transitions are turned off first, so that the colours jump there at once. The
    wait for running animations stays, for any the page starts itself."""
    tab.page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    tab.page.emulate_media(color_scheme=scheme)
    tab.page.wait_for_function("scheme => document.documentElement.dataset.theme === scheme", arg=scheme)
    tab.page.wait_for_function("() => document.getAnimations().every(a => a.playState !== 'running')")


def traffic_problems(tab) -> list[str]:
    """Requests to other hosts, failed requests and console errors since the page *tab* last loaded."""
    return ([f"it asked another host than localhost for: {tab.off_site}"] if tab.off_site else []) + \
        tab.failed + tab.console_errors


def load_problems(tab) -> list[str]:
    """What is wrong with the page *tab* just loaded: its traffic, images, title and heading."""
    page, problems = tab.page, traffic_problems(tab)
    if not page.title():
        problems.append("it has no title")
    if page.locator("main h1").count() < 1:
        problems.append("it has no heading")
    broken_images = page.evaluate(
        "[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
    if broken_images:
        problems.append(f"images that did not render: {broken_images}")
    if len(tab.requests) <= 5:
        problems.append(f"suspiciously few requests recorded: {tab.requests}")
    return problems


CODE_BLOCKS = """() => [...document.querySelectorAll('div.highlight pre')].map(pre => {
    const keyword = pre.querySelector('.k, .kn');
    return {
        output: pre.closest('.sphx-glr-script-out') !== null,
        button: pre.parentElement.querySelector(':scope > button.copybtn') !== null,
        language: ((pre.closest('[class*="highlight-"]')?.className.match(/highlight-(\\w+)/) || [])[1] || '').toLowerCase(),
        tokens: pre.querySelectorAll('span[class]').length,
        colours: keyword ? [getComputedStyle(pre).color, getComputedStyle(keyword).color] : null,
    };
})"""


def code_block_problems(page) -> list[str]:
    """Code blocks without a copy button or highlighting, and output blocks with a copy button."""
    blocks, problems = page.evaluate(CODE_BLOCKS), []
    code = [block for block in blocks if not block["output"]]
    without_button = [block for block in code if not block["button"]]
    if without_button:
        problems.append(f"{len(without_button)} of {len(code)} code blocks lack a copy button")
    if any(block["button"] for block in blocks if block["output"]):
        problems.append("a recipe's output block has a copy button")
    python = [block for block in code if block["language"] in ("python", "python3", "default")]
    if not all(block["tokens"] > 0 for block in python):
        problems.append("a Python block has no highlighted tokens")
    # Highlighted means styled: a keyword is drawn in another colour than plain text.
    plain = [block["colours"] for block in python if block["colours"] and block["colours"][0] == block["colours"][1]]
    if plain:
        problems.append(f"keywords are not coloured: {plain}")
    return problems


def check_page(tab, page_path: str) -> None:
    """Fails with everything that is wrong with *page_path* as a reader's browser shows it, all at once."""
    # Each page is loaded once, in the light scheme, and checked: only local requests, no failed request or
    # console error, rendered images, a title and a heading; code blocks highlighted with copy buttons (output
    # blocks without); axe-core's WCAG 2 A and AA rules. Then the reader's system turns dark while the page is
    # open, as the theme's "auto" mode follows it: what the switch requested, and the rules whose verdict
    # depends on colours, in dark (a second load in dark cost a second per page and found nothing more).
    # A reader's page is read at a desktop's width too (:func:`desktop_problems`).
    problems = []
    tab.page.set_viewport_size(DESKTOP)
    open_in_scheme(tab, page_path, "light")
    screenshot(tab.page, slug(page_path))
    problems += load_problems(tab) + code_block_problems(tab.page)
    if page_path in READER_PAGES:
        problems += [f"at 1400 px: {line}" for line in desktop_problems(tab)]
    tab.clear()  # axe's own work below is not the page's traffic
    problems += [f"axe, light: {line}" for line in violations(tab.page)]
    tab.clear()
    switch_scheme(tab, "dark")
    problems += [f"dark: {line}" for line in traffic_problems(tab)]
    problems += [f"axe, dark: {line}" for line in violations(tab.page, COLOUR_RULES)]
    assert not problems, f"{page_path}: {len(problems)} problem(s):\n" + "\n".join(problems)


# pytest-xdist (``--dist loadscope``) hands each class to one worker and the module's functions to one: the
# every-page check, a third of the test suite's work, is two classes so that both workers share it.
class TestEveryGalleryPage:
    @pytest.mark.parametrize("page_path", [path for path in ALL_PAGES if path.startswith("gallery/")])
    def test_loads_cleanly_shows_its_code_and_passes_axe_in_light_and_dark(self, reused_tab, page_path):
        check_page(reused_tab, page_path)


class TestEveryOtherPage:
    @pytest.mark.parametrize("page_path", [path for path in ALL_PAGES if not path.startswith("gallery/")])
    def test_loads_cleanly_shows_its_code_and_passes_axe_in_light_and_dark(self, reused_tab, page_path):
        check_page(reused_tab, page_path)


def requests_after_our_wait_and_after_networkidle(tab, page_path: str) -> tuple[list[str], list[str]]:
    tab.goto(page_path)
    seen = list(tab.requests)
    tab.page.wait_for_load_state("networkidle")  # 0.5 s without a request, Playwright's own wait
    return seen, list(tab.requests)


# One page of each kind: the landing page with its cards, search, a long guide, a recipe with figures, the gallery.
NETWORK_WAIT_PAGES = ["index.html", "search.html", "guides/quantization.html",
                    "gallery/quantization/quantize_crepe_pitch_tracker.html", "gallery/index.html"]


def test_our_network_idle_wait_misses_no_request(tab):
    # Traffic.goto stops waiting once no request has been in flight for NETWORK_IDLE_SECONDS after the load event;
    # Playwright's networkidle would have seen the same requests, so the traffic checks above miss nothing.
    for page_path in NETWORK_WAIT_PAGES:
        ours, idle = requests_after_our_wait_and_after_networkidle(tab, page_path)
        assert ours == idle, f"{page_path}: requested after our wait: {idle[len(ours):]}"
    # ... and the comparison can fail: a request a timer starts after the wait is seen only by networkidle.
    tab.page.add_init_script("addEventListener('load', () => setTimeout(() => fetch('_static/basic.css?late'), 300))")
    ours, idle = requests_after_our_wait_and_after_networkidle(tab, "index.html")
    assert [url for url in idle if url not in ours] == [tab.page.url.replace("index.html", "_static/basic.css?late")]


@pytest.mark.parametrize("page_path", [COPY_PAGE, RECIPE_PAGE, "contributing/index.html"])
def test_pages_with_code_show_it(tab, page_path):
    # The check above holds for a page without code too; these pages have
    # code, highlighted Python among it, so it is not vacuous there.
    tab.goto(page_path)
    blocks = [block for block in tab.page.evaluate(CODE_BLOCKS) if not block["output"]]
    assert blocks, f"{page_path} shows no code block"
    if page_path != "contributing/index.html":
        assert any(block["colours"] for block in blocks), f"{page_path} has no Python keyword to colour"


# ---------------------------------------------------------------- copy buttons


def click_copy_and_read(page, button_selector: str, *, keyboard: bool = False) -> str:
    """Click (or focus and press Enter on) a copy button; return the clipboard once it reports success."""
    page.evaluate("navigator.clipboard.writeText('')")
    # The button shows its success state for 1.5 s only; record it when it
    # happens instead of hoping to poll at the right moment.
    page.evaluate("""selector => {
        const button = document.querySelector(selector);
        window.__copyStates = [];
        new MutationObserver(() => window.__copyStates.push(
            [button.classList.contains('success'), button.getAttribute('data-tooltip')]
        )).observe(button, {attributes: true});
    }""", button_selector)
    if keyboard:
        page.keyboard.press("Enter")
    else:
        page.click(button_selector)
    states = page.wait_for_function("window.__copyStates.some(([success]) => success) && window.__copyStates")
    assert [True, "Copied!"] in states.json_value(), f"the copy button did not report success: {states.json_value()}"
    return page.evaluate("navigator.clipboard.readText()")


def recipe_region(stem: str, region: str) -> str:
    source = recipe(stem).read_text(encoding="utf-8")
    return source.split(f"# [start {region}]\n")[1].split(f"# [end {region}]")[0].rstrip("\n")


def test_copy_button_copies_exactly_the_recipe_code(tab):
    tab.goto(COPY_PAGE)
    copied = click_copy_and_read(tab.page, 'div[class*="highlight-python"] button.copybtn')
    region = recipe_region(COPY_RECIPE, COPY_REGION)
    assert copied == region, f"clipboard:\n{copied}\n---\nrecipe region:\n{region}"


@pytest.mark.parametrize("language, prompt", [("console", "$ "), ("pycon", ">>> ")])
def test_copy_button_leaves_out_prompts(tab, language, prompt):
    tab.goto("contributing/index.html")
    block = f"div.highlight-{language}"
    shown = tab.page.inner_text(f"{block} pre")
    assert shown.startswith(prompt), f"the contributing page's first {language} block has no prompt: {shown!r}"
    copied = click_copy_and_read(tab.page, f"{block} button.copybtn")
    assert copied.strip(), "nothing was copied"
    expected = [line[len(prompt):] for line in shown.splitlines() if line.startswith(prompt)]
    assert copied.splitlines() == expected, (copied, expected)


def test_copy_button_leaves_out_python_prompts_and_output(tab):
    # No page shows an interactive session with typed-in output (every output
    # on the site comes from the build), so this block is made here with the
    # site's own highlighter and put on a real page, where the site's
    # copy-button script and configuration handle it like any other block.
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonConsoleLexer

    session = ">>> import torch\n>>> torch.ones(2).sum()\ntensor(2.)\n>>> for i in range(2):\n...     print(i)\n0\n1\n"
    block = highlight(session, PythonConsoleLexer(), HtmlFormatter())
    tab.goto("contributing/index.html")
    tab.page.evaluate("""block => {
        const wrapper = document.createElement('div');
        wrapper.className = 'highlight-pycon notranslate';
        wrapper.innerHTML = block;
        const pre = wrapper.querySelector('pre');
        pre.id = 'injected-pycon';
        pre.insertAdjacentHTML('afterend',
            '<button class="copybtn o-tooltip--left" data-tooltip="Copy" data-clipboard-target="#injected-pycon">copy</button>');
        document.querySelector('main h1').after(wrapper);
    }""", block)
    copied = click_copy_and_read(tab.page, "button[data-clipboard-target='#injected-pycon']")
    lines = [line for line in copied.splitlines() if line.strip()]
    assert lines == ["import torch", "torch.ones(2).sum()", "for i in range(2):", "    print(i)"], copied


def test_tabs_switch_between_variants(tab):
    tab.goto(TABS_PAGE)
    page = tab.page
    visible = """() => [...document.querySelector('.sd-tab-set').querySelectorAll(':scope > .sd-tab-content')]
                 .map(c => getComputedStyle(c).display !== 'none')"""
    assert page.locator(".sd-tab-set").count() >= 1, f"{TABS_PAGE} has no tabs"
    assert page.evaluate(visible)[:2] == [True, False]
    page.click(".sd-tab-set > label.sd-tab-label:nth-of-type(2)")
    assert page.evaluate(visible)[:2] == [False, True]
    assert not tab.console_errors, tab.console_errors


# ---------------------------------------------------------------- search and navigation


def test_search_box_finds_the_tutorial(tab):
    tab.goto("index.html")
    page = tab.page
    page.click("button.search-button-field")
    page.wait_for_function("document.activeElement && document.activeElement.name === 'q'")
    page.keyboard.insert_text("get_transform_passes")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.split("?")[0].endswith("/search.html"), page.url
    page.wait_for_selector("#search-results li a", timeout=20_000)
    results = page.eval_on_selector_all("#search-results li a", "links => links.map(a => a.href)")
    screenshot(page, "search__get_transform_passes")
    assert any(link.split("#")[0].endswith("/tutorial/get_started.html") for link in results), results
    assert not tab.console_errors, tab.console_errors


@pytest.mark.parametrize("page_path", ["index.html", "overview.html", RECIPE_PAGE])
def test_navigation_links_to_every_top_level_page(tab, site_url, page_path):
    tab.goto(page_path)
    page = tab.page
    expected = {site_url + path for path in top_level_pages()}
    header = set(page.eval_on_selector_all(".bd-header .bd-navbar-elements a", "as => as.map(a => a.href.split('#')[0])"))
    sidebar = set(page.eval_on_selector_all(".bd-sidebar-primary .bd-links a", "as => as.map(a => a.href.split('#')[0])"))
    assert not expected - header, f"{page_path}: the header lacks {sorted(expected - header)}"
    assert not expected - sidebar, f"{page_path}: the sidebar lacks {sorted(expected - sidebar)}"
    # The header and the sidebar name the sections of docs/index.md, in their order.
    captions = [caption for caption, docnames in toctree_sections() if docnames]
    shown = page.eval_on_selector_all(
        ".bd-header .xnnguide-sections > li",
        "lis => lis.map(li => li.querySelector(':scope > a, :scope > button').textContent.trim())")
    assert shown == captions, shown
    sidebar_captions = page.eval_on_selector_all(".bd-sidebar-primary p.caption", "ps => ps.map(p => p.textContent.trim())")
    assert sidebar_captions == captions, sidebar_captions


def test_header_menus_open_and_list_their_pages(tab, site_url):
    # A section with several pages is a menu in the header; each opens and
    # lists exactly the pages of its section.
    tab.goto("index.html")
    page = tab.page
    sections = [docnames for _caption, docnames in toctree_sections() if len(docnames) > 1]
    buttons = page.locator(".bd-header .xnnguide-sections button.dropdown-toggle")
    assert buttons.count() == len(sections), (buttons.count(), sections)
    for number, docnames in enumerate(sections):
        buttons.nth(number).click()
        menu = page.locator(".bd-header .xnnguide-sections .dropdown-menu").nth(number)
        menu.wait_for(state="visible")
        links = menu.locator("a").evaluate_all("as => as.map(a => a.href.split('#')[0])")
        assert links == [f"{site_url}{docname}.html" for docname in docnames], links
        if number == 0:
            screenshot(page, "index__menu-open", max_height=900)
        page.keyboard.press("Escape")


# ---------------------------------------------------------------- the gallery


def test_recipe_page_offers_py_and_ipynb_that_download(tab):
    tab.goto(RECIPE_PAGE)
    page = tab.page
    links = page.eval_on_selector_all(".sphx-glr-download a", "as => as.map(a => a.href)")
    stem = Path(RECIPE_PAGE).stem
    py = [link for link in links if link.endswith(f"/{stem}.py")]
    ipynb = [link for link in links if link.endswith(f"/{stem}.ipynb")]
    assert py and ipynb, links
    py_response, nb_response = page.request.get(py[0]), page.request.get(ipynb[0])
    assert py_response.status == 200 and nb_response.status == 200, (py_response.status, nb_response.status)
    source = recipe(stem)
    assert py_response.text() == reader_source(source.read_text(encoding="utf-8"), str(source))
    notebook = json.loads(nb_response.text())
    assert notebook["nbformat"] == 4 and any(cell["cell_type"] == "code" for cell in notebook["cells"])


def test_gallery_index_shows_every_recipe_with_its_sentence_and_only_real_figures(tab):
    # xnnguide.site.gallery_pages: a card says what its recipe does; only a recipe that draws a figure shows
    # an image, its own (no shared placeholder).
    tab.goto("gallery/index.html")
    cards = tab.page.eval_on_selector_all(".sphx-glr-thumbcontainer", """cs => cs.map(c => ({
        href: c.querySelector('a').href, intro: (c.querySelector('.xnnguide-card-intro') || {}).innerText || '',
        width: c.querySelector('img') ? c.querySelector('img').naturalWidth : null}))""")
    recipes = {path.stem: path for path in recipe_files(SNIPPETS)}
    linked = sorted(Path(unquote(card["href"])).stem for card in cards)
    assert linked == sorted(recipes), (linked, sorted(recipes))
    for card in cards:
        stem = Path(unquote(card["href"])).stem
        figure = GALLERY / recipes[stem].parent.name / "images" / f"sphx_glr_{stem}_001.png"
        assert card["intro"].strip(), f"{stem}: a card without its sentence"
        assert (card["width"] is not None) == figure.is_file(), f"{stem}: image {card['width']}, figure {figure}"
        assert card["width"] is None or card["width"] > 0, f"{stem}: a broken image"


# ---------------------------------------------------------------- on a phone's width

PHONE_PAGES = ["index.html", "guides/quantization.html", "reference/operators.html", "guides/run_pte_from_cpp.html",
               "guides/llm.html"]

# A table is clipped when a box around it hides what overflows (overflow hidden or clip) and the table runs
# past that box's right edge: the reader can neither see nor scroll to those columns.
CLIPPED_TABLES = """() => [...document.querySelectorAll('article table')].flatMap((table, index) => {
    const right = table.getBoundingClientRect().right;
    for (let box = table.parentElement; box && box !== document.body; box = box.parentElement) {
        const style = getComputedStyle(box);
        if (['auto', 'scroll'].includes(style.overflowX)) return [];  // the reader scrolls it
        if (['hidden', 'clip'].includes(style.overflowX) && right > box.getBoundingClientRect().right + 1)
            return [`table ${index + 1} (${table.rows[0]?.innerText.split('\\t').slice(0, 3).join(' | ')}...)`];
    }
    return right > window.innerWidth + 1 ? [`table ${index + 1} runs off the page`] : [];
})"""


# Inline code (a command, a module path) that runs past the right edge of the screen: the page does not scroll
# sideways (the theme's article box would, or would hide it), so its end is out of the reader's reach. Code
# blocks and tables scroll in their own box (CLIPPED_TABLES checks those).
CUT_OFF_CODE = """() => [...document.querySelectorAll('article code')]
    .filter(code => !code.closest('pre, table'))
    .filter(code => code.getBoundingClientRect().right > window.innerWidth + 1)
    .map(code => code.innerText.slice(0, 60))"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("page_path", PHONE_PAGES)
def test_at_400_px_the_page_does_not_scroll_sideways_and_no_table_is_clipped(tab, page_path, scheme):
    tab.page.set_viewport_size({"width": 400, "height": 800})
    open_in_scheme(tab, page_path, scheme)
    screenshot(tab.page, f"400px__{slug(page_path)}" + ("__dark" if scheme == "dark" else ""))
    wide = tab.page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 400, f"{page_path} ({scheme}): at 400 px the page is {wide} px wide and scrolls sideways"
    assert tab.page.evaluate(CLIPPED_TABLES) == [], f"{page_path} ({scheme}): tables cut off at 400 px"
    assert tab.page.evaluate(CUT_OFF_CODE) == [], f"{page_path} ({scheme}): inline code cut off at 400 px"


# ---------------------------------------------------------------- at a desktop's width

#: A desktop screen, the width issue 49 read the site at.
DESKTOP = {"width": 1400, "height": 1000}

#: Pages a reader gets: every page of the toctree but the contributors', and every recipe's page.
READER_PAGES = [page for page in top_level_pages() if not page.startswith("contributing/")] + [
    f"gallery/{path.parent.name}/{path.stem}.html" for path in recipe_files(SNIPPETS)]

# A table the reader cannot read whole: a column hidden (display: none), a cell whose text is cut (overflow hidden
# and wider content), or a table wider than the article column with no box around it that scrolls sideways, or
# one whose scroll bar is out of sight (below the screen's bottom edge while the table's top is on it, so a reader
# at the top of a long table cannot see that more columns exist).
HIDDEN_IN_TABLES = """() => {
    const article = document.querySelector('article.bd-article') || document.querySelector('main');
    const edge = article.getBoundingClientRect().right;
    const name = (table, index) => `table ${index + 1} (${(table.querySelector('caption, th')?.innerText || '')
        .trim().slice(0, 40)})`;
    return [...article.querySelectorAll('table')].flatMap((table, index) => {
        const problems = [];
        const cells = [...table.querySelectorAll('th, td')];
        const hidden = cells.filter(cell => getComputedStyle(cell).display === 'none');
        if (hidden.length) problems.push(`${name(table, index)}: ${hidden.length} cells hidden (display: none), ` +
                                         `first: ${hidden[0].innerText.trim().slice(0, 30)}`);
        const cut = cells.filter(cell => ['hidden', 'clip'].includes(getComputedStyle(cell).overflowX)
                                         && cell.scrollWidth > cell.clientWidth + 1);
        if (cut.length) problems.push(`${name(table, index)}: text cut in ${cut.length} cells`);
        const right = table.getBoundingClientRect().right;
        let scroller = null;
        for (let box = table.parentElement; box && box !== article.parentElement; box = box.parentElement) {
            if (['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) { scroller = box; break; }
        }
        if (!scroller) {
            if (right > edge + 1) problems.push(`${name(table, index)}: runs ${Math.round(right - edge)} px past ` +
                                                'the article and nothing scrolls it');
        } else if (scroller.scrollWidth > scroller.clientWidth + 1) {
            const box = scroller.getBoundingClientRect();
            if (box.bottom > window.innerHeight && getComputedStyle(scroller).maxHeight === 'none')
                problems.push(`${name(table, index)}: ${scroller.scrollWidth - scroller.clientWidth} px of ` +
                              `columns out of view, and its scroll bar ${Math.round(box.height)} px down`);
        }
        return problems;
    });
}"""

# The right-hand contents: an entry whose text is cut (wider than its link box, which hides the rest) or that
# runs past the sidebar's right edge or the screen's.
CUT_CONTENTS = """() => {
    const sidebar = document.querySelector('.bd-sidebar-secondary');
    if (!sidebar || getComputedStyle(sidebar).display === 'none') return [];
    const edge = Math.min(sidebar.getBoundingClientRect().right, window.innerWidth);
    return [...sidebar.querySelectorAll('nav a')].filter(link =>
        link.scrollWidth > link.clientWidth + 1 || link.getBoundingClientRect().right > edge + 1
        || [...link.querySelectorAll('*')].some(inner => inner.getBoundingClientRect().right > edge + 1)
    ).map(link => link.innerText.trim().slice(0, 60));
}"""


def scrolled_to(tab, selector: str) -> None:
    """Scroll the first element *selector* finds to the top of the screen, as a reader reaching it does."""
    tab.page.evaluate("selector => document.querySelector(selector)?.scrollIntoView({block: 'start'})", selector)


def desktop_problems(tab) -> list[str]:
    """On the page *tab* shows at the :data:`DESKTOP` width: a contents entry cut, a table that hides columns
    (:data:`HIDDEN_IN_TABLES`). The every-page test above runs it on each of :data:`READER_PAGES`, in its load."""
    problems = [f"contents entry cut: {entry}" for entry in tab.page.evaluate(CUT_CONTENTS)]
    for index in range(tab.page.locator("article table").count()):
        # Each table as a reader meets it: scrolled to its top.
        tab.page.locator("article table").nth(index).evaluate("table => table.scrollIntoView({block: 'start'})")
        problems += [problem for problem in tab.page.evaluate(HIDDEN_IN_TABLES) if problem.startswith(
            f"table {index + 1} ")]
    tab.page.evaluate("window.scrollTo(0, 0)")
    return problems


def test_the_1400_px_checks_see_a_hidden_column_a_long_table_and_a_cut_contents_entry(tab):
    # The checks above, tried where they must fire, on tables put on a real page: one whose last column is
    # hidden, one long and wide, in the theme's scroll box; and the contents with an entry too long for them.
    tab.page.set_viewport_size(DESKTOP)
    put_table = """([columns, rows, hideLast]) => {
        const table = document.createElement('table');
        table.innerHTML = '<tr>' + Array(columns).fill('<th style="min-width: 9rem">a column</th>').join('') + '</tr>'
                        + Array(rows).fill('<tr>' + Array(columns).fill('<td>x</td>').join('') + '</tr>').join('');
        if (hideLast) table.querySelectorAll('tr > :last-child').forEach(cell => cell.style.display = 'none');
        const box = document.createElement('div');
        box.className = 'pst-scrollable-table-container';
        box.append(table);
        document.querySelector('article h1').after(box);
        table.scrollIntoView({block: 'start'});
    }"""
    tab.goto("guides/quantization.html")
    tab.page.evaluate(put_table, [3, 2, True])
    assert any("hidden (display: none)" in problem for problem in tab.page.evaluate(HIDDEN_IN_TABLES))
    tab.goto("guides/quantization.html")
    tab.page.evaluate(put_table, [30, 200, False])
    assert any("out of view" in problem for problem in tab.page.evaluate(HIDDEN_IN_TABLES))
    tab.page.evaluate("""() => { const link = document.querySelector('.bd-sidebar-secondary nav a');
        link.textContent = 'XnnpackPartitioner(config_precisions=ConfigPrecisionType.DYNAMIC_QUANT)';
        link.style.whiteSpace = 'nowrap'; link.style.overflow = 'hidden'; }""")
    assert tab.page.evaluate(CUT_CONTENTS), "a cut contents entry went unseen"
