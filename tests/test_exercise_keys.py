"""The exercise keys (`hedgekit.exercise_keys`): each number key's value against a closed form or a hand count, and
for every key that a right answer passes, a wrong one fails with a hint that names neither the right answer nor the
evidence that gives it away, and an answer of the wrong kind is told what was expected."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from hedgekit import exercise_keys
from hedgekit.exercise_keys import KEYS, Choice, Number, WrongAnswer, check

# Evidence for every choice key: runs that read as each of its options (the key's `truth` must agree).
EVIDENCE: dict[str, list[tuple[dict, tuple[str, ...]]]] = {
    "02-1": [(dict(v_beta0=0.004, v_beta1=0.97), ("shrink to 0", "move to 1 (the prior)")),
             (dict(v_beta0=37.0, v_beta1=0.02), ("grow without bound", "shrink to 0"))],
    "03-3": [(dict(p_narrow=0.88, p_wide=0.61), ("shrink",)), (dict(p_narrow=0.4, p_wide=0.7), ("grow",)),
             (dict(p_narrow=0.5, p_wide=0.503), ("stay",))],
    "04-2": [(dict(tau=0.82, tau_reversed=-0.8, tau_shuffled=0.05), ("clearly positive",)),
             (dict(tau=-0.64, tau_reversed=0.6, tau_shuffled=0.0), ("clearly negative",)),
             (dict(tau=0.1, tau_reversed=0.1, tau_shuffled=0.1), ("near zero",)),
             (dict(tau=math.nan, tau_reversed=math.nan, tau_shuffled=math.nan), ("undefined (NaN)",))],
    "05-1": [(dict(v_nll=0.0123, v_kl=0.456), ("shrink",)), (dict(v_nll=3.21, v_kl=1.5), ("grow",)),
             (dict(v_nll=1.02, v_kl=1.0), ("stay",))],
    "07-2": [(dict(spread_naive=0.412, spread_intersection=0.087), ("intersection",)),
             (dict(spread_naive=0.05, spread_intersection=0.3), ("naive",))],
    "08-1": [(dict(largest=0.6543), ("no",)), (dict(largest=1.234), ("yes",))],
}
CHOICES = sorted(k for k, key in KEYS.items() if isinstance(key, Choice))
NUMBERS = sorted(k for k, key in KEYS.items() if isinstance(key, Number))
# Number keys against what a learner derives by hand (the keys compute them with the library).
CLOSED_FORMS = {
    "03-1": (90, 0),                                          # 10 decades x 9 neighbours sharing the tens digit
    "04-1": (math.sqrt(2 * (2 * 20 + 5) / (9 * 20 * 19)), 0.02),  # Kendall's tau, 20 untied points, independence
    "05-3": (-2 / (1 + math.e), 1e-9),                        # -a sigmoid(b - a d), a = b = 2, d = 1.5
    "06-2": (2.0, 1e-6),                                      # weights 1, 1, 0.4 = 1 / (v + 0.5): mean 1
    "07-3": (0.25, 0.01),                                     # a quarter of a very wide Gaussian in each quadrant
    "09-1": (0.7 / 0.8, 1e-12),                               # only wrong images rejected
}


def _names(text: str, option: str) -> bool:
    """Whether ``text`` names ``option`` as a word ("no" is not named by "not")."""
    return re.search(rf"(?<!\w){re.escape(option.lower())}(?!\w)", text.lower()) is not None


NUMBER = re.compile(r"(?<![\w^.])[-+]?\d+(?:\.\d+)?(?![\w.])")  # a number as a word ("eps^2" is none)


def _shown(x: float) -> set[str]:
    """The ways a message could show the number ``x``."""
    return {f"{x:.{d}f}" for d in range(1, 5)} | {f"{x:+.{d}f}" for d in range(1, 5)} | {repr(x)}


def test_every_key_is_covered_here():
    assert sorted(EVIDENCE) == CHOICES and sorted(CLOSED_FORMS) == NUMBERS
    assert {exercise_keys.kind(k) for k in CHOICES} == {"choice"} and {exercise_keys.kind(k) for k in NUMBERS} == {
        "number"}


@pytest.mark.parametrize("exercise", CHOICES)
def test_a_choice_key_passes_the_right_options_and_hints_at_wrong_ones(exercise, capsys):
    key = KEYS[exercise]
    for evidence, right in EVIDENCE[exercise]:
        assert key.truth(**evidence) == right
        check(exercise, right if len(right) > 1 else right[0], **evidence)
        said = capsys.readouterr().out
        assert said.startswith("Right"), said
        for part, _ in enumerate(right):
            for wrong in (o for o in key.options if o != right[part]):
                guess = tuple(wrong if i == part else r for i, r in enumerate(right))
                with pytest.raises(WrongAnswer, match="Hint") as e:
                    check(exercise, guess if len(guess) > 1 else guess[0], **evidence)
                message = str(e.value).lower()
                assert not _names(message, right[part]), message                 # never names the answer
                assert not any(s in message for v in evidence.values() if math.isfinite(v) for s in _shown(v)), (
                    message)                                                        # nor the run that shows it
    assert not any(_names(key.hint, o) for o in key.options)


@pytest.mark.parametrize("exercise", NUMBERS)
def test_a_number_key_holds_its_closed_form_and_hides_it_from_wrong_answers(exercise, capsys):
    key = KEYS[exercise]
    value, tol = CLOSED_FORMS[exercise]
    assert abs(key.value() - value) <= tol, (exercise, key.value(), value)
    right = int(value) if key.integer else key.value()
    check(exercise, right)
    assert capsys.readouterr().out.startswith("Right")
    for wrong in ([right + 3, right - 1, 0] if key.integer else [right + 2 * key.tol + 0.05, -right, 10 * right]):
        with pytest.raises(WrongAnswer, match="Hint") as e:
            check(exercise, wrong)
        message = str(e.value)
        assert message.startswith(f"{wrong!r} is not it."), message
        told = [float(n) for n in NUMBER.findall(message[len(repr(wrong)):])]  # every number after the echo
        assert all(abs(n - key.value()) > max(key.tol, 1e-3) for n in told), (message, key.value())


@pytest.mark.parametrize("answer", [..., "0.25", None, True, math.nan, math.inf, [0.25], np.array([0.25])])
def test_a_number_key_says_what_it_expected_for_an_answer_of_the_wrong_kind(answer):
    with pytest.raises(WrongAnswer, match=r"expected a (finite )?number"):
        check("07-3", answer)


def test_an_integer_key_refuses_a_float_and_a_choice_key_refuses_what_is_not_an_option():
    with pytest.raises(WrongAnswer, match="expected an integer"):
        check("03-1", 90.0)
    with pytest.raises(WrongAnswer, match=r"'sideways' is not one of the options; write one of 'grow', 'shrink'"):
        check("05-1", "sideways", v_nll=0.01, v_kl=0.5)
    with pytest.raises(WrongAnswer, match=r"expected 2 answers \(beta = 0, beta = 1\), got 1"):
        check("02-1", "shrink to 0", v_beta0=0.01, v_beta1=1.0)
    check("05-1", "  Shrink ", v_nll=0.01, v_kl=0.5)  # case and spacing do not matter


def test_an_unknown_key_and_evidence_for_a_number_key_are_refused():
    with pytest.raises(KeyError, match="no exercise key '99-9'; the keys are 02-1, 03-1"):
        check("99-9", 1)
    with pytest.raises(TypeError, match="takes no evidence"):
        check("09-1", 0.875, tau=0.1)
