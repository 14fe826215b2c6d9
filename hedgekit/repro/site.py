"""A static site of the notebooks with their committed outputs: one HTML page per notebook (nbconvert's
``lab`` template) and an index page, readable offline: a page asks for nothing on the network.

    python -m hedgekit site                 # -> site/ (git-ignored); open site/index.html
    python -m hedgekit site --out /tmp/site

Nothing is executed: the pages show the outputs committed in ``notebooks/``. Offline, the code, the text,
the tables and the figures render (images are embedded in the notebooks); plotly figures draw with the
``plotly.min.js`` of the installed plotly package, copied beside the pages. LaTeX renders with the MathJax 2.7
that the ``jupyter-server-mathjax`` package ships: the files it loads (`MATHJAX_FILES`, 1.9 MB) are copied into
``mathjax/`` beside the pages and nbconvert points at them (`MATHJAX_URL`, relative to the page), with the
STIX-Web fonts, the only ones the package has; the page's MathJax configuration keeps it from asking for any
other font (`_TEMPLATE`).

An ipywidgets output needs a kernel (and a widget manager from a CDN), so each is replaced by its static record
(`static_widget_outputs`): what the saved widget state shows (a progress bar's last frame, a control's value, the
figures its ``Output`` captured) or, where the state was not saved, the text form saved beside it, followed by
`WIDGET_NOTE`. With no widget left, the page needs no require.js (plotly.js is loaded directly), so it has none;
nor nbconvert's mermaid loader (no notebook draws a mermaid diagram; one would show as its source).
"""
from __future__ import annotations

import argparse
import html
from pathlib import Path

from hedgekit.checks import check_writable, write_bytes_atomic
from hedgekit.repro.students import notebook_paths

__all__ = ["PLOTLY_MIME", "PLOTLY_JS", "MATHJAX_DIR", "MATHJAX_URL", "MATHJAX_FILES", "WIDGET_MIME", "WIDGET_NOTE",
           "mathjax_files", "static_widget_outputs", "render_notebook", "build_site", "add_subcommand"]

PLOTLY_MIME = "application/vnd.plotly.v1+json"
PLOTLY_JS = "plotly.min.js"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"
WIDGET_NOTE = "Interactive control: run this notebook in Jupyter to use it."
# MathJax 2.7 as the jupyter-server-mathjax package ships it: its combined TeX config (nbconvert's CDN default,
# TeX-AMS_CHTML-full, is not in the package), the HTML-CSS output with the STIX-Web fonts (the only ones shipped),
# and what they load on demand (the right-click menu included); not the SVG output, the MathML extras, the
# translations or the accessibility tools (5 MB).
MATHJAX_DIR = "mathjax"
MATHJAX_URL = f"{MATHJAX_DIR}/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
MATHJAX_FILES = ("LICENSE", "MathJax.js", "config/TeX-AMS-MML_HTMLorMML-full.js", "config/Safe.js",
                 "extensions/*.js", "extensions/TeX/**/*.js", "extensions/HTML-CSS/*.js",
                 "jax/element/mml/optable/*.js", "jax/output/HTML-CSS/**/*.js", "fonts/HTML-CSS/STIX-Web/woff/*.woff")
# nbconvert's lab page, with the local plotly.js in place of require.js (nothing on the page is an AMD module once
# the widgets are static records), no widget manager, no mermaid loader, and MathJax told to use only the fonts it
# has: the STIX-Web web fonts, not its TeX fonts (its default, not in the package). Two more places ask for a font
# the site cannot give, each a failed request: the fallback family of MathJax's web-font loading test,
# MathJax_Blank, is `url(about:blank)` (Chromium refuses it on a file:// page), so the test falls back on plain
# serif instead (as MathJax itself does on Safari); and the hidden MathML copy of each formula, kept for screen
# readers, is styled with MathJax's TeX fonts (otf) for its variants (double-struck, script, ...), which the CSS
# rule below replaces by the page's fonts (it is never seen).
_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}
{%- if resources.plotly_js %}<script src="{{ resources.plotly_js }}"></script>{% endif -%}
{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}
{{ super() }}
<script type="text/x-mathjax-config">
MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null}});
MathJax.Hub.Register.StartupHook("HTML-CSS Jax Config", function () {
  MathJax.OutputJax["HTML-CSS"].webFontDefault = "serif";
});
</script>
<style type="text/css">
math [mathvariant], math [class^="MJX-tex-"] { font-family: inherit !important; }
.hk-widget-record pre { margin: 0; }
.hk-widget-box { display: flex; flex-wrap: wrap; gap: 0.2em 1.5em; }
.hk-widget-note { margin: 0.3em 0 0; font-style: italic; color: var(--jp-content-font-color2, #555); }
</style>
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


# ------------------------------------------------------------------------------ widgets as static records
_BOXES = {"BoxModel", "HBoxModel", "VBoxModel", "GridBoxModel", "AccordionModel", "TabModel", "StackModel"}
_PROGRESS = {"FloatProgressModel", "IntProgressModel"}


def _control(state: dict) -> str:
    """A control's description and value as HTML ("occluded: 2"); the chosen label for a selection."""
    value = state.get("value")
    labels, index = state.get("_options_labels"), state.get("index")
    if labels is not None and index is not None:
        value = ", ".join(labels[i] for i in index) if isinstance(index, (list, tuple)) else labels[index]
    elif isinstance(value, float):
        value = f"{value:g}"
    elif isinstance(value, (list, tuple)):  # a range slider
        value = " – ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    description = state.get("description") or ""
    return (f'<span class="hk-widget-control">{html.escape(description)}{": " if description else ""}'
            f"<b>{html.escape(str(value))}</b></span>")


def _widget_html(model_id: str, models: dict, captured: list, depth: int = 0) -> str | None:
    """HTML of the saved state of widget ``model_id`` and its children, or None if a model is missing from
    ``models`` (the notebook's saved widget state); the outputs its ``Output`` widgets captured go to
    ``captured``."""
    model = models.get(model_id)
    if model is None or depth > 20:
        return None
    name, state = model.get("model_name", ""), model.get("state", {})
    if name in _BOXES:
        parts = []
        for child in state.get("children", []):
            part = _widget_html(str(child).removeprefix("IPY_MODEL_"), models, captured, depth + 1)
            if part is None:
                return None
            parts.append(part)
        style = "flex-direction:row;align-items:center" if name == "HBoxModel" else "flex-direction:column"
        inner = "".join(parts)
        return f'<div class="hk-widget-box" style="{style}">{inner}</div>' if inner else ""
    if name == "OutputModel":
        captured.extend(state.get("outputs", []))
        return ""
    if name in _PROGRESS:
        return (f'<progress value="{float(state.get("value", 0)):g}" max="{float(state.get("max", 100)):g}">'
                f'</progress>')
    if name in ("HTMLModel", "HTMLMathModel"):  # the kernel's HTML, as trusted as a text/html output
        return f"<span>{state.get('value', '')}</span>"
    if name == "LabelModel":
        return f"<span>{html.escape(str(state.get('value', '')))}</span>"
    if name == "ButtonModel":
        return f"<span>[{html.escape(state.get('description', ''))}]</span>"
    if "value" in state or "index" in state:  # sliders, selections (saved by index), check boxes, text fields
        return _control(state)
    return ""  # layouts, styles, images...: nothing to show


def static_widget_outputs(output, models: dict) -> list:
    """The outputs that stand for the ipywidgets output ``output`` (it has `WIDGET_MIME` data) on a static page:
    first its static record with `WIDGET_NOTE` below it, in one output of the same type (an ``execute_result``
    keeps its prompt), then the outputs its ``Output`` widgets had captured (an explorer's figure). The record
    is drawn from the widget's saved state in ``models`` (a notebook's ``metadata.widgets`` state: model id ->
    model) when it and all its children are there; else it is the text form saved beside the widget (for tqdm,
    its first text frame; for an explorer, the widget's repr) or, with none, just the note."""
    import nbformat

    captured: list = []
    record = _widget_html(output["data"][WIDGET_MIME].get("model_id", ""), models, captured)
    text = output["data"].get("text/plain", "")
    text = "".join(text) if isinstance(text, list) else text
    if record is None:
        captured = []
        record = f"<pre>{html.escape(text)}</pre>" if text.strip() else ""
    note = f'<p class="hk-widget-note">{html.escape(WIDGET_NOTE)}</p>'
    data = {"text/html": f'<div class="hk-widget-record">{record}</div>{note}',
            "text/plain": f"{text}\n{WIDGET_NOTE}" if text.strip() else WIDGET_NOTE}
    first = {"output_type": output["output_type"], "data": data, "metadata": {}}
    if output["output_type"] == "execute_result":
        first["execution_count"] = output.get("execution_count")
    extra = [dict(o, metadata=o.get("metadata", {})) if o.get("output_type") in ("display_data", "execute_result")
             else dict(o) for o in captured if isinstance(o, dict) and "output_type" in o]
    return [nbformat.from_dict(o) for o in [first, *extra]]


def _make_widgets_static(nb) -> int:
    """Replace every widget output of ``nb`` by `static_widget_outputs` (also the widget outputs among those it
    brings in, once per widget: a widget that captured itself shows its text form there) and drop the saved
    widget state; returns the number of widget outputs replaced."""
    state = nb.metadata.pop("widgets", {}).get(WIDGET_STATE_MIME, {})
    models = state.get("state", {}) if isinstance(state, dict) else {}
    replaced = 0
    for cell in nb.cells:
        if "outputs" not in cell:
            continue
        pending, done = [(o, frozenset()) for o in cell.outputs], []
        while pending:
            output, seen = pending.pop(0)
            if WIDGET_MIME not in output.get("data", {}):
                done.append(output)
                continue
            replaced += 1
            model_id = output["data"][WIDGET_MIME].get("model_id", "")
            first, *captured = static_widget_outputs(output, {} if model_id in seen else models)
            done.append(first)
            pending[:0] = [(o, seen | {model_id}) for o in captured]
        cell.outputs = done
    return replaced


def _exporter():
    """nbconvert's HTML exporter with `_TEMPLATE`; consecutive prints to one stream are merged into one block, as
    Jupyter shows them (else a flush's lone newline is a block of its own, an empty output)."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    return HTMLExporter(extra_loaders=[DictLoader({"hedgekit_site.html.j2": _TEMPLATE})],
                        template_file="hedgekit_site.html.j2", mathjax_url=MATHJAX_URL,
                        config=Config({"CoalesceStreamsPreprocessor": {"enabled": True}}))


def render_notebook(nb, name: str, exporter=None) -> tuple[str, bool]:
    """(HTML page, whether it needs plotly.min.js beside it) of the notebook node ``nb``, outputs as committed
    (``nb`` is changed: its plotly outputs gain an HTML form, its widget outputs become static records)."""
    _make_widgets_static(nb)
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
            f"a widget is live only there (here it shows its saved state).</p><ol>{items}</ol></body></html>\n")


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
