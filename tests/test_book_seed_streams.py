"""The model-seed streams of chapters 4-6 (`lib.book.seed_streams`)."""

import pytest

from lib.book.seed_streams import SEED_BLOCK, SEED_STREAMS, overlapping_streams, stream_seeds


def test_no_two_streams_overlap():
    assert overlapping_streams() == []


def test_overlap_is_found():
    clashes = overlapping_streams({"a": (0, 100), "b": (50, 10), "c": (100, 5), "d": (SEED_BLOCK - 1, 2)})
    assert ("a", "b") in clashes and ("d", "next seed's block") in clashes
    assert not any("c" in pair and "a" in pair for pair in clashes)


def test_streams_are_disjoint_sets_of_seeds():
    seen = set()
    for name, (_, width) in SEED_STREAMS.items():
        seeds = set(stream_seeds(name, seed=3, count=width))
        assert not seeds & seen
        seen |= seeds


def test_stream_seeds_and_width():
    assert stream_seeds("ch5_s5_trajectory", 0, 2) == [70_000, 70_001]
    assert stream_seeds("sweep", 2, 1) == [200_000]
    with pytest.raises(ValueError, match="holds"):
        stream_seeds("ch5_iid", 0, SEED_STREAMS["ch5_iid"][1] + 1)
