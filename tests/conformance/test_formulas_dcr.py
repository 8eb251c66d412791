"""DCR (paper 000): Eq. 3 and Appendix E.4's alpha and beta, worked by hand."""

from __future__ import annotations

import pytest

from services.dcr.results import eq3, score_evaluation


def test_eq_3_z_and_its_rescaling():
    """Eq. 3: Z = (sum z_i + alpha) / (k + beta), Z^ = (Z + 1) / 2: three of four sentences consistent give
    Z = (3 - 1) / 4 = 0.5 and Z^ = 0.75; all consistent 1, none 0."""
    s = eq3([1, 1, 1, -1])
    assert (s.k, s.z, s.z_hat) == (4, 0.5, 0.75)
    assert eq3([1, 1]).z_hat == 1.0 and eq3([-1, -1, -1]).z_hat == 0.0
    assert eq3([1, -1], alpha=1.0, beta=1.0).z == pytest.approx(1 / 3)
    empty = eq3([], alpha=0.5, beta=-1.0)  # k + beta <= 0: no score, the alpha and beta asked for kept
    assert (empty.z, empty.z_hat, empty.alpha, empty.beta, empty.k) == (None, None, 0.5, -1.0, 0)


def test_appendix_e_4_a_paragraph_level_reason_is_taken_out_by_alpha_and_beta():
    """Appendix E.4: a negative paragraph-level entry gets alpha = 1 and beta = -1, so Eq. 5:
    Z = (sum z_i + 1) / (k - 1) over the array of three entries: (-1 + 1 - 1 + 1) / 2 = 0, Z^ = 0.5."""
    s = score_evaluation([1, -1], [-1])
    assert (s.alpha, s.beta, s.k, s.z, s.z_hat) == (1.0, -1.0, 3, 0.0, 0.5)
    assert (s.set_alpha, s.set_beta, s.n_sentences, s.n_unknown) == (0.0, 0.0, 2, 0)
    own = score_evaluation([1, -1], [-1], alpha=0.5, beta=2.0)  # the user's alpha and beta, then E.4's offsets
    assert (own.set_alpha, own.set_beta, own.alpha, own.beta) == (0.5, 2.0, 1.5, 1.0)
    positive = score_evaluation([1, -1], [1, None])  # a positive one: alpha = -1; an unmarked one is no entry
    assert (positive.alpha, positive.beta, positive.z) == (-1.0, -1.0, 0.0)
