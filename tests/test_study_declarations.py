"""The embedded world's declared studies (``tagrpo/experiments/declarations/embedded_v2.py`` and ``capacity.py``) on
the regime task (``tagrpo.experiments.tasks.regime``): their families, sweep and edge rule, the cells each phase asks
for (``tagrpo.experiments.run``) against the declared budget and against the cells committed under
``studies/results``, how cells are filed and keyed, and the demo preset that reuses the study's choices. Nothing is
trained."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pytest

from tagrpo.experiments import judge, run
from tagrpo.experiments.declarations import capacity, embedded_v2
from tagrpo.experiments.study import KMAX, declared
from tagrpo.experiments.tasks import regime

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "studies" / "results"
V2, CAP = embedded_v2.STUDY, capacity.STUDY
SWEPT = ("ta_grpo", "equal_sampling", "grpo_long", "ta_grpo_control", "ta_grpo_gated", "ta_grpo_w25", "ta_grpo_w50")


def _args(study, work_dir="w", **changes) -> run.StudyArgs:
    args = run.StudyArgs(work_dir=work_dir, out="o", samples=study.samples, arms=list(study.all_arms()),
                         sweep_lrs=list(study.sweep.rates), seeds=list(study.seeds),
                         exploratory_seeds=list(study.exploratory_seeds))
    for key, value in changes.items():
        setattr(args, key, value)
    return args


def _rates(study, rate=3e-5, option="ta_grpo_w25", **at) -> dict:
    """Every swept arm at ``rate`` on every setting, the ``weighted`` choice taking ``option``; ``at``: arm -> rate
    everywhere."""
    one = {a: rate for a in study.swept((*study.primary_arms, *study.exploratory_arms))}
    return {h: {**one, "weighted": one[option], "weighted_arm": option, **at} for h in study.settings}


def test_declarations_are_found_by_name():
    assert declared("embedded_v2") is V2 and declared("capacity") is CAP
    with pytest.raises(ValueError, match="'embedded_v2', 'capacity', 'real_v2'"):
        declared("toy_regime")


def test_the_embedded_v2_design_is_the_issues():
    assert V2.settings == (0.0, 0.6, 0.9) and V2.task == "regime" and V2.samples == 64 and V2.margin == 0.02
    assert V2.seeds == tuple(range(10)) and V2.exploratory_seeds == tuple(range(5)) == V2.forms_seeds
    assert V2.sweep.rates == (1e-5, 3e-5, 1e-4) and V2.sweep.seeds == (100, 101) and V2.sweep.samples == 16
    assert (V2.sweep.low_edge, V2.sweep.high_edge, V2.sweep.base, V2.sweep.forms) == (None, 3e-4, True, False)
    assert not set(V2.sweep.seeds) & set(V2.seeds)  # the sweep's seeds are not the study's
    assert V2.swept(V2.primary_arms) == SWEPT[:-2] + ("ta_grpo_w25", "ta_grpo_w50") == SWEPT
    assert V2.choices == {"weighted": ("ta_grpo_w25", "ta_grpo_w50")}
    assert set(V2.arms) == {*SWEPT, *V2.exploratory_arms, "ta_grpo_variant"} and not any(V2.arms.values())
    from tagrpo.demo.arms import ARMS

    assert set(V2.arms) <= set(ARMS)  # the regime task's arms are configured by name
    pilot = V2.fixed[0]
    assert (pilot.arm, pilot.rates, pilot.settings, pilot.seeds) == ("ta_grpo_variant", (3e-5, 1e-4), (0.6, 0.9),
                                                                     tuple(range(5)))
    assert V2.goal.candidates == ("ta_grpo_gated", "weighted") and V2.goal.non_inferiority == 0.02
    assert V2.goal.keep_gain == 0.8 and "base" not in V2.task_options  # the shipped base


def test_the_embedded_v2_families_are_declared():
    primary = V2.primary
    # v1's 3 refs x (2 metrics overall at h=0, 4 at h=0.6 and 0.9) = 30, and each candidate 1 + 2 + 2 = 5
    assert len(primary) == 30 + 5 * len(embedded_v2.CANDIDATES)
    v1 = [c for c in primary if c.arm == "ta_grpo"]
    assert len(v1) == 30 and {c.ref for c in v1} == {"equal_sampling", "grpo_long", "ta_grpo_control"}
    assert {c.k for c in v1} == {1, KMAX} and {c.subset for c in v1} == {"all", "hard"}
    assert not [c for c in primary if c.setting == 0.0 and c.subset == "hard"]  # no hard question at 0
    non_inferiority = [c for c in primary if c.kind == "matches"]
    assert {(c.arm, c.ref, c.subset, c.k, c.setting) for c in non_inferiority} == {
        (a, "equal_sampling", "rest", 1, h) for a in embedded_v2.CANDIDATES for h in V2.settings}
    assert {(c.arm, c.subset, c.k) for c in primary if c.arm in embedded_v2.CANDIDATES and c.kind != "matches"} == {
        (a, "hard", KMAX) for a in embedded_v2.CANDIDATES}
    explore = V2.exploratory
    assert not any(c.ref == "base" for c in explore)  # no arm-vs-base hard-subset contrast (regression to the mean)
    pilots = [c for c in explore if c.arm.startswith("ta_grpo_variant@")]
    assert {c.setting for c in pilots} == set(V2.fixed[0].settings)
    assert {c.arm for c in pilots} == {V2.fixed[0].name(r) for r in V2.fixed[0].rates}
    assert {(c.arm, c.ref, c.subset, c.k) for c in V2.post_hoc} == {  # added after the runs, for issue 33
        ("ta_grpo", ref, "rest", k) for ref in ("equal_sampling", "ta_grpo_control") for k in (1, KMAX)}
    families = [f for _, f in V2.contrasts()]
    assert families.count("primary") == 40 and families.count("post hoc") == len(V2.post_hoc) == 12
    for family in ("primary", "exploratory", "post hoc"):  # no contrast declared twice within a family
        keys = [(c.key(64), c.kind) for c, f in V2.contrasts() if f == family]
        assert len(set(keys)) == len(keys)
    arms = set(V2.all_arms()) | {"base"}
    assert all(c.arm in arms and c.ref in arms for c, _ in V2.contrasts())


def test_the_capacity_design_is_v2s_at_one_knob_on_its_own_base():
    assert CAP.settings == (capacity.KNOB,) == (0.6,) and CAP.seeds == tuple(range(5)) == CAP.forms_seeds
    assert CAP.task_options == {"base": {"hidden_size": 328}} and CAP.exploratory_arms == () and not CAP.fixed
    assert CAP.sweep.rates == V2.sweep.rates and CAP.sweep.seeds == V2.sweep.seeds and CAP.sweep.forms
    assert CAP.swept(CAP.primary_arms) == SWEPT and CAP.choices == V2.choices
    assert CAP.goal.candidates == V2.goal.candidates
    primary = CAP.primary
    assert len(primary) == 2 + 2 * len(embedded_v2.CANDIDATES) + 1
    assert all(c.setting == capacity.KNOB for c in primary)
    (cost,) = [c for c in primary if c.versus]
    assert (cost.arm, cost.ref, cost.k, cost.subset, cost.kind, cost.versus) == (
        "ta_grpo", "equal_sampling", 1, "rest", "greater", "embedded_v2")
    assert {(c.arm, c.subset, c.k) for c in primary if c.kind == "matches"} == {
        (a, "rest", 1) for a in embedded_v2.CANDIDATES}
    assert declared(cost.versus).outputs == "toy_regime_v2"


def test_the_capacity_base_has_at_least_four_times_the_parameters():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.toy.model import build_tiny_model
    from tagrpo.toy.regime_base import SHIPPED, RegimePretrainConfig

    shipped = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(SHIPPED).parameters())
    cfg = RegimePretrainConfig(**CAP.task_options["base"])
    with torch.device("meta"):  # the shapes, not the weights: no memory, no initialisation
        big = build_tiny_model(AutoTokenizer.from_pretrained(SHIPPED), cfg.architecture, cfg.hidden_size,
                               cfg.num_layers)
    params = sum(p.numel() for p in big.parameters())
    assert params >= 4 * shipped
    record = json.loads((RESULTS / "toy_capacity_cells" / "base.json").read_text().splitlines()[-1])
    assert record["parameters"] == params and record["hidden_size"] == cfg.hidden_size  # what ran is the declared


def test_the_edge_rule_fires_only_at_the_top_of_the_grid():
    grid, sweep = V2.sweep.rates, V2.sweep
    assert sweep.edge(1e-4, grid) == 3e-4 and sweep.edge(3e-5, grid) is None
    assert sweep.edge(1e-5, grid) is None  # no low edge declared
    assert sweep.edge(None, grid) is None  # not swept there yet
    assert sweep.edge(3e-4, (1e-4, 3e-4)) is None  # the edge is already the grid's top


def test_parse_defaults_are_the_declaration(tmp_path):
    args = run.parse(V2, str(tmp_path), [])
    assert (args.seeds, args.exploratory_seeds, args.sweep_lrs) == (list(V2.seeds), list(V2.exploratory_seeds),
                                                                    list(V2.sweep.rates))
    assert args.arms == list(V2.all_arms()) and args.samples == 64 and args.edge and args.versus_dirs == {}
    assert args.work_dir == str(tmp_path / "toy_regime_v2_cells") and args.rl_steps is None
    cap = run.parse(CAP, str(tmp_path), [])
    assert cap.versus_dirs == {"embedded_v2": str(tmp_path / "toy_regime_v2_cells")}  # the cost change's cells
    with pytest.raises(SystemExit):
        run.parse(V2, str(tmp_path), ["--arms", "ta_grpo,weighted,nope"])
    with pytest.raises(SystemExit):
        run.parse(V2, str(tmp_path), ["--versus-dir", "capacity=x"])  # v2 judges no cost change


def test_parse_says_which_arms_are_valid(tmp_path, capsys):
    with pytest.raises(SystemExit):
        run.parse(V2, str(tmp_path), ["--arms", "nope"])
    assert "--arms: unknown nope; valid arms are ta_grpo, equal_sampling" in capsys.readouterr().err


def test_the_embedded_v2_cell_plan_matches_the_declared_budget():
    args = _args(V2)
    primary = run.sweep_specs(V2, args, regime, V2.primary_arms, None, base=True)
    exploratory = run.sweep_specs(V2, args, regime, V2.exploratory_arms, None)
    # per knob and sweep seed: the base and 7 swept arms x 3 rates (primary); 2 arms x 3 rates (exploratory)
    assert len(primary) == 3 * 2 * (1 + 7 * 3) == 132 and len(exploratory) == 3 * 2 * 2 * 3 == 36
    assert {s["split"] for s, _ in primary + exploratory} == {"validation"}
    assert {s["samples"] for s, _ in primary} == {16} and not any(s["forms"] for s, _ in primary)
    rates = _rates(V2, ta_grpo=1e-4)  # TA-GRPO at the grid's top: one more rate at each knob, both sweep seeds
    edged = run.sweep_specs(V2, args, regime, V2.primary_arms, None, rates, base=True)
    assert len(edged) == len(primary) + 3 * 2
    extra = {(s.get("arm"), s["knob"], s.get("learning_rate")) for s, _ in edged} - {
        (s.get("arm"), s["knob"], s.get("learning_rate")) for s, _ in primary}
    assert extra == {("ta_grpo", h, 3e-4) for h in V2.settings}
    assert run.sweep_specs(V2, _args(V2, edge=False), regime, V2.primary_arms, None, rates) == [
        c for c in primary if c[0]["kind"] == "arm"]  # --no-edge: the grid only
    study = run.study_specs(V2, args, regime, "primary", rates, None)
    later = run.study_specs(V2, args, regime, "exploratory", rates, None)
    arms = [s["arm"] for s, _ in study + later if s["kind"] == "arm"]
    assert arms.count("ta_grpo_w25") == 30 and "weighted" not in arms  # the chosen lambda arm under its own name
    assert arms.count("ta_grpo_w50") == 0 and arms.count("ta_grpo_kl") == 15 and arms.count("ta_grpo_variant") == 20
    assert len(study) == 10 * 3 * (1 + len(V2.primary_arms)) == 210
    assert len(later) == 5 * 3 * len(V2.exploratory_arms) + 20 == 50
    assert {s["split"] for s, _ in study + later} == {"test"} and {s["samples"] for s, _ in study} == {64}
    assert [s["forms"] for s, _ in study if s["kind"] == "base"] == [s in V2.forms_seeds for s in V2.seeds
                                                                    for _ in V2.settings]
    assert all(s["forms"] for s, _ in later if s["arm"] != "ta_grpo_variant")
    pilot = {(s["knob"], s["learning_rate"]) for s, _ in later if s["arm"] == "ta_grpo_variant"}
    assert pilot == {(h, r) for h in (0.6, 0.9) for r in (3e-5, 1e-4)}
    every = primary + exploratory + edged + study + later
    assert len({p for _, p in every}) == len({json.dumps(s, sort_keys=True) for s, _ in every})  # a path per spec


def test_a_smoke_plan_shrinks_with_its_flags():
    args = _args(V2, seeds=[0], exploratory_seeds=[0], sweep_lrs=[1e-4], arms=["ta_grpo", "weighted",
                                                                              "ta_grpo_variant@3e-05"])
    args.overrides = {"rl_steps": 2, "questions": 4}
    arms = tuple(a for a in V2.primary_arms if a in args.arms)
    grid = run.sweep_specs(V2, args, regime, arms, None, base=True)
    assert len(grid) == 3 * 2 * (1 + 3) and all(s["rl_steps"] == 2 and s["questions"] == 4 for s, _ in grid)
    assert all("_steps2" in p for s, p in grid if s["kind"] == "arm")  # a smoke cell never shares the study's path
    rates = _rates(V2, 1e-4)
    study = run.study_specs(V2, args, regime, "primary", rates, None)
    assert [s.get("arm") for s, _ in study] == [None, "ta_grpo", "ta_grpo_w25"] * 3
    later = run.study_specs(V2, args, regime, "exploratory", rates, None)
    assert [(s["arm"], s["learning_rate"]) for s, _ in later] == [("ta_grpo_variant", 3e-5)] * 2


def test_the_capacity_cell_plan():
    args = _args(CAP, overrides={"base": "outputs/b", "base_sha256": "ab", "base_recipe": "r"})
    grid = run.sweep_specs(CAP, args, regime, CAP.primary_arms, None, base=True)
    assert len(grid) == 2 * (1 + 3 * len(SWEPT)) == 44
    assert all(s["base"] == "outputs/b" and s["base_sha256"] == "ab" and s["knob"] == 0.6 for s, _ in grid)
    assert all(s["forms"] for s, _ in grid if s["kind"] == "base")  # the premise on every base cell
    assert all(p.startswith("w/b/validation/") for _, p in grid)  # under the base's own folder
    rates = _rates(CAP, option="ta_grpo_w50", ta_grpo=1e-4)
    assert len(run.sweep_specs(CAP, args, regime, CAP.primary_arms, None, rates, base=True)) == len(grid) + 2
    study = run.study_specs(CAP, args, regime, "primary", rates, None)
    arms = [s.get("arm") for s, _ in study]
    assert len(study) == 5 * (1 + len(capacity.ARMS)) == 35
    assert arms.count("ta_grpo_w50") == 5 and "weighted" not in arms and arms.count("ta_grpo") == 5
    assert all(s["forms"] for s, _ in study)  # forms on every seed
    assert run.study_specs(CAP, args, regime, "exploratory", rates, None) == []


def _committed(study, outputs: str):
    saved = json.loads((RESULTS / f"{outputs}.json").read_text(encoding="utf-8"))
    rates = {float(h): r for h, r in saved["learning_rates"].items()}
    return saved, rates


@pytest.mark.parametrize(("study", "outputs"), [(V2, "toy_regime_v2"), (CAP, "toy_capacity")])
def test_the_committed_sweep_chose_the_committed_rates(study, outputs):
    saved, rates = _committed(study, outputs)
    assert judge.choose(study, saved["sweep"]) == rates
    assert all(rates[h][rates[h]["weighted_arm"]] == rates[h]["weighted"] for h in rates)


@pytest.mark.parametrize(("study", "outputs"), [(V2, "toy_regime_v2"), (CAP, "toy_capacity")])
def test_the_committed_cells_are_the_declared_plan_no_more_no_fewer(study, outputs):
    """Each phase's plan, from the committed sweep's own choices (the grid's for the edge rule, then all), names
    exactly the result files committed under the study's cells."""
    saved, rates = _committed(study, outputs)
    work = str(RESULTS / f"{outputs}_cells")
    args = _args(study, work_dir=work)
    if "base" in study.task_options:
        record = json.loads((Path(work) / "base.json").read_text().splitlines()[-1])
        args.overrides = {"base": record["dir"]}
    grid_rows = [r for r in saved["sweep"] if r["learning_rate"] in study.sweep.rates or r["arm"] == "base"]
    grid_rates = judge.choose(study, grid_rows)
    planned = []
    for tier, arms in (("primary", study.primary_arms), ("exploratory", study.exploratory_arms)):
        planned += run.sweep_specs(study, args, regime, arms, None, grid_rates, base=tier == "primary")
        planned += run.study_specs(study, args, regime, tier, rates, None)
    on_disk = set(glob.glob(os.path.join(work, "**", "result.jsonl"), recursive=True))
    assert {p for _, p in planned} == on_disk and len(planned) == len(on_disk)
    # the grid, the edge rule's (each arm-setting whose grid choice was 1e-4, on both sweep seeds), the study
    assert len(planned) == (168 + 2 * 12 + 260 if study is V2 else 44 + 2 * 4 + 35)


def test_cells_are_filed_by_base_and_keyed_by_its_recipe(tmp_path):
    from tagrpo.experiments.cells import done
    from tagrpo.toy.regime_base import recipe_id

    spec = {"kind": "base", "knob": 0.6, "seed": 3, "split": "test", "samples": 2, "forms": False}
    assert regime.cell_path("w", spec) == "w/test/h0.6/seed3/base/result.jsonl"
    assert regime.cell_path("w", {**spec, "knob": 0.0}) == "w/test/h0/seed3/base/result.jsonl"
    probe = {**spec, "base": "outputs/probe19/slip40/"}
    assert regime.cell_path("w", probe) == "w/slip40/test/h0.6/seed3/base/result.jsonl"
    arm = {**spec, "kind": "arm", "arm": "ta_grpo", "learning_rate": 3e-5}
    assert regime.cell_path("w", arm) == "w/test/h0.6/seed3/ta_grpo_lr3e-05/result.jsonl"
    assert regime.cell_path("w", {**arm, "rl_steps": 2}) == "w/test/h0.6/seed3/ta_grpo_lr3e-05_steps2/result.jsonl"
    args = _args(V2, work_dir=str(tmp_path), rl_steps=2, questions=4)
    args.overrides, record = regime.prepare(V2, args)  # the shipped base: nothing to build, no record
    assert record is None and args.overrides == {"rl_steps": 2, "questions": 4, "base_recipe": recipe_id()}
    seen = run.sweep_specs(V2, args, regime, V2.primary_arms, None, base=True)
    assert all(s["base_recipe"] == recipe_id() for s, _ in seen)
    cached = {"spec": {**seen[0][0], "base_recipe": "an-older-base"}}
    (tmp_path / "cell.jsonl").write_text(json.dumps(cached) + "\n")
    assert done(str(tmp_path / "cell.jsonl"), seen[0][0]) is None  # another base's cell is not reused
    (tmp_path / "cell.jsonl").write_text(json.dumps({"spec": seen[0][0]}) + "\n")
    assert done(str(tmp_path / "cell.jsonl"), seen[0][0]) == {"spec": seen[0][0]}


def test_render_only_reads_the_base_record_and_never_builds(tmp_path):
    args = _args(CAP, work_dir=str(tmp_path), render_only=True)
    with pytest.raises(SystemExit, match="no base record; run the study first"):
        regime.build_base(CAP.task_options["base"], args)
    (tmp_path / "base.json").write_text('{"sha256": "x"}\n{"sha256": "y"}\n')
    assert regime.build_base(CAP.task_options["base"], args) == {"sha256": "y"}  # the latest record
    record = {"dir": "outputs/b", "recipe": "r", "sha256": "s"}
    (tmp_path / "base.json").write_text(json.dumps(record) + "\n")
    overrides, got = regime.prepare(CAP, args)
    assert got == record and overrides == {"base": args.base_dir, "base_recipe": "r", "base_sha256": "s"}


def test_make_demo_runs_the_study_hardest_setting_at_its_swept_rates():
    """``tagrpo demo --preset regime`` is the study's setting at h = 0.9 with the learning rates study v2's sweep
    chose there (studies/results/toy_regime_v2.json; the first study's, swept at 0.6, for the arms v2 did not sweep)
    and shows issue 32's recommended variant, the first of v2's committed "closest" ranking: a rerun of either
    that changes them fails here."""
    from tagrpo.demo.arms import ARMS, RECOMMENDED
    from tagrpo.demo.config import DemoConfig
    from tagrpo.demo.report import label

    v1 = json.loads((RESULTS / "toy_regime.json").read_text())
    v2 = json.loads((RESULTS / "toy_regime_v2.json").read_text())
    hardest = max(V2.settings)
    assert set(v2["learning_rates"]) == {"0.0", "0.6", "0.9"}
    at = {k: v for k, v in v2["learning_rates"][str(hardest)].items() if k in ARMS}
    assert set(at) == set(V2.swept((*V2.primary_arms, *V2.exploratory_arms)))
    cfg = DemoConfig(preset="regime")
    assert cfg.world == "regime" and cfg.hard_share == hardest == 0.9 and cfg.num_iterations == 2
    assert {arm: cfg.learning_rate_of(arm) for arm in at} == at
    assert {arm: cfg.learning_rate_of(arm) for arm in v1["learning_rates"] if arm not in at} == {
        arm: rate for arm, rate in v1["learning_rates"].items() if arm not in at}
    first = v2["closest"][0][0]
    chosen = {v2["learning_rates"][h]["weighted_arm"] for h in ("0.6", "0.9")}
    assert first == label(RECOMMENDED) or (first == label("weighted") and chosen == {RECOMMENDED})
    assert cfg.arm_list[-1] == RECOMMENDED and "ta_grpo" in cfg.arm_list
    cell = next(c for c in v1["cells"] if c["spec"].get("arm") == "ta_grpo")
    assert (cell["max_steps"], cell["train_questions"], cell["samples"]) == (cfg.rl_steps, cfg.train_questions,
                                                                          cfg.eval_samples)
