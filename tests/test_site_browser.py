"""The built site in a real browser: Debian's Chromium, driven headless by Playwright, on the site served
under a sub-path (http://127.0.0.1:PORT/kb/) the way a team wiki serves it, and on a copy opened from disk
(file://), as an intranet share or a zipped handout is read. Material's search must put the
right entry first for real error text, the paste box must rank a real traceback as `fixer explain` does, the
embed view must be bare inside an iframe, and nothing may be fetched from anywhere but the site itself.

FIXER_SCREENSHOTS=1 also saves the README's screenshots (docs/assets/screenshot-*.png) from these pages."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from html.parser import HTMLParser
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.request import urlopen

import pytest
from conftest import ROOT
from mkdocs.commands.build import build
from mkdocs.config import load_config

from fixer.explain.match import Matcher
from fixer.explain.narrow import interview
from fixer.kb.catalog import Catalog
from fixer.kb.index import Question

try:
    from playwright.sync_api import BrowserContext, Page, Response, Route, expect, sync_playwright
except ImportError:  # the browser tests skip; the link check needs no browser and still runs
    sync_playwright = None

CHROMIUM = Path("/usr/bin/chromium")
# Chromium must not phone home on its own (updates, sync, QUIC probes), or the "nothing leaves" check would
# be checking Chromium rather than the site.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SUB_PATH = "/kb/"
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
SCREENSHOTS = ROOT / "docs" / "assets" if os.environ.get("FIXER_SCREENSHOTS") else None
RESUME = "optimizer-state-after-resume"

if sync_playwright is None:
    _MISSING = "the `playwright` package is not installed (pip install playwright; its wheel ships the driver)"
elif not CHROMIUM.exists():
    _MISSING = f"{CHROMIUM} is missing (apt-get install chromium); Playwright's own browser downloads are not used"
else:
    _MISSING = ""
needs_browser = pytest.mark.skipif(bool(_MISSING), reason=_MISSING)

# What a user types into the search box, and the entry that must come first.
SEARCHES = {
    "state_steps": RESUME,
    # the KB's first match for "... argument index in method wrapper_CUDA__index_select": token ids on the CPU;
    # several entries quote this kernel (SHARED below)
    "wrapper_CUDA__index_select": "inputs-not-moved",
    # a model on cuda:1 meeting a tensor sent to bare "cuda", the current device
    "cuda:1 and cuda:0": "default-cuda-vs-cuda-n",
    "Dense.call()": "keras-torch-dataparallel",
    # Apple GPUs' wording of "the batch was never moved"; the KB has no MPS-only entry
    "Placeholder storage": "inputs-not-moved",
}
# A kernel several entries' real examples name: full-text search has no ground to order them by, and each
# new entry that quotes it reorders them, so the expected entry must be among the entries listed, and the
# first must be one that quotes it.
SHARED = {"wrapper_CUDA__index_select"}


class _Handler(SimpleHTTPRequestHandler):
    """Forbids caching, so every page and asset the browser uses is a request the checks see."""

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class Served:
    root: Path  # the built site
    base: str  # its address, under SUB_PATH
    wiki: Path  # beside the site, for a wiki page that embeds an entry


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The server's root holds the site in SUB_PATH and nothing else the site could use, so a link that assumes
    the site sits at the root gets a 404. Built for the address it is served at: site_url is what makes the 404
    page's links right there."""
    top = tmp_path_factory.mktemp("server")
    root, wiki = top / SUB_PATH.strip("/"), top / "wiki"
    wiki.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(top)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}{SUB_PATH}"
    try:
        build(load_config(str(ROOT / "mkdocs.yml"), site_url=base, site_dir=str(root), strict=True))
        yield Served(root, base, wiki)
    finally:
        server.shutdown()
        thread.join()


@dataclass
class Traffic:
    """What the browser did during one test, for the checks every browser test ends with."""

    base: str
    left: list[str] = field(default_factory=list)  # requests for anywhere but this machine: aborted
    failed: list[str] = field(default_factory=list)  # the site's server answering other than 200, or outside it
    errors: list[str] = field(default_factory=list)  # uncaught JavaScript errors

    def route(self, route: Route) -> None:
        url = urlsplit(route.request.url)
        if url.scheme in {"data", "blob", "file"} or url.hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            self.left.append(route.request.url)
            route.abort()

    def response(self, response: Response) -> None:
        site = urlsplit(response.url).netloc == urlsplit(self.base).netloc  # the wiki page is on localhost
        if site and (response.status != HTTPStatus.OK or not response.url.startswith(self.base)):
            self.failed.append(f"{response.status} {response.url}")


@pytest.fixture(scope="module")
def browser(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrowserContext, Traffic]]:
    traffic = Traffic(served.base)
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 800},
        )
        context.route("**/*", traffic.route)
        context.on("response", traffic.response)
        yield context, traffic
        context.close()


@pytest.fixture
def tab(browser: tuple[BrowserContext, Traffic]) -> Iterator[Page]:
    """A fresh page; afterwards, nothing left the machine, every request got a 200 from under the sub-path,
    and no script failed."""
    context, traffic = browser
    traffic.left.clear()
    traffic.failed.clear()
    traffic.errors.clear()
    page = context.new_page()
    page.on("pageerror", lambda error: traffic.errors.append(str(error)))
    yield page
    page.close()
    assert traffic.left == [], "requests tried to leave the machine"
    assert traffic.failed == [], "requests that did not get a 200 from under the sub-path"
    assert traffic.errors == [], "JavaScript errors"


def _entry_of(url: str, base: str) -> str:
    path = urlsplit(url).path
    prefix = urlsplit(base).path + "entries/"
    assert path.startswith(prefix), url
    return path.removeprefix(prefix).strip("/")


@needs_browser
@pytest.mark.parametrize(("query", "expected"), SEARCHES.items(), ids=list(SEARCHES))
def test_search_puts_the_right_entry_first(
    tab: Page, served: Served, catalog: Catalog, query: str, expected: str
) -> None:
    tab.goto(served.base)
    box = tab.locator("input.md-search__input")
    box.click()
    # one query with the whole text, as after a paste: material searches on keyup, and a character at a time
    # would leave the answers to partial queries racing the last one
    box.fill(query)
    box.press("End")
    links = tab.locator(".md-search-result__item > a.md-search-result__link")
    first = links.first
    first.wait_for(state="attached")
    entry = catalog.get(expected)
    assert entry is not None
    if query in SHARED:
        # the entries listed, each once: an entry whose page matches in two sections is listed twice
        hrefs = [links.nth(i).get_attribute("href") or "" for i in range(links.count())]
        found = list(dict.fromkeys(_entry_of(href, served.base) for href in hrefs if "/entries/" in href))
        assert expected in found
        first_entry = catalog.get(found[0])
        assert first_entry is not None and any(query in e.traceback for e in first_entry.examples)
        return
    assert _entry_of(first.get_attribute("href") or "", served.base) == expected
    first.click()
    expect(tab.locator("article h1")).to_contain_text(entry.title)


# Whole messages as users paste them into the search box, each the last line of a KB example (cited there):
# material alone ranks by common words and put compile-fake-tensor-device first for most of them.
PASTED_MESSAGES = {
    "numpy-on-cuda-tensor": "can't convert cuda:0 device type tensor to numpy",
    "torch-not-compiled-with-cuda": "AssertionError: Torch not compiled with CUDA enabled",
    "rnn-hidden-state-on-cpu": "Input and hidden tensors are not at the same device",
    "optimizer-state-after-resume": "argument state_steps in method wrapper_CUDA___fused_adamw_",
}


def _pasted(catalog: Catalog, entry_id: str, words: str) -> str:
    entry = catalog.get(entry_id)
    assert entry is not None
    return next(line.strip() for e in entry.examples for line in e.traceback.splitlines() if words in line)


@needs_browser
@pytest.mark.parametrize(("entry_id", "words"), PASTED_MESSAGES.items(), ids=list(PASTED_MESSAGES))
def test_a_pasted_whole_message_puts_fixers_match_first_in_search(
    tab: Page, served: Served, catalog: Catalog, entry_id: str, words: str
) -> None:
    from fixer.explain.match import Matcher

    message = _pasted(catalog, entry_id, words)
    expected = Matcher(catalog, read_code=False).explain(message).matches[0].id
    tab.goto(served.base)
    box = tab.locator("input.md-search__input")
    box.click()
    box.fill(message)
    box.press("End")
    tab.locator(".md-search-result__list > .fixer-search-match").wait_for(state="attached")
    first = tab.locator(".md-search-result__item").first.locator("a.md-search-result__link").first
    assert _entry_of(first.get_attribute("href") or "", served.base) == expected


@needs_browser
def test_an_entry_shows_its_whole_message_on_a_narrow_screen(tab: Page, served: Served, catalog: Catalog) -> None:
    """The argument and the kernel at the end of a long message are what tell the causes apart."""
    entry = catalog.get(RESUME)
    assert entry is not None
    tab.set_viewport_size({"width": 480, "height": 900})
    tab.goto(f"{served.base}entries/{RESUME}/")
    block = tab.locator("h2#the-message + div pre")
    overflow = block.evaluate("pre => pre.scrollWidth - pre.clientWidth")
    assert overflow <= 0, f"the message scrolls sideways by {overflow}px"
    last = [line for line in entry.examples[0].traceback.strip().splitlines() if line.strip()][-1]
    assert " ".join(last.split()) in " ".join((block.text_content() or "").split())


@needs_browser
def test_paste_box_puts_the_real_var_traceback_first(tab: Page, served: Served, catalog: Catalog) -> None:
    entry = catalog.get(RESUME)
    assert entry is not None
    traceback = next(e.traceback for e in entry.examples if "FoundationVision/VAR" in str(e.source))
    assert "state_steps" in traceback and "wrapper_CUDA___fused_adamw_" in traceback
    tab.goto(served.base)
    tab.locator("#fixer-paste-input").fill(traceback)
    tab.get_by_role("button", name="Explain").click()
    first = tab.locator(".fixer-paste__matches > li").first.locator("a").first
    first.wait_for()
    assert _entry_of(first.get_attribute("href") or "", served.base) == RESUME
    if SCREENSHOTS:
        # heading to last result, in page coordinates: a shot of the box alone scrolls it under the sticky header
        clip = tab.evaluate(
            """() => {
              const top = document.getElementById("paste-your-traceback").getBoundingClientRect();
              const box = document.querySelector(".fixer-paste").getBoundingClientRect();
              return {x: box.left - 16, y: top.top + scrollY - 16, width: box.width + 32,
                      height: box.bottom - top.top + 32};
            }"""
        )
        tab.screenshot(path=SCREENSHOTS / "screenshot-paste-box.png", full_page=True, clip=clip)
    first.click()
    expect(tab.locator("article h1")).to_contain_text(entry.title)


@needs_browser
def test_the_paste_box_asks_the_terminals_questions_and_reranks_as_it_does(
    tab: Page, served: Served, catalog: Catalog
) -> None:
    """One bare paste end to end: the box asks the questions `fixer explain` would ask, in its order, shows
    how to find an answer, stops where the terminal stops, and ranks as the terminal would."""
    bare = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:1 and cuda:0!"
    )
    result = Matcher(catalog).explain(bare)
    asked: list[str] = []

    def ask(question: Question) -> bool:
        asked.append(question.ask)
        return True

    found = interview(result.matches, result.questions, ask, answered=result.answers)
    assert asked, "a bare two-GPU message should be asked about"
    check = next(q.check for q in result.questions if q.ask == asked[0])
    tab.goto(served.base)
    tab.locator("#fixer-paste-input").fill(bare)
    tab.get_by_role("button", name="Explain").click()
    question = tab.locator(".fixer-paste__ask")
    tab.locator(".fixer-paste__question summary").click()
    expect(tab.locator(".fixer-paste__question details p")).to_have_text(check)
    for text in asked:
        expect(question).to_have_text(text)
        tab.get_by_role("button", name="Yes").click()
    expect(tab.locator(".fixer-paste__question")).to_have_count(0)  # the terminal asks nothing more either
    expect(tab.locator(".fixer-paste__answered li")).to_have_count(len(asked))
    shown = tab.locator(".fixer-paste__matches > li").first
    expect(shown.locator(".fixer-paste__score")).to_have_text(f" — score {found.matches[0].score}")
    assert _entry_of(shown.locator("a").first.get_attribute("href") or "", served.base) == found.matches[0].id


@pytest.fixture(scope="module")
def from_disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The site as `FIXER_SITE_FROM_DISK=1 mkdocs build` makes it, for opening from a folder or a zip."""
    site = tmp_path_factory.mktemp("from-disk")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FIXER_SITE_FROM_DISK", "1")
        build(load_config(str(ROOT / "mkdocs.yml"), site_dir=str(site), strict=True))
    yield site


@needs_browser
def test_search_works_in_a_copy_opened_from_disk(tab: Page, from_disk: Path) -> None:
    """From disk the browser refuses the Web Worker material searches in; the site's stand-in runs it."""
    tab.goto((from_disk / "index.html").as_uri())
    box = tab.locator("input.md-search__input")
    box.click()
    box.fill("state_steps")
    box.press("End")
    first = tab.locator(".md-search-result__item").first.locator("a.md-search-result__link").first
    first.wait_for()
    assert (first.get_attribute("href") or "").startswith((from_disk / "entries" / f"{RESUME}.html").as_uri())


@needs_browser
def test_the_paste_box_works_in_a_copy_opened_from_disk(tab: Page, from_disk: Path, catalog: Catalog) -> None:
    entry = catalog.get(RESUME)
    assert entry is not None
    traceback = next(e.traceback for e in entry.examples if "FoundationVision/VAR" in str(e.source))
    tab.goto((from_disk / "index.html").as_uri())
    tab.locator("#fixer-paste-input").fill(traceback)
    tab.get_by_role("button", name="Explain").click()
    first = tab.locator(".fixer-paste__matches > li").first.locator("a").first
    first.wait_for()
    assert first.get_attribute("href") == (from_disk / "entries" / f"{RESUME}.html").as_uri()
    first.click()  # a page, not a folder's listing: from disk, links name files
    expect(tab.locator("article h1")).to_contain_text(entry.title)


@needs_browser
def test_embed_view_is_bare_inside_a_wiki_iframe(tab: Page, served: Served, catalog: Catalog) -> None:
    entry = catalog.get(RESUME)
    assert entry is not None
    tab.goto(f"{served.base}entries/{RESUME}/")
    if SCREENSHOTS:
        tab.screenshot(path=SCREENSHOTS / "screenshot-entry.png")
    snippet = tab.locator("code[data-fixer-embed]").text_content() or ""
    assert f'src="{served.base}embed/{RESUME}/"' in snippet
    # Another origin on this machine, as an intranet wiki would be (Chromium blocks a public page's iframe
    # of a local address, so set_content on about:blank cannot stand in for it).
    (served.wiki / "index.html").write_text(f"<!doctype html><title>Team wiki</title><h1>Team wiki</h1>{snippet}")
    tab.goto(served.base.replace("127.0.0.1", "localhost").replace(SUB_PATH, "/wiki/"))
    frame = tab.frame_locator("iframe")
    expect(frame.locator("article h1")).to_contain_text(entry.title)
    chrome = "header, nav, .md-header, .md-tabs, .md-sidebar, .md-footer, .md-search, [data-md-component=search]"
    assert frame.locator(chrome).count() == 0


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in {"href", "src"} and value]


def test_every_link_and_asset_resolves_under_the_sub_path(served: Served, catalog: Catalog) -> None:
    """Every page's links, scripts, stylesheets and images, fetched from the server: an absolute path that
    assumes the site sits at the root of its host would 404 here."""
    host = urlsplit(served.base).netloc
    checked: set[str] = set()
    broken = []
    for page in sorted(served.root.rglob("*.html")):
        page_url = served.base + page.relative_to(served.root).as_posix().removesuffix("index.html")
        links = _Links()
        links.feed(page.read_text())
        for link in links.urls:
            url = urldefrag(urljoin(page_url, link)).url.split("?")[0]
            if urlsplit(url).netloc != host or url in checked:
                continue
            checked.add(url)
            try:
                with urlopen(url, timeout=10) as answer:
                    status = answer.status
            except HTTPError as error:
                status = error.code
            if status != HTTPStatus.OK:
                broken.append(f"{status} {url} (from {page_url})")
    assert broken == []
    for entry in catalog:
        assert {f"{served.base}entries/{entry.id}/", f"{served.base}embed/{entry.id}/"} <= checked
