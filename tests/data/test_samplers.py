"""Tests of hedgekit.data.samplers: the P x Q class-balanced sampler and the two-stream pairs of the pair
trainers, and PKSampler: P distinct classes x K distinct images per batch (Taha et al. 2019 sec. 5.1),
uniform over classes and images, reproducible, and loud about classes it cannot fill."""
import numpy as np
import pytest
import torch

from hedgekit.data.samplers import ClassBalancedSampler, PKSampler, two_stream_pairs
from hedgekit.errors import InputError


def _labels(sizes, seed=0):
    """Shuffled labels with ``sizes[c]`` images of class c."""
    labels = np.repeat(np.arange(len(sizes)), sizes)
    return np.random.default_rng(seed).permutation(labels)


def _check_batch(idx, labels, p, k, distinct_images=True):
    assert idx.shape == (p * k,) and np.issubdtype(idx.dtype, np.integer)
    assert idx.min() >= 0 and idx.max() < len(labels)
    blocks = labels[idx].reshape(p, k)
    assert (blocks == blocks[:, :1]).all()  # K consecutive images of one class
    assert len(set(blocks[:, 0])) == p  # P distinct classes
    if distinct_images:
        for block in idx.reshape(p, k):
            assert len(set(block)) == k


@pytest.mark.parametrize("p, k", [(2, 2), (5, 4), (8, 3)])
def test_every_batch_holds_p_distinct_classes_of_k_distinct_images(p, k):
    labels = _labels([4, 7, 5, 9, 4, 6, 8, 4])
    sampler = PKSampler(labels, p, k, seed=1)
    assert sampler.batch_size == p * k
    for _ in range(200):
        _check_batch(next(sampler), labels, p, k)


def test_classes_and_images_are_drawn_uniformly():
    labels = _labels([4, 10, 6, 5])
    sampler = PKSampler(labels, 2, 3, seed=0)
    n = 4000
    class_hits = np.zeros(4)
    image_hits = np.zeros(len(labels))
    for _ in range(n):
        idx = next(sampler)
        class_hits[np.unique(labels[idx])] += 1
        image_hits[idx] += 1
    # each class is in a batch with probability P / C = 1/2, whatever its size
    assert np.abs(class_hits / n - 0.5).max() < 5 * np.sqrt(0.25 / n)
    # an image of class c is drawn with probability 1/2 * K / n_c
    sizes = np.bincount(labels)
    expected = 0.5 * 3 / sizes[labels]
    assert np.abs(image_hits / n - expected).max() < 5 * np.sqrt(expected * (1 - expected) / n).max()


def test_reproducible_with_a_seed_and_different_across_seeds():
    labels = _labels([5] * 10)
    a, b, c = (PKSampler(labels, 4, 3, seed=s) for s in (7, 7, 8))
    batches_a = [next(a) for _ in range(20)]
    assert all(np.array_equal(x, next(b)) for x in batches_a)
    assert not all(np.array_equal(x, next(c)) for x in batches_a)
    assert iter(a) is a


def test_labels_as_tensor_or_strings():
    labels = np.array(["cat", "dog", "cow"] * 4)
    _check_batch(next(PKSampler(labels, 3, 4)), labels, 3, 4)
    t = torch.tensor([0, 0, 1, 1, 2, 2])
    _check_batch(next(PKSampler(t, 3, 2)), t.numpy(), 3, 2)


def test_class_with_fewer_than_k_images_is_an_error_naming_it():
    labels = _labels([5, 2, 6, 5])
    with pytest.raises(InputError, match=r"K = 3 images per class but class 1 has 2 image\(s\).*replace=True"):
        PKSampler(labels, 2, 3)


def test_replace_true_fills_small_classes_with_replacement():
    labels = _labels([5, 2, 6, 1])
    sampler = PKSampler(labels, 4, 3, seed=0, replace=True)
    for _ in range(50):
        idx = next(sampler)
        _check_batch(idx, labels, 4, 3, distinct_images=False)
        for block in idx.reshape(4, 3):
            if np.sum(labels == labels[block[0]]) >= 3:
                assert len(set(block)) == 3  # large enough classes still draw without replacement
    batch = next(sampler)  # P = C = 4: every batch holds class 3, whose one image fills all K slots
    assert np.array_equal(batch[labels[batch] == 3], np.flatnonzero(labels == 3).repeat(3))


def test_p_and_k_errors():
    labels = _labels([4, 4, 4, 4])
    with pytest.raises(InputError, match="P = 5 classes per batch but the labels hold only 4 classes"):
        PKSampler(labels, 5, 2)
    with pytest.raises(InputError, match=r"need P >= 2 classes .* and K >= 2 images per class .*P=1, K=2"):
        PKSampler(labels, 1, 2)
    with pytest.raises(InputError, match=r"K >= 2 images per class .*P=2, K=1"):
        PKSampler(labels, 2, 1)
    with pytest.raises(InputError, match="labels must be a non-empty 1-D array"):
        PKSampler(np.zeros((3, 2)), 2, 2)


# --------------------------------------------------------------------------- samplers
def test_class_balanced_sampler_p_divides_classes():
    labels = np.repeat(np.arange(10), 13)
    sampler = ClassBalancedSampler(labels, p=5, q=4, seed=0)
    seen = set()
    for step in range(40):
        idx = next(sampler)
        assert idx.shape == (20,)
        classes, counts = np.unique(labels[idx], return_counts=True)
        assert len(classes) == 5 and (counts == 4).all()
        assert len(np.unique(idx)) == 20  # no image twice in a batch
        seen |= set(classes.tolist())
        if step == 1:  # one pass over the 10 classes takes 2 batches
            assert seen == set(range(10))


def test_class_balanced_sampler_visits_every_class_each_pass():
    labels = np.repeat(np.arange(10), 20)
    sampler = ClassBalancedSampler(labels, p=4, q=3, seed=1)
    batches = [labels[next(sampler)] for _ in range(3)]  # ceil(10 / 4) batches
    assert set(np.concatenate(batches).tolist()) == set(range(10))
    for b in batches:
        assert len(b) == 12 and all(np.sum(b == c) % 3 == 0 for c in np.unique(b))


def test_class_balanced_sampler_exactly_p_classes_when_p_does_not_divide():
    labels = np.repeat(np.arange(10), 20)
    sampler = ClassBalancedSampler(labels, p=4, q=3, seed=0)
    for _ in range(200):
        classes, counts = np.unique(labels[next(sampler)], return_counts=True)
        assert len(classes) == 4 and (counts == 3).all()


def test_class_balanced_sampler_small_class_and_errors():
    labels = np.array([0] * 10 + [1] * 2 + [2] * 10)  # class 1 has fewer images than Q
    sampler = ClassBalancedSampler(labels, p=3, q=4, seed=0)
    for _ in range(10):
        idx = next(sampler)
        classes, counts = np.unique(labels[idx], return_counts=True)
        assert (classes == [0, 1, 2]).all() and (counts == 4).all()
    with pytest.raises(InputError, match="only 3"):
        ClassBalancedSampler(labels, p=4, q=2)
    with pytest.raises(InputError, match="Q must be >= 2"):
        ClassBalancedSampler(labels, p=2, q=1)
    a, b = ClassBalancedSampler(labels, 2, 2, seed=5), ClassBalancedSampler(labels, 2, 2, seed=5)
    assert all(np.array_equal(next(a), next(b)) for _ in range(10))


@pytest.mark.parametrize("n_classes", [10, 1000])
def test_two_stream_pairs_about_half_matching(n_classes):
    labels = np.random.default_rng(0).permutation(np.arange(20 * n_classes) % n_classes)
    i, j, same = two_stream_pairs(labels, 20_000, np.random.default_rng(1))
    assert len(i) == len(j) == len(same) == 20_000
    np.testing.assert_array_equal(same, labels[i] == labels[j])
    # half from the same-class stream + a random stream matching w.p. 1/n_classes
    expected = 0.5 + 0.5 / n_classes
    assert abs(same.mean() - expected) < 0.015
    # shuffled: both halves hold matches and non-matches
    assert 0.3 < same[:10_000].mean() < 0.8 and 0.3 < same[10_000:].mean() < 0.8
    i2, j2, _ = two_stream_pairs(labels, 20_000, np.random.default_rng(1))
    assert np.array_equal(i, i2) and np.array_equal(j, j2)
