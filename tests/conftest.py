"""Paths shared by the tests, and the fixtures of the tests that read the build or drive a browser."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xnnguide.doccheck import reader_code

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SNIPPETS = ROOT / "snippets"
GALLERY = DOCS / "gallery"
BUILD = ROOT / "_build"
HTML = BUILD / "html"


STATIC_MARK = "pytestmark = pytest.mark.static"


def recipe(stem: str) -> Path:
    """The recipe file named *stem*, in whichever task folder of snippets/ it sits."""
    found = sorted(SNIPPETS.rglob(f"{stem}.py"))
    assert len(found) == 1, f"expected one recipe {stem}.py under {SNIPPETS}, found {found}"
    return found[0]


def soup(page: Path):
    """A built page, parsed by BeautifulSoup: once per version of the file in a test process, as several tests read
    every page (parsing them all takes seconds); callers only read the tree, never change it."""
    stat = page.stat()
    return _parsed(page.resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=None)
def _parsed(page: Path, _mtime_ns: int, _size: int):
    from bs4 import BeautifulSoup

    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")


def _text(element) -> str:
    return " ".join(element.get_text(" ").split())


def page_text(page: Path) -> str:
    """The text of a built page, markup left out and entities decoded."""
    return soup(page).get_text()


def table_rows(page: Path) -> list[list[str]]:
    """The cells of every table row of a built page, as their whitespace-folded text."""
    return [[_text(cell) for cell in row.find_all(["td", "th"])] for row in soup(page).find_all("tr")]


def shown_facts(page: Path) -> list[str]:
    """The text of every figure a page shows through the ``{fact}`` role, in order."""
    return [_text(element) for element in soup(page).select(".xnnguide-fact")]


@pytest.fixture(scope="session")
def built_site() -> Path:
    """The HTML folder of the last build; fails (not skips) when it is missing."""
    if not (HTML / "index.html").is_file():
        pytest.fail(f"{HTML} has no index.html: run `make html` (or `make test`) first")
    return HTML


# ---------------------------------------------------------------- order of the files

#: The test files that run longest, longest first (seconds of work, measured with ``--durations=0`` on a quiet
#: 2-core machine on 2026-12-07: about 160 and 80 for the two classes of the every-page browser check, then 45,
#: 40, 35, 33, 32, 22, 18, 17, 17, 15). make test hands each file, or a class of tests, whole to one of its two
#: workers, in this order (pytest-xdist's ``--dist loadscope --no-loadscope-reorder``), each worker taking the
#: next as it runs out: longest first, so that no file of a minute starts last while the other worker idles.
#: The rest follow in pytest's own order.
LONGEST_FILES = ["test_browser.py::TestEveryGalleryPage", "test_browser.py::TestEveryOtherPage", "test_isolation.py",
                 "test_build_cache.py", "test_new_recipe.py", "test_walk_throughs.py", "test_aot_compiler.py",
                 "test_shards.py", "test_quoted_error.py", "test_arm_runner.py", "test_build_steps.py",
                 "test_rendering.py", "test_reader_runs.py"]


def pytest_collection_modifyitems(items):
    rank = {name: index for index, name in enumerate(LONGEST_FILES)}

    def unit(item) -> str:  # what pytest-xdist's loadscope hands to one worker: the file, or its class
        return "::".join([item.path.name, *([item.cls.__name__] if item.cls else [])])

    items.sort(key=lambda item: rank.get(unit(item), len(rank)))  # a stable sort: the rest keep their order


# ---------------------------------------------------------------- a page as a reader copies it

#: Pages that walk a reader through recipes, and those recipes: one source, the rule that proves each walk-through
#: pasted in page order is the build's run (xnnguide.doccheck.reader_code.walk_through_problems, run by `make check`).
WALKED_THROUGH = reader_code.WALKED_THROUGH

_INCLUDE = re.compile(r"^```\{literalinclude\}\s+(\S+)\n(.*?)^```", re.DOTALL | re.MULTILINE)
_TYPED = re.compile(r"^```(?:python|\{code-cell\}\s*python)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def statements(code: str) -> list[str]:
    """The top-level statements of *code*, as AST dumps (comments and layout do not count), less a docstring."""
    import ast

    body = ast.parse(code).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return [ast.dump(node) for node in body]


def pasted_in_page_order(page: Path, recipe: Path | None = None) -> tuple[str, set[Path]]:
    """The Python code of *page*, block after block as a reader copies it (recipe regions and typed blocks),
    and the recipe files its regions come from; with *recipe*, only the regions of that recipe."""
    from xnnguide.core.regions import read_regions

    text = page.read_text(encoding="utf-8")
    pieces, sources = [], set()
    blocks = [(m.start(), "include", m) for m in _INCLUDE.finditer(text)] + [
        (m.start(), "typed", m) for m in _TYPED.finditer(text)]
    for _, kind, match in sorted(blocks, key=lambda block: block[0]):
        if kind == "typed":
            pieces += [] if recipe else [match.group(1)]
            continue
        source = (page.parent / match.group(1)).resolve()
        start = re.search(r'^:start-after: "# \[start ([\w-]+)\]"', match.group(2), re.MULTILINE)
        if source.suffix == ".py" and start and recipe in (None, source):
            pieces.append(read_regions(source)[start.group(1)].text)
            sources.add(source)
    return "\n\n".join(pieces) + "\n", sources


# ---------------------------------------------------------------- a reader's run
# A reader has only the public packages: a new interpreter in an empty folder, this checkout off sys.path
# (no PYTHONPATH), so xnnguide cannot be imported (tests/reader/test_reader_runs.py proves it cannot).

#: How long each reader run took, one file per run (the runs may go in parallel).
READER_RUN_TIMES = ROOT / "_build" / "reader-runs"


def reader_environment() -> dict[str, str]:
    """This process's environment without the checkout on the module path."""
    return {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONSTARTUP")}


def record_time(name: str, seconds: float) -> None:
    READER_RUN_TIMES.mkdir(parents=True, exist_ok=True)
    (READER_RUN_TIMES / f"{name}.seconds").write_text(f"{seconds:.1f}\n", encoding="utf-8")


def run_as_reader(script: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "reader"
    folder.mkdir()
    copy = folder / script.name
    copy.write_bytes(script.read_bytes())
    started = time.perf_counter()
    done = subprocess.run([sys.executable, copy.name], cwd=folder, env=reader_environment(),
                          capture_output=True, text=True, timeout=600)
    record_time(script.name, time.perf_counter() - started)
    return done


# ---------------------------------------------------------------- browser fixtures
# pytest-playwright provides `browser`, `context` and `page`; these fixtures
# make it drive Debian's Chromium (`make browser` installs it), never a browser
# Playwright would download, against the built site served on localhost.

CHROMIUM = Path("/usr/bin/chromium")
#: How long a page must make no request, after its load event, to count as loaded (Traffic.goto).
NETWORK_IDLE_SECONDS = 0.1
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not CHROMIUM.is_file():
        pytest.fail(f"Chromium is not installed ({CHROMIUM} missing): run `make browser`")
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "headless": True, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def site_url(built_site):
    """The built site, served by ``http.server`` in a thread on a free localhost port."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class UnloggedHandler(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(UnloggedHandler, directory=str(built_site)))
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args, site_url):
    return {**browser_context_args, "base_url": site_url, "viewport": {"width": 1280, "height": 900},
            "permissions": ["clipboard-read", "clipboard-write"]}


class Traffic:
    """What one tab did since the last :meth:`goto`: requests, refusals, errors.

    Every request to a host other than localhost is intercepted, recorded
    and aborted, so no page can reach a third party during the tests.
    """

    def __init__(self, page):
        self.page = page
        self.requests: list[str] = []
        self.off_site: list[str] = []
        self.failed: list[str] = []
        self.console_errors: list[str] = []
        self.in_flight: set = set()  # requests started and neither finished nor failed
        page.context.route(lambda url: self._off_site(url), self._refuse)
        page.on("request", lambda request: (self.requests.append(request.url), self.in_flight.add(request)))
        page.on("requestfinished", lambda request: self.in_flight.discard(request))
        page.on("requestfailed", lambda request: (self.in_flight.discard(request),
                                                  self.failed.append(f"failed ({request.failure}): {request.url}")))
        page.on("response", lambda response: response.status >= 400
                and self.failed.append(f"HTTP {response.status}: {response.url}"))
        page.on("console", lambda message: message.type in ("error", "assert")
                and self.console_errors.append(f"console.{message.type}: {message.text}"))
        page.on("pageerror", lambda error: self.console_errors.append(f"uncaught exception: {error}"))

    @staticmethod
    def _off_site(url: str) -> bool:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        return parts.scheme not in ("data", "blob", "about") and parts.hostname not in LOCAL_HOSTS

    def _refuse(self, route):
        self.off_site.append(route.request.url)
        route.abort("blockedbyclient")

    def clear(self) -> None:
        for log in (self.requests, self.off_site, self.failed, self.console_errors):
            log.clear()

    def goto(self, path: str) -> None:
        """Load *path* of the site: its load event, then no request in flight for :data:`NETWORK_IDLE_SECONDS`.

        Playwright's ``networkidle`` waits for 0.5 s without a request, on every one of the few hundred loads of
        the browser tests; a request that starts that late would have to come from a timer, and the pages'
        scripts (all local) start theirs at load. ``test_our_network_idle_wait_misses_no_request`` compares the two
        waits on one page of each kind."""
        self.clear()
        self.page.goto(path, wait_until="load")
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < NETWORK_IDLE_SECONDS:
            self.page.wait_for_timeout(20)  # Playwright delivers the page's events while it waits
            if self.in_flight:
                idle_since = time.monotonic()


@pytest.fixture
def tab(page) -> Traffic:
    """A Playwright page on the site whose traffic is recorded; ``tab.page`` is the page."""
    return Traffic(page)


@pytest.fixture(scope="class")
def _class_tab(browser, browser_context_args):
    context = browser.new_context(**browser_context_args)
    yield Traffic(context.new_page())
    context.close()


@pytest.fixture
def reused_tab(_class_tab) -> Traffic:
    """:func:`tab`, but one tab for all the tests of a class, each starting on a blank page.

    A new context and tab cost a renderer process each: a few tenths of a second, on each of the every-page
    check's loads. Reusing them changes nothing a test can see: the HTTP cache is off (Playwright turns it off
    in a context with routes, as :class:`Traffic` sets), each test sets its colour scheme and viewport, and
    whatever the last page still had in flight ends on the blank page, before :meth:`Traffic.goto` clears the
    record for the next load."""
    _class_tab.page.goto("about:blank")
    _class_tab.in_flight.clear()
    _class_tab.clear()
    return _class_tab
