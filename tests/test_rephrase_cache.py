"""The rephrase result cache's lock (tagrpo.rephrase.cache): one run per cache file at a time."""

from __future__ import annotations

import pytest

from tagrpo.common.errors import InputError
from tagrpo.rephrase.cache import ResultCache


def test_a_second_run_on_the_same_cache_is_refused_until_the_first_closes(tmp_path):
    path = str(tmp_path / "out" / "rephrased.jsonl.cache.jsonl")
    first = ResultCache(path)
    first.add({"key": "k1", "text": "a"})
    with pytest.raises(InputError, match="another rephrase run is using this cache"):
        ResultCache(path)
    other = ResultCache(str(tmp_path / "other.cache.jsonl"))  # another file is another lock
    other.close()
    first.close()
    second = ResultCache(path)
    assert second.get("k1") == {"key": "k1", "text": "a"} and second.loaded == 1
    second.close()
