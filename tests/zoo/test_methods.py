"""Tests of hedgekit.zoo.methods: the method records, their checks, and a method added by one file.

The toy method is docs/extending.md's walk-through ("Adding a method: a toy in one file"): its Python blocks are
written, as the doc shows them, into one module in tmp_path, which registers the toy when imported; no other file
changes. The toy then trains through `Spec` / `load_or_train`, through ``python -m hedgekit train`` (in a fresh
process its flags come from ``HEDGEKIT_PLUGINS``) and is in the app's model list.
"""
import argparse
import dataclasses
import os
import re
import subprocess
import sys

import pytest

import hedgekit.zoo as zoo
from hedgekit import cli
from hedgekit.errors import InputError
from hedgekit.interactive.models import app_models, app_spec, expected_train_seconds
from hedgekit.paths import REPO_DIR
from hedgekit.repro.catalog import notebook_models
from hedgekit.training.fit import pair_loss, soft_pair_loss
from hedgekit.zoo import METHODS, PRESETS, MethodRecord, Spec, register_method
from hedgekit.zoo.specs import PointSpec

DOC = REPO_DIR / "docs" / "extending.md"
TINY = dict(steps=25, classes_per_batch=5, per_class=4, eval_images=100)  # the sandbox's tiny pair recipe (conftest)


def _walkthrough_blocks() -> list[str]:
    """The Python blocks of the doc's section "Adding a method: a toy in one file", in order."""
    text = DOC.read_text()
    section = text.split("## Adding a method: a toy in one file", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.fixture
def registry():
    """The records and `PRESETS` as they were, restored after the test (a test's method leaves with it)."""
    methods, presets = dict(METHODS), {p: dict(r) for p, r in PRESETS.items()}
    yield
    METHODS.clear()
    METHODS.update(methods)
    for preset, recipes in presets.items():
        PRESETS[preset].clear()
        PRESETS[preset].update(recipes)


@pytest.fixture
def toy(tmp_path, monkeypatch, registry):
    """The doc's toy module written to tmp_path/plugins/toy_method.py, importable (sys.path, HEDGEKIT_PLUGINS) but
    not imported yet."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "toy_method.py").write_text("\n\n".join(_walkthrough_blocks()))
    monkeypatch.syspath_prepend(str(plugins))
    monkeypatch.setenv("HEDGEKIT_PLUGINS", "toy_method")
    yield plugins
    sys.modules.pop("toy_method", None)


def test_the_kit_registers_its_six_methods_with_their_families_heads_and_losses():
    assert {k: (r.family, r.head, r.spec_type.__name__) for k, r in METHODS.items()} == {
        "point": ("pairs", "point", "PointSpec"), "hib": ("pairs", "hib", "HIBSpec"),
        "pn": ("episodes", "point", "PNSpec"), "spe": ("episodes", "hib", "SPESpec"),
        "triplet": ("triplets", "het", "TripletSpec"), "het": ("triplets", "het", "TripletSpec")}
    assert METHODS["point"].loss is pair_loss and METHODS["hib"].loss is soft_pair_loss
    assert {Spec(kind=k).family for k in METHODS} == set(zoo.FAMILIES)


def _record(**changes):
    fields = dict(kind="toy2", family="pairs", head="point", spec_type=PointSpec, loss=pair_loss,
                  presets={"fast": {}, "paper": {}}, train_seconds={"fast": {"toy2": 1}, "paper": {"toy2": 1}})
    return MethodRecord(**{**fields, **changes})


@pytest.mark.parametrize("changes, said", [
    (dict(loss=None), "toy2 record has no loss: expected loss"),
    (dict(family="batches"), "family: expected one of"),
    (dict(head="vmf"), "head: expected one of"),
    (dict(kind="url"), "kind: expected a lower-case word other than 'url'"),
    (dict(presets={"fast": {}}), "presets: expected one recipe per preset"),
    (dict(train_seconds={"fast": {"toy2": 1}}), "train_seconds: expected"),
    (dict(flags={"-x": None}), "flags: expected"),
    (dict(app_models={"toy": dict(kind="point")}), "expected Spec fields with kind='toy2'"),
])
def test_a_record_missing_a_part_is_refused_saying_what_was_expected(changes, said):
    with pytest.raises(InputError, match=said):
        _record(**changes)


def test_registering_a_kind_a_recipe_an_app_model_or_a_flag_twice_is_refused(registry):
    with pytest.raises(InputError, match="kind 'hib' is registered already: expected one record per kind"):
        register_method(METHODS["hib"])
    with pytest.raises(InputError, match="expected the Flag other kinds register"):
        register_method(_record(flags={"--beta": zoo.Flag("beta", "another", "another")}))
    with pytest.raises(InputError, match="shown already"):
        register_method(_record(app_models={"point, D=2": dict(kind="toy2")}))
    PRESETS["fast"]["toy2"] = {}
    with pytest.raises(InputError, match="a recipe named 'toy2' exists already"):
        register_method(_record())
    assert "toy2" not in METHODS
    with pytest.raises(InputError, match="expected a MethodRecord"):
        register_method({"kind": "toy2"})
    with pytest.raises(InputError, match="HEDGEKIT_PLUGINS: expected importable modules"):
        zoo.load_plugins("no_such_module_here")


def test_the_docs_toy_trains_by_spec_and_by_the_command_line_and_shows_in_the_app(toy, sandbox, capsys,
                                                                                 monkeypatch):
    """One file registers the toy: `load_or_train` trains it with its own loss and recipe, `train --kind toy
    --spread 2` trains it by its own flag (HEDGEKIT_PLUGINS imports the module), and the app offers it."""
    assert zoo.load_plugins() == ["toy_method"] and "toy" in METHODS  # as `cli.main` does first
    monkeypatch.setitem(PRESETS["fast"], "toy", {**PRESETS["fast"]["toy"], **TINY})  # the sandbox's tiny batches
    assert cli.main(["train", "--kind", "toy", "-n", "1", "--preset", "fast", "--spread", "2"]) == 0
    toy_method = sys.modules["toy_method"]
    out = capsys.readouterr().out
    assert "toy-n1-d2-spread2-fast-s0: trained now" in out
    assert len(toy_method.CALLS) == PRESETS["fast"]["toy"]["steps"] == 25  # the sandbox's tiny preset
    spec = Spec(kind="toy", n_digits=1, preset="fast")
    model, meta = zoo.load_or_train(spec, progress=False)
    assert spec.name == "toy-n1-d2-fast-s0" and meta["source"] == "trained now" and len(toy_method.CALLS) == 50
    assert meta["train_config"]["margin"] == 1.0 and meta["train_config"]["loss"] == "hard"
    assert model.config["kind"] == "point" and zoo.load_or_train(spec, progress=False)[1]["source"] != "trained now"
    assert "toy, D=2" in app_models()
    shown = app_spec("toy, D=2", preset="fast")
    assert shown.name == "toy-n2-d2-fast-s0" and expected_train_seconds(shown) == 10
    assert cli.main(["train", "--kind", "hib", "--spread", "2"]) == 2
    assert "--spread does not apply to hib models (--spread sets the toy's push distance)" in capsys.readouterr().err
    with pytest.raises(InputError, match="Spec.spread does not apply to hib models .*the toy's push distance"):
        Spec(kind="hib", spread=2.0)
    with pytest.raises(InputError, match="Spec.spread must be a finite number > 0"):
        Spec(kind="toy", spread=-1.0)


def test_a_fresh_command_line_process_takes_the_toys_kind_and_flag_from_hedgekit_plugins(toy):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(toy), str(REPO_DIR)]), "HEDGEKIT_PLUGINS": "toy_method"}
    run = subprocess.run([sys.executable, "-m", "hedgekit", "train", "--help"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "toy" in run.stdout.split("--kind", 1)[1].split("\n", 1)[0] and "--spread" in run.stdout
    env["HEDGEKIT_PLUGINS"] = "no_such_toy"
    run = subprocess.run([sys.executable, "-m", "hedgekit", "train"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and "error: HEDGEKIT_PLUGINS: expected importable modules" in run.stderr


def _flags_of(spec) -> list[str]:
    """The `train` flags that name ``spec``: every field that differs from its type's default, by the flag that
    sets it (the records' flags, --n-digits), plus --kind, --dim, --preset, --seed and --steps."""
    by_field = {"n_digits": "--n-digits", **{flag.field: name for name, flag in zoo.every_flag().items()}}
    argv = ["train", "--kind", spec.kind, "--dim", str(spec.dim), "--preset", spec.preset, "--seed", str(spec.seed)]
    argv += ["--steps", str(spec.steps)] if spec.steps is not None else []
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        off_ndigit = f.name == "n_digits" and spec.data != "ndigit"  # fixed by the data set (`DATA_N_DIGITS`)
        if f.name in by_field and value is not None and value != f.default and not off_ndigit:
            argv += [by_field[f.name], str(value)]
    return argv


def test_train_flags_rebuild_every_spec_a_notebook_uses():
    """Every registered notebook's specs (`notebook_models`, full and FAST) parsed from the flags that name them,
    with the real parser and `cli._spec`, give a spec of the same name: `train` can build each of them."""
    parser = cli.build_parser()
    specs = {spec.name: spec for fast in (False, True) for _, spec in notebook_models(fast=fast)}
    assert len(specs) > 100 and "hib-n2-d3-c1-beta0.0001-k8-paper-s1" in specs  # notebook 04: K = 8, a seed
    for name, spec in specs.items():
        argv = _flags_of(spec)
        assert cli._spec(parser.parse_args(argv)).name == name, argv


def test_hib_k_is_a_train_flag():
    """Notebook 04's K = 8 model: `--samples 8` names it; without the flag, the preset's K = 4."""
    parser = cli.build_parser()
    argv = ["train", "--kind", "hib", "--n-digits", "2", "--dim", "3", "--preset", "paper", "--seed", "17"]
    assert cli._spec(parser.parse_args(argv)).name == "hib-n2-d3-c1-beta0.0001-paper-s17"
    assert cli._spec(parser.parse_args(argv + ["--samples", "8"])).name == "hib-n2-d3-c1-beta0.0001-k8-paper-s17"
    assert isinstance(parser, argparse.ArgumentParser)
