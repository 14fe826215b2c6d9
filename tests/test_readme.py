"""The README quotes the papers' numbers beside ours; every quoted paper number must be the one in the
paper's `numbers` module (the only place they live), so a typo in either place fails here."""
import re
from pathlib import Path

import pytest

from hedgekit.papers.hib import numbers as hib
from hedgekit.papers.spe import numbers as spe

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
MODELS = ("point", "MoG-1", "MoG-2")
METRICS = {"AP clean": "ap_clean", "AP corrupt": "ap_corrupt", "KNN clean": "knn_clean", "KNN corrupt": "knn_corrupt",
           "tau AP clean": "tau_ap_clean", "tau AP corrupt": "tau_ap_corrupt", "tau KNN clean": "tau_knn_clean",
           "tau KNN corrupt": "tau_knn_corrupt"}


def _section(title: str) -> str:
    start = README.index(title)
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _paper_value(cell: str) -> float | None:
    m = re.fullmatch(r"[-0-9.]+ / ([-0-9.]+)", cell)
    return float(m.group(1)) if m else None


def _paper_ref(n: int, d: int, model: str, key: str) -> float:
    """The paper's number: Table 4 for N = 3, D = 4 (accuracies and taus), else Table 1 or Table 2 (taus)."""
    if (n, d) in hib.HIB_TABLE4:
        return hib.HIB_TABLE4[(n, d)][model][key]
    table = hib.HIB_TABLE2 if key.startswith("tau") else hib.HIB_TABLE1
    return table[(n, d)][model][key]


def test_hib_table1_at_n2_d2_quotes_numbers_py():
    rows = [_cells(line) for line in _section("## Results: HIB Table 1 at N = 2, D = 2").splitlines()
            if line.startswith("| ") and _cells(line)[0] in METRICS]
    assert len(rows) == 8
    checked = 0
    for metric, *cells in rows:
        for model, cell in zip(MODELS, cells):
            value = _paper_value(cell)
            if value is not None:
                assert value == pytest.approx(_paper_ref(2, 2, model, METRICS[metric])), (metric, model)
                checked += 1
    assert checked == 4 * 3 + 4 * 2  # point has no tau


def test_hib_tables_at_other_settings_quote_numbers_py():
    checked = 0
    for line in _section("## Results: HIB Tables 1-2 at other N, D").splitlines():
        cells = _cells(line)
        if not line.startswith("| ") or not re.fullmatch(r"\d, \d", cells[0]):
            continue
        n, d = map(int, cells[0].split(", "))
        if cells[1] in METRICS:
            for model, cell in zip(MODELS, cells[2:]):
                value = _paper_value(cell)
                if value is not None:
                    assert value == pytest.approx(_paper_ref(n, d, model, METRICS[cells[1]])), (n, d, cells[1], model)
                    checked += 1
        elif cells[1] == "tau AP / KNN corrupt":
            for model, cell in zip(MODELS[1:], cells[3:]):
                m = re.fullmatch(r"[-0-9.]+ / [-0-9.]+ \(([0-9.]+) / ([0-9.]+)\)", cell)
                assert m, cell
                assert float(m.group(1)) == pytest.approx(_paper_ref(n, d, model, "tau_ap_corrupt"))
                assert float(m.group(2)) == pytest.approx(_paper_ref(n, d, model, "tau_knn_corrupt"))
                checked += 2
    assert checked == 4 * (4 * 3 + 2 * 2)  # N, D in (2, 3), (3, 2), (3, 3) and Table 4's (3, 4)


def test_spe_table2_means_quote_numbers_py():
    conditions = {"clean / clean": "clean S / clean Q", "corrupt / clean": "corrupt S / clean Q",
                  "clean / corrupt": "clean S / corrupt Q"}
    columns = (("PN", "seen"), ("PN", "unseen"), ("SPE", "seen"), ("SPE", "unseen"))
    settings = ((2, 2), (2, 3), (3, 2), (3, 3))
    checked = 0
    for line in README.splitlines():
        cells = _cells(line)
        if line.startswith("| ") and cells[0] in conditions and len(cells) == 5:
            for (method, split), cell in zip(columns, cells[1:]):
                expected = spe.paper_mean(conditions[cells[0]], method, split, settings)
                assert _paper_value(cell) == pytest.approx(expected, abs=0.05), (cells[0], method, split)
                checked += 1
    assert checked == 12


def test_bigger_runs_loss_example_trains_any_backbone(monkeypatch):
    """The "Bigger runs" example runs as written, with a tiny stand-in for timm (not a dependency):
    a few steps on two separable classes lower the HIB loss."""
    import sys
    import types

    import torch
    from torch import nn

    code = re.search(r"```python\n(.*?)```", _section("## Bigger runs"), re.S).group(1)
    fake = types.ModuleType("timm")

    def create_model(name, pretrained, num_classes):
        net = nn.Sequential(nn.Flatten(), nn.Linear(12, 16), nn.ReLU())
        net.num_features = 16
        return net

    fake.create_model = create_model
    monkeypatch.setitem(sys.modules, "timm", fake)
    torch.manual_seed(0)
    labels = torch.arange(2).repeat_interleave(4)
    images = torch.randn(8, 3, 2, 2) + 2 * labels[:, None, None, None]
    losses = []
    loader = [(images, labels)] * 30
    namespace = {"loader": loader}
    exec(compile(code.replace("opt.step()", "opt.step(); losses.append(loss.item())"), "README", "exec"),
         {**namespace, "losses": losses})
    assert len(losses) == 30 and losses[-1] < losses[0]
