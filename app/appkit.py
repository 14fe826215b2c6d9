"""Shared UI plumbing of the hedgekit app: caches, model loading with progress, session state.

Thin on purpose: all maths is in `hedgekit.playground`, all figures in
`hedgekit.plots.interactive`. Per-session state lives in ``st.session_state`` only
(no module-level mutable state), so several browser sessions never interfere.

Session-state keys
* ``hk_v_<name>``: the value of setting <name> (model, image choice, sliders...).
  Streamlit drops a widget's value when the widget is not drawn (e.g. on another
  page), so the value lives here and the widget ``w_<name>`` is only a view of it:
  `bound` restores the widget's value before drawing it, `_changed` copies user
  edits back (see `widget`). Works the same on every Streamlit version.
* ``hk_*``: plain values the app keeps: drawn rectangles, undo history, trails,
  one-shot messages, and ``hk_view`` (what the playground last showed: eta,
  ellipse size, top-5; read by the tests).
"""
from __future__ import annotations

import hashlib
import os
import threading
import time

import numpy as np
import streamlit as st

from hedgekit import playground as pg
from hedgekit.data import load_ndigit
from hedgekit.data.occlusion import DIGIT_SIZE
from hedgekit.errors import HedgekitError, InputError

N_DIGITS = 2
SHAPE = (DIGIT_SIZE, N_DIGITS * DIGIT_SIZE)
SPLITS = {"test_seen": "seen classes", "test_unseen": "unseen classes (zero-shot)"}
DIGIT_NAMES = ("left (tens)", "right (ones)")
NOTEBOOKS = {
    "02": ("notebooks/02_hib_embeddings.ipynb", "HIB embeddings: ellipses of clean vs corrupt digits (HIB Fig. 3-4)"),
    "03": ("notebooks/03_self_organization.ipynb",
           "how the classes organise by tens and ones digit (HIB sec. 4.2, App. D)"),
    "04": ("notebooks/04_known_unknowns.ipynb", "eta(x) and known unknowns (HIB sec. 2.4, 4.4, Fig. 5)"),
}


# ------------------------------------------------------------------ state helpers
V, W = "hk_v_", "w_"


def init(name: str, value) -> None:
    """Give setting ``name`` its first value in this session."""
    if V + name not in st.session_state:
        st.session_state[V + name] = value


def get(name: str):
    return st.session_state[V + name]


def put(name: str, value) -> None:
    """Set setting ``name`` (from callbacks, or before its widget is drawn in this run)."""
    st.session_state[V + name] = value
    st.session_state[W + name] = value


def bound(name: str) -> str:
    """The widget key for setting ``name``, its value restored if Streamlit dropped it."""
    if W + name not in st.session_state:
        st.session_state[W + name] = st.session_state[V + name]
    return W + name


def _changed(name: str, then=None) -> None:
    st.session_state[V + name] = st.session_state[W + name]
    if then is not None:
        then()


def widget(factory, label: str, name: str, *args, on_change=None, **kwargs):
    """Draw ``factory(label, *args, ...)`` (st.toggle, st.slider, ...) as a view of setting ``name``."""
    return factory(label, *args, key=bound(name), on_change=_changed, args=(name, on_change), **kwargs)


def flash(level: str, message: str) -> None:
    """Queue a message shown once at the next `show_flashes` (survives the rerun of a callback)."""
    st.session_state.setdefault("hk_flash", []).append((level, message))


def show_flashes() -> None:
    for level, message in st.session_state.pop("hk_flash", []):
        getattr(st, level)(message)


def is_dark() -> bool:
    try:
        return st.context.theme.type == "dark"
    except Exception:  # older Streamlit / no browser (AppTest)
        return False


def preset_or_stop() -> str:
    try:
        return pg.app_preset()
    except InputError as exc:
        st.error(str(exc))
        st.stop()


def notebook_links(*which: str) -> str:
    """Markdown lines pointing at the matching notebooks (a URL base can be set by env var)."""
    base = os.environ.get("HEDGEKIT_NOTEBOOK_BASE_URL", "").rstrip("/")
    lines = []
    for n in which:
        path, what = NOTEBOOKS[n]
        link = f"[`{path}`]({base}/{path})" if base else f"`{path}`"
        lines.append(f"- {link}: {what}")
    if not base:
        lines.append("\nOpen them with `jupyter lab notebooks/` from the repository root.")
    return "\n".join(lines)


# ------------------------------------------------------------------ data and models
@st.cache_resource(show_spinner="Loading N-digit MNIST test images…")
def dataset(split: str):
    """The N=2 test split (shared read-only by every session)."""
    return load_ndigit(N_DIGITS, split)


@st.cache_data(show_spinner=False)
def class_index(split: str) -> dict[int, np.ndarray]:
    """class id -> indices of that class' images in ``split``."""
    labels = dataset(split).labels
    return {int(c): np.flatnonzero(labels == c) for c in np.unique(labels)}


class TrainJob:
    """A model being trained in a background thread; shared by every session that needs it."""

    def __init__(self, spec):
        self.spec, self.step, self.error, self.done = spec, None, None, False
        self.t0 = time.perf_counter()
        self.thread = threading.Thread(target=self._run, name=f"train-{spec.name}", daemon=True)

    def _run(self) -> None:
        try:
            pg.load_model(self.spec, progress=False, callback=self._callback)
        except BaseException as exc:  # noqa: BLE001 - reported by every waiting session
            self.error = exc
        finally:
            self.done = True

    def _callback(self, step: int, row: dict) -> None:  # used once hedgekit.zoo forwards `callback`
        self.step = step


@st.cache_resource(show_spinner=False)
def _jobs() -> tuple[threading.Lock, dict]:
    """Process-wide registry of training jobs (a cached resource: one per server, not per session)."""
    return threading.Lock(), {}


def _training_job(spec) -> TrainJob:
    """The running job for ``spec``, started if none is running (or the last one failed)."""
    lock, jobs = _jobs()
    with lock:
        job = jobs.get(spec.name)
        if job is None or (job.done and job.error is not None):
            job = jobs[spec.name] = TrainJob(spec)
            job.thread.start()
        return job


@st.cache_resource(show_spinner=False, max_entries=12)
def _loaded_model(name: str):
    from hedgekit.zoo import spec_from_name

    return pg.load_model(spec_from_name(name))


def _train_with_progress(spec) -> None:
    """Train ``spec`` (or join the session already training it) while showing a live progress bar."""
    expected = pg.expected_train_seconds(spec)
    total = spec.train_config().steps
    job = _training_job(spec)
    with st.status(f"Training {spec.label} ({spec.name}): first use only, about {expected} s on 2 CPU cores",
                   expanded=True) as status:
        bar = st.progress(0.0, text="starting…")
        while not job.done:
            job.thread.join(0.5)
            el = time.perf_counter() - job.t0
            if job.step is not None:
                frac, text = (job.step + 1) / total, f"step {job.step + 1} of {total}, {el:.0f} s"
            else:
                frac, text = el / expected, f"{el:.0f} s of about {expected} s"
            bar.progress(min(0.97, frac), text=text)
        if job.error is not None:
            status.update(label=f"Training {spec.label} failed", state="error")
            raise job.error
        status.update(label=f"{spec.label} ready (trained in {time.perf_counter() - job.t0:.0f} s)",
                      state="complete", expanded=False)


def get_model(name: str):
    """(model, meta) for a zoo model name: from the cache, a checkpoint, or trained with progress.

    Stops the page with a clear message if the model cannot be loaded or trained.
    """
    from hedgekit.zoo import find_checkpoint, spec_from_name

    spec = spec_from_name(name)
    try:
        if find_checkpoint(spec) is None:
            _train_with_progress(spec)
        return _loaded_model(name)
    except (HedgekitError, FileNotFoundError, RuntimeError) as exc:
        st.error(f"Could not load or train model `{name}`: {exc}")
        st.stop()


def spec_name(choice: str, beta: float = pg.DEFAULT_BETA) -> str:
    return pg.app_spec(choice, preset_or_stop(), beta, N_DIGITS).name


def centroids(name: str):
    """`CentroidTable` over clean seen and unseen test images (call `get_model(name)` first)."""
    from hedgekit.zoo import find_checkpoint, spec_from_name

    path = find_checkpoint(spec_from_name(name))
    stamp = f"{path}:{path.stat().st_mtime_ns}" if path is not None else "memory"
    return _centroids(name, stamp)


@st.cache_data(show_spinner="Computing class centroids…", max_entries=12, persist="disk")
def _centroids(name: str, checkpoint_stamp: str):
    """Cached on disk per checkpoint file version (``checkpoint_stamp``), so restarts are instant."""
    model, _ = _loaded_model(name)
    return pg.centroid_table(model, [dataset("test_seen"), dataset("test_unseen")], per_class=pg.APP_CENTROID_IMAGES)


@st.cache_data(show_spinner=False, max_entries=24)
def alignment(src: str, dst: str):
    """Similarity map from model ``src``'s 2D view onto ``dst``'s (fitted on class centroids)."""
    return pg.align_tables(centroids(src), centroids(dst))


# ------------------------------------------------------------------ the current input
def init_state() -> None:
    """First values of the input and occlusion state of this session."""
    init("source", "test set")
    init("split", "test_seen")
    init("class", "any")
    init("example", 0)
    init("corrupt", False)
    for j in range(N_DIGITS):
        init(f"dig{j}_on", False)
        init(f"dig{j}_rows", (0, DIGIT_SIZE))
        init(f"dig{j}_cols", (0, DIGIT_SIZE))
    st.session_state.setdefault("hk_drawn", [])
    st.session_state.setdefault("hk_history", [])
    st.session_state.setdefault("hk_sel_n", 0)


def _pick_random() -> None:
    split, cls = get("split"), get("class")
    index = class_index(split)
    n = len(index[cls]) if cls in index else len(dataset(split))
    put("example", int(np.random.default_rng().integers(n)))


def canvas_component():
    """``st_canvas`` of the optional package streamlit-drawable-canvas, or None if it is not installed."""
    try:
        from streamlit_drawable_canvas import st_canvas
    except ImportError:
        return None
    return st_canvas


def _drawing() -> None:
    """The "draw" source: a canvas whose strokes become a 28 x 56 MNIST-style image."""
    st_canvas = canvas_component()
    st.caption("Draw two digits side by side, one in each half (white on black, like MNIST).")
    res = st_canvas(stroke_width=18, stroke_color="#ffffff", background_color="#000000", height=200, width=400,
                    drawing_mode="freedraw", return_image_data=True, key="hk_canvas", update_streamlit=True)
    data = getattr(res, "image_data", None)
    if data is not None and np.asarray(data)[..., :3].max() > 0:
        img = pg.image_from_drawing(data, N_DIGITS)
        st.session_state["hk_draw_img"] = img
        st.session_state["hk_draw_key"] = "draw:" + hashlib.sha1(img.tobytes()).hexdigest()[:12]


def image_picker() -> tuple[str, np.ndarray, np.ndarray]:
    """Widgets choosing the input; returns (image_key, clean image, starting boxes)."""
    init_state()
    sources = ["test set", "upload"] + (["draw"] if canvas_component() is not None else [])
    if get("source") not in sources:
        put("source", "test set")
    widget(st.radio, "Image source", "source", sources, horizontal=True,
           help="A 2-digit test image, your own 56 x 28 pixel image (white digits on black), or a drawing "
                "(needs the optional package streamlit-drawable-canvas).")
    if get("source") == "draw":
        _drawing()
        if "hk_draw_img" in st.session_state:
            return current_image()
        st.info("Nothing drawn yet: showing a test image.")
    if get("source") == "upload":
        up = st.file_uploader("Upload a 56 x 28 px image (PNG/JPEG, two digits side by side)", key="hk_upload")
        if up is not None:
            data = up.getvalue()
            try:
                img = pg.image_from_bytes(data, SHAPE)
            except InputError as exc:
                st.error(f"Cannot use **{up.name}**: {exc}. Showing the last valid image instead.")
            else:
                st.session_state["hk_upload_img"] = img
                st.session_state["hk_upload_key"] = "upload:" + hashlib.sha1(data).hexdigest()[:12]
        if "hk_upload_img" in st.session_state:
            return current_image()
        st.info("No image uploaded yet: showing a test image.")
    c1, c2 = st.columns([3, 2])
    with c1:
        widget(st.radio, "Classes", "split", list(SPLITS), format_func=SPLITS.get, horizontal=True,
               on_change=lambda: (put("class", "any"), put("example", 0)))
    index = class_index(get("split"))
    with c2:
        widget(st.selectbox, "Class", "class", ["any"] + sorted(index),
               format_func=lambda c: "any class" if c == "any" else f"{c:0{N_DIGITS}d}",
               on_change=lambda: put("example", 0))
    cls = get("class")
    n = len(index[cls]) if cls in index else len(dataset(get("split")))
    if not 0 <= get("example") < n:
        put("example", 0)
    c1, c2, c3 = st.columns([4, 3, 4], vertical_alignment="bottom")
    with c1:
        widget(st.number_input, f"Example (0–{n - 1})", "example", min_value=0, max_value=n - 1, step=1)
    with c2:
        st.button("Random", key="hk_random", icon=":material/casino:", on_click=_pick_random,
                  help="A random example (of the chosen class)")
    with c3:
        widget(st.toggle, "Start corrupt", "corrupt",
               help="Start from the test set's occluded twin (HIB App. A): its rectangles become editable.")
    return current_image()


def current_image() -> tuple[str, np.ndarray, np.ndarray]:
    """(image_key, clean image, starting boxes) of the input chosen in session state (no widgets)."""
    init_state()
    s = st.session_state
    if get("source") == "upload" and "hk_upload_img" in s:
        return s["hk_upload_key"], s["hk_upload_img"], np.zeros((0, 4), np.int64)
    if get("source") == "draw" and "hk_draw_img" in s:
        return s["hk_draw_key"], s["hk_draw_img"], np.zeros((0, 4), np.int64)
    split = get("split") if get("split") in SPLITS else "test_seen"
    index = class_index(split)
    cls = get("class")
    members = index[cls] if cls in index else np.arange(len(dataset(split)))
    k = int(get("example"))
    i = int(members[k if 0 <= k < len(members) else 0])
    ds = dataset(split)
    corrupt = bool(get("corrupt"))
    boxes = ds.boxes[i] if corrupt else np.zeros((0, 4), np.int64)
    boxes = boxes[(boxes[:, 2] > 0) & (boxes[:, 3] > 0)]
    return f"{split}:{i}:{int(corrupt)}", ds.images[i], boxes


# ------------------------------------------------------------------ occlusion state + undo
def _snapshot() -> dict:
    return {"drawn": [list(map(int, b)) for b in st.session_state.get("hk_drawn", [])],
            "sliders": {j: (bool(get(f"dig{j}_on")), tuple(get(f"dig{j}_rows")), tuple(get(f"dig{j}_cols")))
                        for j in range(N_DIGITS)}}


def _apply(snap: dict) -> None:
    st.session_state["hk_drawn"] = [list(b) for b in snap["drawn"]]
    for j, (on, rows, cols) in snap["sliders"].items():
        put(f"dig{j}_on", on)
        put(f"dig{j}_rows", tuple(rows))
        put(f"dig{j}_cols", tuple(cols))
    st.session_state["hk_last"] = _snapshot()


def _empty_snapshot(drawn=()) -> dict:
    return {"drawn": [list(map(int, b)) for b in drawn],
            "sliders": {j: (False, (0, DIGIT_SIZE), (0, DIGIT_SIZE)) for j in range(N_DIGITS)}}


def _push() -> None:
    hist = st.session_state.setdefault("hk_history", [])
    hist.append(st.session_state.get("hk_last") or _empty_snapshot())
    del hist[:-50]


def commit() -> None:
    """on_change of every occlusion widget: remember the previous state for undo."""
    _push()
    st.session_state["hk_last"] = _snapshot()


def undo() -> None:
    hist = st.session_state.get("hk_history", [])
    if hist:
        _apply(hist.pop())
    else:
        flash("info", "Nothing to undo.")


def reset() -> None:
    _push()
    _apply(_empty_snapshot())


def hide_digit(j: int) -> None:
    _push()
    put(f"dig{j}_on", True)
    put(f"dig{j}_rows", (0, DIGIT_SIZE))
    put(f"dig{j}_cols", (0, DIGIT_SIZE))
    st.session_state["hk_last"] = _snapshot()


def add_box(box) -> None:
    _push()
    st.session_state["hk_drawn"] = st.session_state.get("hk_drawn", []) + [list(map(int, box))]
    st.session_state["hk_last"] = _snapshot()


def on_image(key: str, start_boxes: np.ndarray) -> None:
    """A new input: fresh rectangles (the corrupt twin's, if asked), empty undo history and trails."""
    if st.session_state.get("hk_image_key") == key:
        return
    st.session_state["hk_image_key"] = key
    st.session_state["hk_history"] = []
    st.session_state["hk_trails"] = {}
    _apply(_empty_snapshot(start_boxes))


def selection_key() -> str:
    return f"hk_img_sel_{st.session_state.get('hk_sel_n', 0)}"


def on_box_select() -> None:
    """on_select of the image chart: turn the dragged rectangle into an occluding box."""
    key = selection_key()
    state = st.session_state.get(key)
    st.session_state["hk_sel_n"] = st.session_state.get("hk_sel_n", 0) + 1  # fresh chart = cleared selection
    try:
        sel = state["selection"]["box"] if state else []
    except (KeyError, TypeError):
        sel = []
    if not sel:
        return
    try:
        box = pg.box_from_drag(sel[-1]["x"], sel[-1]["y"], SHAPE)
    except (InputError, KeyError) as exc:
        flash("warning", f"That rectangle was not applied: {exc}.")
        return
    add_box(box)


def current_boxes() -> tuple[np.ndarray, list[str]]:
    """All occluding boxes now (drawn + per-digit sliders) and notes about ignored ones."""
    init_state()
    boxes, notes = [list(b) for b in st.session_state.get("hk_drawn", [])], []
    for j in range(N_DIGITS):
        if get(f"dig{j}_on"):
            b = pg.digit_box(j, get(f"dig{j}_rows"), get(f"dig{j}_cols"), N_DIGITS)
            if b is None:
                notes.append(f"The rectangle on the {DIGIT_NAMES[j]} digit has zero area (rows or columns "
                             "slider closed), so it hides nothing: widen both ranges.")
            else:
                boxes.append(b.tolist())
    return np.array(boxes, dtype=np.int64).reshape(-1, 4), notes


def occlusion_controls() -> None:
    """Quick buttons, undo/reset, and the per-digit sliders for exact rectangles."""
    c = st.columns(4)
    c[0].button("Hide left", key="hk_hide0", on_click=hide_digit, args=(0,), width="stretch",
                help="Black out the whole left (tens) digit")
    c[1].button("Hide right", key="hk_hide1", on_click=hide_digit, args=(1,), width="stretch",
                help="Black out the whole right (ones) digit")
    c[2].button("Undo", key="hk_undo", icon=":material/undo:", on_click=undo, width="stretch",
                disabled=not st.session_state.get("hk_history"))
    c[3].button("Reset", key="hk_reset", on_click=reset, width="stretch", help="Remove every rectangle")
    with st.expander("Exact rectangles, one per digit (sliders)", expanded=False):
        for j in range(N_DIGITS):
            widget(st.toggle, f"Occlude the {DIGIT_NAMES[j]} digit", f"dig{j}_on", on_change=commit)
            a, b = st.columns(2)
            off = not get(f"dig{j}_on")
            with a:
                widget(st.slider, "rows (top → bottom)", f"dig{j}_rows", 0, DIGIT_SIZE, on_change=commit,
                       disabled=off)
            with b:
                widget(st.slider, "columns (left → right)", f"dig{j}_cols", 0, DIGIT_SIZE, on_change=commit,
                       disabled=off)


def trail_for(model_name: str) -> list[dict]:
    return st.session_state.setdefault("hk_trails", {}).get(model_name, [])


def set_trail(model_name: str, trail: list[dict]) -> None:
    st.session_state.setdefault("hk_trails", {})[model_name] = trail


def clean_reference(name: str, image_key: str, model, image, table) -> float:
    """eta of the un-occluded image (the gauge's reference), remembered per model and image."""
    refs = st.session_state.setdefault("hk_clean_eta", {})
    k = f"{name}|{image_key}"
    if k not in refs:
        refs[k] = pg.analyse(model, image, (), table).eta
        if len(refs) > 200:
            refs.pop(next(iter(refs)))
    return refs[k]
