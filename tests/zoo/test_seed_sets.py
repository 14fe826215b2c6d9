"""Tests of hedgekit.zoo.seed_sets: a seed set trained stacked by ``reproduce --train-missing`` on a launch-bound
device is saved as the one-by-one path saves each seed. The CPU takes the stacked path inside
`hedgekit.hardware.as_launch_bound` (what `launch_bound` says on CUDA and MPS)."""
import pytest
import torch

from hedgekit import zoo
from hedgekit.data import load_ndigit, random_occlusion
from hedgekit.errors import InputError
from hedgekit.hardware import as_launch_bound
from hedgekit.paths import data_dir
from hedgekit.repro.pool import train_missing
from hedgekit.training.fit import seed_everything
from hedgekit.training.seeds import fit_seeds
from hedgekit.zoo import PRESETS, Spec
from hedgekit.zoo.seed_sets import seed_sets, stackable, train_seed_set

SEEDS = (1, 2)


def _hib(seed, **kw):
    return Spec(kind="hib", preset="fast", steps=6, seed=seed, samples=4, **kw)


def test_seed_sets_put_the_seeds_of_one_stackable_spec_together_in_listing_order():
    hib = [_hib(s) for s in (3, 1, 2)]
    point = [Spec(kind="point", preset="fast", seed=s) for s in (1, 2)]
    mixture = [_hib(s, components=2) for s in (1, 2)]  # fit_seeds trains MoG-1 only
    pn = [Spec(kind="pn", preset="fast", seed=s) for s in (1, 2)]  # episodes: another trainer
    lone = _hib(1, dim=3)  # another spec: a set of one
    jobs = seed_sets([hib[0], point[0], mixture[0], hib[1], pn[0], lone, mixture[1], pn[1], point[1], hib[2]])
    assert jobs == [hib, point, [mixture[0]], [pn[0]], [lone], [mixture[1]], [pn[1]]]
    assert stackable(hib[0]) and stackable(point[0]) and not stackable(mixture[0]) and not stackable(pn[0])
    assert not stackable(Spec(kind="point", preset="fast", loss="hard"))  # fit_seeds takes the soft loss only


@pytest.mark.parametrize("specs", [[_hib(1)], [_hib(1), _hib(2, dim=3)],
                                   [_hib(1, components=2), _hib(2, components=2)]])
def test_train_seed_set_refuses_what_is_not_a_seed_set(specs):
    with pytest.raises(InputError, match="differ in their seed only"):
        train_seed_set(specs)


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache of this test's own in tmp_path that shares the session's N-digit MNIST (built once), and a fast HIB
    preset at test_seeds.py's batch (8 classes x 4 images, K = 4: `_hib`), evaluated on 200 images."""
    for split in ("train", "test_seen"):
        load_ndigit(2, split)
    shared = data_dir() / "ndigit"
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    (tmp_path / "ndigit").symlink_to(shared)
    for key, value in dict(classes_per_batch=8, per_class=4, eval_images=200).items():
        monkeypatch.setitem(PRESETS["fast"]["hib"], key, value)
    return tmp_path


def test_a_stacked_seed_set_is_saved_as_each_seed_trained_alone_and_loads_without_training(own_cache, monkeypatch):
    specs = [_hib(s) for s in SEEDS]
    names = [s.name for s in specs]
    lines = []
    with as_launch_bound():
        result = train_missing([("02_x.ipynb", s) for s in specs], echo=lines.append, device="cpu")
    assert result["trained"] == names and not result["failed"]
    assert [(m["name"], m["stacked"], m["device"]) for m in result["models"]] == [(n, 2, "cpu") for n in names]
    assert lines[0].endswith("training in this process, on cpu; 1 seed set stacked")
    assert lines[1].startswith(f"[train] {names[0]}: ") and lines[1].endswith(", trained now, 2 seeds stacked (1/2)")

    train = load_ndigit(2, "train")  # what fit_seeds gives the same seeds from the same initial weights
    cfg = specs[0].train_config()
    stacked = []
    for spec in specs:
        seed_everything(spec.seed)
        stacked.append(spec.build())
    fit_seeds(stacked, SEEDS, torch.from_numpy(train.images), torch.from_numpy(train.labels), cfg,
              augment=random_occlusion(cfg.occlusion_p), progress=False)
    alone = [zoo.train_spec(spec, progress=False) for spec in specs]  # the one-by-one path (fit), not saved

    monkeypatch.setattr(zoo.store, "train_spec", lambda *a, **k: pytest.fail("a stacked seed was trained again"))
    for spec, ref, (one, one_meta) in zip(specs, stacked, alone):
        model, meta = zoo.load_or_train(spec)
        assert meta["source"] == "cache" and meta["path"].endswith(f"checkpoints/{spec.name}.pt")
        assert set(meta) - {"source", "path"} == set(one_meta) | {"stacked"}
        assert meta["stacked"] == {"seeds": 2, "names": names}
        assert meta["train_config"] == one_meta["train_config"] and meta["spec"] == one_meta["spec"]
        assert meta["seed"] == spec.seed and [r["step"] for r in meta["history"]] == [0, 5]
        assert [r["loss"] for r in meta["history"]] == pytest.approx([r["loss"] for r in one_meta["history"]], rel=1e-5)
        assert set(meta["metrics"]) == set(one_meta["metrics"]) and meta["eval_images"] == 200
        for key, w in ref.state_dict().items():
            torch.testing.assert_close(model.state_dict()[key], w, rtol=0, atol=0, msg=key)  # fit_seeds' weights
            # and fit's to test_seeds.py's tolerance for HIB (float summation orders differ)
            torch.testing.assert_close(model.state_dict()[key], one.state_dict()[key], rtol=0, atol=1e-3, msg=key)


def test_on_the_cpu_each_seed_trains_alone(own_cache, monkeypatch):
    """Recorded results were trained one by one on the CPU: there a seed set is not stacked."""
    from hedgekit.repro import pool

    monkeypatch.setattr(pool, "train_seed_set", lambda *a, **k: pytest.fail("stacked on the CPU"))
    trained = []

    def one_by_one(spec, **_):
        trained.append(spec.name)
        return None, {"source": "trained now"}

    monkeypatch.setattr(zoo, "load_or_train", one_by_one)
    result = train_missing([("02_x.ipynb", _hib(s)) for s in SEEDS], echo=lambda line: None, device="cpu")
    assert trained == [_hib(s).name for s in SEEDS] and [m["stacked"] for m in result["models"]] == [1, 1]
