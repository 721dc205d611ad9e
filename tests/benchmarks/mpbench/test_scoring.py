"""Table 3 aggregation, prompts and verdict parsing, expected values worked by hand."""

import json

from evaluation.benchmarks.mpbench.scoring import (
    TaskOutcome,
    TaskSpec,
    aggregate,
    build_prompt,
    kinds_for,
    mean_latency,
    parse_verdict,
    rate,
    response_for,
    skips_judge,
)


def spec(family, *, should_speak=True, speaker=False, n=0):
    return TaskSpec(
        f"scenario_{family}_{n}", family, should_speak, '{"speakers": []}', "Q?", "A", speaker
    )


def test_rate_uses_python_round_not_half_up():
    # 72/256 = 28.125 exactly; Python's round() gives 28.12 (half to even), half-up would say 28.13.
    assert rate(72, 256) == {"count": 72, "total": 256, "pct": 28.12}
    # 3/8 = 37.5 exactly at two decimals already.
    assert rate(3, 8)["pct"] == 37.5
    # 1/3 = 33.333... -> 33.33
    assert rate(1, 3)["pct"] == 33.33
    assert rate(0, 0) == {"count": 0, "total": 0, "pct": None}


def test_latency_mean_rounds_half_to_even():
    # mean(0.2, 0.3) = 0.25; round(0.25, 1) = 0.2 in Python (0.25 is stored as 0.25 exactly).
    assert mean_latency([0.2, 0.3]) == 0.2
    assert mean_latency([1.0, 2.0, None]) == 1.5
    assert mean_latency([None]) is None


def test_kinds_and_response_texts():
    assert kinds_for(spec("understanding")) == ["understanding"]
    assert kinds_for(spec("understanding", speaker=True)) == ["understanding", "speaker_name"]
    assert kinds_for(spec("discussion")) == ["discussion"]
    assert kinds_for(spec("turnbased")) == ["turnbased"]
    assert response_for("discussion", full_text="all", post_text="post") == "post"
    for kind in ("understanding", "speaker_name", "turnbased"):
        assert response_for(kind, full_text="all", post_text="post") == "all"
    assert skips_judge("understanding", "  ") and skips_judge("discussion", "")
    assert not skips_judge("turnbased", "") and not skips_judge("understanding", "x")


def test_build_prompt_fills_each_kinds_fields():
    task = TaskSpec("t", "understanding", True, '{"m": 1}', "Who?", "Ben", True)
    template = "{metainformation}|{question_text}|{answer_text}|{llm_predicted_answer}|{{literal}}"
    assert (
        build_prompt(template, "understanding", task, "Ben did")
        == '{"m": 1}|Who?|Ben|Ben did|{literal}'
    )
    assert (
        build_prompt("{question}/{gt_name}/{response}", "speaker_name", task, "r") == "Who?/Ben/r"
    )
    assert (
        build_prompt("{metatranscript}/{llm_predicted_answer}", "discussion", task, "r")
        == '{"m": 1}/r'
    )


def test_parse_verdict():
    assert parse_verdict("understanding", '{"correct": true}') == (True, "")
    assert parse_verdict("turnbased", '{"reasoning": "why", "consistent": false}') == (False, "why")
    assert parse_verdict("understanding", "not json") == (None, "")
    assert parse_verdict("understanding", '{"correct": "true"}') == (None, "")
    assert parse_verdict("discussion", '{"correct": true}') == (None, "")
    assert parse_verdict("understanding", "[true]") == (None, "")


def outcome(task, spoke, latency, **verdicts):
    return TaskOutcome(task=task, spoke=spoke, latency=latency, verdicts=verdicts)


def test_aggregate_worked_example():
    u = [spec("understanding", n=i, speaker=i < 2) for i in range(4)]
    d = [spec("discussion", n=i) for i in range(3)]
    t = [spec("turnbased", should_speak=i % 2 == 0, n=i) for i in range(4)]
    outcomes = [
        outcome(u[0], True, 1.0, understanding=True, speaker_name=True),
        outcome(u[1], True, 2.0, understanding=False, speaker_name=None),  # missing verdict: wrong
        outcome(u[2], False, None, understanding=False),
        outcome(u[3], True, None, understanding=None),  # spoke, no latency, missing verdict
        outcome(d[0], True, 0.5, discussion=True),
        outcome(d[1], False, None, discussion=False),  # should speak, silent
        outcome(d[2], True, 1.0),  # missing verdict
        outcome(t[0], True, 3.0, turnbased=True),  # should speak, spoke, ok
        outcome(t[1], False, None),  # no verdict, silent, should be silent: correct
        outcome(t[2], False, None),  # no verdict, silent, should speak: wrong
        outcome(t[3], True, 1.0, turnbased=None),  # no verdict, spoke, should be silent: wrong
    ]
    assert (
        aggregate(outcomes)
        == {
            "understanding": {
                "n": 4,
                "overall_acc": {"count": 1, "total": 4, "pct": 25.0},
                "spk_name_acc": {"count": 1, "total": 2, "pct": 50.0},
                "latency_s": 1.5,
            },
            "discussion": {
                "n": 3,
                "tt_acc": {"count": 2, "total": 3, "pct": 66.67},
                "app_acc": {"count": 1, "total": 3, "pct": 33.33},
                "latency_s": 0.8,  # mean(0.5, 1.0) = 0.75 -> round(0.75, 1) = 0.8 (0.75 is exact; half-even -> 0.8)
            },
            "turnbased": {
                "n": 4,
                # t0 ok, t1 ok, t2 wrong (silent, should speak), t3 wrong (spoke, should be silent)
                "tt_acc": {"count": 2, "total": 4, "pct": 50.0},
                "app_acc": {"count": 2, "total": 4, "pct": 50.0},
                "latency_s": 2.0,
            },
        }
    )


def test_aggregate_72_of_256_turn_based():
    tasks = [spec("turnbased", should_speak=True, n=i) for i in range(256)]
    outcomes = [outcome(task, True, 1.0, turnbased=i < 72) for i, task in enumerate(tasks)]
    table = aggregate(outcomes)
    assert table["turnbased"]["app_acc"] == {"count": 72, "total": 256, "pct": 28.12}
    assert table["understanding"]["overall_acc"] == {"count": 0, "total": 0, "pct": None}
    assert table["understanding"]["latency_s"] is None
    assert json.dumps(list(table)) == '["understanding", "discussion", "turnbased"]'
