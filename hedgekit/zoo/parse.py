"""A spec read back from a model name a person types (the latency benchmark, tests): the inverse of
`hedgekit.zoo.names.model_name` and `url_run_name`. The store never uses it: a checkpoint records its spec whole
(`hedgekit.zoo.store.recorded_spec`). Above both `names` and `specs`, so neither imports the other back.
"""
from __future__ import annotations

from hedgekit.errors import InputError
from hedgekit.zoo.names import URL_KIND
from hedgekit.zoo.specs import RECIPES, Spec
from hedgekit.zoo.url_runs import URLSpec


def spec_from_name(name: str):
    """The spec a typed name names: the inverse of `model_name` and `url_run_name`; `InputError` for anything
    that is not a canonical name (the spec's own checks name a bad field: unknown preset, sampler, ...)."""
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
    if len(parts) < 4 or not parts[-1][:1] == "s" or not parts[-1][1:].isdigit():
        raise InputError(f"{name!r} is not a URL run name like 'url-ce-converged-s0'")
    spec = URLSpec(parts[1], "-".join(parts[2:-1]), int(parts[-1][1:]))
    if spec.name != name:
        raise InputError(f"{name!r} is not a canonical URL run name (did you mean {spec.name!r}?)")
    return spec
