"""The model-seed streams of the chapters that train many seeds (4-6), named in one table.

Chapter 4 trains seed `seed * SEED_BLOCK + i` for instance i of every sweep; chapters 5 and 6
train other seeds (an iid task, S5 trajectories, transplants), each from its own named stream of
`SEED_STREAMS`, so that no two experiments share a seed unless they mean to
(`overlapping_streams` finds clashes; `tests/test_book_seed_streams.py` checks there are none).
"""

from __future__ import annotations

#: The model-seed streams of the chapters that train many seeds (4-6): name -> (offset, width).
#: Seed i of a stream is `seed * SEED_BLOCK + offset + i` for i < width, so two streams share
#: no seed (`tests/test_book_seed_streams.py` checks that no two overlap). Chapter 4's
#: sweeps all use the "sweep" stream on purpose (every experiment trains the same seeds), and
#: chapters 5 and 6 retrain seeds of that sweep under the same numbers.
SEED_BLOCK = 100_000
SEED_STREAMS: dict[str, tuple[int, int]] = {
    "sweep": (0, 50_000),                 # chapter 4's sweeps (and chapters 5-6 retraining them)
    "ch5_iid": (50_000, 10_000),          # seeds trained on an iid part of S4's table (chapter 6's Jacobian)
    "ch5_s5_measures": (60_000, 1_000),   # chapter 5: the S5 model whose measures are followed
    "ch5_s5_trajectory": (70_000, 10_000),  # chapter 5: S5 seeds whose LLC is followed
    "ch6_transplant_g1": (80_000, 10_000),  # chapter 6: transplants, first group grokked first
    "ch6_transplant_g2": (90_000, 10_000),  # chapter 6: transplants, second group grokked first
}


def stream_seeds(stream: str, seed: int, count: int) -> list[int]:
    """The first `count` model seeds of a named stream of `SEED_STREAMS` for the chapter seed
    `seed` (chapters 4-6).

    Raises:
        ValueError: if `count` exceeds the stream's width (it would run into the next stream).
    """
    offset, width = SEED_STREAMS[stream]
    if count > width:
        raise ValueError(f"the seed stream {stream!r} holds {width:,} seeds; {count:,} were asked for.")
    return [seed * SEED_BLOCK + offset + i for i in range(count)]


def overlapping_streams(streams: dict[str, tuple[int, int]] = SEED_STREAMS) -> list[tuple[str, str]]:
    """Pairs of stream names whose seed ranges overlap (empty when the table is sound), including
    a stream that spills into the next chapter seed's block."""
    spans = sorted((offset, offset + width, name) for name, (offset, width) in streams.items())
    clashes = [(a[2], b[2]) for i, a in enumerate(spans) for b in spans[i + 1:] if b[0] < a[1]]
    clashes += [(name, "next seed's block") for start, stop, name in spans if stop > SEED_BLOCK]
    return clashes
