"""The static site (`hedgekit.repro.site`) from tiny hand-built notebooks; the real notebooks in a real
browser, offline: tests/repro/test_site_offline.py."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlparse

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from hedgekit.repro.site import (MATHJAX_DIR, MATHJAX_FILES, MATHJAX_URL, PLOTLY_JS, PLOTLY_MIME, WIDGET_MIME,
                                 WIDGET_NOTE, build_site, mathjax_files, render_notebook, static_widget_outputs)

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def _write(folder, name, cells):
    nbformat.write(new_notebook(cells=cells), folder / name)
    return folder / name


def test_site_pages_index_and_local_plotly(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    figure = {"data": [{"type": "scatter", "x": [0, 1], "y": [1, 0]}], "layout": {"title": {"text": "tiny"}}}
    plotted = new_code_cell("# 01 — A plot: the first line is the title\nfig", execution_count=1,
                            outputs=[new_output("display_data", data={PLOTLY_MIME: figure, "text/plain": "Figure"})])
    printed = new_code_cell("# 02 — Printing\nprint('hello <b>')", execution_count=1,
                            outputs=[new_output("stream", name="stdout", text="hello <b>\n")])
    a = _write(src, "01_a.ipynb", [plotted, new_markdown_cell("Some *prose*.")])
    b = _write(src, "02_b.ipynb", [printed])
    index = build_site(tmp_path / "site", [a, b])
    text = index.read_text()
    assert text.index('href="01_a.html">01_a</a> — 01 — A plot: the first line is the title') < text.index("02_b.html")
    page_a = (tmp_path / "site" / "01_a.html").read_text()
    page_b = (tmp_path / "site" / "02_b.html").read_text()
    assert f'<script src="{PLOTLY_JS}"></script>' in page_a and "Plotly.newPlot" in page_a
    assert "require" not in page_a  # no require.js: plotly.js sets window.Plotly, not an AMD module
    assert PLOTLY_JS not in page_b and "hello &lt;b&gt;" in page_b and "<em>prose</em>" in page_a
    assert (tmp_path / "site" / PLOTLY_JS).stat().st_size > 1_000_000
    assert nbformat.read(a, as_version=4).cells[0].outputs[0].data.keys() == {PLOTLY_MIME, "text/plain"}  # unchanged


def test_no_plotly_js_without_plotly_outputs(tmp_path):
    b = _write(tmp_path, "02_b.ipynb", [new_code_cell("# 02 — x\n1 + 1")])
    build_site(tmp_path / "site", [b])
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == ["02_b.html", "index.html", MATHJAX_DIR]


def test_pages_load_the_bundled_mathjax(tmp_path):
    """Every page loads MathJax from the site's own mathjax/ folder (relative: the site can move), told to use the
    STIX-Web fonts it ships; that folder holds the script, the config the URL names and its fonts, and nothing of
    the package that the pages do not load. The rendering itself, and that no font is asked for that the site
    lacks: tests/repro/test_site_offline.py."""
    b = _write(tmp_path, "02_b.ipynb", [new_markdown_cell("$$\\eta(x) = 1 - p$$")])
    build_site(tmp_path / "site", [b])
    page = (tmp_path / "site" / "02_b.html").read_text()
    assert f'<script src="{MATHJAX_URL}">' in page and "libs/mathjax" not in page and 'webFont: "STIX-Web"' in page
    assert MATHJAX_URL.startswith("mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe")
    site = tmp_path / "site" / MATHJAX_DIR
    shipped = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())
    assert shipped == sorted(name for _, name in mathjax_files())
    for name in ("MathJax.js", "config/TeX-AMS-MML_HTMLorMML-full.js", "config/Safe.js", "extensions/Safe.js",
                 "jax/output/HTML-CSS/fonts/STIX-Web/fontdata.js",
                 "fonts/HTML-CSS/STIX-Web/woff/STIXMathJax_Main-Regular.woff"):
        assert (site / name).is_file(), name
    assert not any(n.startswith(("jax/output/SVG", "extensions/a11y")) for n in shipped)
    assert 1_000_000 < sum((site / n).stat().st_size for n in shipped) < 3_000_000


def test_every_mathjax_pattern_matches_files_of_the_package():
    """A pattern that matches nothing (a new jupyter-server-mathjax moved its files) fails here, not in a browser."""
    from fnmatch import fnmatch

    names = [name for _, name in mathjax_files()]
    for pattern in MATHJAX_FILES:
        assert any(fnmatch(name, pattern) for name in names), pattern



def test_consecutive_prints_to_a_stream_are_one_block():
    """As Jupyter shows them: a flush's lone newline is not an output box of its own (an empty one)."""
    cell = new_code_cell("print(p); print()", outputs=[new_output("stream", name="stdout", text="p = 0.98\n"),
                                                         new_output("stream", name="stdout", text="\n"),
                                                         new_output("stream", name="stderr", text="warned\n")])
    page, _ = render_notebook(new_notebook(cells=[cell]), "streams")
    assert page.count('<div class="jp-OutputArea-child">') == 2 and "<pre>p = 0.98\n\n</pre>" in page

# ------------------------------------------------------------------------------ widgets as static records
def _model(name: str, **state) -> dict:
    return {"model_name": name, "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
            "state": {"_model_name": name, **state}}


def _widget_output(model_id: str, text: str | None = None, kind: str = "display_data", **extra):
    data = {WIDGET_MIME: {"model_id": model_id, "version_major": 2, "version_minor": 0}}
    if text is not None:
        data["text/plain"] = text
    return new_output(kind, data=data, **extra)


# the saved state of a tqdm bar (its last frame) and of an explorer (two controls, and the figure its Output holds)
MODELS = {
    "bar": _model("HBoxModel", children=["IPY_MODEL_pre", "IPY_MODEL_prog", "IPY_MODEL_post"]),
    "pre": _model("HTMLModel", value="train\u2007hib:\u2007100%", description=""),
    "prog": _model("FloatProgressModel", value=800.0, max=800.0, min=0.0, bar_style="success", description=""),
    "post": _model("HTMLModel", value="\u2007800/800\u2007[00:07&lt;00:00]", description=""),
    "explorer": _model("VBoxModel", children=["IPY_MODEL_row", "IPY_MODEL_out"]),
    "row": _model("HBoxModel", children=["IPY_MODEL_slider", "IPY_MODEL_menu"]),
    "slider": _model("IntSliderModel", value=2, min=0, max=4, description="occluded <4>"),
    "menu": _model("DropdownModel", index=1, _options_labels=["digit 1", "digit 2"], description="occlude"),
    "out": _model("OutputModel", outputs=[{"output_type": "display_data", "data": {"image/png": PNG}}]),
}


def test_a_saved_widget_state_is_drawn_as_its_record():
    """A progress bar's last frame (its text and a <progress>), an explorer's control values (a selection by its
    label, a description escaped) followed by the figure its Output captured; the note under each; an
    execute_result keeps its type and prompt."""
    bar = static_widget_outputs(_widget_output("bar", "train hib:   0%|    | 0/800"), MODELS)
    assert len(bar) == 1 and bar[0].output_type == "display_data" and WIDGET_MIME not in bar[0].data
    record = bar[0].data["text/html"]
    assert "<span>train\u2007hib:\u2007100%</span>" in record and '<progress value="800" max="800">' in record
    assert "800/800\u2007[00:07&lt;00:00]" in record
    assert record.endswith(f'<p class="hk-widget-note">{WIDGET_NOTE}</p>')
    assert bar[0].data["text/plain"] == f"train hib:   0%|    | 0/800\n{WIDGET_NOTE}"

    first, figure = static_widget_outputs(_widget_output("explorer", "VBox(...)", "execute_result",
                                                         execution_count=7), MODELS)
    assert first.output_type == "execute_result" and first.execution_count == 7
    record = first.data["text/html"]
    assert "occluded &lt;4&gt;: <b>2</b>" in record and "occlude: <b>digit 2</b>" in record
    assert record.index("occluded") < record.index("digit 2") < record.index(WIDGET_NOTE)
    assert figure.output_type == "display_data" and figure.data == {"image/png": PNG} and figure.metadata == {}


def test_a_widget_without_saved_state_shows_its_text_form():
    """No saved state (or a child missing from it): the text form saved beside the widget, escaped, and the
    note; with no text form either, the note alone: never an empty output."""
    text = "VBox(children=(IntSlider(value=0, description='<rows>'), Output()))"
    for models in ({}, {"explorer": MODELS["explorer"]}):  # none; the explorer but not its children
        (only,) = static_widget_outputs(_widget_output("explorer", text), models)
        assert only.data["text/html"] == ('<div class="hk-widget-record"><pre>VBox(children=(IntSlider(value=0, '
                                          'description=&#x27;&lt;rows&gt;&#x27;), Output()))</pre></div>'
                                          f'<p class="hk-widget-note">{WIDGET_NOTE}</p>')
    (bare,) = static_widget_outputs(_widget_output("gone"), {})
    assert bare.data == {"text/html": f'<div class="hk-widget-record"></div><p class="hk-widget-note">'
                                      f'{WIDGET_NOTE}</p>', "text/plain": WIDGET_NOTE}


def test_render_replaces_every_widget_output_in_place():
    """In a tiny notebook: every widget output (top level, and one an Output widget captured) becomes its record
    and note, the captured figure follows its explorer, the other outputs keep their order, the saved widget state
    leaves the page (nothing for a widget manager), and no widget view is left for nbconvert to draw empty."""
    models = dict(MODELS, out=_model("OutputModel", outputs=[
        {"output_type": "display_data", "data": {"image/png": PNG}, "metadata": {}},
        {"output_type": "display_data", "data": {WIDGET_MIME: {"model_id": "bar"}, "text/plain": "bar"}}]))
    cells = [new_code_cell("fit()", outputs=[_widget_output("bar", "bar"),
                                             new_output("stream", name="stdout", text="trained\n")]),
             new_code_cell("explorer", execution_count=2, outputs=[
                 _widget_output("explorer", "VBox()", "execute_result", execution_count=2)]),
             new_code_cell("gone()", outputs=[_widget_output("gone", "a <b>repr</b>")])]
    nb = new_notebook(cells=cells, metadata={"widgets": {WIDGET_STATE: {"state": models, "version_major": 2,
                                                                        "version_minor": 0}}})
    page, _ = render_notebook(nb, "tiny")
    assert [[o.output_type for o in c.outputs] for c in nb.cells] == [
        ["display_data", "stream"], ["execute_result", "display_data", "display_data"], ["display_data"]]
    assert not any(WIDGET_MIME in o.get("data", {}) for c in nb.cells for o in c.outputs)
    assert "widgets" not in nb.metadata
    assert page.count('<p class="hk-widget-note">') == 4 and page.count("jupyter-widgets") == 0
    assert WIDGET_STATE not in page and WIDGET_MIME not in page
    assert "a &lt;b&gt;repr&lt;/b&gt;" in page and "<progress" in page and f"data:image/png;base64,{PNG}" in page
    order = ("Out[2]:", "occlude: <b>digit 2</b>", PNG, "a &lt;b&gt;repr")  # prompt, record, its figure, next cell
    assert [page.index(s) for s in order] == sorted(page.index(s) for s in order)


class _Fetched(HTMLParser):
    """Every URL an HTML page makes its browser fetch: src/href/data of the elements that load something,
    ``url(...)`` and ``@import`` in style sheets and style attributes, and every http(s) URL written in a script
    (a script that fetches builds its URL there: a loader, a dynamic import)."""
    LOADS = {"script": "src", "img": "src", "iframe": "src", "embed": "src", "source": "src", "audio": "src",
             "video": "src", "track": "src", "input": "src", "link": "href", "object": "data"}
    CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")\s]+)|@import\s+['\"]([^'\"]+)")

    def __init__(self):
        super().__init__()
        self.urls, self._in = [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get(self.LOADS.get(tag, "")):
            self.urls.append(attrs[self.LOADS[tag]])
        self.urls += [a or b for a, b in self.CSS_URL.findall(attrs.get("style") or "")]
        self._in = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "style":
            self.urls += [a or b for a, b in self.CSS_URL.findall(re.sub(r"/\*.*?\*/", "", data, flags=re.S))]
        elif self._in == "script":
            self.urls += re.findall(r"https?://[^\s'\"`)]+", data)


def _fetched(page: str) -> list[str]:
    parser = _Fetched()
    parser.feed(page)
    return parser.urls


def test_fetched_urls_finds_what_a_page_loads():
    """The scanner below is an oracle only if it sees each way a page loads something."""
    page = ("<link rel=stylesheet href='https://cdn.x/a.css'><script src=\"https://cdn.x/r.js\"></script>"
            "<style>/* https://not.fetched */ @font-face{src:url('https://cdn.x/f.woff')} @import 'http://cdn.x/i.css';"
            "</style><div style=\"background:url(http://cdn.x/b.png)\"></div><a href='https://a.link'>x</a>"
            "<script>s.src = 'https://unpkg.com/embed.js'</script><img src='data:image/png;base64,AA'>")
    assert _fetched(page) == ["https://cdn.x/a.css", "https://cdn.x/r.js", "https://cdn.x/f.woff",
                              "http://cdn.x/i.css", "http://cdn.x/b.png", "https://unpkg.com/embed.js",
                              "data:image/png;base64,AA"]


def test_pages_fetch_nothing_from_the_network(tmp_path):
    """A page with every kind of output that loads something (a plotly figure, equations, a widget with its
    saved state, an image) and the index: every URL they make a browser fetch is relative (a file of the site)
    or a data: URL; no script, style sheet, font or widget manager from a CDN. The MathJax files they load
    name no host but in links, licences and XML namespaces."""
    figure = {"data": [{"type": "scatter", "x": [0, 1], "y": [1, 0]}], "layout": {}}
    cells = [new_markdown_cell("$$\\eta(x) = 1 - p$$ and $\\mathbb{R}^D$, $\\mathcal{N}$"),
             new_code_cell("fig", outputs=[new_output("display_data", data={PLOTLY_MIME: figure})]),
             new_code_cell("w", outputs=[_widget_output("explorer", "VBox()")]),
             new_code_cell("tqdm", outputs=[_widget_output("bar", "0%")])]
    nb = new_notebook(cells=cells, metadata={"widgets": {WIDGET_STATE: {"state": MODELS, "version_major": 2,
                                                                        "version_minor": 0}}})
    nbformat.write(nb, tmp_path / "02_w.ipynb")
    site = tmp_path / "site"
    build_site(site, [tmp_path / "02_w.ipynb"])
    for name in ("02_w.html", "index.html"):
        page = (site / name).read_text()
        urls = _fetched(page)
        assert not [u for u in urls if urlparse(u).scheme not in ("", "data")], (name, urls)
        assert not re.search(r"cdnjs|unpkg|jsdelivr|require(\.min)?\.js", page), name
    page = (site / "02_w.html").read_text()
    assert {PLOTLY_JS, MATHJAX_URL} <= set(_fetched(page)) and f"data:image/png;base64,{PNG}" in _fetched(page)
    hosts = {urlparse(u).hostname for path in (site / MATHJAX_DIR).rglob("*.js")
             for u in re.findall(r"https?://[^\s'\"`)\\]+", path.read_text(encoding="utf-8"))}
    assert hosts <= {"www.apache.org", "www.mathjax.org", "www.stixfonts.org", "www.w3.org", "github.com"}, hosts
