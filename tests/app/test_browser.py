"""End-to-end: the real app in headless Chromium (``pytest -m browser``).

Starts ``streamlit run app/main.py`` on a free port (the shipped default models) on an empty data folder of its own,
so what it shows never depends on what other tests or runs left in a cache; drags a rectangle
over the left digit with the mouse, checks that eta changed, the rectangle is listed and the map still renders;
hides a digit of the Retrieval page's query and checks that sigma^2 and the neighbours follow; opens every page at
1280 and 1920 px wide (no error, no cut button label; the Benchmark page: the command that creates the runs, since
its folder has none) and saves a screenshot of each in ``test-artifacts/`` (``<page>-<width>.png``). The static
site of the notebooks (``python -m hedgekit site``), offline: tests/repro/test_site_offline.py.
Every wait is for what it waits for (an element, a drawn figure, a script run that is over), each bounded by
`WAIT_MS`, sized for a loaded 2-core machine.
Needs Debian's ``chromium`` (/usr/bin/chromium) and the ``playwright`` Python
package; no browser is ever downloaded.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
WAIT_MS = 180_000  # any one wait: a first visit computes centroid tables, slow on 2 cores shared with other work
START_S = 120  # the Streamlit server's start (imports torch and the app)

pytestmark = [
    pytest.mark.slow,  # drives the app in headless Chromium
    pytest.mark.browser,
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def new_page(browser):
    """``new_page(width, height)``: (a page in a fresh browser context whose waits time out after `WAIT_MS`, the
    list its JavaScript errors go to)."""
    contexts = []

    def new_page(width: int, height: int):
        contexts.append(browser.new_context(viewport={"width": width, "height": height}))
        page = contexts[-1].new_page()
        page.set_default_timeout(WAIT_MS)
        page.set_default_navigation_timeout(WAIT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        return page, errors

    yield new_page
    for context in contexts:
        context.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):  # browser first: no playwright, no training
    """The app served by a real Streamlit process on an empty data folder of its own. Only what its pages need and
    nothing ships is put there first, outside the timed waits: the N = 2 N-digit sets and the Retrieval page's
    model (about 40 s); the other models are the shipped `paper` ones."""
    from hedgekit.data import load_ndigit
    from hedgekit.interactive.models import load_model
    from hedgekit.interactive.retrieval import retrieval_spec
    from hedgekit.papers.taha.experiments import DIM

    data = tmp_path_factory.mktemp("app-data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEDGEKIT_DATA", str(data))
        for split in ("train", "test_seen", "test_unseen"):
            load_ndigit(2, split)
        load_model(retrieval_spec(DIM, "paper"), progress=False)  # not shipped (SPE's is)
    port = _free_port()
    env = dict(os.environ, HEDGEKIT_DATA=str(data), HEDGEKIT_PRESET="paper", PYTHONUNBUFFERED="1",
               HOME=str(tmp_path_factory.mktemp("home")))  # its persist="disk" cache: not in ~/.streamlit
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:  # until its health endpoint answers
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start (exit code {proc.poll()}); see test-artifacts/streamlit.log")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


METRIC = "[data-testid=stMetricValue]"
# the Benchmark page has no metric: it is drawn once it shows the command (no cached runs), an alert or a traceback
# (the last two fail below, but without waiting for the timeout)
BENCHMARK_DRAWN = ", ".join(f"[data-testid={t}]" for t in ("stAlertContentInfo", "stAlertContentWarning",
                                                            "stAlertContentError", "stException"))
PAGES = {  # page -> (URL path, an element present once the page has drawn, draws a plotly chart)
    "playground": ("", METRIC, True),
    "compare": ("compare", METRIC, True),
    "retrieval": ("retrieval", METRIC, True),
    "benchmark": ("benchmark", BENCHMARK_DRAWN, False),  # its title and the command, no chart
}
CUT_LABELS = """() => [...document.querySelectorAll('[data-testid^=stBaseButton] p, [data-testid=stMetricLabel] p')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"""


def _settle(page, drawn: str = METRIC, chart: bool = True) -> None:
    """Wait until the page has drawn ``drawn`` (a selector) and, where it has ``chart``s, its first plotly chart's
    figure (an SVG), its script run is over (Streamlit's status widget, shown while the script runs, is gone) and
    every plotly chart on it has drawn its figure. Streamlit draws a page's elements as its script reaches them,
    and shows the status widget only after a delay: on a busy machine the metric can be drawn, the charts not yet
    started and the widget not yet shown, so the chart is waited for, not counted at once."""
    from playwright.sync_api import expect

    page.locator(drawn).first.wait_for()
    if chart:
        page.locator("[data-testid=stPlotlyChart] .main-svg").first.wait_for()
    expect(page.locator("[data-testid=stStatusWidget]")).to_have_count(0)
    expect(page.locator("[data-testid=stPlotlyChart]:not(:has(.main-svg))")).to_have_count(0)


def test_drag_a_rectangle_updates_eta(server, new_page):
    from playwright.sync_api import expect

    page, errors = new_page(1500, 1300)
    page.goto(server, wait_until="commit")
    _settle(page)
    eta = page.locator(METRIC).first
    eta0 = eta.inner_text()

    # Drag over the left digit on the image (the first chart): plotly's box select.
    box = page.locator("[data-testid=stPlotlyChart]").first.locator(".nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + 0.04 * box["width"], box["y"] + 0.08 * box["height"])
    page.mouse.down()
    page.mouse.move(box["x"] + 0.46 * box["width"], box["y"] + 0.92 * box["height"], steps=12)
    page.mouse.up()

    expect(eta).not_to_have_text(eta0)
    expect(page.get_by_text("1 rectangle(s)")).to_be_visible()
    _settle(page)  # the charts redrawn before the screenshot
    page.screenshot(path=str(ARTIFACTS / "playground.png"), full_page=True)
    assert float(eta.inner_text()) > float(eta0)  # hiding the left digit makes the HIB model hedge
    assert page.locator("[data-testid=stPlotlyChart]").count() >= 3
    assert page.locator("[data-testid=stException]").count() == 0
    assert not errors, errors


def test_retrieval_step(server, new_page):
    """Hide the query's left digit on the Retrieval page: sigma^2 changes, eight neighbours stay, no error."""
    from playwright.sync_api import expect

    page, errors = new_page(1500, 1300)
    page.goto(f"{server}/retrieval", wait_until="commit")
    _settle(page)
    sigma = page.locator("[data-testid=stMetric]").filter(has_text="σ² of the query")
    before = sigma.locator(METRIC).inner_text()
    assert page.locator("[data-testid=stImage]").count() == 8
    page.get_by_role("button", name="Hide left").click()
    expect(sigma.locator(METRIC)).not_to_have_text(before)
    _settle(page)
    expect(sigma).to_contain_text("vs clean")
    assert page.locator("[data-testid=stImage]").count() == 8
    assert page.locator("[data-testid=stException]").count() == 0
    assert not errors, errors


@pytest.mark.parametrize("width", [1280, 1920])
def test_every_page_at_common_widths(server, new_page, width):
    """Each page renders without an error or a cut button/metric label; a screenshot of each is kept."""
    page, errors = new_page(width, 1700)  # Streamlit scrolls inside
    for name, (path, drawn, chart) in PAGES.items():
        page.goto(f"{server}/{path}", wait_until="commit")
        _settle(page, drawn=drawn, chart=chart)
        page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
        assert page.locator("[data-testid=stException]").count() == 0, name
        assert page.locator("[data-testid=stAlertContentError]").count() == 0, name
        if chart:
            assert page.locator("[data-testid=stPlotlyChart]").count() >= 1, name
        if name == "benchmark":
            _check_benchmark(page)
        assert page.evaluate(CUT_LABELS) == [], (name, width)
    assert not errors, errors


def _check_benchmark(page) -> None:
    """The Benchmark page on the server's empty data folder: its title and the command that creates the runs; no
    image, no warning."""
    assert page.get_by_role("heading", name="Benchmark: URL at kit scale").count() == 1
    assert page.locator("[data-testid=stAlertContentWarning]").count() == 0
    assert "python -m hedgekit url-benchmark --fast" in page.locator("[data-testid=stAlertContentInfo]").inner_text()
    assert page.locator("[data-testid=stImage]").count() == 0
