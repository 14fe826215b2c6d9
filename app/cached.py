"""The app's test images, models and class-centroid tables, cached for every session of the server.

A model without a checkpoint is trained in a background thread on first use (one job per model, joined by every
session that asks for it) while the page shows its progress. Specs come from `hedgekit.interactive.models.app_spec`
and the pages' own spec functions (`retrieval_spec`, `hedgekit.interactive.prototypes.spe_spec`).
"""
from __future__ import annotations

import threading
import time

import numpy as np
import streamlit as st

from hedgekit.data import load_ndigit
from hedgekit.errors import DataNotFoundError, HedgekitError, InputError
from hedgekit.evaluation.centroids import centroid_table
from hedgekit.interactive import models as app_models
from hedgekit.interactive import retrieval
from hedgekit.interactive.maps import align_tables
from hedgekit.interactive.prototypes import prototype_posterior, prototype_set
from hedgekit.papers.taha.experiments import DIM as RETRIEVAL_DIM
from hedgekit.zoo import find_checkpoint, prototype_head
from state import N_DIGITS


def preset_or_stop() -> str:
    """The models' preset (env var ``HEDGEKIT_PRESET``); stops the page with the error if it is not one."""
    try:
        return app_models.app_preset()
    except InputError as exc:
        st.error(str(exc))
        st.stop()


def model_spec(choice: str, beta: float = app_models.DEFAULT_BETA):
    """The zoo spec of model ``choice`` (a `hedgekit.interactive.models.app_models` key) at the app's preset."""
    return app_models.app_spec(choice, preset_or_stop(), beta, N_DIGITS)


def retrieval_spec():
    """The Retrieval page's model: notebook 08's "Tri + Hetero" model (`hedgekit.papers.taha.experiments.DIM`)."""
    return retrieval.retrieval_spec(RETRIEVAL_DIM, preset_or_stop(), N_DIGITS)


def has_checkpoint(spec) -> bool:
    """Whether ``spec`` is trained already (shipped or cached checkpoint)."""
    return find_checkpoint(spec) is not None


def stop_without_data(exc: DataNotFoundError) -> None:
    """Stop the page with the ways to get the missing dataset (the library's message says them)."""
    st.error("**MNIST is not available**, so the app has no digits to show or train on. Get it one of these "
             f"ways, then reload the page:\n\n```\n{exc}\n```")
    st.stop()


# ------------------------------------------------------------------ test images
def dataset(split: str):
    """The N=2 test split (shared read-only by every session); stops the page if MNIST is missing."""
    try:
        return _dataset(split)
    except DataNotFoundError as exc:
        stop_without_data(exc)


@st.cache_resource(show_spinner="Loading N-digit MNIST test images…")
def _dataset(split: str):
    return load_ndigit(N_DIGITS, split)


def class_index(split: str) -> dict[int, np.ndarray]:
    """class id -> indices of that class' images in ``split``."""
    return _class_index(split, dataset(split).labels)


@st.cache_data(show_spinner=False)
def _class_index(split: str, _labels: np.ndarray) -> dict[int, np.ndarray]:
    return {int(c): np.flatnonzero(_labels == c) for c in np.unique(_labels)}


# ------------------------------------------------------------------ models
class TrainJob:
    """A model being trained in a background thread; shared by every session that needs it."""

    def __init__(self, spec):
        self.spec, self.step, self.error, self.done = spec, None, None, False
        self.t0 = time.perf_counter()
        self.thread = threading.Thread(target=self._run, name=f"train-{spec.name}", daemon=True)

    def _run(self) -> None:
        try:
            app_models.load_model(self.spec, progress=False, callback=self._callback)
        except BaseException as exc:  # noqa: BLE001 - reported by every waiting session
            self.error = exc
        finally:
            self.done = True

    def _callback(self, step: int, row: dict) -> None:
        """Called by the trainer after each step: the progress shown."""
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
def _loaded_model(name: str, _spec):
    """(model, meta) of ``_spec``, cached under its ``name`` (the spec itself is not hashed)."""
    return app_models.load_model(_spec)


def _train_with_progress(spec) -> None:
    """Train ``spec`` (or join the session already training it) while showing a live progress bar."""
    expected = app_models.expected_train_seconds(spec)
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


def get_model(spec):
    """(model, meta) of ``spec``: from the cache, a checkpoint, or trained with progress.

    Stops the page with a clear message if the model cannot be loaded or trained.
    """
    try:
        if not has_checkpoint(spec):
            _train_with_progress(spec)
        return _loaded_model(spec.name, spec)
    except DataNotFoundError as exc:
        stop_without_data(exc)
    except (HedgekitError, FileNotFoundError, RuntimeError) as exc:
        st.error(f"Could not load or train model `{spec.name}`: {exc}")
        st.stop()


# ------------------------------------------------------------------ derived tables
def centroids(spec):
    """`CentroidTable` of model ``spec`` over clean seen and unseen test images (call `get_model(spec)` first)."""
    path = find_checkpoint(spec)
    stamp = f"{path}:{path.stat().st_mtime_ns}" if path is not None else "memory"
    for split in ("test_seen", "test_unseen"):  # a missing MNIST stops the page here, not in the cached function
        dataset(split)
    return _centroids(spec.name, stamp, spec)


@st.cache_data(show_spinner="Computing class centroids…", max_entries=12, persist="disk")
def _centroids(name: str, checkpoint_stamp: str, _spec):
    """Cached on disk per checkpoint file version (``checkpoint_stamp``), so restarts are instant."""
    model, _ = _loaded_model(name, _spec)
    return centroid_table(model, [dataset("test_seen"), dataset("test_unseen")],
                          per_class=app_models.APP_CENTROID_IMAGES)


def alignment(src, dst):
    """Similarity map from model ``src``'s 2D view onto model ``dst``'s (fitted on class centroids)."""
    return _alignment(src.name, dst.name, src, dst)


@st.cache_data(show_spinner=False, max_entries=24)
def _alignment(src_name: str, dst_name: str, _src, _dst):
    """Cached per pair of model names (the specs themselves are not hashed)."""
    return align_tables(centroids(_src), centroids(_dst))


# ------------------------------------------------------------------ retrieval page
def gallery(spec, model):
    """`hedgekit.interactive.retrieval.RetrievalGallery` of the retrieval model ``spec`` (embedded once per server)."""
    dataset("test_unseen")  # a missing MNIST stops the page here, not in the cached function
    return _gallery(spec.name, model)


@st.cache_resource(show_spinner="Embedding the gallery…", max_entries=4)
def _gallery(name: str, _model):
    return retrieval.retrieval_gallery(_model, _dataset("test_unseen"))


def cleaning(spec, model, fractions: tuple[float, ...], random: bool = False) -> list[dict]:
    """`hedgekit.interactive.retrieval.cleaning_map` of the retrieval gallery, cached per model, fractions and mode."""
    return _cleaning(spec.name, tuple(float(f) for f in fractions), random, gallery(spec, model))


@st.cache_data(show_spinner=False, max_entries=256)
def _cleaning(name: str, fractions: tuple[float, ...], random: bool, _gallery):
    return retrieval.cleaning_map(_gallery, fractions, random=random)


# ------------------------------------------------------------------ SPE (compare page)
def prototypes(spec, model, meta):
    """(`hedgekit.interactive.prototypes.PrototypeSet`, SPE head) of the SPE model ``spec``: prototypes from
    training images."""
    dataset("test_seen")  # a missing MNIST stops the page here, not in the cached function
    return _prototypes(spec.name, model, meta)


@st.cache_resource(show_spinner="Building SPE class prototypes from training images…", max_entries=4)
def _prototypes(name: str, _model, _meta):
    head = prototype_head(_meta)
    return prototype_set(_model, head, load_ndigit(N_DIGITS, "train")), head


def posterior(spec, model, meta, image: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """p(y | x, S) of the occluded image under SPE model ``spec``
    (`hedgekit.interactive.prototypes.prototype_posterior`)."""
    protos, head = prototypes(spec, model, meta)
    boxes = np.asarray(boxes, np.int64).reshape(-1, 4)
    return _posterior(spec.name, image.tobytes(), boxes.tobytes(), image, boxes, model, head, protos)


@st.cache_data(show_spinner=False, max_entries=256)
def _posterior(name: str, image_bytes: bytes, boxes_bytes: bytes, _image, _boxes, _model, _head, _protos):
    return prototype_posterior(_model, _head, _image, _boxes, _protos)
