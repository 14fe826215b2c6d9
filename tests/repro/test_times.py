"""Tests of hedgekit.repro.times: the kit's time table from train.json and run.json, and the marked section of
another file that ``--times-to`` replaces."""
import json

import pytest

from hedgekit.errors import InputError
from hedgekit.repro.times import BEGIN, END, check_marked, record_training, times_table, write_times

DOC = f"# Speed\n\nbefore\n{BEGIN}\nold table\n{END}\nafter\n"


def _trained(*models, seconds=10.0):
    return {"models": [dict(name=n, seconds=s, device=d, source="trained now", stacked=k) for n, s, d, k in models],
            "seconds": seconds}


def test_the_table_lists_each_model_and_notebook_with_its_seconds_and_device(tmp_path):
    record_training(tmp_path, _trained(("hib-s0", 20.4, "cuda:0 (H100)", 2), ("hib-s1", 20.4, "cuda:0 (H100)", 2),
                                       ("pn-s0", 7.6, "cuda:0 (H100)", 1), seconds=28.0))
    record_training(tmp_path, _trained(("pn-s0", 9.0, "cpu", 1), seconds=9.5))  # trained again: its record replaced
    record_training(tmp_path, _trained(seconds=0.1))  # nothing trained: no run recorded
    (tmp_path / "run.json").write_text(json.dumps({"fast": False, "runs": [
        dict(notebook="01_a.ipynb", status="ok", seconds=100.2, device="cuda"),
        dict(notebook="02_b.ipynb", status="failed", seconds=50.0, trained=2, train_seconds=31.0)]}))
    table = times_table(tmp_path)
    assert "| hib-s0 | cuda:0 (H100) | 20 | stacked, 2 seeds |" in table and "| pn-s0 | cpu | 9 | alone |" in table
    assert table.count("| pn-s0 |") == 1
    assert "3 models in 38 s of wall time over 2 run(s)" in table  # 28.0 + 9.5
    assert "| 01_a.ipynb | ok | cuda | 100 | - |" in table
    assert "| 02_b.ipynb | failed | - | 50 | 2 models, 31 s |" in table
    assert "Notebooks (full mode): 2 in 150 s." in table
    assert "Whole kit: training 38 s + notebooks 150 s = 188 s (3.1 min)." in table


def test_an_empty_folder_says_nothing_was_recorded(tmp_path):
    assert "Nothing recorded yet" in times_table(tmp_path)


def test_times_to_replaces_the_marked_section_only(tmp_path):
    doc = tmp_path / "speed.md"
    doc.write_text(DOC)
    record_training(tmp_path / "out", _trained(("point-s0", 3.0, "cpu", 1)))
    path = write_times(tmp_path / "out", to=doc)
    table = path.read_text()
    assert path == tmp_path / "out" / "times.md" and "| point-s0 | cpu | 3 | alone |" in table
    assert doc.read_text() == f"# Speed\n\nbefore\n{BEGIN}\n{table}{END}\nafter\n"
    write_times(tmp_path / "out", to=doc)  # again: the section is replaced, not added to
    assert doc.read_text().count("| point-s0 |") == 1


@pytest.mark.parametrize("text", ["no markers\n", f"{END}\n{BEGIN}\n", f"{BEGIN}\n{BEGIN}\n{END}\n", None])
def test_a_file_without_its_two_markers_is_refused(tmp_path, text):
    doc = tmp_path / "speed.md"
    if text is not None:
        doc.write_text(text)
    with pytest.raises(InputError, match="--times-to"):
        check_marked(doc)
