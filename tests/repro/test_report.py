"""hedgekit.repro.report's `recorded_entry`: what a FAST run shows in place of a study it does not rerun is exactly
what a full run's `Report` wrote, read back by name."""
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from hedgekit.errors import InputError
from hedgekit.paths import REPO_DIR
from hedgekit.repro.report import COMMITTED_ASSETS, Report, recorded_entry


def test_a_recorded_table_text_and_figure_read_back_as_written(tmp_path):
    report = Report(tmp_path, "08_het_triplet_retrieval")
    frame = pd.DataFrame({"run": [0, 1], "uncertainty − random": [0.25, -0.5]}).set_index("run")
    report.table("Pairs, by run", frame, note="points")
    report.text("A verdict", "**1 matched**")
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    report.figure("sigma2-vs-truth", fig)
    plt.close(fig)
    table = recorded_entry("08_het_triplet_retrieval", "Pairs, by run", tmp_path)
    assert table["kind"] == "table" and "| run | uncertainty − random |" in table["markdown"]
    assert table["frame"].set_index("run")["uncertainty − random"].tolist() == [0.25, -0.5]
    assert recorded_entry("08_het_triplet_retrieval", "A verdict", tmp_path)["markdown"].strip() == "**1 matched**"
    figure = recorded_entry("08_het_triplet_retrieval", "sigma2-vs-truth", tmp_path)["figure"]
    assert figure.read_bytes().startswith(b"\x89PNG")
    with pytest.raises(InputError, match=r"holds no entry 'Absent'.*reproduce --only 08"):
        recorded_entry("08_het_triplet_retrieval", "Absent", tmp_path)


def test_a_figure_and_a_table_of_one_name_are_told_apart_by_kind(tmp_path):
    report = Report(tmp_path, "05_kl_and_soft_contrastive")
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    report.figure("Figure 6", fig)
    plt.close(fig)
    report.table("Figure 6", pd.DataFrame({"margin": [0.5, 2.0], "ap_clean": [0.9, 0.8]}))
    assert recorded_entry("05_kl_and_soft_contrastive", "Figure 6", tmp_path)["kind"] == "figure"
    assert recorded_entry("05_kl_and_soft_contrastive", "Figure 6", tmp_path, kind="figure")["figure"].is_file()
    table = recorded_entry("05_kl_and_soft_contrastive", "Figure 6", tmp_path, kind="table")
    assert table["frame"]["ap_clean"].tolist() == [0.9, 0.8]
    with pytest.raises(InputError, match=r"holds no text entry 'Figure 6'"):
        recorded_entry("05_kl_and_soft_contrastive", "Figure 6", tmp_path, kind="text")


def test_the_studies_notebook_08_shows_in_fast_mode_are_in_the_committed_report():
    names = ("Gallery cleaning, noise not a function of the pixels: design and confirmation seeds, paired by run",
             "sigma2-vs-truth", "Flipped-label detection, noise not a function of the pixels",
             "Noise not a function of the pixels, design seeds verdict",
             "Noise not a function of the pixels, confirmation seeds verdict")
    assert (REPO_DIR / COMMITTED_ASSETS / "08_het_triplet_retrieval").is_dir()
    for name in names:
        recorded_entry("08_het_triplet_retrieval", name)


def test_the_figure_notebook_05_shows_in_fast_mode_is_in_the_committed_report():
    for kind in ("figure", "table"):
        recorded_entry("05_kl_and_soft_contrastive", "Figure 6 — soft vs hard contrastive", kind=kind)
