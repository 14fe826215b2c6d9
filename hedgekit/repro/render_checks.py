"""What a notebook's render must pass before `python -m hedgekit results` publishes it: it is whole, and it decides
no claim on fewer trained seeds than the committed render (design notes sec. 6: evidence outlives the machine).

Whole (`damage`): no cell holds an error, and no verdict holds fewer claims than the same verdict in the committed
render (claims counted, sanity checks and conditions alike; a verdict whose output was emptied, by a crashed editor
say, holds none). A run cut short, or outputs cleared with their execution counts, is `hedgekit.repro.rendered.partial_run`'s case.

A counted claim of a verdict table (`hedgekit.papers.verdict.Verdict.markdown`) was decided on the trained seeds its
"ours" cell counts ("…, 3 runs)") when its reason does not say *one trained model*, and on one trained model when it
does (its runs are evaluation repeats of that model). A claim whose "ours" cell counts no runs (a given standard
error, an interval computed elsewhere) has no seed count here and is not compared.

The previous render is the notebook as the checked-out commit holds it (`previous_render`), when the working copy
differs from it: a new render is judged before it is committed, against what a reader sees now. A notebook
unchanged since its commit has nothing to judge.
"""
from __future__ import annotations

import re
from pathlib import Path


from hedgekit.paths import git
from hedgekit.repro.rendered import partial_run, verdict_blocks

__all__ = ["claim_seeds", "claim_counts", "previous_render", "damage", "fewer_seeds", "fewer_seeds_paragraph",
           "damage_paragraph"]

_ROW = re.compile(r"^\|\s*(✅|❌|–)\s*\|")
_ANY_ROW = re.compile(r"^\|\s*(✅|❌|–|✔|✘)\s*\|")
_CELL = re.compile(r"(?<!\\)\|")
_RUNS = re.compile(r"(\d+) runs\)")
ONE_MODEL = "one trained model"


def claim_seeds(nb) -> dict[str, int]:
    """Each counted claim of ``nb``'s committed verdicts (the claim's text, made unique by its verdict's heading)
    -> the trained seeds it was decided on: 1 where its reason reads *one trained model*, else the runs its "ours"
    cell counts; claims with no run count are left out."""
    out = {}
    for block in verdict_blocks(nb):
        title = block.splitlines()[0]
        for line in block.splitlines():
            if not _ROW.match(line):
                continue
            cells = [c.strip() for c in _CELL.split(line)[1:-1]]
            if len(cells) < 5:
                continue
            _, claim, _, ours, why = cells[:5]
            runs = _RUNS.search(ours)
            seeds = 1 if ONE_MODEL in why else int(runs.group(1)) if runs else None
            if seeds is not None:
                out[f"{title} :: {claim}"] = seeds
    return out


def claim_counts(nb) -> dict[str, int]:
    """Each verdict of ``nb``'s committed outputs (its heading) -> the claims it lists: counted, sanity checks and
    conditions."""
    return {block.splitlines()[0]: sum(bool(_ANY_ROW.match(line)) for line in block.splitlines())
            for block in verdict_blocks(nb)}


def damage(path: str | Path) -> list[str]:
    """What is missing from the render of the notebook at ``path`` (module docstring), as phrases; [] when whole."""
    import nbformat  # here, not at the top: 1.5-3.7 s (jsonschema's format checkers), and every command imports this

    nb = nbformat.read(str(path), as_version=4)
    if partial_run(nb) is not None:  # a run cut short: `results` names it as such
        return []
    code = [c for c in nb.cells if c.cell_type == "code"]
    out = []
    errors = [i for i, c in enumerate(code, 1) if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    if errors:
        out.append(f"code cell(s) {', '.join(map(str, errors))} hold an error")
    before = previous_render(path)
    if before is not None:
        now = claim_counts(nb)
        out += [f"its verdict {title!r} lists {now.get(title, 0)} claims, {n} in the committed render"
                for title, n in claim_counts(before).items() if now.get(title, 0) < n]
    return out


def previous_render(path: str | Path):
    """The notebook at ``path`` as the checked-out commit (HEAD) holds it, when the working copy differs from it;
    None outside a git checkout, for a notebook HEAD does not hold, or when the working copy is HEAD's."""
    path = Path(path).resolve()
    root = git(path.parent, "rev-parse", "--show-toplevel")
    if root is None:
        return None
    text = git(Path(root.strip()), "show", f"HEAD:{path.relative_to(Path(root.strip())).as_posix()}")
    if text is None or text == path.read_text():
        return None
    import nbformat  # see damage

    return nbformat.reads(text, as_version=4)


def fewer_seeds(path: str | Path) -> list[tuple[str, int, int]]:
    """(claim, seeds before, seeds now) for every claim of the notebook at ``path`` decided on fewer trained seeds
    than in its previous render (`previous_render`); [] when there is none to compare with."""
    before = previous_render(path)
    if before is None:
        return []
    import nbformat  # see damage

    was, now = claim_seeds(before), claim_seeds(nbformat.read(str(path), as_version=4))
    return [(claim, was[claim], n) for claim, n in now.items() if claim in was and n < was[claim]]


def damage_paragraph(damaged: dict[str, list[str]]) -> str:
    """The paragraph `results` refuses with: each notebook and what is missing from its render."""
    lines = ["These notebooks' renders are not whole, so docs/results.md was left as it is:"]
    lines += [f"  {nb}: {'; '.join(problems)}" for nb, problems in damaged.items()]
    lines.append("Restore them (`git checkout -- notebooks/NN_name.ipynb`) or re-render them "
                 "(`python -m hedgekit reproduce --only NN --inplace`).")
    return "\n".join(lines)


def fewer_seeds_paragraph(drops: dict[str, list[tuple[str, int, int]]]) -> str:
    """The paragraph `results` refuses with: each notebook and the claims it now decides on fewer seeds."""
    lines = ["These notebooks decide claims on fewer trained seeds than their previous committed render did (a "
             "render never decides a claim on fewer seeds than before; the seeds' records are in the ledger, "
             "hedgekit/ledger/, and `python -m hedgekit reproduce --only NN --plan` names what to train):"]
    for nb, rows in drops.items():
        lines += [f"  {nb}:"] + [f"    {claim}: {was} -> {now} seed(s)" for claim, was, now in rows]
    lines.append("Re-render on the seeds the previous render had, or pass --fewer-seeds-because \"REASON\" to write "
                 "docs/results.md anyway (say the reason in the commit).")
    return "\n".join(lines)
