"""The built site renders what its sources mean, read from ``_build/html`` (issue 49).

Each check finds one class of rendering defect on every page a reader gets (all pages but the contributors'
section and Sphinx's index and search pages) and in every download:

* **literal markup in prose**: Markdown or reStructuredText a page shows as text (double backticks, ``**``, a
  role such as ``{fact}`` or ``:doc:``), outside code;
* **typography inside commands**: Sphinx's smart quotes turn ``--build`` into ``–build`` (an en dash) in prose
  and table headers; a dash that starts a word, or any dash or curly quote inside code, is a command a reader
  cannot paste;
* **long commands**: a command line in a code block of a reader page wider than
  :data:`xnnguide.doccheck.reader_code.WIDTH` columns (it scrolls sideways at 1400 px, the more on a phone);
* **the site's machinery**: a stamp naming a file of the site's source tree, a region marker in a download;
* **test-report wording**: the build or its tests as the subject of reader prose, notes on the machine's load
  outside a collapsed block;
* **a page that links to itself**, as a shared paragraph included on the page it points to does.

Layout (tables and the right-hand contents at 1400 px) is checked in a browser, in ``test_browser.py``.
Each check is tried on a small page it must flag and one it must pass, so that it can fail.
"""

from __future__ import annotations

import functools
import json
import re
import zipfile
from pathlib import Path

import pytest

from conftest import HTML
from xnnguide.doccheck.reader_code import WIDTH

pytestmark = pytest.mark.build

#: Pages a reader does not get: the contributors' section, Sphinx's generated index, search and module pages.
NOT_FOR_READERS = ("contributing/", "genindex.html", "search.html", "py-modindex.html", "_modules/", "_static/",
                   "_sources/", "_downloads/", "_images/")


def reader_pages() -> list[Path]:
    return sorted(page for page in HTML.glob("**/*.html")
                  if not page.relative_to(HTML).as_posix().startswith(NOT_FOR_READERS))


@functools.lru_cache(maxsize=None)
def article(html: str):
    """The main text of a built page: the article, without the header, the sidebars and the footer.

    Parsed once per page for all the tests of this file, which read every reader page (parsing them takes
    seconds each time): callers only read the tree, never change it."""
    from bs4 import BeautifulSoup

    page = BeautifulSoup(html, "html.parser")
    found = page.select_one("article.bd-article") or page.select_one("main") or page
    for element in found.select("script, style"):
        element.decompose()
    return found


#: Elements whose text is code, not prose.
CODE = ("pre", "code", "kbd", "samp", "tt")


def _in_code(text_node) -> bool:
    return any(parent.name in CODE for parent in text_node.parents)


def _prose(root, leave_out: str = "") -> list[str]:
    """Each text node of *root* outside code, and outside the elements the CSS selector *leave_out* picks,
    whitespace-folded."""
    left_out = {id(element) for element in root.select(leave_out)} if leave_out else set()
    return [" ".join(str(text).split()) for text in root.find_all(string=True)
            if not _in_code(text) and not any(id(parent) in left_out for parent in text.parents)]


def _around(text: str, match: re.Match) -> str:
    return text[max(match.start() - 30, 0):match.end() + 30]


def _on_reader_pages(find) -> dict[str, list[str]]:
    found = {}
    for page in reader_pages():
        if problems := find(page.read_text(encoding="utf-8")):
            found[page.relative_to(HTML).as_posix()] = problems
    return found


def _report(found: dict[str, list[str]], what: str) -> str:
    lines = [f"{page}: {problem!r}" for page, problems in found.items() for problem in problems[:5]]
    return f"{sum(map(len, found.values()))} {what} on {len(found)} page(s):\n" + "\n".join(lines)


# ---------------------------------------------------------------- literal markup in prose

#: Markup that reached the reader as text: an inline literal's double backticks (reStructuredText's, or
#: Markdown's), strong emphasis that did not render (``**word**``; Python's ``**kwargs`` and ``x**4`` are not markup), a MyST
#: role (``{fact}`x```) or a Sphinx role (``:doc:`x```, or a ``{fact}`` whose recipe recorded nothing, which
#: Sphinx shows as written), a reStructuredText link's trailing `` `_ ``.
LITERAL_MARKUP = re.compile(r"``|(?<![\w)\]])\*\*[^\s*][^*]*?[^\s*]\*\*|\{[a-z][a-z:-]*\}`|:[a-z][a-z:]*:`|`_(?:\W|$)")


def literal_markup(html: str) -> list[str]:
    """The markup *html* shows as prose, each with the text around it."""
    return [_around(text, match) for text in _prose(article(html)) for match in LITERAL_MARKUP.finditer(text)]


def test_literal_markup_is_found_in_prose_and_not_in_code():
    assert literal_markup("<main><p>Pass ``max_seq_len`` to the exporter.</p></main>")
    assert literal_markup("<main><p>It is **not** registered.</p></main>")
    assert literal_markup("<main><p>See :doc:`the guide` and {fact}`a/b`.</p></main>")
    assert literal_markup("<main><p>Read `the docs <https://example.org>`_.</p></main>")
    assert not literal_markup("<main><p>Pass <code>max_seq_len</code>; 2 ** 8 is 256, via **kwargs.</p>"
                              "<pre>x = a ** 2\nprint(f\"``{x}``\")</pre><p><code>{fact}`a/b`</code></p>"
                              "<p>the exponent must be 2 (x**4: refused; x**2: verified)</p></main>")


def test_no_reader_page_shows_markup_as_prose(built_site):
    found = _on_reader_pages(literal_markup)
    assert not found, _report(found, "pieces of markup shown as text")


# ---------------------------------------------------------------- typography inside commands

#: A dash that starts a word: ``–build`` is ``--build`` after smart quotes (or ``—build``, ``---build``).
DASHED_OPTION = re.compile(r"(?:^|(?<=[\s(\[\"'“‘]))[–—][A-Za-z]")
#: What smart quotes make, which no shell, compiler or Python accepts in code.
TYPOGRAPHIC = re.compile(r"[–—“”‘’]")


def smartened_commands(html: str) -> list[str]:
    """Commands *html* shows with typographic characters: a dash starting a word anywhere in the text (prose,
    table headers, captions), and a dash or curly quote inside inline code or a code block that is not a
    program's output."""
    root = article(html)
    found = [_around(text, match) for text in _prose(root) for match in DASHED_OPTION.finditer(text)]
    for code in root.select("code, kbd, samp, div[class*='highlight-'] pre"):
        if code.find_parent(class_="sphx-glr-script-out") or code.find_parent("pre") is not None:
            continue  # a recipe's printed output quotes what the program printed
        text = code.get_text()
        found += [_around(text, match) for match in TYPOGRAPHIC.finditer(text)]
    return found


def test_smartened_commands_are_found_in_headers_prose_and_code_and_not_in_output():
    assert smartened_commands("<main><table><tr><th>cmake –build out</th></tr></table></main>")
    assert smartened_commands("<main><p>Then run it with —threads 4.</p></main>")
    assert smartened_commands("<main><p>Run <code>python export.py –model x</code>.</p></main>")
    assert smartened_commands('<main><div class="highlight-console"><pre>$ cmake “-DX=1”</pre></div></main>')
    assert not smartened_commands("<main><p>fp32–int8 pairs – and the rest — are fine; “quoted” too. "
                                  "<code>cmake --build out</code></p><div class='sphx-glr-script-out'>"
                                  "<div class='highlight-none'><pre>error: ‘x’ was not declared</pre></div></div>"
                                  "</main>")
    # A legend's one-character mark is code like any other: a dash there is flagged, a word or a tick is not.
    assert smartened_commands("<main><p><code>✓</code> verified; <code>–</code> refused</p></main>")
    assert not smartened_commands("<main><p><code>✓</code> verified; <code>refused</code> refused</p></main>")


def test_no_reader_page_shows_a_command_with_typographic_dashes_or_quotes(built_site):
    found = _on_reader_pages(smartened_commands)
    assert not found, _report(found, "commands with typographic characters")


# ---------------------------------------------------------------- long commands

#: Code blocks whose languages are commands, and the prompt that starts a command in a console transcript.
SHELL = {"bash", "sh", "shell", "zsh", "console", "shell-session", "doscon", "powershell", "ps1con"}
PROMPT = re.compile(r"^(?:\$|#|>|PS>) ")


def command_lines(language: str, text: str) -> list[str]:
    """The lines of a block that are commands: every line of a script, or in a console transcript the lines after
    a prompt and the lines that continue them (after a backslash)."""
    lines = text.splitlines()
    if language not in ("console", "shell-session", "doscon", "ps1con"):
        return lines
    commands, continued = [], False
    for line in lines:
        if PROMPT.match(line) or continued:
            commands.append(line)
        continued = (PROMPT.match(line) is not None or continued) and line.rstrip().endswith("\\")
    return commands


def long_commands(html: str, width: int = WIDTH) -> list[str]:
    """Command lines wider than *width* columns in the code blocks of *html*: every block in a shell language,
    and every block a recorded fact fills (``fact-block``) whose lines are commands; a recipe's output is not a
    command."""
    found = []
    for block in article(html).select("div[class*='highlight-']"):
        if block.find_parent(class_="sphx-glr-script-out") or block.select_one("pre") is None:
            continue
        language = next((name.removeprefix("highlight-") for name in block.get("class", [])
                         if name.startswith("highlight-")), "")
        if language not in SHELL:
            continue
        found += [f"{len(line)} columns: {line[:70]}…" for line in command_lines(language, block.pre.get_text())
                  if len(line) > width]
    return found


def test_long_commands_are_found_in_shell_and_console_blocks_and_not_in_output():
    long = "cmake " + " ".join(f"-DOPTION_{n}=ON" for n in range(10))
    assert long_commands(f'<main><div class="highlight-bash"><pre>{long}</pre></div></main>')
    assert long_commands(f'<main><div class="xnnguide-fact highlight-console"><pre>$ {long}\nok</pre></div></main>')
    continued = f"$ cmake \\\n  {long}\n"
    assert long_commands(f'<main><div class="highlight-console"><pre>{continued}</pre></div></main>')
    assert not long_commands(f'<main><div class="highlight-console"><pre>$ ls\n{long}</pre></div>'
                             f'<div class="sphx-glr-script-out"><div class="highlight-bash"><pre>{long}</pre></div>'
                             "</div></main>")


def test_no_reader_page_shows_a_command_over_88_columns(built_site):
    found = _on_reader_pages(long_commands)
    assert not found, _report(found, f"command lines over {WIDTH} columns")


# ---------------------------------------------------------------- the site's machinery

def stamp_paths(html: str) -> list[str]:
    """Stamps that name a file of the site's source tree (``snippets/...``, ``docs/build_steps/...``)."""
    return [" ".join(stamp.get_text().split())[:120] for stamp in article(html).select(".xnnguide-stamp")
            if re.search(r"\b(?:snippets|docs/build_steps)/\S+\.py\b", stamp.get_text())]


def test_stamp_paths_are_found():
    assert stamp_paths('<main><div class="xnnguide-stamp"><p>Verified by running snippets/a/b.py on</p></div></main>')
    assert not stamp_paths('<main><div class="xnnguide-stamp"><p>Verified by running the recipe '
                           '<a href="b.html">B</a> on</p></div><p>snippets/a/b.py</p></main>')


def test_no_stamp_names_a_file_of_the_sites_source_and_a_page_has_one_full_stamp(built_site):
    found = _on_reader_pages(stamp_paths)
    assert not found, _report(found, "stamps naming a source file")
    several = {}
    for page in reader_pages():
        stamps = article(page.read_text(encoding="utf-8")).select(".xnnguide-stamp")
        full = [stamp for stamp in stamps  # a recipe this machine could not run says so in full, wherever it is
                if not {"xnnguide-stamp-small", "xnnguide-not-verified"} & set(stamp.get("class", []))]
        if len(full) > 1:
            several[page.relative_to(HTML).as_posix()] = len(full)
    assert not several, f"pages with more than one full stamp: {several}"


#: A region marker line in any language the site's downloads are in.
MARKER = re.compile(r"^\s*(?:#|//)\s*\[(?:start|end|gallery-only) [^\]]*\]\s*$", re.M)


def download_markers(path: Path) -> list[str]:
    """The region-marker lines of a downloadable file: a text file's lines, a notebook's cells, a zip's members."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            return [f"{name}: {marker}" for name in archive.namelist()
                    for marker in _markers_in(name, archive.read(name))]
    return _markers_in(path.name, path.read_bytes())


def _markers_in(name: str, data: bytes) -> list[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return []  # an image or another binary file
    if name.endswith(".ipynb"):
        text = "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
    return [match.group(0).strip() for match in MARKER.finditer(text)]


def test_download_markers_are_found_in_text_notebooks_and_zips(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text("# [start cmake-project]\nproject(x)\n# [end cmake-project]\n")
    (tmp_path / "main.cpp").write_text("int main() {\n  // [start body]\n  return 0;\n}\n")
    (tmp_path / "r.ipynb").write_text(json.dumps({"cells": [{"source": ["x = 1\n", "# [end lower]\n"]}]}))
    with zipfile.ZipFile(tmp_path / "all.zip", "w") as archive:
        archive.writestr("r.py", "# [gallery-only plots]\nx = 1\n")
    for name in ("CMakeLists.txt", "main.cpp", "r.ipynb", "all.zip"):
        assert download_markers(tmp_path / name), name
    (tmp_path / "clean.py").write_text("# [a list in a comment]\nx = [1]  # [start later]\n")
    assert not download_markers(tmp_path / "clean.py")


def test_no_download_carries_a_region_marker(built_site):
    downloads = sorted(path for path in (built_site / "_downloads").rglob("*") if path.is_file())
    assert any(path.name == "CMakeLists.txt" for path in downloads), "the C++ guide's CMakeLists.txt is not offered"
    found = {path.relative_to(built_site).as_posix(): markers for path in downloads
             if (markers := download_markers(path))}
    assert not found, _report(found, "region markers in downloads")


# ---------------------------------------------------------------- test-report wording in reader prose

#: How a test report or a build log talks, which a reader's page should not (issue 49): the build and its tests as
#: the subject of a sentence, and notes on the machine's load. Found on today's pages; a note on the machine's
#: load belongs in a collapsed "How this was checked" block or on the recipe's page, which this check skips.
BUILD_REPORT = re.compile(
    r"\b(?:this build\b|(?:by|in) that build\b"
    r"|the build(?:'s|’s)? (?:ran|runs|run|stopped|stops|found|finds|measured|measures|fails|failed|took|timed|checks"
    r"|checked|asserts|records|recorded|inserted|machine|asks|cannot|can't|can’t|does not|doesn't|doesn’t|did not"
    r"|trains|trained)\b"
    r"|(?:measured|inserted|run|ran|found|checked|reproduced|trained|timed) (?:by|in|during|when) (?:the|each) build\b"
    r"|while the (?:site|build) (?:builds|is built|runs)|trains while|as the site builds"
    r"|busy machine|other work (?:took|had|used|shared)|of the machine meanwhile|machine[- ]load"
    r"|an?(?:other)? test (?:reads|checks|fails|runs)|(?:the )?tests (?:check|read|run|fail)\b"
    r"|the test (?:reads|checks|fails)"
    r"|the recipe fails unless|stopped its other recipes)",
    re.IGNORECASE)

#: Reader pages checked for it: every reader page but the recipes' own pages (the gallery), which report how the
#: recipe was checked, and the page that explains what the stamps promise, whose subject is the build.
BUILD_REPORT_SKIPPED = ("gallery/", "explanation/verified.html")


def build_report_wording(html: str) -> list[str]:
    """Phrases of a test report or build log in *html*'s prose, outside code, stamps and collapsed blocks."""
    return [_around(text, match) for text in _prose(article(html), leave_out="details, .xnnguide-stamp")
            for match in BUILD_REPORT.finditer(text)]


def test_build_report_wording_is_found_in_prose_and_captions_and_not_in_dropdowns_or_code():
    assert build_report_wording("<main><p>The build stopped its other recipes while timing.</p></main>")
    assert build_report_wording("<main><p>(timed on a busy machine: other work took 45 % of it)</p></main>")
    assert build_report_wording("<main><p>A test reads the right-hand column and fails.</p></main>")
    assert build_report_wording("<main><table><caption>Measured by this build</caption></table></main>")
    assert build_report_wording("<main><p>The model trains while the site builds.</p></main>")
    assert not build_report_wording("<main><p>Build the runner with CMake; the build folder is out/.</p>"
                                    "<details><summary>How this was checked</summary><p>This build ran on a busy "
                                    "machine.</p></details><pre>the build stopped</pre>"
                                    "<div class='xnnguide-stamp'>Verified by running this build</div></main>")


def test_no_reader_page_reads_like_a_test_report(built_site):
    found = {page: problems for page, problems in _on_reader_pages(build_report_wording).items()
             if not page.startswith(BUILD_REPORT_SKIPPED)}
    assert not found, _report(found, "test-report phrases in reader prose")


# ---------------------------------------------------------------- a page that links to itself

def self_links(html: str) -> list[str]:
    """Links in *html*'s article to the page it is on as a whole (Sphinx writes a ``{doc}`` link to the current
    page as ``href="#"``), such as a shared paragraph included on the page it points to; links to a section are
    fine."""
    return [" ".join(link.get_text().split()) for link in article(html).select("a[href='#']")
            if "headerlink" not in link.get("class", [])]


def test_self_links_are_found_and_section_links_are_not():
    assert self_links('<main><p>See <a class="reference internal" href="#"><span class="doc">Export</span></a>.</p>'
                      "</main>") == ["Export"]
    assert not self_links('<main><h2>A<a class="headerlink" href="#">#</a></h2><p><a href="#a-section">below</a>'
                          '</p><p><a href="other.html">other</a></p></main>')


def test_no_reader_page_links_to_itself(built_site):
    found = _on_reader_pages(self_links)
    assert not found, _report(found, "links to the page they sit on")


# ---------------------------------------------------------------- the mechanisms, on a small site

@pytest.fixture(scope="module")
def small_site(tmp_path_factory) -> Path:
    """The tiny site every build-cache test starts from (``sitecopy.py``), built once per test run: two tiny recipes
    and a notes page that stamps both, offers a file with region markers and shows a command in a table header and
    in prose."""
    from sitecopy import built_once, make_and_build

    return built_once(tmp_path_factory, "tiny-site", make_and_build) / "_build" / "html"


def test_a_small_site_gets_one_full_stamp_commands_as_typed_and_downloads_without_markers(small_site):
    from bs4 import BeautifulSoup

    notes = small_site / "notes.html"
    page = BeautifulSoup(notes.read_text(encoding="utf-8"), "html.parser")
    full, small = page.select(".xnnguide-stamp")
    assert re.match(r"Verified by running the recipe Tiny alpha on \d{4}-\d\d-\d\d with torch", full.get_text().strip())
    assert "xnnguide-stamp-small" in small["class"] and small.get_text(" ", strip=True) == "Verified: Tiny beta"
    assert [a["href"] for a in small.find_all("a")] == ["gallery/tiny_beta.html"]
    assert not stamp_paths(notes.read_text(encoding="utf-8"))
    recipe_page = BeautifulSoup((small_site / "gallery" / "tiny_alpha.html").read_text(), "html.parser")
    assert "Verified by running this recipe on" in recipe_page.select_one(".xnnguide-stamp").get_text()
    # A cell, a paragraph that holds an option keep it as typed; one without keeps its typography.
    assert 'cmake --build out -j "4"' in page.select("article th")[1].get_text()
    assert "a “quoted” word – and a dash" in page.select("article td")[0].get_text()
    assert 'Run it with --threads 4 and "quotes"' in page.get_text()
    assert not smartened_commands(notes.read_text(encoding="utf-8"))
    downloads = list((small_site / "_downloads").rglob("CMakeLists.txt"))
    assert [path.read_text() for path in downloads] == ["cmake_minimum_required(VERSION 3.20)\nproject(x)\n"]
