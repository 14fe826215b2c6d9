"""hedgekit.papers.hib.experiments: notebook 04's model grid with HIB Table 4."""
import pytest

import hedgekit.papers.hib.experiments as X
from hedgekit import zoo
from hedgekit.errors import InputError
from hedgekit.zoo import ledger, store

TABLE4_NAMES = ["point-n3-d4-paper-s0", "hib-n3-d4-c1-beta0.0001-k8-paper-s0",
                "hib-n3-d4-c2-beta0.0001-k8-paper-s0"]


def test_table4_specs_are_the_papers_three_models_at_n3_d4_in_full_mode_and_none_in_fast_mode():
    specs = X.table4_specs(False)
    assert [s.name for s in specs] == TABLE4_NAMES
    assert [s.label for s in specs] == ["point", "MoG-1", "MoG-2"]
    assert all(s.steps is None and s.preset == "paper" for s in specs)  # full `paper` models, not a sweep
    assert [s.seed for s in X.table4_specs(False, seed=3)] == [3, 3, 3]
    assert X.table4_specs(True) == []  # FAST mode skips Table 4 (module docstring)


def test_notebook_04_loads_table4_after_the_table1_grid_then_the_headline_seeds():
    full = [s.name for s in X.notebook_specs("04", False)]
    seeds = 2 * 3 * len(X.SEEDED_SETTINGS)  # seeds 1 and 2 of point, MoG-1 and MoG-2 (seed 0 is in the grid)
    assert len(full) == 3 * len(X.TABLE1_SETTINGS) + 3 + seeds and full[-3 - seeds:-seeds] == TABLE4_NAMES
    assert not any("-n3-d4-" in s.name for s in X.notebook_specs("04", True))
    assert set(TABLE4_NAMES) <= {s.name for s in X.all_specs(False)}


def test_recorded_table4_lists_its_three_models_as_missing_in_an_empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))  # no cache; no Table 4 model is shipped
    assert X.recorded_table1("paper", settings=(X.TABLE4_SETTING,)) == ({}, TABLE4_NAMES)


def test_mog_models_draw_the_papers_k_8_at_d3_and_above_and_in_the_long_cells_in_full_mode_only():
    for n, d in X.TABLE1_SETTINGS + (X.TABLE4_SETTING,):
        point, mog1, mog2 = X.table1_specs(n, d, fast=False)
        assert mog1.train_config().k == (X.PAPER_K if d >= 3 else 4), (n, d)
        assert mog2.train_config().k == (X.PAPER_K if d >= 3 or n == 2 else 4), (n, d)
        assert ("-k8-" in mog1.name) == (d >= 3) and ("-k8-" in mog2.name) == (d >= 3 or n == 2)
    assert all(s.samples is None for s in X.table1_specs(2, 3, fast=True)[1:])  # FAST: the fast preset's K
    assert X.embedding_specs(False)["mog1_3d"].train_config().k == X.PAPER_K
    assert X.embedding_specs(False)["mog1"].train_config().k == 4
    # notebook 05's N = 3, D = 3 models keep the preset's K (module docstring)
    assert {s.train_config().k for s in X.beta_specs(False)} == {4}


# (N, D) -> labels that train LONG_STEPS in FULL mode (module docstring); every other model the preset's steps
LONG = {(2, 2): {"MoG-2"}, (2, 3): {"MoG-2"}, (3, 2): set(), (3, 3): {"point", "MoG-1", "MoG-2"}, (3, 4): set()}


def test_table1_trains_18000_steps_for_mog2_at_n2_and_for_all_three_models_at_n3_d3_in_full_mode_only():
    assert X.LONG_STEPS == 2 * X.PRESETS["paper"]["hib"]["steps"] == 18_000
    for n, d in X.TABLE1_SETTINGS + (X.TABLE4_SETTING,):
        for spec in X.table1_specs(n, d, fast=False):
            preset_steps = X.PRESETS["paper"][spec.kind]["steps"]
            long = spec.label in LONG[(n, d)]
            assert spec.train_config().steps == (X.LONG_STEPS if long else preset_steps), (n, d, spec.label)
            assert spec.name.endswith("paper18000-s0") == long
            if long and spec.kind == "hib":
                assert spec.train_config().k == X.PAPER_K
    assert [s.name for s in X.table1_specs(3, 3, fast=False)] == [
        "point-n3-d3-paper18000-s0", "hib-n3-d3-c1-beta0.0001-k8-paper18000-s0",
        "hib-n3-d3-c2-beta0.0001-k8-paper18000-s0"]
    assert X.table1_specs(2, 2, fast=False)[2].name == "hib-n2-d2-c2-beta0.0001-k8-paper18000-s0"
    assert all(s.steps is None for n, d in X.TABLE1_SETTINGS for s in X.table1_specs(n, d, fast=True))
    assert X.embedding_specs(False)["mog2"].steps is None  # Figures 3, 4, 7 keep the shipped MoG-2
    assert X.embedding_specs(False)["mog1_3d"].steps is None  # Figure 8 keeps the shipped 9,000-step MoG-1


def test_recorded_table1_looks_for_the_long_mog2_checkpoint_at_the_paper_preset(tmp_path, monkeypatch):
    from hedgekit.zoo import store

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))  # an empty cache, and nothing shipped
    monkeypatch.setattr(store, "SHIPPED_DIR", tmp_path / "shipped")
    _, missing = X.recorded_table1("paper", settings=((2, 2),))
    assert missing == ["point-n2-d2-paper-s0", "hib-n2-d2-c1-beta0.0001-paper-s0",
                       "hib-n2-d2-c2-beta0.0001-k8-paper18000-s0"]
    _, missing_fast = X.recorded_table1("fast", settings=((2, 2),))
    assert missing_fast[-1] == "hib-n2-d2-c2-beta0.0001-fast-s0"  # another preset: its own steps and K (8)


FAST_02 = ["point-n2-d2-paper-s0", "hib-n2-d2-c1-beta0.0001-paper-s0", "hib-n2-d2-c2-beta0.0001-paper-s0",
           "hib-n3-d3-c1-beta0.0001-k8-paper-s0"]


def test_fast_mode_loads_the_shipped_paper_models_where_a_figure_ships_and_fast_ones_elsewhere():
    shipped = set(zoo.shipped_names())
    fast = {nb: X.notebook_specs(nb, True) for nb in ("02", "03", "04", "05")}
    assert [s.name for s in fast["02"]] == FAST_02
    assert X.embedding_specs(True) == {r: s for r, s in X.embedding_specs(False).items() if r != "mog4"}
    assert [s.name for s in fast["04"]] == FAST_02[:3]  # Table 1's N = 2, D = 2 row: the preset's MoG-2 (9,000)
    nl = X.number_line_specs(True)
    assert [s.name for s in nl["d2"]] == FAST_02[:2]  # Figure 10
    assert {s.preset for s in nl["point_d1"] + nl["hib_d1"] + fast["05"]} == {"fast"}  # nothing of theirs ships
    assert all(s.preset == "fast" or s.name in shipped for group in fast.values() for s in group)


def test_fast_mode_trains_fast_models_for_a_whole_figure_when_one_of_its_models_is_not_shipped(monkeypatch):
    monkeypatch.setattr(store, "shipped_names", lambda: FAST_02[:2])  # point and MoG-1 only
    specs = X.embedding_specs(True)
    assert [s.name for s in specs.values()] == ["point-n2-d2-fast-s0", "hib-n2-d2-c1-beta0.0001-fast-s0",
                                                "hib-n2-d2-c2-beta0.0001-fast-s0", "hib-n2-d3-c1-beta0.0001-fast-s0"]
    assert {s.preset for s in X.table1_specs(2, 2, fast=True)} == {"fast"}  # never paper beside fast in one table
    assert [s.preset for s in X.number_line_specs(True)["d2"]] == ["paper", "paper"]  # both of Figure 10's ship
    assert zoo.shipped_or_fast(X.table1_specs(2, 2, fast=False), ["fallback"]) == ["fallback"]


def test_headline_seeds_retrain_every_model_of_tables_1_and_4_with_seeds_0_to_2_in_full_mode_only():
    seeded = X.table1_seed_specs(False)
    assert X.SEEDED_SETTINGS == X.TABLE1_SETTINGS + (X.TABLE4_SETTING,)  # every counted claim of notebook 04's
    assert set(seeded) == {(n, d, label) for n, d in X.SEEDED_SETTINGS for label in ("point", "MoG-1", "MoG-2")}
    for (n, d, label), specs in seeded.items():
        assert [s.seed for s in specs] == [0, 1, 2]
        own = X.table1_specs(n, d, False)[("point", "MoG-1", "MoG-2").index(label)]
        assert specs[0] == own  # seed 0 is the table's own model; the others differ in the seed alone
        assert all(s.name == own.name.replace("-s0", f"-s{s.seed}") for s in specs)
    assert X.table1_seed_specs(True) == {}
    names = [s.name for s in X.notebook_specs("04", False)]
    assert {s.name for group in seeded.values() for s in group} <= set(names) and len(names) == len(set(names))


def test_recorded_seeds_read_the_shipped_seed_0_models_and_list_the_rest_as_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))  # no cache: only the shipped checkpoints are found
    seeds, missing = X.recorded_table1_seeds()
    shipped = set(zoo.shipped_names())
    wanted = X.table1_seed_specs(False)
    assert missing == [s.name for specs in wanted.values() for s in specs if s.name not in shipped]
    for key, specs in wanted.items():
        found = [s for s in specs if s.name in shipped]
        assert len(seeds.get(key, [])) == len(found)
        for ev, spec in zip(seeds.get(key, []), found):  # the metrics recorded at training time, unchanged
            _, meta = zoo.load_checkpoint(zoo.SHIPPED_DIR / f"{spec.name}.pt")
            assert ev.mean("knn_corrupt") == meta["metrics"]["knn_corrupt"]
    assert seeds[(2, 2, "point")] and seeds[(2, 2, "MoG-1")]  # N = 2, D = 2's seed-0 pair ships


def test_recorded_seeds_take_each_seeds_metadata_from_a_given_loader_and_then_miss_none(tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    asked = []

    def meta(spec):  # stands in for a notebook's Session.meta, which trains what it does not find
        asked.append(spec.name)
        return {"metrics": {"knn_corrupt": 0.5 + spec.seed / 10, "ap_clean": 0.9}, "eval_images": 10_000}

    seeds, missing = X.recorded_table1_seeds(meta=meta)
    wanted = X.table1_seed_specs(False)
    assert missing == [] and asked == [s.name for specs in wanted.values() for s in specs]
    assert set(seeds) == set(wanted)
    assert [ev.mean("knn_corrupt") for ev in seeds[(3, 3, "MoG-1")]] == [0.5, 0.6, 0.7]
    assert seeds[(2, 3, "point")][1].n_images == 10_000 and seeds[(2, 3, "point")][1].label == "point"


def test_recorded_seeds_list_as_missing_what_a_loader_does_not_find(tmp_path, monkeypatch):
    """A loader that returns None for a seed (a notebook's `Session.cached_meta`, which trains nothing): that seed
    is missing and its row keeps the seeds that were found."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))

    def meta(spec):
        return None if spec.seed else {"metrics": {"knn_corrupt": 0.5, "ap_clean": 0.9}, "eval_images": 10_000}

    seeds, missing = X.recorded_table1_seeds(meta=meta)
    wanted = X.table1_seed_specs(False)
    assert missing == [s.name for specs in wanted.values() for s in specs if s.seed]
    assert {key: len(evs) for key, evs in seeds.items()} == {key: 1 for key in wanted}


def test_recorded_seeds_read_a_seed_without_a_checkpoint_from_the_ledger_and_say_where_each_came_from(
        tmp_ledger, tmp_path, monkeypatch):
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "data"))  # no cache: the shipped seed 0 and the ledger
    s1, s2 = (X.table1_seed_specs(False)[(2, 2, "point")][s] for s in (1, 2))
    tmp_ledger(s1, {"knn_corrupt": 0.69, "ap_clean": 0.99, "tau_ap_clean": None, "eval_images": 10_000})
    tmp_ledger(s2, {"knn_corrupt": 0.70, "ap_clean": 0.99, "tau_ap_clean": None, "eval_images": 10_000},
               device="cuda:0 (NVIDIA H200)")
    seeds, missing = X.recorded_table1_seeds()
    assert s1.name not in missing and s2.name not in missing
    _, meta0 = zoo.load_checkpoint(zoo.SHIPPED_DIR / "point-n2-d2-paper-s0.pt")
    assert [ev.mean("knn_corrupt") for ev in seeds[(2, 2, "point")]] == [meta0["metrics"]["knn_corrupt"], 0.69, 0.70]
    assert seeds[(2, 2, "point")][1].n_images == 10_000
    metas, _ = X.seed_metas(X.table1_seed_specs(False))
    date = metas[(2, 2, "point")][1][1]["date"]
    assert ledger.seed_sources(m for _, m in metas[(2, 2, "point")]) == (
        f"3 seeds: 1 from a checkpoint on this machine, 2 from the ledger (1 trained on cpu, recorded {date}; "
        f"1 trained on cuda:0 (NVIDIA H200), recorded {date})")
    assert ledger.seed_sources([{"source": "trained now"}]) == "1 seed: 1 trained now"


def test_a_verdict_on_ledger_seeds_says_in_each_row_where_its_seeds_came_from(tmp_ledger, tmp_path, monkeypatch):
    """Table 1's N2D2 rows decided on the shipped seed 0 and two seeds only the ledger holds: nothing trains, and
    each row's reason names the sources."""
    from hedgekit.papers.hib.claims import known_unknowns_verdict

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "data"))  # no cache: the shipped seed 0 and the ledger
    monkeypatch.setattr(zoo, "load_or_train", lambda *a, **k: pytest.fail("a seed was trained"))
    for label in ("point", "MoG-1"):
        _, meta0 = zoo.load_checkpoint(zoo.SHIPPED_DIR / f"{X.table1_seed_specs(False)[(2, 2, label)][0].name}.pt")
        for s in (1, 2):
            spec = X.table1_seed_specs(False)[(2, 2, label)][s]
            tmp_ledger(spec, {**meta0["metrics"], "knn_corrupt": meta0["metrics"]["knn_corrupt"] + 0.01 * s,
                              "eval_images": 10_000})
    seeds, _ = X.recorded_table1_seeds()
    row = next(c for c in known_unknowns_verdict({}, seeds=seeds).claims
               if c.row_id == "t1.N2D2.knn_corrupt.seeds")
    assert "3 runs" in row.ours and "3 seeds: 1 from a checkpoint on this machine, 2 from the ledger" in row.ours


def test_table5_seeds_are_its_models_at_seeds_0_to_2_listed_for_notebook_05_full_mode_only():
    seeded = X.table5_seed_specs()
    own = {(n, d, s.beta): s for (n, d), group in X.table5_specs().items() for s in group}
    assert set(seeded) == set(own) == {(2, 2, 0.0), (2, 2, 1e-4), (3, 3, 0.0), (3, 3, 1e-4)}
    for key, specs in seeded.items():
        assert [s.seed for s in specs] == [0, 1, 2] and specs[0] == own[key]
        assert all(s.name == own[key].name.replace("-s0", f"-s{s.seed}") for s in specs)
    # beta = 1e-4 at N = 2, D = 2 is Table 1's MoG-1 there: one model, its seeds shared with notebook 04
    assert [s.name for s in seeded[(2, 2, 1e-4)]] == [s.name for s in X.table1_seed_specs(False)[(2, 2, "MoG-1")]]
    names = [s.name for s in X.notebook_specs("05", False)]
    assert {s.name for specs in seeded.values() for s in specs} <= set(names) and len(names) == len(set(names))
    assert not {s.name for specs in seeded.values() for s in specs} & {s.name for s in X.notebook_specs("05", True)}


def test_a_table5_verdict_on_seeds_decides_its_gaps_over_the_seeds(tmp_path, monkeypatch):
    """Three seeds per model (a stand-in loader): every Table 5 gap is decided on the seeds, counted once, and its
    interval is the t interval of the seed means' difference (3 runs an arm)."""
    from hedgekit.papers.hib.claims import kl_margin_verdict

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    ap = {0.0: [0.90, 0.91, 0.92], 1e-4: [0.93, 0.94, 0.95]}

    def meta(spec):
        return {"metrics": {"ap_clean": ap[spec.beta][spec.seed], "ap_corrupt": 0.8, "knn_clean": 0.8,
                            "knn_corrupt": 0.7, "tau_ap_clean": 0.5, "tau_ap_corrupt": 0.5, "tau_knn_clean": 0.5,
                            "tau_knn_corrupt": 0.5}, "eval_images": 10_000}

    seeds, missing = X.recorded_seeds(X.table5_seed_specs(), meta=meta)
    assert missing == [] and {k: len(v) for k, v in seeds.items()} == {k: 3 for k in X.table5_seed_specs()}
    claims = kl_margin_verdict({}, {}, seeds=seeds).claims
    t5 = [c for c in claims if c.row_id.startswith("t5.")]
    assert t5 and all(c.row_id.endswith(".seeds") for c in t5)
    row = next(c for c in t5 if c.row_id == "t5.N2D2.ap_clean.seeds")
    assert "+0.030" in row.ours and "3 runs" in row.ours
    half = 4.3027 * (2 * 0.01 ** 2 / 3) ** 0.5  # t(0.975, 2 df) x the SE of a difference of two 3-seed means, SD 0.01
    assert row.interval == pytest.approx((0.03 - half, 0.03 + half), abs=1e-4)


class _LineModel:
    """A stand-in D = 1 model: the embedding's mean is the first pixel of each image times 100."""
    config = {"dim": 1}

    def embed(self, x):
        class _Embedded:
            @staticmethod
            def mixture_mean():
                return x[:, :1, 0, 0] * 100  # (B, D = 1)
        return _Embedded()


class _Split:
    """A stand-in test split: two images per class, whose first pixels average to ``place[class] / 100``."""

    def __init__(self, place):
        import numpy as np
        import torch

        self.labels = np.repeat(np.arange(100), 2)
        first = torch.tensor([place[c] / 100 + d for c in range(100) for d in (-0.001, 0.001)], dtype=torch.float64)
        self._x = torch.zeros(200, 1, 28, 56, dtype=torch.float64)
        self._x[:, 0, 0, 0] = first

    def tensors(self):
        return self._x, None


def _naive_number_line(place):
    """App. D by hand: sort the classes, count neighbours sharing a digit, cut the line into runs where they don't."""
    order = sorted(range(100), key=lambda c: place[c])
    shared = [a // 10 == b // 10 or a % 10 == b % 10 for a, b in zip(order, order[1:])]
    runs, length = [], 1
    for s in shared + [False]:
        if s:
            length += 1
        else:
            if length > 1:
                runs.append(length)
            length = 1
    return sum(shared), sum(runs) / len(runs), len(runs)


@pytest.mark.parametrize("how", ["tens", "ones", "shuffled"])
def test_the_number_line_measures_match_app_d_counted_by_hand_on_both_test_splits(how, monkeypatch):
    """Classes placed in order of their tens digit (then ones): 10 runs of 10 classes, adjacency 90; in order of
    their ones digit: the same; shuffled: as a naive loop counts. The default sets are both 2-digit test splits."""
    import random

    import hedgekit.data

    place = {"tens": lambda c: c, "ones": lambda c: (c % 10) * 10 + c // 10}.get(how)
    place = ({c: place(c) for c in range(100)} if place else
             dict(zip(range(100), random.Random(0).sample(range(100), 100))))
    loaded = []
    monkeypatch.setattr(hedgekit.data, "load_ndigit", lambda n, split: loaded.append((n, split)) or _Split(place))
    got = X.number_line_measures(_LineModel())
    assert loaded == [(2, "test_seen"), (2, "test_unseen")]
    adjacency, mean_run, n_runs = _naive_number_line(place)
    assert (got["adjacency"], got["n_runs"]) == (adjacency, n_runs) and got["mean_run"] == pytest.approx(mean_run)
    if how != "shuffled":
        assert (adjacency, mean_run, n_runs) == (90, 10.0, 10)
    ids, cent = X.number_line_centroids(_LineModel(), [_Split(place)])
    assert list(ids) == list(range(100)) and cent == pytest.approx([place[c] for c in range(100)])


def test_the_number_line_refuses_a_model_that_is_not_1d():
    model = _LineModel()
    model.config = {"dim": 2}
    with pytest.raises(InputError, match="needs a D = 1 model; got D = 2"):
        X.number_line_centroids(model, [])


def test_plurality_measures_are_app_gs_cells_of_the_whole_seen_test_split_with_their_sides(monkeypatch):
    """Each (gallery, probe) cell is `retrieval.knn`'s plurality vote with the corrupt side where the cell says
    (whose own oracles are in tests/evaluation), with a τ per cell; the seen test split is loaded whole."""
    import torch

    import hedgekit.data
    from hedgekit.evaluation.embedded import embed_set
    from hedgekit.evaluation.retrieval import knn
    from hedgekit.nets import build_model

    from tests.papers.hib.test_protocol import _tiny_set

    torch.manual_seed(0)
    model = build_model("hib", 2, 2).eval()
    ds = _tiny_set(n_per=10)
    loaded = []
    monkeypatch.setattr(hedgekit.data, "load_ndigit", lambda n, split: loaded.append((n, split)) or ds)
    got = X.plurality_measures(model)
    assert loaded == [(2, "test_seen")]
    cells = (("clean", "clean"), ("clean", "corrupt"), ("corrupt", "clean"))
    assert sorted(got) == sorted(f"{p}knnp_{g}_{q}" for p in ("", "tau_") for g, q in cells)
    es = embed_set(model, ds)
    accs = {(g, q): knn(es, q == "corrupt", g == "corrupt", vote="plurality")["acc"] for g, q in cells}
    assert len(set(accs.values())) > 1  # the sides matter on this set
    for (g, q), acc in accs.items():
        assert got[f"knnp_{g}_{q}"] == pytest.approx(acc) and -1.0 <= got[f"tau_knnp_{g}_{q}"] <= 1.0


def test_recorded_seeds_join_the_ledgers_plurality_group_to_a_seeds_metrics(tmp_ledger, tmp_path, monkeypatch):
    """A seed whose ``plurality`` group the ledger holds carries Table 6's numbers into the verdict's seeds; a
    ``measures`` function (a notebook's Session.measures) is asked for each group instead where given."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path / "data"))  # no cache: the shipped seed 0 and the ledger
    s1 = X.table1_seed_specs(False)[(2, 2, "MoG-1")][1]
    tmp_ledger(s1, {"knn_corrupt": 0.7, "ap_clean": 0.99, "eval_images": 10_000})
    tmp_ledger(s1, {"knnp_clean_corrupt": 0.51, "tau_knnp_clean_corrupt": 0.9}, group="plurality")
    seeds, _ = X.recorded_table1_seeds()
    one = seeds[(2, 2, "MoG-1")][1]
    assert one.mean("knnp_clean_corrupt") == 0.51 and one.mean("tau_knnp_clean_corrupt") == 0.9
    assert one.mean("knn_corrupt") == 0.7
    asked = []
    seeds, _ = X.recorded_table1_seeds(measures=lambda spec, group: asked.append((spec.name, group)) or
                                       {"knnp_clean_corrupt": 0.6, "source": "ledger"})
    assert (s1.name, "plurality") in asked and seeds[(2, 2, "MoG-1")][1].mean("knnp_clean_corrupt") == 0.6
    assert not any(name.startswith("hib-n2-d2-c2") for name, _ in asked)  # MoG-2 has no such group
