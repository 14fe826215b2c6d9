"""The static site of the notebooks (`hedgekit.repro.site`) in headless Chromium with no network
(``pytest -m browser``): every request that is not for a ``file://`` URL is aborted and counted, and so is every
request that fails (a file the page asks for and the site does not have) or answers with a status >= 400; the
tests want none. Opened: the index, and the page of each of `LESSONS` (equations, committed images, widget
outputs: progress bars and explorers; 02 also a plotly figure). Their equations are typeset by the bundled
MathJax with its bundled fonts, and every widget output shows its static record and the note that the live
control needs a kernel (no empty output). Only these pages are built (about 10 s on a loaded 2-core machine).

Needs Debian's ``chromium`` (/usr/bin/chromium) and the ``playwright`` Python package; no browser is ever
downloaded. The checks of the same pages that need no browser: tests/repro/test_site.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from hedgekit.paths import REPO_DIR

WAIT_MS = 120_000  # any one wait: MathJax typesets a long page slowly on 2 cores shared with other work
ARTIFACTS = REPO_DIR / "test-artifacts"
# lessons with equations and widget outputs (progress bars, explorers with and without a saved state); 02 also
# has a plotly figure
LESSONS = ("02_hib_embeddings", "06_spe_lshapes")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# an output that shows nothing: no text, no image, no drawn figure, no table
EMPTY_OUTPUTS = """() => [...document.querySelectorAll('.jp-OutputArea-output')]
    .filter(e => !e.innerText.trim() && !e.querySelector('img, svg, canvas, table, progress'))
    .map(e => e.outerHTML.slice(0, 300))"""
TYPESET = "() => MathJax.isReady && MathJax.Hub.queue.pending === 0 && MathJax.Hub.queue.running === 0"

pytestmark = [
    pytest.mark.slow,  # builds two pages and drives headless Chromium
    pytest.mark.browser,
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The index and the pages of `LESSONS`, built from the committed notebooks into a temporary folder."""
    from hedgekit.repro.site import build_site

    return build_site(tmp_path_factory.mktemp("site"), [REPO_DIR / "notebooks" / f"{n}.ipynb" for n in LESSONS])


@pytest.fixture
def offline_page(browser):
    """(a page in a fresh browser context with the network blocked, the dict of what went wrong): ``"blocked"``,
    every aborted non-``file://`` request; ``"failed"``, every failed request (its URL and error: an aborted
    one, a file the site does not have) and every response with a status >= 400; ``"errors"``, the page's
    uncaught JavaScript errors."""
    log = {"blocked": [], "failed": [], "errors": []}

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            log["blocked"].append(r.request.url)
            r.abort()

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.set_default_navigation_timeout(WAIT_MS)
    page.route("**/*", route)
    page.on("requestfailed", lambda r: log["failed"].append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and log["failed"].append(f"{r.url} (status {r.status})"))
    page.on("pageerror", lambda e: log["errors"].append(str(e)))
    yield page, log
    context.close()


def _widget_outputs(name: str) -> int:
    import nbformat

    nb = nbformat.read(REPO_DIR / "notebooks" / f"{name}.ipynb", as_version=4)
    return sum(WIDGET_VIEW in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))


def _no_request_went_wrong(log: dict) -> None:
    assert log["blocked"] == [], log["blocked"]  # the page asked for nothing on the network
    assert log["failed"] == [], log["failed"]  # nor for a file the site does not have
    assert log["errors"] == [], log["errors"]


def test_index_offline(site, offline_page):
    from playwright.sync_api import expect

    page, log = offline_page
    page.goto(site.as_uri(), wait_until="load")
    expect(page).to_have_title("hedgekit notebooks")
    expect(page.locator("li a")).to_have_text(list(LESSONS))
    page.get_by_role("link", name=LESSONS[0]).click()
    expect(page).to_have_title(LESSONS[0])
    page.wait_for_load_state("load")
    page.wait_for_function(TYPESET)
    _no_request_went_wrong(log)


@pytest.mark.parametrize("name", LESSONS)
def test_lesson_offline(site, offline_page, name):
    """The page of lesson ``name``: its code, a committed figure (decoded), its plotly figure if it has one, its
    equations typeset (also after the right-click menu opened), every widget output its static record and the
    note, no empty output, and no request that failed or went to the network."""
    from playwright.sync_api import expect

    from hedgekit.repro.site import PLOTLY_MIME, WIDGET_NOTE

    page, log = offline_page
    page.goto((site.parent / f"{name}.html").as_uri(), wait_until="load")
    expect(page).to_have_title(name)
    expect(page.locator(".jp-CodeCell .jp-InputArea-editor").first).to_contain_text("Session(")
    figure = page.locator(".jp-OutputArea-output img").first  # a committed figure, decoded
    expect(figure).to_be_visible()
    assert figure.evaluate("img => img.complete && img.naturalWidth * img.naturalHeight") > 0
    if PLOTLY_MIME in (REPO_DIR / "notebooks" / f"{name}.ipynb").read_text():
        expect(page.locator(".js-plotly-plot .main-svg").first).to_be_visible()  # drawn by the local plotly.min.js

    # the equations, typeset by the bundled MathJax with its bundled fonts
    assert page.evaluate("() => Boolean(window.MathJax && MathJax.Hub)"), "MathJax did not load from site/mathjax/"
    page.wait_for_function(TYPESET)
    assert page.evaluate("() => MathJax.OutputJax['HTML-CSS'].fontInUse") == "STIX-Web"
    assert page.locator(".MathJax").count() >= 10, page.locator(".MathJax").count()
    expect(page.locator(".MathJax_Display").first).to_be_visible()
    text = page.locator("body").inner_text()
    assert "Math Processing Error" not in text and "Math processing error" not in text
    assert "$$" not in text, text[text.index("$$") - 200:text.index("$$") + 200]
    assert page.locator(".MathJax .merror, .MathJax .noError").count() == 0  # no formula shown as a TeX error
    page.wait_for_function("() => document.fonts.status === 'loaded'")  # every font asked for has answered
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"site-{name}.png"))
    page.locator(".MathJax").first.click(button="right")  # MathJax's menu: loads nothing the site lacks
    expect(page.locator(".MathJax_Menu")).to_be_visible()
    page.keyboard.press("Escape")

    # every widget output: its static record and the note; no output shows nothing
    notes = page.locator(".hk-widget-note")
    assert notes.count() == _widget_outputs(name) >= 3, notes.count()
    expect(notes).to_have_text([WIDGET_NOTE] * notes.count())
    records = page.locator(".hk-widget-record").all_inner_texts()
    assert all(r.strip() for r in records), records
    assert page.evaluate(EMPTY_OUTPUTS) == []
    assert page.locator(".jupyter-widgets").count() == 0  # nothing left for a widget manager to draw
    _no_request_went_wrong(log)
