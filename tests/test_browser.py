"""The built site, as a reader's browser sees it: Debian's Chromium, headless.

The site in ``_build/html`` is served by ``python -m http.server`` on a free
localhost port and driven over the DevTools protocol (``tests/chromium.py``).
Checked pages: the index, every page listed in a toctree of
``docs/index.md`` (so a page another contributor adds there is checked as
soon as it exists), and the recipe pages in :data:`EXTRA_PAGES`. A
screenshot of each is saved under ``_build/screenshots/`` for review.

``make browser`` (a prerequisite of ``make test``) installs Chromium when it
is missing; without it these tests fail, they never skip.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from chromium import Browser
from conftest import BUILD, DOCS, SNIPPETS, recipe

from xnnguide.reader_code import reader_source
from xnnguide.records import recipe_files

pytestmark = pytest.mark.build

SCREENSHOTS = BUILD / "screenshots"
LOCAL_HOSTS = {"127.0.0.1"}
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

#: Pages checked besides the index and the top-level pages of docs/index.md.
EXTRA_PAGES = [
    "gallery/lowering/lower_mobilenet_v2_fp32.html",
    "gallery/troubleshooting/troubleshoot_quantize_without_calibration.html",
]
#: The page whose recipe code the copy-button test compares the clipboard with.
COPY_PAGE, COPY_RECIPE, COPY_REGION = "tutorial/get_started.html", "lower_mobilenet_v2_fp32", "model"


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


CHECKED_PAGES = ["index.html", *top_level_pages(), *EXTRA_PAGES]


def slug(page: str) -> str:
    return page.removesuffix(".html").replace("/", "__")


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def site_url(built_site):
    """``python -m http.server`` serving the built site on a free localhost port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (BUILD / "screenshots").joinpath("http-server.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as log_file:
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(built_site)],
            stdout=log_file, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(url + "index.html", timeout=2) as response:
                assert response.status == 200
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"http.server did not come up on port {port}; see {log}")
            time.sleep(0.2)
    yield url
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(scope="session")
def browser(site_url):
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"Chromium is not installed ({CHROMIUM} missing): run `make browser`")
    with tempfile.TemporaryDirectory(prefix="xnnguide-chromium-") as profile:
        chromium = Browser(CHROMIUM, Path(profile), SCREENSHOTS / "chromium.log")
        try:
            chromium.grant_clipboard(site_url.rstrip("/"))
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def page(browser):
    return browser.new_page()


# ---------------------------------------------------------------- every checked page


def test_the_checked_pages_exist(built_site):
    # A toctree entry whose page was not built would make every check below vacuous.
    missing = [page for page in CHECKED_PAGES if not (built_site / page).is_file()]
    assert not missing, f"pages listed for the browser test were not built: {missing}"


@pytest.mark.parametrize("page_path", CHECKED_PAGES)
def test_page_loads_with_only_local_assets_and_no_errors(page, site_url, page_path):
    page.goto(site_url + page_path)
    page.screenshot(SCREENSHOTS / f"{slug(page_path)}.png")
    assert page.evaluate("document.title"), f"{page_path} has no title"
    assert page.evaluate("document.querySelector('main h1') !== null"), f"{page_path} has no heading"
    failed = page.failed_requests(LOCAL_HOSTS)
    assert not failed, f"{page_path}: " + "; ".join(failed)
    assert not page.console_errors, f"{page_path}: " + "; ".join(page.console_errors)
    broken_images = page.evaluate(
        "[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
    assert not broken_images, f"{page_path}: images that did not render: {broken_images}"
    assert len(page.requests) > 5, f"{page_path}: suspiciously few requests recorded: {len(page.requests)}"


@pytest.mark.parametrize("page_path", CHECKED_PAGES)
def test_code_blocks_are_highlighted_and_have_copy_buttons(page, site_url, page_path):
    page.goto(site_url + page_path)
    blocks = page.evaluate("""[...document.querySelectorAll('div.highlight pre')].map(pre => ({
        output: pre.closest('.sphx-glr-script-out') !== null,
        button: pre.parentElement.querySelector(':scope > button.copybtn') !== null,
        language: ((pre.closest('[class*="highlight-"]')?.className.match(/highlight-(\\w+)/) || [])[1] || '').toLowerCase(),
        tokens: pre.querySelectorAll('span[class]').length,
    }))""")
    code = [block for block in blocks if not block["output"]]
    if not code:
        return  # a page without code (the index, say) has nothing to check here
    without_button = [block for block in code if not block["button"]]
    assert not without_button, f"{page_path}: {len(without_button)} of {len(code)} code blocks lack a copy button"
    assert not any(block["button"] for block in blocks if block["output"]), \
        f"{page_path}: a recipe's output block has a copy button"
    python = [block for block in code if block["language"] in ("python", "python3", "default")]
    if python:
        assert all(block["tokens"] > 0 for block in python), f"{page_path}: a Python block has no highlighted tokens"
        # Highlighted means styled: a keyword is drawn in another colour than plain text.
        colours = page.evaluate("""(() => {
            const pre = document.querySelector('div[class*="highlight-python" i] pre, div[class*="highlight-default"] pre');
            const keyword = pre.querySelector('.k, .kn');
            return keyword ? [getComputedStyle(pre).color, getComputedStyle(keyword).color] : null;
        })()""")
        assert colours and colours[0] != colours[1], f"{page_path}: keywords are not coloured: {colours}"


# ---------------------------------------------------------------- copy buttons


def click_copy_and_read(page, button_selector: str) -> str:
    """Click a copy button; return the clipboard once the button reports success."""
    page.evaluate("navigator.clipboard.writeText('')", user_gesture=True)
    # The button shows its success state for 1.5 s only; record it when it
    # happens instead of hoping to poll at the right moment.
    page.evaluate(f"""(() => {{
        const button = document.querySelector({json.dumps(button_selector)});
        window.__copyStates = [];
        new MutationObserver(() => window.__copyStates.push(
            [button.classList.contains('success'), button.getAttribute('data-tooltip')]
        )).observe(button, {{attributes: true}});
    }})()""")
    page.click(button_selector)
    states = page.wait_for_js("window.__copyStates.some(([success]) => success) && window.__copyStates")
    assert [True, "Copied!"] in states, f"the copy button did not report success: {states}"
    return page.evaluate("navigator.clipboard.readText()", user_gesture=True)


def test_copy_button_copies_exactly_the_recipe_code(page, site_url):
    page.goto(site_url + COPY_PAGE)
    copied = click_copy_and_read(page, 'div[class*="highlight-python"] button.copybtn')
    source = recipe(COPY_RECIPE).read_text(encoding="utf-8")
    region = source.split(f"# [start {COPY_REGION}]\n")[1].split(f"# [end {COPY_REGION}]")[0]
    assert copied == region.rstrip("\n"), f"clipboard:\n{copied}\n---\nrecipe region:\n{region}"


@pytest.mark.parametrize("language, prompt", [("console", "$ "), ("pycon", ">>> ")])
def test_copy_button_leaves_out_prompts(page, site_url, language, prompt):
    page.goto(site_url + "contributing/index.html")
    block = f"div.highlight-{language}"
    shown = page.evaluate(f"document.querySelector('{block} pre').innerText")
    assert shown.startswith(prompt), f"the contributing page's first {language} block has no prompt: {shown!r}"
    copied = click_copy_and_read(page, f"{block} button.copybtn")
    assert copied.strip(), "nothing was copied"
    expected = [line[len(prompt):] for line in shown.splitlines() if line.startswith(prompt)]
    assert copied.splitlines() == expected, (copied, expected)


def test_copy_button_leaves_out_python_prompts_and_output(page, site_url):
    # No page shows an interactive session with typed-in output (every output
    # on the site comes from the build), so this block is made here with the
    # site's own highlighter and put on a real page, where the site's
    # copy-button script and configuration handle it like any other block.
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonConsoleLexer

    session = ">>> import torch\n>>> torch.ones(2).sum()\ntensor(2.)\n>>> for i in range(2):\n...     print(i)\n0\n1\n"
    block = highlight(session, PythonConsoleLexer(), HtmlFormatter())
    page.goto(site_url + "contributing/index.html")
    page.evaluate(f"""(() => {{
        const wrapper = document.createElement('div');
        wrapper.className = 'highlight-pycon notranslate';
        wrapper.innerHTML = {json.dumps(block)};
        const pre = wrapper.querySelector('pre');
        pre.id = 'injected-pycon';
        pre.insertAdjacentHTML('afterend',
            '<button class="copybtn o-tooltip--left" data-tooltip="Copy" data-clipboard-target="#injected-pycon">copy</button>');
        document.querySelector('main h1').after(wrapper);
    }})()""")
    copied = click_copy_and_read(page, "button[data-clipboard-target='#injected-pycon']")
    lines = [line for line in copied.splitlines() if line.strip()]
    assert lines == ["import torch", "torch.ones(2).sum()", "for i in range(2):", "    print(i)"], copied


#: A page that shows sphinx-design tabs (side-by-side variants of a step).
TABS_PAGE = "help/troubleshooting.html"


def test_tabs_switch_between_variants(page, site_url):
    page.goto(site_url + TABS_PAGE)
    visible = """[...document.querySelector('.sd-tab-set').querySelectorAll(':scope > .sd-tab-content')]
                 .map(c => getComputedStyle(c).display !== 'none')"""
    assert page.evaluate("document.querySelectorAll('.sd-tab-set').length") >= 1, f"{TABS_PAGE} has no tabs"
    assert page.evaluate(visible)[:2] == [True, False]
    page.click(".sd-tab-set > label.sd-tab-label:nth-of-type(2)")
    assert page.evaluate(visible)[:2] == [False, True]
    assert not page.console_errors, page.console_errors


# ---------------------------------------------------------------- search and navigation


def test_search_box_finds_the_tutorial(page, site_url):
    page.goto(site_url + "index.html")
    page.click("button.search-button-field")
    page.wait_for_js("document.activeElement && document.activeElement.name === 'q'")
    loads = page.loads
    page.type_text("get_transform_passes")
    page.press_enter()
    page.wait_for_load(loads, "the search results page")
    assert "search.html" in page.evaluate("location.pathname")
    results = page.wait_for_js(
        "(() => { const links = [...document.querySelectorAll('#search-results li a')].map(a => a.href);"
        " return links.length ? links : null; })()", timeout=20)
    page.screenshot(SCREENSHOTS / "search__get_transform_passes.png")
    assert any(link.split("#")[0].endswith("/tutorial/get_started.html") for link in results), results
    assert not page.console_errors, page.console_errors


@pytest.mark.parametrize("page_path", ["index.html", "overview.html", "gallery/lowering/lower_mobilenet_v2_fp32.html"])
def test_navigation_links_to_every_top_level_page(page, site_url, page_path):
    page.goto(site_url + page_path)
    expected = {site_url + path for path in top_level_pages()}
    header = set(page.evaluate("[...document.querySelectorAll('.bd-header .bd-navbar-elements a')]"
                               ".map(a => a.href.split('#')[0])"))
    sidebar = set(page.evaluate("[...document.querySelectorAll('.bd-sidebar-primary .bd-links a')]"
                                ".map(a => a.href.split('#')[0])"))
    assert not expected - header, f"{page_path}: the header lacks {sorted(expected - header)}"
    assert not expected - sidebar, f"{page_path}: the sidebar lacks {sorted(expected - sidebar)}"
    # The header names the sections of docs/index.md, in their order.
    shown = page.evaluate("[...document.querySelectorAll('.bd-header .xnnguide-sections > li')]"
                          ".map(li => li.querySelector(':scope > a, :scope > button').textContent.trim())")
    assert shown == [caption for caption, docnames in toctree_sections() if docnames], shown
    captions = page.evaluate("[...document.querySelectorAll('.bd-sidebar-primary p.caption')]"
                             ".map(p => p.textContent.trim())")
    assert captions == [caption for caption, docnames in toctree_sections() if docnames], captions


def test_header_menu_opens_and_lists_its_pages(page, site_url):
    # Sections with several pages are menus; open the first one and check it.
    page.goto(site_url + "index.html")
    menus = page.evaluate("document.querySelectorAll('.bd-header .xnnguide-sections button.dropdown-toggle').length")
    if not menus:
        sections = [docnames for _caption, docnames in toctree_sections() if docnames]
        assert all(len(docnames) == 1 for docnames in sections)
        return
    page.click(".bd-header .xnnguide-sections button.dropdown-toggle")
    visible = page.wait_for_js("(() => { const m = document.querySelector('.bd-header .xnnguide-sections .dropdown-menu');"
                               " return m && getComputedStyle(m).display !== 'none' && m.querySelectorAll('a').length; })()")
    assert visible >= 2
    page.screenshot(SCREENSHOTS / "index__menu-open.png", max_height=900)


# ---------------------------------------------------------------- the gallery


def test_recipe_page_offers_py_and_ipynb_that_download(page, site_url):
    page_path = EXTRA_PAGES[0]
    page.goto(site_url + page_path)
    links = page.evaluate("[...document.querySelectorAll('.sphx-glr-download a')].map(a => a.href)")
    recipe = Path(page_path).stem
    py = [link for link in links if link.endswith(f"/{recipe}.py")]
    ipynb = [link for link in links if link.endswith(f"/{recipe}.ipynb")]
    assert py and ipynb, links
    fetched = page.evaluate(f"""Promise.all({json.dumps([py[0], ipynb[0]])}.map(url =>
        fetch(url).then(r => r.text().then(text => [r.status, text]))))""")
    (py_status, py_text), (nb_status, nb_text) = fetched
    assert py_status == 200 and nb_status == 200, (py_status, nb_status)
    source = SNIPPETS / page_path.replace("gallery/", "", 1).replace(".html", ".py")
    assert py_text == reader_source(source.read_text(encoding="utf-8"), str(source))
    notebook = json.loads(nb_text)
    assert notebook["nbformat"] == 4 and any(cell["cell_type"] == "code" for cell in notebook["cells"])


def test_gallery_index_shows_every_recipe_with_a_thumbnail(page, site_url):
    page.goto(site_url + "gallery/index.html")
    thumbnails = page.evaluate("""[...document.querySelectorAll('.sphx-glr-thumbcontainer')].map(c => ({
        href: c.querySelector('a').href, width: c.querySelector('img').naturalWidth,
        src: c.querySelector('img').src}))""")
    recipes = sorted(path.stem for path in recipe_files(SNIPPETS))
    linked = sorted(Path(html.unescape(thumb["href"])).stem for thumb in thumbnails)
    assert linked == recipes, (linked, recipes)
    assert all(thumb["width"] > 0 for thumb in thumbnails), thumbnails
