"""The notebooks' exercise keys: what each exercise's check compares the learner's answer with, kept off the page.

A check cell measures what its exercise asks about (or nothing, when the answer is a number the key can compute)
and hands the learner's answer to `check(exercise, answer, **evidence)`. The key, looked up by the exercise's id
(``"06-2"``: notebook 06, exercise 2), decides:

* a `Choice` key turns the evidence into the right option (the learner predicted which way a run goes; the run is
  in the check cell, its reading here);
* a `Number` key computes the expected value itself, with the library, and accepts an answer within its tolerance
  (the learner derived or simulated a number).

A wrong answer raises `WrongAnswer` (an ``AssertionError``, so graders count it as a failed check) with the key's
hint, which never names the right option or value, and never shows the evidence that would; an answer that is not
one of the options, or not a number, is told what was expected instead. A right answer prints the key's
explanation, filled in with the evidence. So neither a check's visible source nor a wrong answer's message holds
the answer: a learner who runs the check before thinking learns only the hint.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from hedgekit.embedding import Embedding
from hedgekit.evaluation import metrics
from hedgekit.methods import contrastive
from hedgekit.methods.spe import spe_prototypes
from hedgekit.methods.fast.spe import log_posterior_naive
from hedgekit.nets import SoftMatch

__all__ = ["WrongAnswer", "Choice", "Number", "KEYS", "check", "kind"]


class WrongAnswer(AssertionError):
    """The learner's answer is not the key's (or not an answer at all); the message is a hint, never the answer."""


@dataclass(frozen=True)
class Choice:
    """A predict-then-run exercise: ``truth(**evidence)`` reads the run into the right option, one per part (``parts``
    names them when the learner predicts more than one thing)."""

    options: tuple[str, ...]
    truth: Callable[..., tuple[str, ...]]
    hint: str
    explain: str
    parts: tuple[str, ...] = ("your guess",)


@dataclass(frozen=True)
class Number:
    """A number the learner works out: ``expected()`` computes it with the library; an answer within ``tol`` of it is
    right (``integer``: the answer must be an int)."""

    expected: Callable[[], float]
    tol: float
    hint: str
    explain: str
    integer: bool = False
    cache: dict = field(default_factory=dict, compare=False, repr=False)

    def value(self) -> float:
        if "value" not in self.cache:
            self.cache["value"] = float(self.expected())
        return self.cache["value"]


def _three_way(x: float, low: float, high: float, below: str, between: str, above: str) -> str:
    return below if x < low else between if x <= high else above


# ---------------------------------------------------------------- the expected values of the number exercises
def _numeric_order_adjacency() -> int:
    """03-1: the adjacency score of the 100 two-digit classes placed in numeric order (class c at position c)."""
    return metrics.adjacency_score(np.arange(100.0), np.arange(100))


def _random_tau_sd(draws: int = 4000, n: int = 1000, bins: int = 20) -> float:
    """04-1: the standard deviation of the binned Kendall's tau (step 4's measurement: ``n`` queries, 80% correct,
    ``bins`` equal-count bins) of an uncertainty drawn independently of the outcome, over ``draws`` draws."""
    rng = np.random.default_rng(12345)
    correct = rng.random(n) < 0.8
    taus = [metrics.kendall_tau_bins(metrics.binned_accuracy(correct, rng.random(n), bins)) for _ in range(draws)]
    return float(np.std(taus))


def _soft_push(distance: float = 1.5, a: float = 2.0, b: float = 2.0) -> float:
    """05-3: d/dd of the soft contrastive NLL of a non-matching pair at distance ``distance`` (HIB eq. 2-3), by
    autograd through the library's loss."""
    d = torch.tensor([[distance, 0.0]], dtype=torch.float64, requires_grad=True)
    loss = contrastive.soft_contrastive(torch.zeros(1, 2, dtype=torch.float64), d, torch.tensor([False]),
                                        SoftMatch(a, b))
    grad, = torch.autograd.grad(loss, d)
    return float(grad[0, 0])


def _halfway_variance(target: float = 1.0, eps2: float = 0.5) -> float:
    """06-2: the variance v of a third support image at 6 (the other two at 0 with variance 0.5) that puts the SPE
    prototype mean (eq. 5, sigma_eps^2 = ``eps2``) at ``target``, by bisection on the library's prototype."""
    def proto_mean(v: float) -> float:
        mu = torch.tensor([[0.0], [0.0], [6.0]], dtype=torch.float64)
        var = torch.tensor([[0.5], [0.5], [v]], dtype=torch.float64)
        return float(spe_prototypes(Embedding.gaussian(mu, var), torch.zeros(3, dtype=torch.long), eps2)[0][0, 0])

    lo, hi = 1e-6, 1e6  # the mean falls from near 6 / (1 + 2 (v + eps2)) ... towards 0 as v grows
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if proto_mean(mid) > target else (lo, mid)
    return math.sqrt(lo * hi)


def _wide_query_limit(variance: float = 1e6, samples: int = 400_000) -> float:
    """07-3: the naive sampler's p(class 0 | x) (eq. 6-7) for the check's query and classes when the query's variance
    is far larger than the classes' spacing (its limit as the variance grows without bound)."""
    c_mu, c_var = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]]), torch.full((4, 2), 0.5)
    q_mu, q_var = torch.tensor([[0.3, 0.2]]), torch.full((1, 2), variance)
    return float(log_posterior_naive(q_mu, q_var, c_mu, c_var, samples, torch.Generator().manual_seed(0))[0, 0].exp())


def _kept_r1(r1: float = 0.7, reject: float = 0.2, n: int = 10_000) -> float:
    """09-1: R@1 of the images kept after rejecting the ``reject`` share most uncertain, when the uncertainty ranks
    every R@1 error above every right image (R-AUROC 1) and R@1 is ``r1`` before (simulated on ``n`` images)."""
    rng = np.random.default_rng(0)
    correct = np.arange(n) < round(r1 * n)
    u = rng.random(n) + (~correct)                      # every error more uncertain than every right image
    keep = np.argsort(u, kind="stable")[: n - round(reject * n)]
    return float(correct[keep].mean())


KEYS: dict[str, Choice | Number] = {
    "02-1": Choice(
        options=("shrink to 0", "move to 1 (the prior)", "grow without bound"),
        parts=("beta = 0", "beta = 1"),
        truth=lambda v_beta0, v_beta1, **_: tuple(_three_way(v, 0.1, 2.0, "shrink to 0", "move to 1 (the prior)",
                                                       "grow without bound") for v in (v_beta0, v_beta1)),
        hint="which term of the loss rewards a variance of 1, and how heavy is it at this beta?",
        explain="Right: the mean variance went from 0.37 to {v_beta0:.4f} at beta = 0 and to {v_beta1:.4f} at "
                "beta = 1. Without the KL term nothing rewards spread: any variance blurs the distances, which only "
                "lowers p(m) of matching pairs, so the loss shrinks every variance towards a point (HIB App. E: 'the "
                "embeddings approach points'). With a heavy KL term the -log v and v terms pull each variance to 1, "
                "the prior's. HIB's beta = 1e-4 sits in between: only inputs the data cannot place keep a large "
                "variance."),
    "03-1": Number(
        expected=_numeric_order_adjacency, tol=0, integer=True,
        hint="count, for each of the 99 neighbouring pairs of the line, whether the two classes share a digit in the "
             "same place; within a decade, and at each step from x9 to (x+1)0",
        explain="Right: {expected:.0f}. Inside each decade the 9 neighbours share the tens digit, while the steps "
                "09 -> 10, 19 -> 20, ... share nothing. Numeric order beats HIB's 76-80, yet it is a poor line to "
                "hedge on: every ones group (07, 17, ..., 97) is spread over the whole line."),
    "03-3": Choice(
        options=("grow", "shrink", "stay"),
        truth=lambda p_narrow, p_wide, **_: (_three_way(p_wide - p_narrow, -0.01, 0.01, "shrink", "stay", "grow"),),
        hint="p(m) averages sigmoid(-a d + b) over samples of the image's Gaussian; what happens to the distances to "
             "the class when the image's samples spread out from exactly on top of it?",
        explain="Right: p(m) went from {p_narrow:.3f} to {p_wide:.3f}. Hedging has a price: spreading mass over "
                "neighbours takes it away from the class the image is on, which is why HIB keeps wide Gaussians for "
                "ambiguous images only."),
    "04-1": Number(
        expected=_random_tau_sd, tol=0.03,
        hint="simulate it: draw the 1,000 outcomes once (80% correct), then 500 times a fresh random uncertainty, and "
             "measure each with metrics.binned_accuracy and metrics.kendall_tau_bins as step 4 does; or work it out "
             "from the variance of Kendall's tau for n untied points under independence, with n the number of bins",
        explain="Right: the key's 4,000 draws give a standard deviation of {expected:.3f} (the textbook value for 20 "
                "untied points under independence, sqrt(2 (2n + 5) / (9 n (n - 1))), is "
                f"{math.sqrt(2 * 45 / (9 * 20 * 19)):.3f}). So the middle 95% of random taus spread about ±0.3: a tau "
                "of 0.2 from one evaluation is no evidence that an uncertainty ranks anything, while the live model's "
                "0.75 and more are far outside what chance gives. The paper repeats each evaluation 10 times for this "
                "reason."),
    "04-2": Choice(
        options=("clearly positive", "near zero", "clearly negative", "undefined (NaN)"),
        truth=lambda tau, **_: ("undefined (NaN)" if math.isnan(tau) else
                           _three_way(tau, -0.3, 0.3, "clearly negative", "near zero", "clearly positive"),),
        hint="step 4 sorts with a stable argsort. When every eta is equal, which queries end up in bin 0, and which in "
             "bin 19?",
        explain="Right: tau = {tau:+.3f}. With every eta equal, the stable sort keeps the stored order, so bin 0 holds "
                "the 0s and bin 19 the 9s, and tau measures how the test set happens to be stored: {tau_reversed:+.3f} "
                "with the same queries stored 9s first, {tau_shuffled:+.3f} shuffled. It says nothing about the "
                "model. This is why hedgekit's retrieval.binned_tau returns NaN for a constant eta, and why Table 2 "
                "has no column for the point model."),
    "05-1": Choice(
        options=("grow", "shrink", "stay"),
        truth=lambda v_nll, **_: (_three_way(v_nll, 0.9, 1.1, "shrink", "stay", "grow"),),
        hint="the two images sit at the same mean and match; what does a wider Gaussian do to the sampled distances "
             "between them, and so to p(m)?",
        explain="Right: v = 1 -> {v_nll:.4f} with beta = 0, and it would keep falling with more steps; with beta = 0.1 "
                "it settles at {v_kl:.3f}, where the KL's pull towards 1 balances the NLL's pull towards 0."),
    "05-3": Number(
        expected=_soft_push, tol=1e-3,
        hint="for a non-matching pair the loss is -log(1 - sigmoid(-a d + b)); differentiate with respect to d (or "
             "let autograd do it on a distance you build from two points)",
        explain="Right: dL/dd = {expected:+.4f} at d = 1.5, that is -a sigmoid(b - a d). Beyond the margin the hard "
                "loss is flat and stops pushing, while the soft loss still pushes the pair apart, more gently the "
                "less likely a match already is; it never quite stops."),
    "06-2": Number(
        expected=_halfway_variance, tol=1e-3,
        hint="eq. 5 weighs each image by its precision 1 / (v + sigma_eps^2); write the prototype mean as a "
             "precision-weighted average, set it to 1 and solve for the third image's weight, then for v",
        explain="Right: v = {expected:.4f}. The two clean images weigh 1 / (0.5 + 0.5) = 1 each; a mean of 1 needs "
                "the third image to weigh 0.4, a precision of 1 / (v + 0.5). A PN would put this prototype at 2 "
                "whatever v is: SPE differs from a PN only through unequal variances, so the network must learn to "
                "tell confident images from doubtful ones, which is what the live model did."),
    "07-2": Choice(
        options=("naive", "intersection"),
        truth=lambda spread_naive, spread_intersection, **_: (
            "intersection" if spread_intersection < spread_naive else "naive",),
        hint="where does each sampler draw its one z: from the query alone, or from where query and class overlap? "
             "Which integrand changes faster over the region it samples?",
        explain="Right: one-sample estimates over 300 seeds scatter by {spread_naive:.3f} (naive) and "
                "{spread_intersection:.3f} (intersection). The naive sampler draws z from the query alone, wherever "
                "it lands, and a softmax can jump between near 0 and near 1. The intersection sampler computes the "
                "overlap of query and class exactly (first factor) and samples only inside it, where the remaining "
                "factor changes slowly. Less noise per sample is why the paper trains with s = 1 (sec. 4.2, Figure "
                "4)."),
    "07-3": Number(
        expected=_wide_query_limit, tol=0.02,
        hint="far from the four classes every sample's softmax is all but one-hot: which class wins where? Then ask "
             "what share of a very wide Gaussian centred near the classes falls in class 0's region",
        explain="Right: about {expected:.3f}. With equal class variances the softmax picks the nearest class mean, "
                "so each sample votes for the class whose quarter of the plane it lands in, and a Gaussian far wider "
                "than the square puts a quarter of its mass in each. Eq. 7 averages the class posterior over the "
                "query's own Gaussian: a query the network is unsure about is classified with less confidence, down "
                "to the class shares of its spread, not just at the same arg-max."),
    "08-1": Choice(
        options=("yes", "no"),
        truth=lambda largest, **_: ("yes" if largest > math.log(2) else "no",),
        hint="what sign does D(a,p) - D(a,n) have inside the semi-hard band, and what is ln(1 + e^x) at x = 0?",
        explain="Right: the largest semi-hard L_tri over 50 batches was {largest:.6f} (ln 2 = 0.693147). Semi-hard "
                "needs D(a,n) > D(a,p), so D(a,p) - D(a,n) < 0 and ln(1 + e^x) < ln 2 for x < 0; with m = 1 it also "
                "stays above ln(1 + e^-1) = 0.31. Under eq. 11 sigma^2 tends to L_tri, so semi-hard mining squeezes "
                "every sigma^2 into (0.31, 0.69): one reason the live model mines batch-all."),
    "09-1": Number(
        expected=_kept_r1, tol=0.002,
        hint="with R-AUROC 1 every wrong image is more uncertain than every right one: which images does rejecting "
             "the most uncertain 20% remove, and how many wrong ones are left among the kept 80%?",
        explain="Right: {expected:.3f}. A perfect uncertainty rejects wrong images only, so R@1 of the kept ones is "
                "0.7 / 0.8; at R-AUROC 0.5 (rejecting at random) it would stay 0.7. The widget's solid curve sits "
                "between the two: the closer to the perfect curve, the higher the R-AUROC."),
}


def kind(exercise: str) -> str:
    """"choice" or "number": what the exercise ``exercise`` asks for."""
    return "choice" if isinstance(_key(exercise), Choice) else "number"


def _key(exercise: str) -> Choice | Number:
    if exercise not in KEYS:
        raise KeyError(f"no exercise key {exercise!r}; the keys are {', '.join(sorted(KEYS))}")
    return KEYS[exercise]


def _words(answer) -> str:
    return " ".join(str(answer).lower().split())


def _check_choice(key: Choice, answer, evidence: dict) -> str:
    answers = answer if isinstance(answer, tuple) else (answer,)
    if len(answers) != len(key.parts):
        raise WrongAnswer(f"expected {len(key.parts)} answers ({', '.join(key.parts)}), got {len(answers)}")
    options = {_words(o): o for o in key.options}
    quoted = ", ".join(repr(o) for o in key.options)
    for part, a in zip(key.parts, answers):
        if _words(a) not in options:
            raise WrongAnswer(f"{part}: {a!r} is not one of the options; write one of {quoted}")
    truth = key.truth(**evidence)
    for part, a, right in zip(key.parts, answers, truth):
        if options[_words(a)] != right:
            raise WrongAnswer(f"{part}: not what the run shows. Hint: {key.hint}")
    return key.explain.format(**evidence)


def _check_number(key: Number, answer) -> str:
    if isinstance(answer, bool) or not isinstance(answer, (int, float, np.integer, np.floating)):
        raise WrongAnswer(f"expected {'an integer' if key.integer else 'a number'}, got {type(answer).__name__} "
                          f"{answer!r}")
    if key.integer and not isinstance(answer, (int, np.integer)):
        raise WrongAnswer(f"expected an integer, got {answer!r}")
    if not math.isfinite(float(answer)):
        raise WrongAnswer(f"expected a finite number, got {answer!r}")
    if abs(float(answer) - key.value()) > key.tol:
        raise WrongAnswer(f"{answer!r} is not it. Hint: {key.hint}")
    return key.explain.format(expected=key.value())


def check(exercise: str, answer, **evidence) -> None:
    """Check the learner's ``answer`` to ``exercise`` (its id, e.g. "06-2") against its key, given the run's
    ``evidence`` (a choice key's inputs, as the check cell measured them); print the explanation when it is right,
    raise `WrongAnswer` with a hint when it is not (module docstring)."""
    key = _key(exercise)
    if isinstance(key, Choice):
        print(_check_choice(key, answer, evidence))
    else:
        if evidence:
            raise TypeError(f"exercise {exercise} is a number key: it takes no evidence, got {sorted(evidence)}")
        print(_check_number(key, answer))
