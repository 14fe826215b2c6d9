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
    from hedgekit.zoo import KINDS

    train = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["train"]
    kind = next(a for a in train._actions if a.dest == "kind")
    assert tuple(kind.choices) == KINDS


def test_evaluate_refuses_prototype_models_with_a_clear_message(capsys):
    """HIB's Table 1 block is for pair-trained models; a PN is refused before anything loads or trains."""
    assert main(["evaluate", "--kind", "pn", "--preset", "fast"]) == 2
    err = capsys.readouterr().err
    assert "point / hib" in err and "notebooks 06-07" in err


def test_a_bad_spec_is_an_error_message_not_a_traceback(capsys):
    assert main(["train", "--kind", "hib", "--data", "lshapes", "--preset", "fast"]) == 2
    assert "N-digit MNIST" in capsys.readouterr().err
