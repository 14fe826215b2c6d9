"""What a committed notebook's outputs hold: its verdict blocks (`verdict_blocks`), the Markdown a cell showed
(`outputs_markdown`), and whether it records a complete run (`partial_run`). Read by `hedgekit.repro.results`
(docs/results.md) and `hedgekit.repro.render_checks` (what a render must pass before it is published)."""
from __future__ import annotations

__all__ = ["VERDICT_HEADING", "POLICY_MARK", "outputs_markdown", "verdict_blocks", "partial_run"]

VERDICT_HEADING = "### What matched, what did not, and why — "  # the heading `hedgekit.papers.verdict.Verdict` writes
POLICY_MARK = "bands held to the policy"  # the words of its tally line that say every row was held to the band policy


def outputs_markdown(cell) -> list[str]:
    """The Markdown outputs of a code cell, each as one string."""
    return ["".join(o.get("data", {}).get("text/markdown", "")) for o in cell.get("outputs", [])
            if o.get("data", {}).get("text/markdown")]


def verdict_blocks(nb) -> list[str]:
    """The verdict Markdown blocks among the committed outputs of ``nb``, in notebook order."""
    return [md.strip() for cell in nb.cells if cell.cell_type == "code" for md in outputs_markdown(cell)
            if md.lstrip().startswith(VERDICT_HEADING)]


def partial_run(nb) -> str | None:
    """Why ``nb`` is not the record of a complete run, or None if it is.

    A complete run executes every code cell with source in order, and each then carries an execution count:
    papermill (and nbclient, `reproduce`) and JupyterLab's "Run All" number each such cell, and papermill clears
    every count before it starts. So ``nb`` is partial when

    * a code cell with source has no execution count: the run stopped before it (interrupted, or an error in
      an earlier cell; papermill then still marks the cells it never reached "completed" in its metadata, so
      that metadata is not read), or
    * it holds papermill's ``injected-parameters`` cell: `reproduce --inplace` drops it only from a run that
      finished, so it marks a run written back part-way, or papermill's own output copied over the notebook.

    Empty code cells are never executed and never count.
    """
    injected = [i for i, c in enumerate(nb.cells) if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    if injected:
        return (f"cell {injected[0] + 1} is papermill's injected-parameters cell, which a run written back by "
                "`reproduce --inplace` only loses once it finished")
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
    not_run = [i for i in code if nb.cells[i].get("execution_count") is None]
    if not_run:
        return (f"{len(not_run)} of its {len(code)} code cells did not run (no execution count, from cell "
                f"{not_run[0] + 1} on), so the run stopped part-way")
    return None
