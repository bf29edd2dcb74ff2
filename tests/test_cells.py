"""The cell runner's bookkeeping (``tagrpo/experiments/cells.py``): a callback as each computed cell lands, and an
invocation's line in the log kept current, so that a study killed with its session still states what it cost."""

from __future__ import annotations

import platform

from tagrpo.common.machine import cpu_model
from tagrpo.data.jsonl import read_jsonl
from tagrpo.experiments.cells import Invocation, checkpoint_invocation, run_all
from tagrpo.experiments.tables import ended, invocation_table, wall_sentence


def double(spec: dict, directory: str) -> dict:
    """A cell's compute (module level: the spawned worker imports it)."""
    return {"spec": spec, "value": 2 * spec["x"], "cell_wall_s": 1.5}


def test_on_cell_is_called_once_per_computed_cell_and_never_for_a_reused_one(tmp_path):
    specs = [({"x": x}, str(tmp_path / str(x) / "result.jsonl")) for x in (1, 2)]
    run_all(specs[:1], 1, "first", compute=double)
    landed = []
    results = run_all(specs, 1, "second", compute=double, on_cell=lambda path, r: landed.append((path, r["value"])))
    assert landed == [(specs[1][1], 4)]  # the first cell was on disk: reused, not reported as computed
    assert {path: r["value"] for path, r in results.items()} == {specs[0][1]: 2, specs[1][1]: 4}


def test_an_invocations_line_is_replaced_as_it_progresses_and_others_are_kept(tmp_path):
    log = str(tmp_path / "invocations.jsonl")
    old = {"started": "2026-12-04T10:18:00+00:00", "argv": [], "workers": 1, "wall_s": 60.0, "finished": False}
    checkpoint_invocation(log, old)
    now = {"started": "2026-12-04T14:00:00+00:00", "argv": [], "workers": 2, "wall_s": 30.0, "cells_run": 1,
           "cell_s": 50.0, "finished": False}
    checkpoint_invocation(log, now)
    checkpoint_invocation(log, {**now, "wall_s": 90.0, "cells_run": 2, "cell_s": 110.0, "finished": True})
    rows = read_jsonl(log)
    assert [r["started"] for r in rows] == [old["started"], now["started"]]
    assert rows[1]["cells_run"] == 2 and rows[1]["wall_s"] == 90.0 and rows[1]["finished"] is True


def test_the_report_says_which_invocations_did_not_finish_and_counts_them_to_their_last_cell():
    stopped = {"started": "a", "argv": ["--workers", "1"], "workers": 1, "wall_s": 120.0, "cells_run": 3,
               "cell_s": 100.0, "finished": False, "source": "from its console log"}
    whole = {"argv": ["--workers", "2"], "workers": 2, "wall_s": 60.0, "cells_run": 0, "cell_s": 0.0}  # an old line
    assert ended(stopped) == "not finished (stopped or running); wall to its last cell (from its console log)"
    assert ended(whole) == "finished"
    assert wall_sentence([stopped, whole]) == ("Wall time 3.0 min over 2 invocation(s), 1 of them not finished "
                                               "(stopped or still running) and counted to their last cell")
    assert wall_sentence([]) == "No invocation recorded yet, so no wall time"
    table = invocation_table([stopped, whole])
    assert "| 1 | a | `--workers 1` | 1 | 2.0 | 3 | 1.7 | not recorded | not finished" in table
    assert "| 2 | - |" in table
    assert "| Xeon X | finished |" in invocation_table([{**whole, "machine": {"cpu": "Xeon X"}}])
    assert "| Xeon X | finished |" in invocation_table([{**whole, "machine": {"cpu": "Xeon X", "native_bf16": True}}])
    emulated = {**whole, "machine": {"cpu": "AMD EPYC", "native_bf16": False}}  # its bf16 cells ran emulated
    assert "| AMD EPYC, no native bf16 | finished |" in invocation_table([emulated])


def test_cpu_model_reads_the_model_name_and_falls_back_where_cpuinfo_is_missing(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n")
    assert cpu_model(str(info)) == "Intel(R) Xeon(R) Processor"
    assert cpu_model(str(tmp_path / "absent")) == (platform.processor() or "unknown")


def test_an_invocation_is_on_record_after_each_cell_and_whole_once_finished(tmp_path):
    log = str(tmp_path / "invocations.jsonl")
    invocation = Invocation(log, ["--workers", "2"], 2)
    assert read_jsonl(log) == []  # nothing computed, nothing on record yet
    invocation.landed("a/result.jsonl", {"cell_wall_s": 30.0})
    invocation.landed("b/result.jsonl", {"cell_wall_s": 12.5})
    (line,) = read_jsonl(log)
    assert line["cells_run"] == 2 and line["cell_s"] == 42.5 and line["finished"] is False
    assert line["argv"] == ["--workers", "2"] and line["machine"]["cpu"] == cpu_model()
    invocation.finish()
    (line,) = read_jsonl(log)
    assert line["finished"] is True and line["wall_s"] > 0


def test_a_render_only_invocation_writes_nothing(tmp_path):
    log = tmp_path / "invocations.jsonl"
    invocation = Invocation(str(log), ["--render-only"], 1, record=False)
    invocation.landed("a/result.jsonl", {"cell_wall_s": 1.0})
    invocation.finish()
    assert not log.exists()
