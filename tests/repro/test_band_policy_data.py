"""The band policy's "can pass" half held on the data: every counted row of every committed render under the current
rules (`hedgekit.repro.results.is_current`), decided on two or more trained seeds, either has a band that a result
at its centre would match with `POLICY_SEEDS` seeds per arm or fewer at the seed spread the render recorded, or
says why not (the reason `NARROW`). The spread is rebuilt from the printed interval: half-width / t(0.975, n - 1) x
sqrt(n) (`hedgekit.papers.effects.Effect`), with half a unit of the last printed decimal either way, so that a row
is judged only where the printed numbers decide it. The "can fail" half (no null result inside a band) holds for
every row of every table when the tables are built (`hedgekit.papers.verdict.check_table`)."""
from __future__ import annotations

import math
import re
from decimal import Decimal

import nbformat
from scipy import stats

from hedgekit.papers import verdict as V
from hedgekit.paths import notebook_dir
from hedgekit.repro.rendered import verdict_blocks
from hedgekit.repro.results import is_current

_ROW = re.compile(r"^\| (\S+) \| (.*?) \| (.*?) \| (.*?) \| (.*) \|$")
_INTERVAL = re.compile(r"our 95% interval \[(\S+), (\S+)\]")
_RUNS = re.compile(r"\(([^()]*seed-to-seed spread[^()]*), (\d+) runs")
_BAND = re.compile(r"the band \[(\S+), (\S+)\]")


def _half_unit(text: str) -> float:
    return 0.5 * 10.0 ** Decimal(text).as_tuple().exponent


def policy_breaks(block: str) -> list[str]:
    """The counted rows of a rendered verdict ``block`` that break the "can pass" half without its reason: a result
    at the band's centre would need more than `POLICY_SEEDS` seeds per arm at the recorded spread and the reason
    is not `NARROW`, or it would need no more and the reason says `NARROW`. Rows the printed numbers cannot
    decide (the spread at the edge of its rounding) are left out."""
    broken = []
    for line in block.splitlines():
        row = _ROW.match(line)
        if row is None or row.group(1) not in ("✅", "❌", "–"):
            continue
        ours, why = row.group(4), row.group(5)
        runs, interval, band = _RUNS.search(ours), _INTERVAL.search(why), _BAND.search(why)
        if runs is None or interval is None or band is None or why.startswith("one trained model"):
            continue
        n = int(runs.group(2))
        if n < 2:
            continue
        lo, hi = interval.groups()
        half = (float(hi) - float(lo)) / 2
        slack = _half_unit(lo) + _half_unit(hi)
        t = stats.t.ppf(0.975, n - 1)
        width = (float(band.group(2)) - float(band.group(1))) / 2
        need = [V._seeds_for(max(h, 0.0) / t * math.sqrt(n), width) for h in (half - slack, half + slack)]
        narrow = V.NARROW in why
        if min(need) > V.POLICY_SEEDS and not narrow or max(need) <= V.POLICY_SEEDS and narrow:
            broken.append(f"{row.group(2)}: a result at the centre needs {need} seeds per arm; reason: {why[:120]}")
    return broken


def _engine_block(band, runs) -> str:
    row = V.Row("r", "A beats B", "Table 1", V.SIZE, lambda m: list(m), paper=None, band=band,
                reason="declared", compares="A - B")
    return V.Verdict("t").decide([row], runs).markdown()


def test_the_check_passes_the_engines_own_renders_and_finds_a_row_that_breaks_the_policy():
    wide, narrow = _engine_block((1.0, 5.0), [2.9, 3.0, 3.1, 3.0]), _engine_block((2.9, 3.1), [2.0, 3.0, 4.0, 3.0])
    assert V.NARROW in narrow and V.NARROW not in wide
    assert policy_breaks(wide) == [] and policy_breaks(narrow) == []
    unsaid = narrow.replace(V.NARROW, "band declared")  # the same row without its reason
    assert len(policy_breaks(unsaid)) == 1
    said = wide.replace("lies inside", f"{V.NARROW}: lies inside")  # a reason the numbers do not bear out
    assert len(policy_breaks(said)) == 1


def test_every_counted_row_of_every_render_under_the_policy_holds_to_it():
    current = 0
    for path in sorted(notebook_dir().glob("[0-9][0-9]_*.ipynb")):
        for block in verdict_blocks(nbformat.read(path, as_version=4)):
            if is_current(block):
                current += 1
                assert policy_breaks(block) == [], (path.name, policy_breaks(block))
    assert current >= 1, "no committed render is under the band policy"
