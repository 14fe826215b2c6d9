"""Shared test setup: one torch thread (the CI machine has 2 shared cores), the app's fast-preset models
(trained once per session, about 45 s per model), and tests marked ``gpu`` skipped, with the reason, where
``torch.cuda.is_available()`` is False (`pytest_collection_modifyitems`; tests/gpu_check.sh runs them on a GPU
machine).

Tests do not depend on each other: the session runs with ``HEDGEKIT_DATA`` set to an empty
folder of its own (`pytest_configure`; with pytest-xdist each worker has its own, so two workers never share a
half-written cache), and the run fails if it changed the repository's ``data/`` folder (`pytest_sessionstart`,
`pytest_sessionfinish`; tests/test_isolation.py checks both)."""
import os
import stat
from pathlib import Path

import numpy as np
import pytest
import torch
from nbmake import nb_run

from hedgekit.data import NDigitSet, load_ndigit, occlude, sample_digit_boxes
from hedgekit.data.ndigit import spelled_number
from hedgekit.evaluation.centroids import centroid_table
from hedgekit.interactive.models import APP_CENTROID_IMAGES, DEFAULT_MODEL, POINT_MODEL, app_spec, load_model
from hedgekit.paths import REPO_DIR
from hedgekit.repro.kernel_channels import steady_notebook_client

HIB, MOG2, POINT = DEFAULT_MODEL, "MoG-2, D=2", POINT_MODEL
NO_CUDA = "needs a CUDA GPU: torch.cuda.is_available() is False here (tests/gpu_check.sh runs the gpu tests on one)"
REPO_DATA = REPO_DIR / "data"  # `hedgekit.paths.data_dir()` without HEDGEKIT_DATA: a run must leave it as found
_DATA_LISTING = pytest.StashKey[dict]()
_PREVIOUS_ENV = pytest.StashKey[dict]()
# environment variable -> name of the empty folder `pytest_configure` points it at for the session
_SESSION_FOLDERS = {"HEDGEKIT_DATA": "hedgekit-data", "HEDGEKIT_LEDGER": "hedgekit-ledger"}
collect_ignore_glob = ["fixtures/*.ipynb"]  # the lesson machinery's fixture is not a notebook of the kit


def data_listing(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: relative POSIX path -> () for a folder, (size, mtime_ns) for anything else (a
    symbolic link is not followed); {} if ``root`` is absent."""
    listing = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            st = path.lstat()
            listing[path.relative_to(root).as_posix()] = () if stat.S_ISDIR(st.st_mode) else (st.st_size,
                                                                                               st.st_mtime_ns)
    return listing


def listing_changes(before: dict, after: dict) -> list[str]:
    """What differs between two `data_listing`s, one line per path ("added x", "removed x", "changed x")."""
    return sorted([f"added {p}" for p in after.keys() - before.keys()]
                  + [f"removed {p}" for p in before.keys() - after.keys()]
                  + [f"changed {p}" for p in before.keys() & after.keys() if before[p] != after[p]])


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")  # the controller (or a run without xdist) checks data/ once for all


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """`REPO_DATA` as found, before collection (and before any xdist worker starts)."""
    if not _is_xdist_worker(session.config):
        session.config.stash[_DATA_LISTING] = data_listing(REPO_DATA)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    """Fail the run (exit status 1, the changed paths listed) if it changed `REPO_DATA`: a test that wrote there
    instead of into its HEDGEKIT_DATA (the repository's data/ is left as it was found)."""
    if _is_xdist_worker(session.config) or _DATA_LISTING not in session.config.stash:
        return
    changes = listing_changes(session.config.stash[_DATA_LISTING], data_listing(REPO_DATA))
    if not changes:
        return
    shown = changes[:20] + ([f"... and {len(changes) - 20} more"] if len(changes) > 20 else [])
    message = (f"ERROR: this test run changed {REPO_DATA}, which tests must leave as they found it (they write "
               "into their own HEDGEKIT_DATA, tests/conftest.py):\n  " + "\n  ".join(shown))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, red=True, bold=True)
    else:
        print(message)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# The packages whose versions can change the suite's outcome, shown in the run's header (CI shows what it
# installed; constraints.txt pins them).
REPORTED_PACKAGES = ("torch", "numpy", "scipy", "pandas", "pytest", "pytest-xdist", "nbmake", "papermill", "nbclient",
                     "ipykernel", "streamlit", "playwright", "plotly", "matplotlib", "cleanlab")


def pytest_report_header(config):
    """One header line with the installed version of each of `REPORTED_PACKAGES` ("-" where it is missing)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "-"

    return "versions: " + ", ".join(f"{name} {installed(name)}" for name in REPORTED_PACKAGES)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """``HEDGEKIT_DATA`` for the whole session: an empty folder under pytest's base temporary folder, outside the
    repository, so no test reads what an earlier run left behind and none writes into `REPO_DATA`; likewise
    ``HEDGEKIT_LEDGER`` (`hedgekit.zoo.ledger`), so that no test decides on or writes into the committed ledger. Under
    pytest-xdist each worker has its own base folder, hence its own cache: no two processes write the same cache
    file, at the price of models both workers need being trained twice. Set here, before any test or notebook
    runs, so the notebooks' kernels (nbmake, `pytest_collection_modifyitems`) and every subprocess inherit it; a
    test that sets its own (``monkeypatch.setenv``) gets this one back afterwards.

    nbmake's notebook runs wait on their kernels as every run of the kit does (`steady_notebook_client`): with
    nbclient's own waits a widget cell can leave a run waiting out the whole cell timeout for a reply already in."""
    nb_run.NotebookClient = steady_notebook_client()
    if config.getoption("numprocesses", None) and not _is_xdist_worker(config):
        return  # the pytest-xdist controller runs no test: its workers make their own
    config.stash[_PREVIOUS_ENV] = {name: os.environ.get(name) for name in _SESSION_FOLDERS}
    for name, folder in _SESSION_FOLDERS.items():
        os.environ[name] = str(config._tmp_path_factory.mktemp(folder))


def pytest_unconfigure(config):
    """``HEDGEKIT_DATA`` and ``HEDGEKIT_LEDGER`` back to what they were before the session."""
    if _PREVIOUS_ENV not in config.stash:
        return
    for name, previous in config.stash[_PREVIOUS_ENV].items():
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def _is_notebook_run(item) -> bool:
    return getattr(item, "nbmake", False)  # nbmake's item for one notebook: a learner's Run All


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each notebook's Run All (an nbmake item: the notebook with its default parameters, as a learner's Run All
    executes it, FAST = True) is marked ``slow`` (the quick tier leaves them out; before the mark filter runs).
    Every test marked ``gpu`` (on itself, its class or its module) is skipped with `NO_CUDA` when CUDA is not
    available; with CUDA every test runs. Asked at collection time, so a monkeypatched check in a test changes
    nothing here."""
    for item in items:
        if _is_notebook_run(item):
            item.add_marker(pytest.mark.slow)
    if torch.cuda.is_available():
        return
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(pytest.mark.skip(reason=NO_CUDA))


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def fast_models():
    """The app's default models at the fast preset (trained once per session into its HEDGEKIT_DATA)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEDGEKIT_PRESET", "fast")
        yield {c: load_model(app_spec(c, "fast"))[0] for c in (HIB, MOG2, POINT)}


@pytest.fixture(scope="session")
def test_seen():
    return load_ndigit(2, "test_seen")


@pytest.fixture(scope="session")
def hib_table(fast_models, test_seen):
    return centroid_table(fast_models[HIB], [test_seen], per_class=APP_CENTROID_IMAGES)


@pytest.fixture
def untrained():
    """``untrained(dim, components, kind)``: the app's network for that model, untrained (seeded)."""
    def build(dim=2, components=1, kind="hib"):
        torch.manual_seed(0)
        spec = app_spec({(2, 1, "hib"): HIB, (2, 2, "hib"): MOG2, (2, 1, "point"): POINT,
                            (3, 1, "hib"): "MoG-1 (HIB), D=3 (2D projection)"}[(dim, components, kind)], "fast")
        return spec.build().eval()

    return build


@pytest.fixture(scope="session")
def tiny_ndigit():
    """``tiny_ndigit(n_digits, split, n_images, classes=None, seed=0)``: a small synthetic `NDigitSet` (digit value
    v is a fixed random glyph + noise; test splits fully occluded), so load-or-train and evaluation run in seconds."""
    def tiny_ndigit(n_digits: int, split: str, n_images: int, classes=None, seed: int = 0) -> NDigitSet:
        """A small synthetic NDigitSet: digit value v is a fixed random glyph + noise; test splits fully occluded."""
        glyphs = (np.random.default_rng(1234).random((10, 28, 28)) > 0.75) * 200.0
        rng = np.random.default_rng([seed, n_digits, len(split)])
        classes = np.arange(10**n_digits) if classes is None else np.asarray(classes)
        labels = rng.permutation(classes[np.arange(n_images) % len(classes)]).astype(np.int64)
        digits = (labels[:, None] // 10 ** np.arange(n_digits - 1, -1, -1) % 10).astype(np.int64)
        img = glyphs[digits].transpose(0, 2, 1, 3).reshape(n_images, 28, 28 * n_digits)
        img = np.clip(img + rng.normal(0, 30, img.shape), 0, 255).astype(np.uint8)
        boxes = sample_digit_boxes(rng, n_images, n_digits, 0.2 if split == "train" else 1.0)
        assert np.array_equal(spelled_number(digits), labels)
        return NDigitSet(img, occlude(img, boxes), labels, digits, boxes, n_digits, split)


    return tiny_ndigit


@pytest.fixture
def tmp_ledger(tmp_path, monkeypatch):
    """A ledger of the test's own (``HEDGEKIT_LEDGER`` = tmp_path/ledger) and ``add(spec, measures, device="cpu",
    group=None, train_seconds=12.5, job_seconds=None)``, which records ``measures`` of the model ``spec`` there as
    its checkpoint's group (``table1`` for point / hib, `hedgekit.zoo.ledger.CHECKPOINT_GROUPS`) unless ``group``
    says another, from a stand-in checkpoint file (its bytes name the model and the measures), with ``job_seconds``
    where given, and returns the record; ``add.folder`` is the ledger's folder."""
    from hedgekit.zoo import ledger

    folder = tmp_path / "ledger"
    monkeypatch.setenv("HEDGEKIT_LEDGER", str(folder))

    def add(spec, measures, device="cpu", group=None, train_seconds=12.5, job_seconds=None):
        checkpoint = tmp_path / "recorded" / f"{spec.name}.pt"  # not in a cache: HEDGEKIT_DATA may be tmp_path
        checkpoint.parent.mkdir(exist_ok=True)
        checkpoint.write_bytes(repr((spec.name, sorted(measures.items()))).encode())
        meta = {"device": device, "train_seconds": train_seconds, "versions": {"torch": "2.13.0+cpu", "hedgekit": "0.1.0"},
                "data": {"fingerprint": "20f6a746239647d1"}, "train_config": {"precision": "float32"}}
        record = ledger.build_record(spec, group or ledger.CHECKPOINT_GROUPS[spec.family], measures, meta, checkpoint)
        return ledger.append(record if job_seconds is None else {**record, "job_seconds": job_seconds})

    add.folder = folder
    return add


@pytest.fixture(scope="session")
def bad_images():
    """``bad_images(shape=(1, 28, 56), n=3)``: (name, what, images, message regex) for every kind of bad image batch
    a public entry point must refuse: ``what`` is "range", "finite", "dtype", "shape", "type" or "empty"."""
    def make(shape=(1, 28, 56), n=3):
        ok = torch.rand(n, *shape, generator=torch.Generator().manual_seed(0))

        def poke(value, dtype=torch.float32):
            x = ok.clone().to(dtype)
            x[n - 1, 0, shape[1] // 2, shape[2] // 2] = value
            return x

        rng_msg, fin_msg, dt_msg = r"float pixels in \[0, 1\]; got values in", "NaN or inf pixels", "must be float in"
        shp_msg = r"expected .*of shape \(B, " + ", ".join(map(str, shape)) + r"\)"
        return [
            ("0..255 floats", "range", ok * 255, rng_msg + r".*0\.\.255"),
            ("1e30", "range", poke(1e30), rng_msg),
            ("slightly above 1", "range", poke(1.0001), rng_msg),
            ("negative", "range", poke(-1e-3), rng_msg),
            ("float64 -5", "range", poke(-5.0, torch.float64), rng_msg),
            ("float16 2", "range", poke(2.0, torch.float16), rng_msg),
            ("nan", "finite", poke(float("nan")), fin_msg),
            ("+inf", "finite", poke(float("inf")), fin_msg),
            ("-inf", "finite", poke(float("-inf")), fin_msg),
            ("int64 0..255", "dtype", (ok * 255).long(), dt_msg),
            ("int32", "dtype", (ok > 0.5).int(), dt_msg),
            ("bool", "dtype", ok > 0.5, dt_msg),
            ("complex", "dtype", ok.to(torch.complex64), dt_msg),
            ("wrong width", "shape", ok[..., : shape[2] // 2], shp_msg),
            ("wrong channels", "shape", ok.expand(n, 3, *shape[1:]), shp_msg),
            ("one 2-D image", "shape", ok[0, 0], shp_msg),
            ("5-D", "shape", ok[None], shp_msg),
            ("numpy array", "type", ok.numpy(), "torch.Tensor"),
            ("list", "type", ok.tolist(), "torch.Tensor"),
            ("empty batch", "empty", ok[:0], "empty batch"),
        ]

    return make


@pytest.fixture(scope="session", autouse=True)
def _streamlit_disk_cache_in_a_temp_dir(request, tmp_path_factory):
    """`st.cache_data(persist="disk")` writes to ~/.streamlit/cache: the app tests' entries go to a temp dir instead
    (only when app tests run, so other runs do not pay for importing streamlit)."""
    if not any("tests/app/" in item.nodeid or item.nodeid.startswith("app/") for item in request.session.items):
        yield
        return
    from streamlit.runtime.caching.storage import local_disk_cache_storage as storage

    folder = str(tmp_path_factory.mktemp("streamlit_cache"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(storage, "get_cache_folder_path", lambda: folder)
        yield


# ------------------------------------------------------------------ headless Chromium (the tests marked browser)
CHROMIUM = "/usr/bin/chromium"  # Debian's chromium (.ci/run installs it); the playwright package drives it
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser(request):
    """Headless Chromium for a module of browser tests, with the module's ``WAIT_MS`` as the timeout of every
    ``expect``; the test is skipped, with the reason, without `CHROMIUM` or the playwright package."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python package only)")
    sync_api.expect.set_options(timeout=request.module.WAIT_MS)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
