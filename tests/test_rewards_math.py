"""The math reward: boxed-answer extraction, normalisation, math-verify (gold first), threads and timeouts.

The table's answers are in the styles of MATH(-500), AIME, AMC, OlympiadBench and Minerva (golds as those
files store them: AIME24 zero-padded strings, AIME25 ints, AMC floats, OlympiadBench ``$...$`` strings).
"""

from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tagrpo.rewards import (
    REWARDS,
    MathReward,
    VerifierPool,
    choice_reward,
    extract_boxed,
    get_reward,
    is_correct,
    math_reward,
    normalize_answer,
    verify_many,
)

CASES = [
    # MATH / MATH-500: fractions, \dfrac, degrees, units, text, sets, matrices, bases
    ("The answer is $\\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}", True, "math-frac"),
    ("$\\boxed{\\dfrac{33}{100}}$", "\\frac{33}{100}", True, "math-dfrac-pred"),
    ("$\\boxed{\\frac{33}{100}}$", "\\dfrac{33}{100}", True, "math-dfrac-gold"),
    ("$\\boxed{\\tfrac{11}{2}}$", "\\frac{11}{2}", True, "math-tfrac"),
    ("$\\boxed{0.25}$", "\\frac{1}{4}", True, "math-decimal-for-frac"),
    ("$\\boxed{76^\\circ}$", "76^\\circ", True, "math-degrees-both"),
    ("$\\boxed{76}$", "76^\\circ", True, "math-degrees-gold-only"),
    ("$\\boxed{76^{\\circ}}$", "76", True, "math-degrees-pred-braced"),
    ("$\\boxed{76 \\text{ degrees}}$", "76^\\circ", True, "math-degrees-word"),
    ("$\\boxed{15}$", "15\\mbox{ cm}^2", True, "math-units-gold"),
    ("$\\boxed{15\\text{ cm}^2}$", "15", True, "math-units-pred"),
    ("$\\boxed{12 \\text{ inches}}$", "12", True, "math-units-text-word"),
    ("$\\boxed{1{,}000}$", "1000", True, "math-thousands-braced"),
    ("$\\boxed{1,000,000}$", "1000000", True, "math-thousands"),
    ("$\\boxed{10\\!000}$", "10000", True, "math-thin-negative-space"),
    ("$\\boxed{\\$32}$", "32", True, "math-dollars"),
    ("$\\boxed{\\text{Evelyn}}$", "\\text{Evelyn}", True, "math-text-answer"),
    ("$\\boxed{2\\sqrt{5}}$", "\\sqrt{20}", True, "math-sqrt"),
    ("$\\boxed{9i+6}$", "6+9i", True, "math-complex"),
    ("$\\boxed{1,-2}$", "-2,1", True, "math-solution-list-order"),
    (
        "$\\boxed{\\begin{pmatrix}-1&0\\\\0&-1\\end{pmatrix}}$",
        "\\begin{pmatrix} -1 & 0 \\\\ 0 & -1 \\end{pmatrix}",
        True,
        "math-matrix",
    ),
    ("so $x = \\boxed{x=3}$", "3", True, "math-equation-pred"),
    ("$\\boxed{x^5-x^4+x^3-x^2+x-1}$", "x^5 - x^4 + x^3 - x^2 + x - 1", True, "math-polynomial"),
    # intervals and tuples (MATH, OlympiadBench)
    ("$\\boxed{(-\\infty,2)\\cup(3,\\infty)}$", "(-\\infty, 2) \\cup (3, \\infty)", True, "interval-union"),
    ("$\\boxed{\\left( 15, -29 \\right)}$", "(15,-29)", True, "tuple-left-right"),
    ("$\\boxed{[\\frac{1}{2}, 8]}$", "$[\\frac{1}{2}, 8]$", True, "olympiad-interval-dollars"),
    ("$\\boxed{(3,2),(1,1)}$", "$(1,1), (3,2)$", True, "olympiad-tuple-set-order"),
    ("$\\boxed{(6,5)}$", "(6,5)", True, "olympiad-tuple"),
    # AIME: zero-padded golds (AIME24 strings) and int golds (AIME25)
    ("$\\boxed{25}$", "025", True, "aime-zero-padded-gold"),
    ("$\\boxed{073}$", "073", True, "aime-zero-padded-both"),
    ("$\\boxed{073}$", 73, True, "aime-int-gold"),
    ("$\\boxed{588}$", 588, True, "aime25-int"),
    # AMC: float golds
    ("$\\boxed{27}$", 27.0, True, "amc-float-gold"),
    ("$\\boxed{27}$", "27.0", True, "amc-float-string-gold"),
    ("$\\boxed{-1}$", -1.0, True, "amc-negative-float"),
    ("$\\boxed{3159}$", 3159.0, True, "amc-large-float"),
    # OlympiadBench: $-wrapped golds, expressions
    ("$\\boxed{\\frac{1}{2n+2}}$", "$\\frac{1}{2 n+2}$", True, "olympiad-expression"),
    ("$\\boxed{2^{1009}}$", "$2^{1009}$", True, "olympiad-power"),
    ("$\\boxed{4.2\\%}$", "4.2", True, "olympiad-percent-unit"),
    ("$\\boxed{\\frac{600}{7} \\text{ km/h}}$", "$\\frac{600}{7}$", True, "olympiad-unit-kmh"),
    # Minerva: scientific notation, decimals, units
    ("$\\boxed{4.5 \\times 10^{33}}$", "4.5e33", True, "minerva-sci-times"),
    ("$\\boxed{4.5\\times10^{33} \\text{ erg/s}}$", "4.5e33", True, "minerva-sci-units"),
    ("$\\boxed{4.5e33}$", "4.5e33", True, "minerva-sci-e-both"),
    ("$\\boxed{45 \\cdot 10^{32}}$", "4.5e33", True, "minerva-sci-cdot-rescaled"),
    ("$\\boxed{2.7778 \\times 10^{-6}}$", "2.7778e-6", True, "minerva-sci-negative-exponent"),
    ("$\\boxed{10^{-5}}$", "1e-5", True, "minerva-power-of-ten"),
    ("$\\boxed{-\\frac{1}{3}}$", "-1./3", True, "minerva-python-float-division"),
    ("$\\boxed{41.80}$", "41.8", True, "minerva-trailing-zero"),
    ("$\\boxed{$0.006$}$", "0.006", True, "minerva-dollars-inside-box"),
    # wrong answers that look almost right
    ("$\\boxed{0.33}$", "\\frac{1}{3}", False, "wrong-rounded-third"),
    ("$\\boxed{(2,1)}$", "(1,2)", False, "wrong-tuple-order"),
    ("$\\boxed{(5,6)}$", "(6,5)", False, "wrong-tuple-order-olympiad"),
    ("$\\boxed{[0,1]}$", "[0,1)", False, "wrong-interval-closed"),
    ("$\\boxed{(0,1]}$", "[0,1)", False, "wrong-interval-flipped"),
    ("$\\boxed{250}$", "25", False, "wrong-extra-zero"),
    ("$\\boxed{25}$", "250", False, "wrong-missing-zero"),
    ("$\\boxed{27.5}$", 27.0, False, "wrong-amc-half"),
    ("$\\boxed{4.6e33}$", "4.5e33", False, "wrong-sci-mantissa"),
    ("$\\boxed{4.5 \\times 10^{32}}$", "4.5e33", False, "wrong-sci-exponent"),
    ("$\\boxed{-2}$", "-2,1", False, "wrong-missing-root"),
    ("$\\boxed{12}$", "1,2", False, "wrong-list-as-number"),
    ("$\\boxed{\\frac{\\pi}{2}}$", "90^\\circ", False, "wrong-radians-for-degrees"),
    ("$\\boxed{2\\sqrt{3}}$", "3\\sqrt{2}", False, "wrong-swapped-sqrt"),
    ("$\\boxed{41.9}$", "41.8", False, "wrong-last-digit"),
    ("$\\boxed{(1,1),(2,3)}$", "$(1,1), (3,2)$", False, "wrong-one-tuple-of-two"),
    # no answer / last box wins
    ("The answer is 5.", "5", False, "no-box"),
    ("$\\boxed{}$", "5", False, "empty-box"),
    ("First $\\boxed{4}$, corrected: $\\boxed{5}$", "5", True, "last-box-wins"),
    ("First $\\boxed{5}$, corrected: $\\boxed{4}$", "5", False, "earlier-box-ignored"),
    ("$\\fbox{7}$", "7", True, "fbox"),
    ("so the answer is $\\boxed 2$.", "2", True, "braceless-box"),
]


@pytest.mark.parametrize(("response", "gold", "expected"), [c[:3] for c in CASES], ids=[c[3] for c in CASES])
def test_is_correct_table(response, gold, expected):
    assert is_correct(response, gold) is expected


def test_table_is_large_and_ids_unique():
    assert len(CASES) >= 40
    assert len({c[3] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$\\boxed{\\frac{1}{\\sqrt{2}}}$", "\\frac{1}{\\sqrt{2}}"),
        ("\\boxed{a} then \\boxed{b} and \\boxed{c}", "c"),
        ("\\boxed 2$.", "2"),
        ("\\boxed {5}", "5"),
        ("\\boxed{\\{1,2\\}}", "\\{1,2\\}"),
        ("\\boxed{3} but then \\boxed{4", "3"),
        ("\\boxed{4", None),
        ("no box here", None),
        ("\\boxed", None),
        ("\\boxedfoo{1}", None),
        ("\\fbox{x+1}", "x+1"),
    ],
    ids=[
        "nested",
        "multiple-last",
        "braceless",
        "space-before-brace",
        "escaped-braces",
        "unbalanced-falls-back",
        "unbalanced-only",
        "none",
        "bare-command",
        "other-command",
        "fbox",
    ],
)
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("$\\dfrac{1}{2}$", "\\frac{1}{2}"),
        ("1{,}000", "1000"),
        ("1,2", "1,2"),
        ("025", "25"),
        (27.0, "27"),
        ("4.5e33", "4.5\\times 10^{33}"),
        ("\\left( 1,2 \\right)", "( 1,2 )"),
        ("76^{\\circ}", "76"),
        ("-1./3", "-1/3"),
    ],
)
def test_normalize_answer(raw, expected):
    assert normalize_answer(raw) == expected


def test_math_reward_accepts_strings_and_chat_completions():
    completions = ["\\boxed{8}", [{"role": "assistant", "content": "so \\boxed{7}"}], "no answer"]
    assert math_reward(completions, ["8", "8", "8"]) == [1.0, 0.0, 0.0]
    assert math_reward([[{"role": "assistant", "content": "\\boxed{27}"}]], answer=[27.0], prompts=["q"]) == [1.0]


def test_none_gold_or_response_scores_zero():
    assert not is_correct("\\boxed{5}", None)
    assert not is_correct(None, "5")


def test_is_correct_off_the_main_thread():
    """math-verify's signal timeouts would raise 'signal only works in main thread'; is_correct turns them off."""
    out, errors = [], []

    def work():
        try:
            out.append([is_correct("\\boxed{\\dfrac{1}{2}}", "0.5"), is_correct("\\boxed{0.33}", "\\frac13")])
        except Exception as e:  # noqa: BLE001 - the test reports any error
            errors.append(e)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(30)
    assert errors == [] and out == [[True, False]]
    with ThreadPoolExecutor(2) as pool:
        rewards = pool.submit(math_reward, ["\\boxed{3}", "\\boxed{4}"], ["3", "3"]).result(30)
    assert rewards == [1.0, 0.0]


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=2, timeout=1.0, grace=0.5) as p:
        yield p


def test_pool_matches_serial_in_input_order(pool):
    responses = [c[0] for c in CASES]
    golds = [c[1] for c in CASES]
    assert pool.map(responses, golds) == [float(c[2]) for c in CASES]


def test_power_tower_times_out_to_zero(pool):
    """sympy would evaluate 9^9^9^9^9 for ever; the worker's timer stops it and the item scores 0."""
    start = time.monotonic()
    scores = pool.map(["\\boxed{9^{9^{9^{9^{9}}}}}", "\\boxed{2}", "\\boxed{3}"], ["5", "2", "2"])
    assert scores == [0.0, 1.0, 0.0]
    assert time.monotonic() - start < 1.0 + 0.5 + 3.0


def check_blocking(response: str, gold) -> bool:
    """A check stuck where no signal reaches it (SIGALRM blocked), on responses that say 'hang'."""
    if response == "hang":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(60)
    return response == str(gold)


def test_hung_worker_is_replaced_and_scores_zero():
    with VerifierPool(workers=2, timeout=0.5, grace=0.5, check=check_blocking) as pool:
        start = time.monotonic()
        scores = pool.map(["a", "hang", "b", "c", "x"] * 2, ["a", "b", "b", "c", "y"] * 2)
        elapsed = time.monotonic() - start
        assert scores == [1.0, 0.0, 1.0, 1.0, 0.0] * 2
        assert pool.restarts >= 1
        assert elapsed < 2 * (0.5 + 0.5) + 10.0
        assert pool.map(["a"], ["a"]) == [1.0]


def check_dying(response: str, gold) -> bool:
    """A check whose worker dies (SIGKILL to itself) on 'die', and on 'flaky' only the first time per file."""
    import os
    import pathlib

    if response == "die" or (response.startswith("flaky:") and not pathlib.Path(response[6:]).exists()):
        if response.startswith("flaky:"):
            pathlib.Path(response[6:]).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return response == str(gold)


def test_a_dead_worker_is_retried_once_then_unscorable_not_wrong(tmp_path):
    import math

    flag = tmp_path / "died-once"
    with VerifierPool(workers=1, timeout=2.0, check=check_dying) as pool:
        scores = pool.map(["a", "die", f"flaky:{flag}", "b"], ["a", "x", f"flaky:{flag}", "c"])
        assert scores[0] == 1.0 and math.isnan(scores[1]) and scores[2] == 1.0 and scores[3] == 0.0
        assert pool.unscorable == 1  # 'die' killed its worker twice; 'flaky' was right on its retry


def test_math_reward_in_workers_and_verify_many():
    reward = MathReward(workers=2, timeout=2.0)
    try:
        assert reward.__name__ == "math_reward"
        completions = ["\\boxed{8}", [{"role": "assistant", "content": "\\boxed{\\dfrac{1}{2}}"}], "none"]
        assert reward(completions, ["8", "0.5", "8"], prompts=["a", "b", "c"]) == [1.0, 1.0, 0.0]
    finally:
        reward.close()
    assert verify_many(["\\boxed{025}", "\\boxed{26}"], ["25", "25"], workers=1, timeout=2.0) == [1.0, 0.0]


def test_registry():
    from tagrpo.rewards import boxed_or_last_number

    assert REWARDS == {"math": math_reward, "choice": choice_reward, "boxed_or_last_number": boxed_or_last_number}
    assert get_reward("math") is math_reward and get_reward("choice") is choice_reward
    with pytest.raises(ValueError, match="'math', 'choice'"):
        get_reward("code")


def test_integers_compare_without_sympy(monkeypatch):
    import tagrpo.rewards.math as m

    def boom(*args, **kwargs):
        raise AssertionError("math-verify was called for two integers")

    monkeypatch.setattr(m, "parse", boom)
    assert m.answers_match("12", "012") and m.answers_match("+5", "5") and m.answers_match("-0", "0")
    assert not m.answers_match("12", "13") and not m.is_correct("so \\boxed{10}", "9")


@pytest.mark.parametrize("answer", ["(" * 3000, "(" * 50 + "1" + ")" * 50, "x" * 401])
def test_pathological_answers_return_at_once_in_any_thread(answer):
    import threading
    import time

    from tagrpo.rewards.math import too_complex

    response = "\\boxed{" + answer + "}"
    assert too_complex(answer) and not too_complex("\\frac{1}{2}") and not too_complex("((1+2)*3)")
    start = time.perf_counter()
    assert is_correct(response, "5") is False
    results = []
    worker = threading.Thread(target=lambda: results.append(is_correct(response, "5")))
    worker.start()
    worker.join(timeout=5)
    assert results == [False] and time.perf_counter() - start < 1.0  # math-verify alone: 5 s, or forever off-main


def test_a_batch_with_pathological_answers_scores_in_a_few_seconds():
    import time

    responses = [f"so \\boxed{{{i}}}" for i in range(58)] + ["\\boxed{" + "(" * 40 + "1" + ")" * 40 + "}"] * 6
    start = time.perf_counter()
    scores = math_reward(responses, answer=[str(i) for i in range(64)])
    assert scores[:58] == [1.0] * 58 and scores[58:] == [0.0] * 6 and time.perf_counter() - start < 3.0


def test_boxed_or_last_number_reads_a_box_first_then_the_last_number():
    from tagrpo.rewards import boxed_or_last_number

    responses = ["3+4=7.", "so \\boxed{8}, not 7", "no number here", "7 apples, so 7", "12 or 7? 12"]
    # a box decides when there is one (8 is wrong even though 7 follows); else the last number does
    assert boxed_or_last_number(responses, ["7"] * 5) == [1.0, 0.0, 0.0, 1.0, 0.0]
    assert math_reward(responses, ["7"] * 5) == [0.0] * 5  # the math reward itself is unchanged


def test_threads_asking_at_once_each_get_their_own_scores_in_order():
    """Calls that wait while a round runs are scored together in the next; each call gets back its own part."""
    calls = [([f"\\boxed{{{i}}}", f"\\boxed{{{i + 1}}}", "none"], [str(i), str(i), str(i)]) for i in range(24)]
    with VerifierPool(workers=1, timeout=2.0) as pool, ThreadPoolExecutor(8) as threads:
        scores = list(threads.map(lambda call: pool.map(*call), calls))
    assert scores == [[1.0, 0.0, 0.0]] * 24


def test_math_verify_is_warmed_up_untimed_once_before_the_first_timed_parse(monkeypatch):
    """Its first LaTeX parse builds a grammar (1.3 s on a loaded 2-core machine): under a 1 s timeout a process's
    first correct answer scored 0 (seen in CI's own test of an OlympiadBench answer). The warm-up pays it untimed."""
    from tagrpo.rewards import math as reward_math

    timeouts = []

    def parse(text, parsing_timeout):
        timeouts.append(parsing_timeout)
        return [text]

    monkeypatch.setattr(reward_math, "parse", parse)
    monkeypatch.setattr(reward_math, "verify", lambda gold, pred, timeout_seconds: True)
    reward_math.warm_up.cache_clear()
    try:
        assert reward_math.answers_match("\\frac{1}{2 n+2}", "\\frac{1}{2n+2}", timeout=1)
        assert timeouts == [None, None, 1, 1]  # the warm-up's two parses, then gold and prediction, timed
        assert reward_math.answers_match("\\frac{1}{3}", "\\frac{2}{6}", timeout=1)
        assert timeouts[4:] == [1, 1]  # once per process
    finally:
        reward_math.warm_up.cache_clear()
