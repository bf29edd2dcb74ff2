"""The regime world (tagrpo.toy.regime): forms, parsing, the hard problems, the knob, splits, corpus, strategies."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter

import pytest

from tagrpo.common.errors import InputError
from tagrpo.toy import regime
from tagrpo.toy.regime import Problem


@pytest.mark.parametrize(
    ("n", "words"), [(0, "zero"), (7, "seven"), (13, "thirteen"), (20, "twenty"), (40, "forty"), (42, "forty-two")]
)
def test_number_words_by_hand(n, words):
    assert regime.number_words(n) == words and regime.words_number(words) == n


def test_number_words_round_trip_and_reject():
    assert [regime.words_number(regime.number_words(n)) for n in range(60)] == list(range(60))
    for bad in ("forty-zero", "sixty", "twenty-", "tenty"):
        with pytest.raises(ValueError):
            regime.words_number(bad)
    with pytest.raises(ValueError):
        regime.number_words(60)


def test_forms_by_hand():
    p = Problem(42, 13, 5, "Tom", "apples")
    assert regime.render(p, "symbolic") == "42+13-5="
    assert regime.render(p, "words") == "forty-two plus thirteen minus five ="
    spelled = "Tom has forty-two apples, gets thirteen more and gives five away. How many apples?"
    assert regime.render(p, "spelled") == spelled
    assert regime.render(p, "reordered") == "Tom gets 13 apples and gives 5 away, having had 42. How many apples?"
    assert p.solution() == " 42+13=55; 55-5=50. \\boxed{50}"
    assert p.solution("subtract_first") == " 42-5=37; 37+13=50. \\boxed{50}"
    assert p.solution(slip=True) == " 42+13=55; 55+5=60. \\boxed{60}"  # the c given away added: wrong
    assert p.solution("subtract_first", slip=True) == " 42+5=47; 47+13=60. \\boxed{60}"


def test_every_form_parses_back_to_its_triple():
    rng = random.Random(0)
    for _ in range(300):
        p = regime.sample_problem(rng, hard_share=0.5)
        for form in regime.FORMS:
            assert regime.parse(regime.render(p, form)) == (p.a, p.b, p.c), form
    for bad in ("42+13=", "forty-zero plus one minus two =", "Tom has 4 apples."):
        with pytest.raises(InputError):
            regime.parse(bad)


@pytest.mark.parametrize(
    ("triple", "hard"), [((42, 13, 5), True), ((13, 50, 1), True), ((23, 39, 9), False), ((10, 19, 4), False)]
)
def test_hard_means_a_hidden_tens_word_in_a_or_b(triple, hard):
    assert regime.is_hard(*triple) is hard and Problem(*triple).hard is hard


def test_blind_guess_rate_worked_by_hand():
    # a+b takes s with 50 - |s - 69| of the 2,500 pairs; the answer 64 = s - c for c = 1..9 has the most triples:
    # sum over d = -4..4 of (50 - |d|) = 450 - 20 = 430 of 2,500 * 9 = 22,500.
    assert regime.blind_guess_rate() == pytest.approx(430 / 22500) and regime.blind_guess_rate() <= 0.02


def test_splits_are_disjoint_cover_every_triple_and_are_about_7_1_2():
    parts = {s: set(regime.triples(s)) for s in regime.SPLITS}
    everything = set(regime.triples())
    assert len(everything) == 50 * 50 * 9 and set.union(*parts.values()) == everything
    assert sum(map(len, parts.values())) == len(everything)  # disjoint
    shares = {s: len(t) / len(everything) for s, t in parts.items()}
    assert shares == pytest.approx({"train": 0.7, "validation": 0.1, "test": 0.2}, abs=0.02)


@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_the_knob_sets_the_share_of_hard_problems(share):
    rng = random.Random(1)
    problems = [regime.sample_problem(rng, "test", hard_share=share) for _ in range(4000)]
    assert all(regime.split_of(p.a, p.b, p.c) == "test" for p in problems)
    hard = sum(p.hard for p in problems) / len(problems)
    assert hard == pytest.approx(share, abs=0.025)  # 3.4 binomial standard errors at 0.3
    with pytest.raises(InputError):
        regime.sample_problem(rng, hard_share=1.5)


def test_corpus_never_writes_a_hidden_tens_word_but_has_their_digits():
    pairs = regime.corpus(4000, seed=3)
    triples = [regime.parse(q) for q, _ in pairs]
    assert all(regime.split_of(*t) == "train" for t in triples)
    assert not any(word in q for q, _ in pairs for word in ("forty", "fifty"))
    assert any(regime.is_hard(*t) for t in triples)  # their symbolic and narrative forms are there
    assert any("twenty" in q or "thirty" in q for q, _ in pairs)  # the visible tens are written out
    shares = Counter(regime.strategy_of(s) for _, s in pairs)
    assert shares["add_first"] / len(pairs) == pytest.approx(0.7, abs=0.03)


def _slipped(question: str, solution: str) -> bool:
    a, b, c = regime.parse(question)
    return not solution.endswith(f"\\boxed{{{a + b - c}}}")


def test_only_spelled_solutions_slip_and_at_the_set_share():
    pairs = regime.corpus(6000, seed=3, slip=0.4)
    spelled = [(q, s) for q, s in pairs if "has" in q and not any(ch.isdigit() for ch in q)]
    others = [(q, s) for q, s in pairs if (q, s) not in spelled]
    assert len(spelled) > 800 and not any(_slipped(q, s) for q, s in others)
    share = sum(_slipped(q, s) for q, s in spelled) / len(spelled)
    assert share == pytest.approx(0.4, abs=0.05)  # 3.5 binomial standard errors at n ~ 1,200
    assert not any(_slipped(q, s) for q, s in regime.corpus(2000, seed=3))  # slip 0 (the default): none
    with pytest.raises(InputError, match="slip must be in"):
        regime.corpus(3, seed=3, slip=1.5)


def test_a_corpus_without_slip_draws_as_before_the_slip_existed():
    # no random draw for the slip when it is 0, so a recipe without one (the probes' bases) rebuilds unchanged: the
    # digest of 300 pairs in the first base's mix at seed 3 as the code before ``slip`` drew them
    first_mix = {"symbolic": 0.5, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.15}

    def digest(pairs):
        return hashlib.sha256(repr(pairs).encode()).hexdigest()

    assert digest(regime.corpus(300, seed=3, mix=first_mix)) == (
        "d87ce06fe5b804411d9b4273367d663ff8d263b18fbb66f65a53d0e0e66289da"
    )
    assert digest(regime.corpus(300, seed=3, mix=first_mix, slip=0.4)) != digest(regime.corpus(300, 3, first_mix))


def test_strategy_of_and_its_entropy_by_hand():
    assert regime.strategy_of(" 42+13=55; 55-5=50. \\boxed{50}") == "add_first"
    assert regime.strategy_of(" 42-5=37; 37+13=50. \\boxed{50}") == "subtract_first"
    assert regime.strategy_of(" \\boxed{50}") is None
    assert regime.strategy_entropy(["add_first", "subtract_first"] * 2) == pytest.approx(1.0)
    assert regime.strategy_entropy(["add_first"] * 3 + [None]) == 0.0
    assert regime.strategy_entropy(["add_first"] * 3 + ["subtract_first"]) == pytest.approx(0.8112781)
    assert regime.strategy_entropy([]) == 0.0


def test_question_rows_flag_hard_rows_and_keep_their_prefix():
    rows = regime.question_rows(40, seed=5, hard_share=0.5, split="validation")
    assert rows[:10] == regime.question_rows(10, seed=5, hard_share=0.5, split="validation")
    for row in rows:
        triple = regime.parse(row["prompt"])
        assert row["hard"] == regime.is_hard(*triple) and row["answer"] == str(triple[0] + triple[1] - triple[2])
        assert [regime.parse(q) for q in row["rephrasings"]] == [triple] * 3
    assert row["rephrasings"][0] == regime.render(Problem(*triple), "symbolic")
    for row in regime.question_rows(3, seed=5, hard_share=1.0, plan="control"):  # renamed, still spelled
        for q in row["rephrasings"]:
            assert q != row["prompt"] and regime.parse(q) == regime.parse(row["prompt"])
            assert "forty" in q or "fifty" in q


def test_the_basic_worlds_premise_prompts_are_the_demos_as_before():
    from tagrpo.toy import world
    from tagrpo.toy.worlds import premise_prompts

    rng = random.Random(3000)
    problems = [world.sample_problem(rng, "test") for _ in range(16)]
    answers, prompts = premise_prompts("basic", 16, 3000)
    assert answers == [str(p.answer) for p in problems]
    assert prompts["spelled"] == [world.render(p, "spelled") for p in problems]
    assert prompts["renamed"] == [world.rephrase(p, 1, "control")[0] for p in problems]
    with pytest.raises(ValueError, match="basic"):
        premise_prompts("hard", 2, 0)


@pytest.fixture(scope="module")
def tiny_regime_base(tmp_path_factory):
    from tagrpo.toy.regime_base import RegimePretrainConfig, pretrain_regime_base

    out = tmp_path_factory.mktemp("regime_base")
    return pretrain_regime_base(
        RegimePretrainConfig(output_dir=str(out), steps=3, corpus_size=64, hidden_size=32, num_layers=1)
    )


@pytest.mark.slow
def test_quick_demo_on_the_regime_world(tmp_path, tiny_regime_base):
    from tagrpo.demo.config import DemoConfig, run_demo

    cfg = DemoConfig(
        output_dir=str(tmp_path / "demo"), base_dir=tiny_regime_base, world="regime", hard_share=0.5, preset="quick",
        arms="grpo,equal_sampling,ta_grpo", rl_steps=2, eval_questions=8, eval_samples=2, checkpoints=1,
        num_iterations=2, learning_rates="ta_grpo=1e-4",
    )  # fmt: skip
    assert cfg.max_completion_length == 36
    result = run_demo(cfg)
    runs = result["runs"]
    assert [runs[a]["rollouts"] for a in ("grpo", "equal_sampling", "ta_grpo")] == [2 * 4 * 4, 2 * 4 * 16, 2 * 4 * 16]
    assert [runs[a]["learning_rate"] for a in ("grpo", "ta_grpo")] == [3e-5, 1e-4]
    # two optimizer steps per generation batch: twice the updates for the same rollouts, a clip fraction per update
    # (the second update of a batch is logged in its own row, without the generation's keys)
    assert [runs[a]["optimizer_updates"] for a in ("grpo", "ta_grpo")] == [4, 4]
    assert len(runs["ta_grpo"]["clip_fraction"]) == 4 and len(runs["ta_grpo"]["steps"]) == 2
    # equal-sampling's rescue split: its first G=4 samples of q0 against all 16; GRPO has no such split
    assert all("tagrpo/reference/rescued/from_zero" in s for s in runs["equal_sampling"]["steps"])
    assert not any("tagrpo/reference/rescued/from_zero" in s for s in runs["grpo"]["steps"])
    assert all(0.0 <= runs[a]["strategy_entropy"] <= 1.0 for a in runs)
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "The hard subset" in report and "strategy entropy (bits)" in report
    assert set(result["premise"]) == {*regime.FORMS, "renamed"}
    rows = [
        json.loads(line) for line in (tmp_path / "demo" / "runs" / "ta_grpo" / "train.jsonl").read_text().splitlines()
    ]
    assert all(regime.parse(r["prompt"]) and r["hard"] == regime.is_hard(*regime.parse(r["prompt"])) for r in rows)
    assert 0 < sum(r["hard"] for r in rows) < len(rows)


@pytest.mark.slow
def test_mid_training_evaluation_leaves_the_trajectory_unchanged(tmp_path, tiny_regime_base):
    """Evaluation samples under its own forked RNG: a run measured at every step trains exactly as one never
    measured (same rewards, same completions, same final model)."""
    from rich.console import Console

    from tagrpo.demo.config import DemoConfig, held_out_rows
    from tagrpo.demo.run import train_arm

    out = {}
    for checkpoints in (0, 4):
        cfg = DemoConfig(
            output_dir=str(tmp_path / f"c{checkpoints}"), world="regime", preset="quick", arms="ta_grpo", rl_steps=4,
            eval_questions=8, eval_samples=4, checkpoints=checkpoints, num_iterations=2, learning_rate=1e-3,
        )  # fmt: skip
        out[checkpoints] = train_arm("ta_grpo", cfg, tiny_regime_base, held_out_rows(cfg), Console(quiet=True))
    measured, unmeasured = out[4], out[0]
    assert [p["step"] for p in measured["curve"]] == [1, 2, 3, 4] and unmeasured["curve"] == []
    assert measured["steps"] == unmeasured["steps"] and measured["clip_fraction"] == unmeasured["clip_fraction"]
    assert measured["counts"] == unmeasured["counts"]
    assert len({s["completions/mean_length"] for s in measured["steps"]}) > 1  # sampled: the RNG state matters


def test_hard_subset_rows_worked_by_hand():
    from tagrpo.demo.report import subset_rows

    def run(counts):
        return {"counts": counts, "samples": 4, "pass_at_k": {"1": 0.0, "4": 0.0}}

    # base counts 0, 0, 2, 4 of 4: questions 0 and 1 are the hard subset (half).
    # GRPO: hard counts 0, 1 -> pass@1 (0 + 1/4) / 2 = 12.5%, pass@4 (0 + 1) / 2 = 50%; rest 4, 4 -> 100%.
    headers, rows = subset_rows([{"runs": {"base": run([0, 0, 2, 4]), "grpo": run([0, 1, 4, 4])}}])
    assert headers[1:4] == ["hard questions", "pass@1 % hard", "pass@4 % hard"]
    base, grpo = rows
    assert base[1] == "50%" and base[2].startswith("0.0 ") and base[4].startswith("75.0 ")
    assert grpo[2].startswith("12.5 ") and grpo[3].startswith("50.0 ") and grpo[4].startswith("100.0 ")


@pytest.mark.slow
def test_shipped_regime_base_matches_its_recipe_and_holds_the_premise():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.evaluation import correct_counts, sample_responses
    from tagrpo.rewards import is_correct
    from tagrpo.toy.regime_base import SHIPPED, shipped_matches
    from tagrpo.toy.worlds import resolve_world_base

    assert shipped_matches() and resolve_world_base("regime", None, "/nonexistent") == str(SHIPPED)
    model, tok = AutoModelForCausalLM.from_pretrained(SHIPPED), AutoTokenizer.from_pretrained(SHIPPED)
    pass1 = {}
    for share in (0.0, 1.0):  # validation problems, easy then hard
        rows = regime.question_rows(16, seed=11, hard_share=share, split="validation")
        for form, prompts in (("q0", [r["prompt"] for r in rows]), ("symbolic", [r["rephrasings"][0] for r in rows])):
            responses = sample_responses(model, tok, prompts, n=8, max_new_tokens=36, progress=False)
            counts = correct_counts(responses, [r["answer"] for r in rows], is_correct)
            pass1[(share, form)] = counts.mean() / 8
    # measured (studies/results/toy_premise_validation_slip40.md): hard q0 0.1%, easy q0 51%, symbolic 91-95%
    assert pass1[(1.0, "q0")] < 0.03 and pass1[(1.0, "symbolic")] > 0.6 and pass1[(0.0, "symbolic")] > 0.6
    assert 0.25 < pass1[(0.0, "q0")] < 0.8  # the mixed band: RL has something to learn on the readable questions


def _flag_result(ta_counts, es_counts, clip):
    def run(counts, p1):
        return {"counts": counts, "samples": 4, "pass_at_k": {"1": p1, "4": p1}, "clip_fraction": clip}

    return {"config": {"num_iterations": 2}, "premise": {"symbolic": 0.9, "spelled": 0.1},
            "runs": {"base": run([0, 0, 2, 4], 0.3), "grpo": run([0, 0, 2, 4], 0.2),
                     "equal_sampling": run(es_counts, 0.4), "ta_grpo": run(ta_counts, 0.4)}}


def test_demo_flags_fire_when_the_run_contradicts_the_method():
    from tagrpo.demo.report import flags

    # hard subset: questions 0 and 1 (the base's 0 of 4); equal-sampling solves one of them, TA-GRPO none
    fired = flags(_flag_result([0, 0, 4, 4], [0, 1, 4, 4], [0.0, 0.0]))
    assert any(f.startswith("GRPO did not raise held-out pass@1") for f in fired)
    assert any("on the hard subset equal-sampling GRPO reached pass@4 50.0" in f for f in fired)
    assert any(f.startswith("TA-GRPO took several optimizer steps") and "the clip did not act" in f for f in fired)
    quiet = flags(_flag_result([1, 2, 4, 4], [0, 0, 4, 4], [0.0, 0.03]))
    assert not any("hard subset" in f or "clip did not act" in f for f in quiet)


def test_recipe_id_names_the_settings_and_the_recipe(monkeypatch):
    from tagrpo.toy import regime_base
    from tagrpo.toy.regime_base import RegimePretrainConfig, recipe_id

    shipped = recipe_id()
    assert len(shipped) == 12 and recipe_id(RegimePretrainConfig()) == shipped
    assert recipe_id(RegimePretrainConfig(output_dir="elsewhere")) == shipped  # where it lies is no setting
    assert recipe_id(RegimePretrainConfig(steps=701)) != shipped
    assert recipe_id(RegimePretrainConfig(mix={**regime.MIX, "spelled": 0.5})) != shipped
    assert recipe_id(RegimePretrainConfig(slip=0.0)) != shipped
    monkeypatch.setattr(regime_base, "RECIPE", regime_base.RECIPE + 1)
    assert recipe_id() != shipped


def test_the_regime_base_is_rebuilt_bit_for_bit(tmp_path, tiny_regime_base):
    # what the capacity point relies on: the same recipe, pretrained again into another directory, gives the same
    # weight bytes (its SHA-256 keys the cells), here at a smoke size
    from pathlib import Path

    from tagrpo.toy.regime_base import RegimePretrainConfig, pretrain_regime_base

    again = pretrain_regime_base(RegimePretrainConfig(output_dir=str(tmp_path / "again"), steps=3, corpus_size=64,
                                                      hidden_size=32, num_layers=1))

    def sha(path):
        return hashlib.sha256((Path(path) / "model.safetensors").read_bytes()).hexdigest()

    assert sha(again) == sha(tiny_regime_base)
    assert Path(again) != Path(tiny_regime_base)
