"""Model names, derived from a spec: one model, one name. Examples::

    hib-n2-d2-c1-beta0.0001-paper-s0        HIB MoG-1 on 2-digit MNIST, D = 2 (Oh et al. 2019, Table 1)
    point-n2-d2-hard-m1-paper-s0            a point embedding with the hard contrastive loss (eq. 1)
    spe-n2-d2-intersection1-paper-s0        SPE on 2-digit MNIST (Scott et al. 2019, Table 2)
    pn-n2-d2-paper-s0                       its deterministic sibling, the Prototypical Network
    spe-lshapes-d2-intersection8-paper-s0   SPE on the synthetic L-shapes (Figures 2-3)
    het-fashion-d8-noisy-paper-s0           Taha et al.'s eq. 11 on Fashion-MNIST with label noise
    url-ce-converged-s0                     a run of the URL benchmark (Kirchhof et al. 2023)

Every name is ``<kind>-<data or nN>-d<D>-<the kind's own settings>-<preset[steps]>-s<seed>`` (`model_name`), the
kind's own settings spelled by `OWN_PARTS`; a URL run's is ``url-<method>-<budget>-s<seed>`` (`url_run_name`).
A name is derived from a spec and never parsed back into one: a checkpoint records its spec whole and is loaded
by the spec it records (`hedgekit.zoo.store.recorded_spec`, which reads the flat spec of the shipped checkpoints
too); no command takes a typed model name (the CLI builds a spec from its flags).
"""
from __future__ import annotations


URL_KIND = "url"  # the first word of a URL run's name and the kind of `hedgekit.zoo.url_runs.URLSpec`


def _recipe(spec) -> list[str]:
    return [spec.recipe] if spec.recipe != "main" else []


def _point(spec) -> list[str]:
    return ["hard", f"m{spec.margin:g}"] if spec.loss == "hard" else []


def _hib(spec) -> list[str]:
    parts = [f"c{spec.components}", "beta" + f"{spec.beta:g}".replace("-", "_")]
    return parts + ([f"k{spec.samples}"] if spec.samples is not None else [])


def _spe(spec) -> list[str]:
    return [f"{spec.sampler}{spec.samples}"] + (["veps"] if spec.init_var == "eps" else []) + _recipe(spec)


# kind -> the name parts of its own settings; a setting at its default is not named, so that adding one keeps
# every existing name
OWN_PARTS = {"point": _point, "hib": _hib, "pn": _recipe, "spe": _spe, "triplet": _recipe, "het": _recipe}


def model_name(spec) -> str:
    """The name of a `hedgekit.zoo.specs.ModelSpec`, e.g. ``hib-n2-d2-c1-beta0.0001-paper-s0``."""
    parts = [spec.kind, spec.data if spec.data != "ndigit" else f"n{spec.n_digits}", f"d{spec.dim}"]
    parts += OWN_PARTS[spec.kind](spec)
    parts.append(spec.preset if spec.steps is None else f"{spec.preset}{spec.steps}")
    parts.append(f"s{spec.seed}")
    return "-".join(parts)


def url_run_name(spec) -> str:
    """The name of a `hedgekit.zoo.url_runs.URLSpec`, e.g. ``url-nivmf-converged-s2``."""
    return f"{URL_KIND}-{spec.method}-{spec.budget_name}-s{spec.seed}"
