"""The unbiased pass@k estimator of Chen et al. (2021)."""

from __future__ import annotations

import numpy as np
import torch


def pass_at_k(n, c, k) -> np.ndarray:
    """Unbiased pass@k = 1 - C(n-c, k) / C(n, k), vectorised over problems.

    Args:
        n: samples per problem, int or array (Q,).
        c: correct samples per problem, int or array (Q,), 0 <= c <= n.
        k: int, or array broadcastable with n and c; 1 <= k <= n.

    Computed in log space with ``lgamma`` in float64, so it is stable for n in the thousands. Exactly 1.0
    where n - c < k (every draw of k contains a correct sample), exactly 0.0 where c == 0.

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
    nt = torch.tensor(n, dtype=torch.float64)  # (Q,) copies: broadcast views are read-only
    ct = torch.tensor(c, dtype=torch.float64)  # (Q,)
    kt = torch.tensor(k, dtype=torch.float64)  # (Q,)
    wrong = nt - ct  # (Q,)
    certain = wrong < kt  # (Q,)
    safe_wrong = torch.where(certain, kt, wrong)  # (Q,)
    log_ratio = (
        torch.lgamma(safe_wrong + 1)
        - torch.lgamma(safe_wrong - kt + 1)
        - torch.lgamma(nt + 1)
        + torch.lgamma(nt - kt + 1)
    )  # (Q,) log C(n-c, k) - log C(n, k)
    out = 1.0 - torch.exp(log_ratio)  # (Q,)
    out = torch.where(ct == 0, torch.zeros_like(out), out)
    out = torch.where(certain, torch.ones_like(out), out)
    return out.numpy()
