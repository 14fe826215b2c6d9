"""hedgekit.repro.catalog against the committed ledger: what a fresh clone can render."""
import hashlib

import hedgekit.papers.url.recipe  # noqa: F401  (defines the URL runs, whose records url.jsonl holds)
from hedgekit.paths import PACKAGE_DIR
from hedgekit.repro import catalog
from hedgekit.zoo import SHIPPED_DIR, ledger


def test_a_model_a_notebook_loads_whose_record_a_gpu_trained_ships_with_that_records_checkpoint():
    """A cell that loads a model checks its checkpoint against the ledger (`Session.model`). A CPU retraining
    repeats a CPU-trained model bit for bit, but not a GPU-trained one, so a GPU-recorded model that a full-mode
    notebook loads (not one it reads from the ledger, `catalog.ledger_read_models`) must ship, with the SHA-256 its
    record names: else a fresh clone could not render that notebook."""
    records = [r for r in ledger.records(folder=PACKAGE_DIR / "ledger") if not r["device"].startswith("cpu")]
    read = catalog.ledger_read_models(None, False)
    loaded = {spec.name for _, spec in catalog.notebook_models(None, False)} - read
    must_ship = {r["model"]: r["checkpoint_sha256"] for r in records if r["model"] in loaded}
    assert must_ship  # notebook 04's three seed-0 models trained on an H200
    for name, sha256 in sorted(must_ship.items()):
        path = SHIPPED_DIR / f"{name}.pt"
        assert path.is_file(), f"{name} was recorded from a GPU and a notebook loads it, but it does not ship"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256, f"{name}: the shipped file is not the recorded"
