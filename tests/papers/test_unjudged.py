"""What the notebooks show of the papers but no claims row decides (`hedgekit.papers.unjudged`): every record is
complete, names a notebook that exists, repeats no counted row, and docs/results.md lists it in its section
"Shown, not judged" (`hedgekit.repro.results.render`)."""
from __future__ import annotations

from dataclasses import FrozenInstanceError, fields

import pytest

from hedgekit.papers import unjudged as U
from hedgekit.papers.verdict import COUNTED
from hedgekit.paths import notebook_dir
from hedgekit.repro import results as R

SPE_SETTINGS = ((2, 2), (2, 3), (3, 2), (3, 3))


def _counted_rows() -> dict[str, list]:
    """Paper key -> the counted rows (size, level, ranking) of its claims tables; SPE's N-digit table with no, one
    and every seeded cell, since which rows it holds depends on the seeds a run has."""
    from hedgekit.papers.hib import claims as hib
    from hedgekit.papers.spe import claims as spe
    from hedgekit.papers.spe.numbers import CONDITION_NAMES
    from hedgekit.papers.taha import claims as taha
    from hedgekit.papers.url import claims as url

    every = frozenset((split, cond) for split in ("seen", "unseen") for cond in CONDITION_NAMES.values())
    spe_rows = [*spe.LSHAPES, *spe.FIGURE_ROWS]
    for seeded in (frozenset(), frozenset({("seen", "clean S / clean Q")}), every):
        spe_rows += spe.ndigit_table(SPE_SETTINGS, seeded)
    tables = {"hib": list(hib.CLAIMS), "spe": spe_rows, "taha": list(taha.TABLE), "url": list(url.TABLE)}
    return {paper: [r for r in rows if r.kind in COUNTED] for paper, rows in tables.items()}


def _loose(text: str) -> str:
    """Case, spacing, the kind of minus sign and a final full stop do not make two texts differ."""
    return " ".join(text.replace("−", "-").lower().split()).rstrip(".")


def test_every_record_is_complete_and_frozen():
    assert U.UNJUDGED, "no records"
    for r in U.UNJUDGED:
        for f in fields(r):
            value = getattr(r, f.name)
            assert isinstance(value, str) and value.strip(), (r, f.name)
        assert r.paper in U.PAPERS, r
    with pytest.raises(FrozenInstanceError):
        U.UNJUDGED[0].reason = "changed"
    assert sum(U.by_paper().values()) == len(U.UNJUDGED) and set(U.by_paper()) == set(U.PAPERS)


def test_every_paper_has_records_and_none_is_listed_twice():
    assert all(n > 0 for n in U.by_paper().values()), U.by_paper()
    keys = [(r.paper, _loose(r.place), _loose(r.paper_value_text)) for r in U.UNJUDGED]
    assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]


def test_each_notebook_named_exists():
    for r in U.UNJUDGED:
        assert (notebook_dir() / f"{r.notebook}.ipynb").is_file(), r


def test_no_record_repeats_a_counted_row():
    """A record's place must not be a counted row's place with the same paper value: that comparison is judged."""
    counted = _counted_rows()
    assert all(counted.values()), {p: len(rows) for p, rows in counted.items()}
    judged = {(paper, _loose(row.place), _loose(row.shown_paper())) for paper, rows in counted.items() for row in rows}
    repeats = [r for r in U.UNJUDGED if (r.paper, _loose(r.place), _loose(r.paper_value_text)) in judged]
    assert not repeats, repeats


def test_the_rule_catches_a_record_that_a_row_judges():
    """The check above is not vacuous: a record copied from a counted row is caught."""
    row = _counted_rows()["hib"][0]
    copy = U.Unjudged("hib", row.place, row.shown_paper(), "04_known_unknowns", "copied")
    judged = {(_loose(r.place), _loose(r.shown_paper())) for r in _counted_rows()["hib"]}
    assert (_loose(copy.place), _loose(copy.paper_value_text)) in judged


def _section(text: str) -> list[str]:
    """The lines of the section "Shown, not judged" of a rendered results page, to the next heading or the end."""
    lines = text.splitlines()
    start = lines.index(R.UNJUDGED_HEADING)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start:end]


def test_render_lists_every_record_once():
    text = R.render([], U.UNJUDGED)
    assert text.count(R.UNJUDGED_HEADING) == 1
    section = _section(text)
    body = [line for line in section if line.startswith("| ") and not line.startswith("| paper |")]
    assert len(body) == len(U.UNJUDGED)
    for r, line in zip(U.UNJUDGED, body):
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert cells == [U.PAPERS[r.paper], r.place, r.paper_value_text, f"[{r.notebook}](#{r.notebook})",
                         r.reason], line


def test_the_section_follows_the_notebooks_and_escapes_pipes():
    nb = R.NotebookResults("04_x", "x", "full", "2026-11-27 03:30", 60.0, verdicts=[
        "**2 matched, 1 not matched** (computed from the numbers above, bands held to the policy; 2 decided on trained seeds; 1 on evaluation "
        "repeats only; 4 sanity check(s) listed apart, 4 passed)."])
    record = U.Unjudged("hib", "Table 9", "a | b", "04_x", "why")
    text = R.render([nb], unjudged=[record])
    assert text.index("## 04_x") < text.index(R.UNJUDGED_HEADING)
    assert "| HIB (Oh et al. 2019) | Table 9 | a \\| b | [04_x](#04_x) | why |" in _section(text)
    assert R.render([nb], unjudged=[]).rstrip().endswith("|---|---|---|---|---|")


def test_every_counted_row_prints_its_band_edges_at_its_precision():
    """The band policy's "band edges sit on the row's printed precision" (`hedgekit.papers.verdict.snap_band`),
    on every counted row of every claims table."""
    for rows in _counted_rows().values():
        for r in rows:
            low, high = r.declared_band()
            assert float(f"{low:.{r.digits}f}") == low and float(f"{high:.{r.digits}f}") == high, (r.id, low, high)
