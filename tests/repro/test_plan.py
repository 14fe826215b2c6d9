"""``reproduce --plan`` (hedgekit.repro.plan) and ``--train-missing --budget`` (hedgekit.repro.pool), on stand-in
specs: a stand-in estimator (minutes by spec) and a stand-in trainer that spends a stand-in clock; nothing trains."""
from __future__ import annotations

import pytest

from hedgekit import cli
from hedgekit.repro import plan as PL
from hedgekit.repro import pool as P
from hedgekit.repro import catalog
from hedgekit.repro import reproduce as R
from hedgekit.zoo import Spec

A = [Spec(kind="point", preset="fast", seed=s) for s in range(6)]  # A's seeds 0-5: s0 cached, s1 in the ledger
B = [Spec(kind="point", preset="fast", dim=3, seed=s) for s in range(3)]  # B's seeds 0-2: none held
C = Spec(kind="hib", preset="fast")  # one seed, cheaper than B
MINUTES = {A[0].name.rsplit("-s", 1)[0]: 10, B[0].name.rsplit("-s", 1)[0]: 20, C.name.rsplit("-s", 1)[0]: 4}


def minutes(spec) -> float:
    return MINUTES[spec.name.rsplit("-s", 1)[0]]


@pytest.fixture
def stand_ins(tmp_ledger, tmp_path, monkeypatch):
    """Notebook "01_a" lists A, B and C; A's seed 0 is cached and seed 1 in the ledger; the estimator
    (`estimated_seconds`) says `MINUTES`; the trainer records each model it is asked for, spends its estimate on the clock `P.clock`, writes a
    stand-in checkpoint that `find_checkpoint` then finds, and returns no measures. Returns the trained names."""
    from hedgekit import zoo
    from hedgekit.papers import hib, spe, taha

    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(catalog, "NOTEBOOKS", {"x": ["01_a.ipynb"]})
    monkeypatch.setattr(hib.experiments, "notebook_specs", lambda nb, fast: [*A, *B, C])
    for paper in (spe, taha):
        monkeypatch.setattr(paper.experiments, "notebook_specs", lambda nb, fast: [])
    cached = {A[0].name}
    for module in (PL, P, R):  # where they are called
        monkeypatch.setattr(module, "find_checkpoint", lambda spec: tmp_path / "x.pt" if spec.name in cached else None)
        monkeypatch.setattr(module, "estimated_seconds", lambda spec, device="cpu", folder=None: 60 * minutes(spec))
    tmp_ledger(A[1], {"knn_clean": 0.5})
    now = [0.0]
    monkeypatch.setattr(P, "clock", lambda: now[0])
    trained = []

    def fake_load_or_train(spec, progress=True, device="cpu", **_):
        trained.append(spec.name)
        now[0] += 60 * minutes(spec)
        cached.add(spec.name)
        return None, {"source": "trained now"}

    monkeypatch.setattr(zoo, "load_or_train", fake_load_or_train)
    return trained


def test_the_plan_brings_every_spec_to_3_seeds_then_5_cheapest_first(stand_ins, capsys):
    rows = PL.plan(catalog.notebook_models("01"))
    assert [(r.spec.name, r.tier, r.minutes) for r in rows] == [
        (C.name, "3", 4), (A[2].name, "3", 10),  # A holds 2 seeds: its seed 2 is its third
        (B[0].name, "3", 20), (B[1].name, "3", 20), (B[2].name, "3", 20),
        (A[3].name, "5", 10), (A[4].name, "5", 10), (A[5].name, "more", 10)]
    assert [r.cumulative for r in rows] == [4, 14, 34, 54, 74, 84, 94, 104]
    assert cli.main(["reproduce", "--plan", "--only", "01"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["model", "tier", "est.", "min", "cumulative", "min"]
    assert out[1].split() == [C.name, "3", "4.0", "4.0"] and out[-2].split() == [A[5].name, "more", "10.0", "104.0"]
    assert out[-1].startswith("8 missing models, ~104 min in all") and stand_ins == []  # --plan trains nothing


def test_a_budget_trains_in_plan_order_only_what_fits_and_stops(stand_ins, capsys):
    assert cli.main(["reproduce", "--train-missing", "--budget", "30"]) == 0
    # plan order C 4, A2 10, B0 20 (34 > 30: passed over), B1, B2 (same), A3 10 (24), A4 10 (34 > 30), A5 (34)
    assert stand_ins == [C.name, A[2].name, A[3].name]
    assert P.clock() == 24 * 60 <= 30 * 60  # seconds spent: within the budget
    out = capsys.readouterr().out
    assert "budget 30 min: a model starts only if its estimate ends within it" in out
    assert f"not started, their estimates do not fit the 30-minute budget: {B[0].name}, {B[1].name}" in out
    assert "8 of 8 checkpoints missing" in out and "3 trained, 0 already cached, 5 over budget" in out
    assert cli.main(["reproduce", "--train-missing", "--budget", "3"]) == 0  # nothing fits: nothing starts
    assert len(stand_ins) == 3 and "0 trained" in capsys.readouterr().out


def test_a_budget_holds_with_a_pool_of_workers_too(stand_ins, monkeypatch, capsys):
    """A worker is handed a job only when it is free, so the budget is judged when the job can start."""
    submitted = []

    class InlineWorker:
        """`P._Worker` stand-in: runs each job at once, in this process (the stand-in clock is this process's)."""

        def __init__(self, context):
            self.pid, self.job, self._answer = 0, None, None

        def give(self, specs, device):
            submitted.append(specs[0].name)
            self.job, self._answer = list(specs), ("done", P._train_job(specs, device))

        def answer(self):
            answer, self._answer = self._answer, None
            return answer

        def stop(self):
            pass

    monkeypatch.setattr(P, "_Worker", InlineWorker)
    monkeypatch.setattr(P, "job_limit", lambda: (2, "2 usable cores"))
    assert cli.main(["reproduce", "--train-missing", "--budget", "30", "--jobs", "2"]) == 0
    assert submitted == stand_ins == [C.name, A[2].name, A[3].name]


def test_budget_without_train_missing_and_a_bad_budget_are_refused(stand_ins, capsys):
    assert cli.main(["reproduce", "--budget", "30"]) == 2
    assert "--budget applies to --train-missing" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["reproduce", "--train-missing", "--budget", "-1"])
    assert exc.value.code == 2 and "expected a finite number >= 0" in capsys.readouterr().err
    assert stand_ins == []


def test_the_estimate_is_the_ledger_s_median_time_for_the_spec_at_other_seeds(tmp_ledger, monkeypatch):
    from hedgekit.interactive import models

    monkeypatch.setattr(models, "expected_train_seconds", lambda spec: 600)
    assert PL.estimated_seconds(A[0]) == 600  # an empty ledger: the method record's figure
    for seed, seconds in ((1, 100.0), (2, 300.0), (3, 200.0)):
        tmp_ledger(A[seed], {"knn_clean": 0.5}, train_seconds=seconds)
    tmp_ledger(A[4], {"knn_clean": 0.5}, device="cuda", train_seconds=5.0)  # another device's time: not the CPU's
    assert PL.estimated_seconds(A[0]) == 200.0 and PL.estimated_seconds(A[5]) == 200.0
    assert PL.estimated_seconds(A[0], device="cuda") == 5.0


def test_a_spec_never_trained_takes_its_figure_times_the_ledger_s_ratio_for_its_kind(tmp_ledger, monkeypatch):
    from hedgekit.interactive import models

    figures = {A[0]: 100, B[0]: 200, C: 50, Spec(kind="point", preset="paper"): 1000}  # seconds, seed aside
    figures = {spec.name.rsplit("-s", 1)[0]: seconds for spec, seconds in figures.items()}
    monkeypatch.setattr(models, "expected_train_seconds", lambda spec: figures[spec.name.rsplit("-s", 1)[0]])
    tmp_ledger(B[1], {"knn_clean": 0.5}, train_seconds=600.0)  # B took 3x its figure
    tmp_ledger(B[2], {"knn_clean": 0.5}, train_seconds=1000.0)  # and 5x: median 4x
    assert PL.estimated_seconds(A[0]) == 400.0  # same kind and preset, never trained itself: 4 x 100
    assert PL.estimated_seconds(C) == 50  # another kind: its figure
    assert PL.estimated_seconds(Spec(kind="point", preset="paper")) == 1000  # another preset: its figure


def test_a_budget_plans_for_job_seconds_and_scales_the_training_time_of_records_without_them(tmp_ledger,
                                                                                            monkeypatch):
    """A record's job seconds (training and measuring) are what a budget spends; a record that holds only its
    training seconds is scaled by the median job / training ratio of its kind's records that hold both."""
    from hedgekit.interactive import models

    monkeypatch.setattr(models, "expected_train_seconds", lambda spec: 600)
    tmp_ledger(A[1], {"knn_clean": 0.5}, train_seconds=100.0)  # training alone: no ratio known yet
    assert PL.estimated_seconds(A[0]) == 100.0
    tmp_ledger(B[1], {"knn_clean": 0.5}, train_seconds=100.0, job_seconds=150.0)  # point: x1.5
    tmp_ledger(B[2], {"knn_clean": 0.5}, train_seconds=100.0, job_seconds=130.0)  # x1.3
    tmp_ledger(C, {"knn_clean": 0.5}, train_seconds=100.0, job_seconds=500.0)  # another kind: its own ratio
    assert PL.estimated_seconds(A[0]) == pytest.approx(140.0)  # 100 x the median 1.4
    assert PL.estimated_seconds(B[0]) == 140.0  # the spec's own job seconds, median of 150 and 130
    tmp_ledger(A[2], {"knn_clean": 0.5}, train_seconds=90.0, job_seconds=120.0)
    scaled = 100.0 * (120.0 / 90.0)  # A1's training x the point records' median ratio, now 1.5, 1.3 and 120 / 90
    assert PL.estimated_seconds(A[0]) == pytest.approx((scaled + 120.0) / 2)  # the median of A1 and A2



def test_a_seed_is_recorded_only_when_the_ledger_holds_every_group_the_notebooks_read_from_it(tmp_ledger,
                                                                                            monkeypatch):
    """A stand-in notebook group ("toy") for D = 3 models: B's seed 1 has its trainer's record and the toy one,
    seed 2 only its trainer's; a D = 2 model needs its trainer's group alone."""
    monkeypatch.setattr(PL, "model_measures", lambda spec: {"toy": None} if spec.dim == 3 else {})
    tmp_ledger(B[1], {"knn_clean": 0.5})
    tmp_ledger(B[1], {"x": 1.0}, group="toy")
    tmp_ledger(B[2], {"knn_clean": 0.5})
    tmp_ledger(A[4], {"knn_clean": 0.5})
    assert PL.recorded_seeds(B[0]) == {1} and PL.recorded_seeds(A[0]) == {4}
    rows = PL.plan([("01", s) for s in B], found=lambda spec: False)
    assert [r.spec.name for r in rows] == [B[0].name, B[2].name]  # seed 2 lacks its toy group: planned
