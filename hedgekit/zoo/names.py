"""Model names, derived from a spec: one model, one name (issue 47 item 1). Examples::

    hib-n2-d2-c1-beta0.0001-paper-s0        HIB MoG-1 on 2-digit MNIST, D = 2 (Oh et al. 2019, Table 1)
    point-n2-d2-hard-m1-paper-s0            a point embedding with the hard contrastive loss (eq. 1)
    spe-n2-d2-intersection1-paper-s0        SPE on 2-digit MNIST (Scott et al. 2019, Table 2)
    pn-n2-d2-paper-s0                       its deterministic sibling, the Prototypical Network
    spe-lshapes-d2-intersection8-paper-s0   SPE on the synthetic L-shapes (Figures 2-3)
    het-fashion-d8-noisy-paper-s0           Taha et al.'s eq. 11 on Fashion-MNIST with label noise
    url-ce-converged-s0                     a run of the URL benchmark (Kirchhof et al. 2023)

Every name is ``<kind>-<data or nN>-d<D>-<the kind's own settings>-<preset[steps]>-s<seed>`` (`model_name`), the
kind's own settings spelled by `OWN_PARTS`; a URL run's is ``url-<method>-<budget>-s<seed>`` (`url_run_name`).
The store does not read a spec back from a name: a checkpoint records its spec whole
(`hedgekit.zoo.store.recorded_spec`). `spec_from_name` is for names a person types (the latency benchmark, tests).
"""
from __future__ import annotations

from hedgekit.errors import InputError

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


def spec_from_name(name: str):
    """The spec a typed name names: the inverse of `model_name` and `url_run_name`; `InputError` for anything
    that is not a canonical name (the spec's own checks name a bad field: unknown preset, sampler, ...)."""
    from hedgekit.zoo.specs import RECIPES, Spec  # the specs name themselves with this module: read when called

    parts = str(name).split("-")
    if parts[0] == URL_KIND:
        return _url_spec_from_name(str(name), parts)
    try:
        fields = _fields(parts, RECIPES)
    except (IndexError, ValueError, TypeError) as exc:
        raise InputError(f"{name!r} is not a hedgekit model name like 'hib-n2-d2-c1-beta0.0001-paper-s0' or "
                         f"'spe-n2-d2-intersection1-paper-s0'") from exc
    spec = Spec(**fields)
    if spec.name != name:
        raise InputError(f"{name!r} is not a canonical model name (did you mean {spec.name!r}?)")
    return spec


def _fields(parts: list[str], recipes: tuple[str, ...]) -> dict:
    """The spec fields a model name's parts spell (ValueError / IndexError where they spell none)."""
    kw: dict = {"kind": parts[0]}
    if parts[1] in ("lshapes", "fashion"):
        kw["data"] = parts[1]
    elif parts[1][0] == "n":
        kw["n_digits"] = int(parts[1][1:])
    else:
        raise ValueError
    if parts[2][0] != "d":
        raise ValueError
    kw["dim"] = int(parts[2][1:])
    rest = parts[3:]
    if kw["kind"] == "hib":
        if rest[0][0] != "c" or not rest[1].startswith("beta"):
            raise ValueError
        kw["components"], kw["beta"] = int(rest[0][1:]), float(rest[1][4:].replace("_", "-"))
        rest = rest[2:]
        if rest[0][:1] == "k" and rest[0][1:].isdigit():
            kw["samples"] = int(rest[0][1:])
            rest = rest[1:]
    if rest[0] == "hard":
        kw["loss"], kw["margin"] = "hard", float(rest[1][1:])
        rest = rest[2:]
    if kw["kind"] == "spe":
        sampler = rest[0].rstrip("0123456789")
        kw["sampler"], kw["samples"] = sampler, int(rest[0][len(sampler):])
        rest = rest[1:]
        if rest[0] == "veps":
            kw["init_var"] = "eps"
            rest = rest[1:]
    if rest[0] in recipes:
        kw["recipe"] = rest[0]
        rest = rest[1:]
    preset = rest[0].rstrip("0123456789")
    kw["preset"] = preset
    if rest[0] != preset:
        kw["steps"] = int(rest[0][len(preset):])
    if len(rest) != 2 or rest[1][0] != "s":
        raise ValueError
    kw["seed"] = int(rest[1][1:])
    return kw


def _url_spec_from_name(name: str, parts: list[str]):
    """``url-<method>-<budget>-s<seed>`` (the budget may hold dashes: ``converged-lr0.5x``) as a
    `hedgekit.zoo.url_runs.URLSpec`."""
    from hedgekit.zoo.url_runs import URLSpec

    if len(parts) < 4 or not parts[-1][:1] == "s" or not parts[-1][1:].isdigit():
        raise InputError(f"{name!r} is not a URL run name like 'url-ce-converged-s0'")
    spec = URLSpec(parts[1], "-".join(parts[2:-1]), int(parts[-1][1:]))
    if spec.name != name:
        raise InputError(f"{name!r} is not a canonical URL run name (did you mean {spec.name!r}?)")
    return spec
