"""Model names, derived from a spec: one model, one name. Examples::

    hib-n2-d2-c1-beta0.0001-paper-s0        HIB MoG-1 on 2-digit MNIST, D = 2 (Oh et al. 2019, Table 1)
    point-n2-d2-hard-m1-paper-s0            a point embedding with the hard contrastive loss (eq. 1)
    spe-n2-d2-intersection1-paper-s0        SPE on 2-digit MNIST (Scott et al. 2019, Table 2)
    pn-n2-d2-paper-s0                       its deterministic sibling, the Prototypical Network
    spe-lshapes-d2-intersection8-paper-s0   SPE on the synthetic L-shapes (Figures 2-3)
    het-fashion-d8-noisy-paper-s0           Taha et al.'s eq. 11 on Fashion-MNIST with label noise
    url-ce-converged-s0                     a run of the URL benchmark (Kirchhof et al. 2023)

Every name is ``<kind>-<data or nN>-d<D>-<the kind's own settings>-<preset[steps]>-s<seed>`` (`model_name`), the
kind's own settings spelled by its spec type (`hedgekit.zoo.specs.ModelSpec.name_parts`); a URL run's is
``url-<method>-<budget>-s<seed>`` (`url_run_name`).
A name is derived from a spec and never parsed back into one: a checkpoint records its spec whole and is loaded
by the spec it records (`hedgekit.zoo.store.recorded_spec`, which reads the flat spec of the shipped checkpoints
too); no command takes a typed model name (the CLI builds a spec from its flags).
"""
from __future__ import annotations


URL_KIND = "url"  # the first word of a URL run's name and the kind of `hedgekit.zoo.url_runs.URLSpec`


def model_name(spec) -> str:
    """The name of a `hedgekit.zoo.specs.ModelSpec`, e.g. ``hib-n2-d2-c1-beta0.0001-paper-s0``."""
    parts = [spec.kind, spec.data if spec.data != "ndigit" else f"n{spec.n_digits}", f"d{spec.dim}"]
    parts += spec.name_parts()
    parts.append(spec.preset if spec.steps is None else f"{spec.preset}{spec.steps}")
    parts.append(f"s{spec.seed}")
    return "-".join(parts)


def url_run_name(spec) -> str:
    """The name of a `hedgekit.zoo.url_runs.URLSpec`, e.g. ``url-nivmf-converged-s2``."""
    return f"{URL_KIND}-{spec.method}-{spec.budget_name}-s{spec.seed}"
