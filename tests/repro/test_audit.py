"""``reproduce --audit K`` (hedgekit.repro.audit): ledger records retrained by a stand-in trainer that returns chosen
measures, judged against the prediction interval of the ledger's other seeds; nothing trains."""
from __future__ import annotations

import math

import pytest

from hedgekit import cli
from hedgekit.errors import InputError
from hedgekit.repro.audit import prediction_interval
from hedgekit.zoo import Spec

SEEDS = [Spec(kind="point", preset="fast", seed=s) for s in range(3)]
KNN = {0: 0.80, 1: 0.82, 2: 0.84}


def test_the_prediction_interval_is_mean_plus_minus_t_sd_sqrt_one_plus_one_over_n():
    lo, hi = prediction_interval([1.0, 2.0, 3.0])
    half = 4.302652729911275 * 1.0 * math.sqrt(1 + 1 / 3)  # t(0.975, 2) from a table; sd of 1, 2, 3 is 1
    assert lo == pytest.approx(2 - half, rel=1e-9) and hi == pytest.approx(2 + half, rel=1e-9)
    lo, hi = prediction_interval([0.5, None, 0.7, math.nan])  # undefined values are left out: n = 2
    assert (lo + hi) / 2 == pytest.approx(0.6) and hi - lo == pytest.approx(2 * 12.706204736 * 0.1414213562 * 1.5**0.5)
    assert prediction_interval([0.5]) is None and prediction_interval([]) is None
    assert prediction_interval([0.5, 0.5]) == (0.5, 0.5)


@pytest.fixture
def retrain(tmp_ledger, monkeypatch):
    """Three seeds of one point spec in a ledger of the test's own (knn_corrupt `KNN`, eval_images 2000, one tau
    recorded for seed 0 only), and a stand-in `train_spec` whose measures the test sets: ``retrain(knn=...)``."""
    from hedgekit.zoo import store

    for spec in SEEDS:
        tmp_ledger(spec, {"knn_corrupt": KNN[spec.seed], "eval_images": 2000,
                          "tau_knn_corrupt": 0.3 if spec.seed == 0 else None})
    asked = []

    def setup(knn):
        def fake_train_spec(spec, progress=True, device="cpu", **_):
            asked.append((spec.name, device))
            return None, {"metrics": {"knn_corrupt": knn, "tau_knn_corrupt": 0.3}, "eval_images": 2000}

        monkeypatch.setattr(store, "train_spec", fake_train_spec)
        return asked

    return setup


def test_a_retrained_measure_inside_the_other_seeds_interval_passes(retrain, capsys):
    asked = retrain(knn=0.83)
    assert cli.main(["reproduce", "--audit", "1", "--audit-seed", "7", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    name = asked[0][0]
    assert asked == [(name, "cpu")] and f"[audit] seed 7: 1 of 3 records drawn: {name} (table1)" in out
    rows = {tuple(line.split()[:2]): line for line in out.splitlines() if line.startswith(name)}
    assert rows[(name, "knn_corrupt")].split()[2] == "2" and rows[(name, "knn_corrupt")].endswith("yes")
    assert rows[(name, "eval_images")].endswith("yes")  # no spread: inside only when equal
    assert "cannot judge: " in rows[(name, "tau_knn_corrupt")]  # fewer than 2 other seeds hold it
    assert "2 measures judged, 0 outside their interval, 1 not judged; seed 7" in out
    assert cli.main(["reproduce", "--audit", "1", "--audit-seed", "7"]) == 0  # the same seed draws the same record
    assert asked[1][0] == name


def test_a_retrained_measure_outside_the_interval_fails_the_audit(retrain, capsys):
    asked = retrain(knn=5.0)
    assert cli.main(["reproduce", "--audit", "5", "--audit-seed", "1"]) == 1
    out = capsys.readouterr().out
    assert "3 of 3 records drawn (all there are; 5 asked)" in out and len(asked) == 3
    knn = [line for line in out.splitlines() if " knn_corrupt " in line]
    assert len(knn) == 3 and all(line.endswith("NO") and "5" in line.split()[-2] for line in knn)
    assert "6 measures judged, 3 outside their interval" in out


def test_an_audit_of_an_empty_ledger_or_a_seed_without_audit_is_refused(tmp_ledger, capsys):
    assert cli.main(["reproduce", "--audit", "2"]) == 2
    assert "holds no record that retraining can re-measure" in capsys.readouterr().err
    assert cli.main(["reproduce", "--audit-seed", "2"]) == 2
    assert "--audit-seed applies to --audit K" in capsys.readouterr().err


def test_only_draws_among_the_selected_notebooks_models(retrain, capsys):
    """The point-fast records belong to no notebook's full-mode models: an audit of 08's finds none to draw; an audit
    without --only draws among all of them."""
    retrain(knn=0.83)
    assert cli.main(["reproduce", "--audit", "1", "--audit-seed", "3", "--only", "08"]) == 2
    assert "holds no record that retraining can re-measure" in capsys.readouterr().err
    assert cli.main(["reproduce", "--audit", "1", "--audit-seed", "3"]) == 0


def test_each_audit_is_kept_in_the_ledgers_audit_log_and_listed_for_docs_results(retrain, tmp_ledger, capsys):
    from hedgekit.repro.audit import AUDIT_LOG, audit_log, audit_section

    retrain(knn=0.83)
    assert audit_log() == [] and audit_section([])[-1] == "No audit is recorded yet."
    assert cli.main(["reproduce", "--audit", "1", "--audit-seed", "7"]) == 0
    assert f"[audit] recorded in {tmp_ledger.folder / AUDIT_LOG}" in capsys.readouterr().out
    retrain(knn=5.0)
    assert cli.main(["reproduce", "--audit", "2", "--audit-seed", "1"]) == 1
    first, second = audit_log()
    assert (first["asked"], first["seed"], first["device"], first["judged"], first["outside"]) == (1, 7, "cpu", 2, 0)
    assert len(first["drawn"]) == 1 and {r["measure"] for r in first["rows"]} == {"knn_corrupt", "eval_images",
                                                                                  "tau_knn_corrupt"}
    row = next(r for r in first["rows"] if r["measure"] == "knn_corrupt")
    assert (row["n"], row["retrained"], row["inside"]) == (2, "0.83", "yes") and first["date"] and first["torch"]
    assert (second["asked"], second["outside"], len(second["drawn"])) == (2, 2, 2)
    table = audit_section(audit_log())
    assert table[-2].startswith(f"| {first['date']} | `reproduce --audit 1 --audit-seed 7` | cpu | {first['drawn'][0]} "
                                f"| 2 | 0 | 1 |")
    assert table[-1].endswith("| 4 | 2 | 2 |")
    (tmp_ledger.folder / AUDIT_LOG).write_text("{not json\n")
    with pytest.raises(InputError, match="is not JSON Lines"):
        audit_log()
