"""The static site (`hedgekit.repro.site`) from tiny hand-built notebooks; the real notebooks in a real
browser, offline: tests/app/test_browser.py::test_static_site_opens_offline."""
from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from hedgekit.repro.site import (MATHJAX_DIR, MATHJAX_FILES, MATHJAX_URL, PLOTLY_JS, PLOTLY_MIME, build_site,
                                 mathjax_files)


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
    assert page_a.index(PLOTLY_JS) < page_a.index("require.min.js")  # window.Plotly, not an AMD module
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
    the package that the pages do not load (issue 48 item 5). The rendering itself: tests/app/test_browser.py."""
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
