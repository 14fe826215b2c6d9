"""A static site of the notebooks with their committed outputs: one HTML page per notebook (nbconvert's
``lab`` template) and an index page, readable offline.

    python -m hedgekit site                 # -> site/ (git-ignored); open site/index.html
    python -m hedgekit site --out /tmp/site

Nothing is executed: the pages show the outputs committed in ``notebooks/``. Offline, the code, the text,
the tables and the figures render (images are embedded in the notebooks); plotly figures draw with the
``plotly.min.js`` of the installed plotly package, copied beside the pages. LaTeX renders with the MathJax 2.7
that the ``jupyter-server-mathjax`` package ships (issue 48 item 5): the files it loads (`MATHJAX_FILES`, 1.9 MB)
are copied into ``mathjax/`` beside the pages and nbconvert points at them (`MATHJAX_URL`, relative to the page),
with the STIX-Web fonts, the only ones the package has. The ipywidgets still come from a CDN (offline a widget
shows nothing; run the notebook to use it).
"""
from __future__ import annotations

import argparse
import html
from pathlib import Path

from hedgekit.checks import check_writable, write_bytes_atomic
from hedgekit.repro.students import notebook_paths

__all__ = ["PLOTLY_MIME", "PLOTLY_JS", "MATHJAX_DIR", "MATHJAX_URL", "MATHJAX_FILES", "mathjax_files",
           "render_notebook", "build_site", "add_subcommand"]

PLOTLY_MIME = "application/vnd.plotly.v1+json"
PLOTLY_JS = "plotly.min.js"
# MathJax 2.7 as the jupyter-server-mathjax package ships it: its combined TeX config (nbconvert's CDN default,
# TeX-AMS_CHTML-full, is not in the package), the HTML-CSS output with the STIX-Web fonts (the only ones shipped),
# and what they load on demand; not the SVG output, the MathML extras or the accessibility tools (5 MB).
MATHJAX_DIR = "mathjax"
MATHJAX_URL = f"{MATHJAX_DIR}/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
MATHJAX_FILES = ("LICENSE", "MathJax.js", "config/TeX-AMS-MML_HTMLorMML-full.js", "config/Safe.js",
                 "extensions/*.js", "extensions/TeX/**/*.js", "extensions/HTML-CSS/*.js",
                 "jax/element/mml/optable/*.js", "jax/output/HTML-CSS/**/*.js", "fonts/HTML-CSS/STIX-Web/woff/*.woff")
# nbconvert's lab page, with the local plotly.js loaded before require.js (once require.js is there,
# plotly.js registers as an AMD module instead of setting window.Plotly), and MathJax told to use the web fonts it
# has (by default it asks for its TeX fonts, which the package does not ship).
_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}
{%- if resources.plotly_js %}<script src="{{ resources.plotly_js }}"></script>{% endif -%}
{{ super() }}
{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}
{{ super() }}
<script type="text/x-mathjax-config">
MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null}});
</script>
{%- endblock html_head_js_mathjax -%}
"""


def _add_plotly_html(nb) -> bool:
    """Give every plotly output without an HTML form one (a div drawn by ``Plotly.newPlot``); True if any."""
    import plotly.io as pio

    found = False
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLOTLY_MIME in data:
                found = True
                if "text/html" not in data:
                    data["text/html"] = pio.to_html(data[PLOTLY_MIME], include_plotlyjs=False, full_html=False,
                                                    validate=False)
    return found


def _exporter():
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(extra_loaders=[DictLoader({"hedgekit_site.html.j2": _TEMPLATE})],
                        template_file="hedgekit_site.html.j2", mathjax_url=MATHJAX_URL)


def render_notebook(nb, name: str, exporter=None) -> tuple[str, bool]:
    """(HTML page, whether it needs plotly.min.js beside it) of the notebook node ``nb``, outputs as committed
    (``nb`` gains an HTML form of its plotly outputs)."""
    plotly = _add_plotly_html(nb)
    body, _ = (exporter or _exporter()).from_notebook_node(
        nb, resources={"metadata": {"name": name}, "plotly_js": PLOTLY_JS if plotly else ""})
    return body, plotly


def _index(pages: list[tuple[str, str]]) -> str:
    items = "\n".join(f'<li><a href="{html.escape(href)}">{html.escape(Path(href).stem)}</a> — {html.escape(title)}</li>'
                      for href, title in pages)
    css = ("body{font-family:system-ui,sans-serif;max-width:900px;margin:2em auto;padding:0 1em;color:#222}"
           "li{margin:.4em 0}a{font-family:monospace}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>hedgekit notebooks</title><style>{css}</style>"
            f"</head><body><h1>hedgekit notebooks</h1><p>Probabilistic (hedged) embeddings, one notebook per "
            f"topic, shown with the outputs committed in the repository (written by "
            f"<code>python -m hedgekit site</code>). Run them yourself with <code>jupyter lab notebooks/</code>; "
            f"widgets need a network connection here.</p><ol>{items}</ol></body></html>\n")


def mathjax_files() -> list[tuple[Path, str]]:
    """(source file, path under the site's ``mathjax/``) of every bundled MathJax file (`MATHJAX_FILES`), from the
    installed ``jupyter-server-mathjax`` package."""
    import jupyter_server_mathjax

    root = Path(jupyter_server_mathjax.__file__).parent / "static"
    files = sorted({path for pattern in MATHJAX_FILES for path in root.glob(pattern) if path.is_file()})
    return [(path, path.relative_to(root).as_posix()) for path in files]


def build_site(out_dir: Path | str, sources: list[Path] | None = None) -> Path:
    """Write one page per notebook of ``sources`` (default: every numbered notebook), ``plotly.min.js`` if a
    page needs it, MathJax (`mathjax_files`) and ``index.html`` into ``out_dir``; returns the index's path. Each
    file is written whole or not at all (`hedgekit.checks.write_bytes_atomic`): a read-only ``out_dir``, a file in
    its place or a full disk is a `hedgekit.errors.StorageError` (checked before any page is rendered), and no
    half-written page is left."""
    import nbformat

    from hedgekit.repro.results import notebook_header

    out = Path(out_dir)
    check_writable(out / "index.html")
    exporter = _exporter()
    pages, needs_plotly = [], False
    for path in notebook_paths() if sources is None else [Path(p) for p in sources]:
        nb = nbformat.read(path, as_version=4)
        body, plotly = render_notebook(nb, path.stem, exporter)
        write_bytes_atomic(out / f"{path.stem}.html", body.encode("utf-8"))
        pages.append((f"{path.stem}.html", notebook_header(nb)["title"] or path.stem))
        needs_plotly |= plotly
    for src, name in mathjax_files():
        write_bytes_atomic(out / MATHJAX_DIR / name, src.read_bytes())
    if needs_plotly:
        from plotly.offline import get_plotlyjs

        write_bytes_atomic(out / PLOTLY_JS, get_plotlyjs().encode("utf-8"))
    return write_bytes_atomic(out / "index.html", _index(pages).encode("utf-8"))


# ------------------------------------------------------------------------------ CLI
def add_subcommand(subparsers) -> argparse.ArgumentParser:
    """Register ``site`` on an argparse sub-parser set (for `hedgekit.cli`)."""
    p = subparsers.add_parser("site", help="render the notebooks with their committed outputs to a static site",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="output folder (default: site/, git-ignored)")
    p.set_defaults(fn=_cmd)
    return p


def _cmd(a) -> int:
    from hedgekit.paths import REPO_DIR

    index = build_site(Path(a.out) if a.out else REPO_DIR / "site")
    print(f"wrote {index}")
    return 0
