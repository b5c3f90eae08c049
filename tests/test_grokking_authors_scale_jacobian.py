"""The boundaries at which the authors'-scale Jacobian reads its spectra: just before grokking, at it, and at the end (lib.grokking.authors_scale_jacobian)."""

from lib.grokking.authors_scale_jacobian import spectrum_boundaries


def test_spectra_are_read_just_before_and_at_grokking_and_at_the_end():
    boundaries = [0, 100, 200, 300, 400]
    assert spectrum_boundaries(boundaries, [0.1, 0.3, 0.5, 1.0, 1.0]) == [100, 200, 300, 400]
    assert spectrum_boundaries(list(range(0, 1300, 100)), [0.5] * 10 + [1.0] * 3) == [300, 900, 1000, 1200]
    assert spectrum_boundaries(boundaries, [0.1, 0.3, 0.5, 0.9, 0.9]) == [100, 400]      # never groks
    assert spectrum_boundaries(boundaries, [0.1, 1.0, 1.0, 1.0, 1.0]) == [100, 400]      # at the first boundary
