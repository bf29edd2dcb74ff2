"""The unbiased pass@k estimator of Chen et al. (2021)."""

from __future__ import annotations

import numpy as np


def pass_at_k(n, c, k) -> np.ndarray:
    """Unbiased pass@k = 1 - C(n-c, k) / C(n, k), vectorised over problems.

    Args:
        n: samples per problem, int or array (Q,).
        c: correct samples per problem, int or array (Q,), 0 <= c <= n.
        k: int, or array broadcastable with n and c; 1 <= k <= n.

    Computed in log space with ``scipy.special.gammaln`` in float64, so it is stable for n in the thousands.
    Exactly 1.0 where n - c < k (every draw of k contains a correct sample), exactly 0.0 where c == 0. scipy is
    imported here, not with ``tagrpo.core``: the verl environments import the core without installing it.

    Returns:
        float64 array of the broadcast shape (a 0-d array for scalar inputs).
    """
    n, c, k = np.broadcast_arrays(np.asarray(n), np.asarray(c), np.asarray(k))
    for name, arr in (("n", n), ("c", c), ("k", k)):
        if not np.issubdtype(arr.dtype, np.integer) and not np.all(np.mod(arr, 1) == 0):
            raise ValueError(f"pass_at_k needs integer {name}, got {arr}")
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("pass_at_k needs 0 <= c <= n")
    if np.any(k < 1) or np.any(k > n):
        raise ValueError("pass_at_k needs 1 <= k <= n")
    from scipy.special import gammaln

    n, c, k = (arr.astype(np.float64) for arr in (n, c, k))  # (Q,) each
    wrong = n - c  # (Q,)
    certain = wrong < k  # (Q,)
    safe_wrong = np.where(certain, k, wrong)  # (Q,)
    log_ratio = gammaln(safe_wrong + 1) - gammaln(safe_wrong - k + 1) - gammaln(n + 1) + gammaln(n - k + 1)  # (Q,)
    out = 1.0 - np.exp(log_ratio)  # (Q,): 1 - C(n-c, k) / C(n, k)
    out = np.where(c == 0, 0.0, out)
    return np.where(certain, 1.0, out)
