"""Kendall's tau and its bootstrap over queries (scoring.settling): pure numpy, no Django."""

import numpy as np
import pytest

from scoring import settling


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
        ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
        ([1, 2, 3], [1, 3, 2], 1 / 3),  # 2 concordant pairs, 1 discordant, of 3
        ([0, 0, 0], [1, 2, 3], 0.0),  # an ordering of ties says nothing
        ([1, 1, 2], [1, 2, 3], 2 / np.sqrt(2 * 3)),  # tau-b: 2 concordant, one tie in a
    ],
)
def test_kendall_tau_matches_hand_computation(a, b, expected):
    assert settling.kendall_tau(a, b) == pytest.approx(expected)


def test_expected_tau_is_one_when_every_query_agrees_and_low_when_they_disagree():
    agree = np.arange(5)[:, None] * np.ones((5, 20))
    assert settling.expected_tau(agree) == pytest.approx(1.0)
    noise = np.random.default_rng(0).random((5, 20))
    assert settling.expected_tau(noise) < 0.8  # the bootstrap flatters its own sample: still well short
    assert settling.expected_tau(np.zeros((4, 10))) == 0.0
    assert settling.expected_tau(np.ones((1, 10))) == 0.0


def test_expected_tau_is_reproducible_and_grows_with_the_gap():
    rng = np.random.default_rng(1)
    base = rng.random((6, 40))
    small = base + np.arange(6)[:, None] * 0.02
    large = base + np.arange(6)[:, None] * 0.2
    assert settling.expected_tau(small) == settling.expected_tau(small)
    assert settling.expected_tau(large) > settling.expected_tau(small)


def test_ordering_and_the_settled_rule():
    assert settling.ordering([0.2, 0.5, 0.5], ["c", "b", "a"]) == ["a", "b", "c"]
    assert settling.is_settled(0.95, [0.9, 0.81])
    assert not settling.is_settled(0.95, [0.9, 0.79])
    assert not settling.is_settled(0.89, [1.0, 1.0])
    assert not settling.is_settled(1.0, [])
