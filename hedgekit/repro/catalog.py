"""The catalog of the kit's notebooks: which notebooks there are, by group (`NOTEBOOKS`, `register`), which a
``--only`` selects (`select`), and the checkpoints each loads (`notebook_models`, from each paper's
``experiments.notebook_specs``), and the measures a notebook takes from a trained model beyond its trainer's
(`model_measures`, from a paper's ``experiments.model_measures`` where it has one). `hedgekit.repro.reproduce` runs
them; the session header, the results page and the plan read this catalog too. Of those checkpoints, the seeds a
notebook decides on from their ledger records need not be here where the ledger holds them (`ledger_read_models`,
from each paper's ``experiments.notebook_record_specs``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from hedgekit.errors import InputError

if TYPE_CHECKING:
    from hedgekit.zoo import Spec

__all__ = ["NOTEBOOKS", "register", "select", "notebook_models", "ledger_read_models", "model_measures"]

# Group -> notebooks (file names in notebooks/), in running order. SPE (06, 07) registers
# under "spe": add the file names here or call register("spe", "06_....ipynb", ...).
NOTEBOOKS: dict[str, list[str]] = {
    "start": ["00_start_here.ipynb"],  # what a hedged embedding is, a map of the kit
    "hib": ["01_ndigit_mnist.ipynb", "02_hib_embeddings.ipynb", "03_self_organization.ipynb",
            "04_known_unknowns.ipynb", "05_kl_and_soft_contrastive.ipynb"],
    "spe": ["06_spe_lshapes.ipynb", "07_spe_ndigit.ipynb"],
    "url": ["09_url_benchmark.ipynb"],
    "taha": ["08_het_triplet_retrieval.ipynb"],
}


def register(group: str, *notebooks: str) -> None:
    """Add notebooks (file names in notebooks/) to a group, keeping order and skipping duplicates."""
    names = NOTEBOOKS.setdefault(group, [])
    for nb in notebooks:
        if not nb.endswith(".ipynb"):
            raise InputError(f"notebook names end in .ipynb; got {nb!r}")
        if nb not in names:
            names.append(nb)


def select(only: Sequence[str] | str | None = None, registry: dict | None = None) -> list[str]:
    """Notebooks to run: all registered (sorted by name) or those of the named groups / notebooks."""
    reg = NOTEBOOKS if registry is None else registry
    every = sorted({nb for group in reg.values() for nb in group})
    if not only:
        return every
    if isinstance(only, str):
        only = [only]
    only = [s.strip() for item in only for s in item.split(",") if s.strip()]  # "--only 04,05", "--only 04 --only 05"
    out: list[str] = []
    for item in only:
        if item in reg:
            out += reg[item]
        else:
            match = [nb for nb in every if nb == item or nb == f"{item}.ipynb" or nb.split("_")[0] == item]
            if not match:
                raise InputError(f"--only {item!r}: not a group ({', '.join(sorted(reg))}) nor a registered notebook")
            out += match
    return list(dict.fromkeys(out))


def notebook_models(only: Sequence[str] | str | None = None, fast: bool = False) -> list[tuple[str, Spec]]:
    """(notebook, spec) for every checkpoint the selected notebooks load, notebook by notebook in `select` order.

    A spec several notebooks share appears once per notebook (``--list-models`` shows each row;
    `train_missing` deduplicates by ``spec.name``).
    """
    from hedgekit.papers import hib, spe, taha  # a paper's parts: only where needed (tests/test_imports.py)

    return [(nb, spec) for nb in select(only)
            for paper in (hib, spe, taha) for spec in paper.experiments.notebook_specs(nb, fast)]


def ledger_read_models(only: Sequence[str] | str | None = None, fast: bool = False) -> set[str]:
    """The names of the models of `notebook_models` that every selected notebook listing them reads from the ledger
    where it holds their records (a paper's ``experiments.notebook_record_specs``), loading no checkpoint: a model
    another selected notebook loads is not among them."""
    from hedgekit.papers import hib, spe, taha  # a paper's parts: only where needed (tests/test_imports.py)

    read, loaded = set(), set()
    for nb in select(only):
        records = {spec.name for paper in (hib, spe, taha)
                   for spec in getattr(paper.experiments, "notebook_record_specs", lambda _nb, _fast: [])(nb, fast)}
        names = {spec.name for paper in (hib, spe, taha) for spec in paper.experiments.notebook_specs(nb, fast)}
        read |= names & records
        loaded |= names - records
    return read - loaded


def model_measures(spec: Spec) -> dict:
    """Group -> function of the trained model ``spec`` and its checkpoint's metadata (returning name -> number):
    what the notebooks measure on it beyond its trainer's record, collected from each paper's
    ``experiments.model_measures(spec)`` (a paper without one adds nothing). `hedgekit.repro.measured` records and
    reads them."""
    from hedgekit.papers import hib, spe, taha  # a paper's parts: only where needed (tests/test_imports.py)

    out: dict = {}
    for paper in (hib, spe, taha):
        out.update(getattr(paper.experiments, "model_measures", lambda _spec: {})(spec))
    return out
