"""Tests of hedgekit.cli: the command list, and errors that say what to do instead of a traceback."""
import argparse

import pytest

from hedgekit.cli import build_parser, main


def _commands() -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_help_names_every_command(capsys):
    """`python -m hedgekit --help` lists every command, in the usage line and in the description."""
    commands = _commands()
    assert {"train", "evaluate", "table1", "bench", "reproduce"} <= set(commands)
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    description = out.split("positional arguments")[0]
    for name in commands:
        assert name in description, name


def test_every_zoo_kind_is_a_train_choice():
    from hedgekit.zoo import METHODS

    train = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["train"]
    kind = next(a for a in train._actions if a.dest == "kind")
    assert tuple(kind.choices) == tuple(METHODS)


def test_beta_walks_from_the_flag_to_the_loss_with_its_one_default(monkeypatch):
    """`train --beta` reaches `TrainConfig.beta` and the loss's KL weight unchanged, and without the
    flag every step of the walk (the spec, the config, the loss functions, the app) has the paper's 1e-4, written
    once as `hedgekit.methods.hib.BETA`."""
    import inspect

    from hedgekit import cli
    from hedgekit.interactive.models import DEFAULT_BETA
    from hedgekit.methods import hib

    specs = []
    monkeypatch.setattr(cli, "load_or_train", lambda spec, **_: specs.append(spec) or (None, {
        "source": "cache", "train_seconds": 0.0, "path": "", "metrics": {}}))
    for argv in (["train"], ["train", "--beta", "0.003"]):
        assert cli.main(argv) == 0
    assert [s.beta for s in specs] == [1e-4, 0.003] and [s.train_config().beta for s in specs] == [1e-4, 0.003]
    defaults = [inspect.signature(f).parameters["beta"].default for f in (hib.hib_batch_loss, hib.hib_pair_loss)]
    assert hib.BETA == 1e-4 and defaults == [hib.BETA] * 2 and DEFAULT_BETA == hib.BETA
    train = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["train"]
    assert "(default 0.0001)" in next(a for a in train._actions if a.dest == "beta").help


def test_evaluate_refuses_prototype_models_with_a_clear_message(capsys):
    """HIB's Table 1 block is for pair-trained models; a PN is refused before anything loads or trains."""
    assert main(["evaluate", "--kind", "pn", "--preset", "fast"]) == 2
    err = capsys.readouterr().err
    assert "point / hib" in err and "notebooks 06-07" in err


def test_evaluate_shows_a_progress_bar_while_it_evaluates(monkeypatch, capsys):
    """`evaluate` passes progress=True to the Table 1 evaluation (a MoG-C evaluation takes minutes)."""
    from hedgekit import cli

    seen = {}

    def fake_metrics(model, test, seed=0, n_pairs=10_000, progress=False):
        seen["progress"] = progress
        raise RuntimeError("stop here")

    monkeypatch.setattr(cli, "load_or_train", lambda spec, **kw: (spec.build(), {"source": "cache"}))
    monkeypatch.setattr(cli, "load_ndigit", lambda n, split: None)
    monkeypatch.setattr(cli, "table1_metrics", fake_metrics)
    with pytest.raises(RuntimeError, match="stop here"):
        main(["evaluate", "--kind", "point", "--preset", "fast"])
    assert seen["progress"] is True


def test_a_bad_spec_is_an_error_message_not_a_traceback(capsys):
    assert main(["train", "--kind", "hib", "--data", "lshapes", "--preset", "fast"]) == 2
    assert "N-digit MNIST" in capsys.readouterr().err
    assert main(["train", "--kind", "pn", "--init-var", "eps", "--preset", "fast"]) == 2
    assert "init_var='eps'" in capsys.readouterr().err


def test_train_init_var_eps_names_notebook_07s_n3_d3_spe(monkeypatch, capsys):
    from hedgekit import cli

    asked = []
    monkeypatch.setattr(cli, "load_or_train", lambda spec, **kw: asked.append(spec) or (
        None, {"source": "cache", "train_seconds": 1.0, "path": "x.pt", "metrics": {}}))
    assert main(["train", "--kind", "spe", "-n", "3", "-d", "3", "--steps", "12000", "--init-var", "eps"]) == 0
    assert asked[0].name == "spe-n3-d3-intersection1-veps-paper12000-s0"
    assert main(["train", "--kind", "spe"]) == 0 and asked[1].init_var == "unit"


def test_train_prints_valid_json_with_null_for_missing_or_non_finite_metrics(monkeypatch, capsys):
    """JSON has no NaN: a metric that is NaN, infinite or missing prints as null."""
    import json

    from hedgekit import cli

    metrics = {"ap_clean": 0.57594, "tau_knn_clean": float("nan"), "up": float("inf"), "down": -float("inf"),
               "none": None, "count": 3}
    monkeypatch.setattr(cli, "load_or_train", lambda spec, **kw: (
        None, {"source": "cache", "train_seconds": 1.0, "path": "x.pt", "metrics": metrics}))
    assert main(["train", "--kind", "hib", "--preset", "fast"]) == 0
    out = capsys.readouterr().out
    text = out[out.index("{"):]

    def no_constants(name):
        raise AssertionError(f"{name} is not JSON")

    assert json.loads(text, parse_constant=no_constants) == {"ap_clean": 0.5759, "tau_knn_clean": None, "up": None,
                                                             "down": None, "none": None, "count": 3}


def test_train_refuses_an_absurd_kl_weight_naming_it(monkeypatch, tmp_path, capsys):
    """--beta 1e308 makes the KL term infinite from the first step; the error names the KL weight, not the learning
    rate, and comes before anything is trained or written."""
    monkeypatch.setenv("HEDGEKIT_DATA", str(tmp_path))
    assert main(["train", "--kind", "hib", "--preset", "fast", "--steps", "5", "--beta", "1e308"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Spec.beta, the KL weight of HIB eq. 8, must be <= 1e+06; got 1e+308")
    assert "learning rate" not in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.rglob("*.pt"))


# --------------------------------------------------------------------------------------- hardening
@pytest.mark.parametrize("argv, flag, said", [
    (["train", "--seed", "-1"], "--seed", "an integer >= 0"),
    (["train", "--seed", "1.5"], "--seed", "an integer >= 0"),
    (["train", "--beta", "inf"], "--beta", "a finite number >= 0"),
    (["train", "--beta", "nan"], "--beta", "a finite number >= 0"),
    (["train", "--beta=-1e-4"], "--beta", "a finite number >= 0"),
    (["train", "--beta", "x"], "--beta", "a number"),
    (["train", "--dim", "0"], "--dim", "an integer >= 1"),
    (["train", "--n-digits", "two"], "--n-digits", "an integer >= 1"),
    (["train", "--components", "-2"], "--components", "an integer >= 1"),
    (["train", "--steps", "0"], "--steps", "an integer >= 1"),
    (["train", "--device", "banana"], "--device", "'banana' is not a device; use cpu, cuda, cuda:N, mps or auto"),
    (["train", "--device", "cuda:x"], "--device", "is not a device"),
    (["evaluate", "--eval-seed", "-3"], "--eval-seed", "an integer >= 0"),
    (["table1", "--seed", "-1"], "--seed", "an integer >= 0"),
    (["bench", "--threads", "0"], "--threads", "an integer >= 1"),
    (["bench", "--steps", "-5"], "--steps", "an integer >= 1"),
    (["bench", "--repeats", "0"], "--repeats", "an integer >= 1"),
    (["url-benchmark", "--threads", "0"], "--threads", "an integer >= 1"),
    (["reproduce", "--timeout", "0"], "--timeout", "an integer >= 1"),
])
def test_bad_numbers_and_devices_are_usage_errors_naming_the_flag(capsys, argv, flag, said):
    """No traceback: argparse exits with status 2 and a message that names the flag and what it expects."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and said in err and "Traceback" not in err
    assert "learning rate" not in err


def test_cuda_on_a_machine_without_it_says_so(capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit):
        main(["train", "--device", "cuda"])
    assert "argument --device: device 'cuda': CUDA is not available on this machine" in capsys.readouterr().err


def test_a_spec_error_names_the_field_not_a_key_error(capsys):
    from hedgekit.errors import InputError
    from hedgekit.zoo import Spec

    for kwargs, field in ((dict(kind="foo"), "kind must be one of"), (dict(data="mnist"), "data must be one of"),
                          (dict(preset="slow"), "unknown preset 'slow'"), (dict(dim=0), "Spec.dim must be"),
                          (dict(dim=2.0), "Spec.dim must be"), (dict(seed=-1), "Spec.seed must be"),
                          (dict(beta=float("inf")), "Spec.beta must be"), (dict(beta=True), "Spec.beta must be"),
                          (dict(steps=0), "Spec.steps must be"), (dict(kind="point", loss="l2"), "Spec.loss must be one of"),
                          (dict(loss="hard"), "Spec.loss does not apply to hib models")):
        with pytest.raises(InputError, match=field):
            Spec(**kwargs)


def test_table1_prints_table4_beside_the_paper_when_its_checkpoints_exist(monkeypatch, capsys):
    """`table1` also prints HIB Table 4 (N = 3, D = 4) from the recorded metrics of its three models."""
    from hedgekit.papers.hib import experiments
    from hedgekit.papers.hib.protocol import RepeatedEvaluation

    metrics = dict(ap_clean=0.99, ap_corrupt=0.93, knn_clean=0.90, knn_corrupt=0.80, tau_ap_clean=0.3,
                   tau_ap_corrupt=0.7, tau_knn_clean=0.2, tau_knn_corrupt=0.4, var_clean=0.1, var_corrupt=0.5)
    recorded = {(3, 4, "MoG-1"): RepeatedEvaluation.from_metrics("MoG-1", 3, 4, metrics, 10_000)}

    def fake(preset, seed, settings=experiments.TABLE1_SETTINGS):  # only Table 4's MoG-1 is trained
        return ({}, ["point-n2-d2-paper-s0"]) if settings == experiments.TABLE1_SETTINGS else (
            recorded, ["point-n3-d4-paper-s0", "hib-n3-d4-c2-beta0.0001-paper-s0"])

    monkeypatch.setattr(experiments, "recorded_table1", fake)
    assert main(["table1"]) == 0
    out = capsys.readouterr().out
    assert "HIB Table 1" not in out and "### HIB Table 4 (N=3, D=4" in out
    assert "| 3 | 4 | accuracy | KNN | corrupt | — | 0.803 | — | 0.800 | 0.816 | -0.016 |" in out
    assert "N=3 D=4 MoG-1: 5.0x" in out
    assert "not trained yet: point-n2-d2-paper-s0, point-n3-d4-paper-s0, hib-n3-d4-c2" in out
