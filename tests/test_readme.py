"""The README is the front door: short, its test command is the one CI runs, its first example runs as
written, its Layout names every module, its links resolve. The hand-typed tables that moved from it to
docs/recipes.md still quote the papers' numbers from the `numbers` modules (the only place they live), so
a typo in either place fails here; the generated tables of docs/results.md: tests/repro/test_results.py."""
import contextlib
import io
import re
import time
from pathlib import Path

import pytest

from hedgekit.papers.hib import numbers as hib
from hedgekit.papers.spe import numbers as spe

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
RECIPES = (ROOT / "docs" / "recipes.md").read_text()
EXTENDING = (ROOT / "docs" / "extending.md").read_text()
MAX_LINES = 180
QUICK_TIER = 'python -m pytest -n 2 -m "not slow"'
MODELS = ("point", "MoG-1", "MoG-2")
METRICS = {"AP clean": "ap_clean", "AP corrupt": "ap_corrupt", "KNN clean": "knn_clean", "KNN corrupt": "knn_corrupt",
           "tau AP clean": "tau_ap_clean", "tau AP corrupt": "tau_ap_corrupt", "tau KNN clean": "tau_knn_clean",
           "tau KNN corrupt": "tau_knn_corrupt"}


def _section(text: str, title: str) -> str:
    """From the heading ``title`` to the next heading of the same or a higher level."""
    start = text.index(title)
    level = len(title) - len(title.lstrip("#"))
    end = re.search(rf"^#{{1,{level}}} ", text[start + len(title):], re.M)
    return text[start:start + len(title) + end.start()] if end else text[start:]


def _code(section: str, lang: str) -> str:
    return re.search(rf"```{lang}\n(.*?)```", section, re.S).group(1)


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


# ---------------------------------------------------------------- the front door
def test_readme_is_short():
    assert len(README.splitlines()) <= MAX_LINES


def test_ci_runs_exactly_the_readme_test_command():
    setup = _section(README, "## Set-up: two commands")
    commands = [line.strip() for line in re.findall(r"```bash\n(.*?)```", setup, re.S)]
    assert len(commands) == 2 and commands[0].endswith("streamlit run app/main.py")
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == commands[1]
    assert QUICK_TIER in _code(_section(README, "## Tests and commands"), "bash")


def test_first_hedged_embedding_runs_and_hedges():
    """The block runs as written (<= 15 lines, < 30 s on the shipped MoG-1): hiding the tens digit
    raises the variance at least 10x and eta by at least 0.1."""
    code = _code(_section(README, "## Your first hedged embedding"), "python")
    assert len([line for line in code.splitlines() if line.strip()]) <= 15
    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README", "exec"), {"__name__": "__readme__"})
    seconds = time.perf_counter() - t0
    lines = dict(line.split(": ", 1) for line in out.getvalue().splitlines())
    assert set(lines) == {"17", "?7"}
    value = {name: {k: float(v) for k, v in re.findall(r"(variance|eta) ([0-9.]+)", text)}
             for name, text in lines.items()}
    assert value["?7"]["variance"] >= 10 * value["17"]["variance"]
    assert value["?7"]["eta"] >= value["17"]["eta"] + 0.1
    assert seconds < 30


def test_layout_names_every_module():
    """Every module under hedgekit/ appears in the Layout block: by its path, by its file name on a line of
    its folder, or (papers/<paper>/<module>.py) on the pattern line that lists its paper."""
    block = _code(_section(README, "## Layout"), "")
    lines = block.splitlines()
    missing = []
    for path in sorted((ROOT / "hedgekit").rglob("*.py")):
        rel = path.relative_to(ROOT / "hedgekit").as_posix()
        if path.name == "__init__.py" or rel in block:
            continue
        folder, name = rel.rsplit("/", 1) if "/" in rel else ("", rel)
        on_folder_line = any(line.strip().startswith(f"{folder}/") and f" {name}" in f" {line.strip()}"
                             for line in lines if folder)
        paper = re.fullmatch(r"papers/(\w+)", folder)
        on_pattern_line = paper and any(f"papers/<paper>/{name}" in line and
                                        re.search(rf"\(([\w, ]*\b{paper.group(1)}\b[\w, ]*)\)", line) for line in lines)
        if not (on_folder_line or on_pattern_line):
            missing.append(rel)
    assert not missing, f"modules the README's Layout does not name: {missing}"


def test_local_links_resolve():
    links = re.findall(r"\]\(([^)#]+)\)|src=\"([^\"]+)\"", README)
    paths = [a or b for a, b in links if not (a or b).startswith("http")]
    assert {"docs/results.md", "docs/recipes.md", "docs/speed.md"} <= set(paths)
    assert [p for p in paths if not (ROOT / p).exists()] == []


# ---------------------------------------------------------------- the tables that moved to docs/recipes.md
def test_hib_table1_at_n2_d2_quotes_numbers_py():
    rows = [_cells(line) for line in _section(RECIPES, "### Results: HIB Table 1 at N = 2, D = 2").splitlines()
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
    for line in _section(RECIPES, "### Results: HIB Tables 1-2 at other N, D").splitlines():
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
    for line in RECIPES.splitlines():
        cells = _cells(line)
        if line.startswith("| ") and cells[0] in conditions and len(cells) == 5:
            for (method, split), cell in zip(columns, cells[1:]):
                expected = spe.paper_mean(conditions[cells[0]], method, split, settings)
                assert _paper_value(cell) == pytest.approx(expected, abs=0.05), (cells[0], method, split)
                checked += 1
    assert checked == 12


def test_bigger_runs_loss_example_trains_any_backbone(monkeypatch):
    """docs/extending.md's "Bigger runs" example runs as written, with a tiny stand-in for timm (not a
    dependency): a few steps on two separable classes lower the HIB loss."""
    import sys
    import types

    import torch
    from torch import nn

    code = _code(_section(EXTENDING, "## Bigger runs"), "python")
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
    exec(compile(code.replace("opt.step()", "opt.step(); losses.append(loss.item())"), "docs/extending.md", "exec"),
         {**namespace, "losses": losses})
    assert len(losses) == 30 and losses[-1] < losses[0]


def test_fast_times_are_the_recorded_fast_run_not_typed():
    """The notebooks table's FAST column is what the last recorded FAST run measured (notebooks/report/fast.json,
    `hedgekit.repro.session.fast_times`), with the machine's load beside it."""
    from hedgekit.repro.session import fast_time_text, fast_times

    recorded = fast_times()
    rows = re.findall(r"^\| `(\d\d_\w+)` \| [^|]+ \| ([^|]+) \|$", _section(README, "## The notebooks"), re.M)
    assert len(rows) == 10 and set(recorded) == {name for name, _ in rows}
    for name, shown in rows:
        assert shown.strip() == fast_time_text(recorded[name]["seconds"], recorded[name]["load"]), name
