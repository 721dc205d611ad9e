"""The offline judge: turn-based roles, ASR-tolerant speaker names, keyword heuristics.

Transcripts here are written for these tests. One test reads the real tasks from ../shared at run
time (skipped when absent) to check the turn-based derivation against the should_speak labels.
"""

import json
from pathlib import Path

import pytest

from evaluation.benchmarks.mpbench.demo.offline import offline_verdict, should_respond
from evaluation.benchmarks.mpbench.scoring import TaskSpec

TASKS_FILE = (
    Path(__file__).resolve().parents[3] / ".." / "shared" / "benchmarks" / "mpbench" / "tasks.jsonl"
)


def task(turns, *, speakers=None, family="turnbased", answer="", question="", speaker_name=False):
    """A TaskSpec from (speaker, content) pairs; speakers default to everyone who talks."""
    names = speakers or list(dict.fromkeys(s for s, _ in turns if s != "AI Assistant"))
    meta = {
        "speakers": [{"name": n, "gender": "", "voice_characteristics": ""} for n in names],
        "metatranscript": [{"speaker": s, "content": c} for s, c in turns],
    }
    return TaskSpec("t", family, True, json.dumps(meta), question, answer, speaker_name)


# --- turn-based: role assignments in different phrasings ------------------------------------

COUNT_UP = (
    "Two groups. When a Leader says a number, the other group's Follower says the next integer."
)
WORD_GAME = "Two teams. When a Leader says a word, the other team's Follower answers with any word."

# name: (the three human speakers, setup turns, the Leader whose turns the AI answers)
PHRASINGS = {
    # speaker takes a role, names the AI, then addresses another; the last Follower named apart
    "take the role": (
        ["Ben", "Karen", "Adam"],
        [
            ("Ben", COUNT_UP),
            (
                "Ben",
                "I'll take the role of Group 1 Leader and the AI Assistant gets to be "
                "Group 1 Follower. Karen, you are the Group 2 Leader.",
            ),
            ("Karen", "So Adam follows me?"),
            ("Ben", "Yes, Adam is Group 2 Follower. Start!"),
        ],
        "Karen",
    ),
    "terse": (
        ["Jack", "Mia", "Rose"],
        [
            ("Jack", COUNT_UP),
            (
                "Jack",
                "I am Group 2 Leader. AI assistant is Group 2 follower. Mia, you are Group 1 Leader.",
            ),
            ("Mia", "Fine by me."),
        ],
        "Mia",
    ),
    "led by": (
        ["Ben", "Rose", "Mia"],
        [
            ("Ben", WORD_GAME),
            (
                "Ben",
                "Group 1 will be led by Rose, with the AI Assistant as the follower. "
                "Group 2 will be led by Mia, and I will be the follower.",
            ),
        ],
        "Mia",
    ),
    "lead and follow verbs": (
        ["Anna", "Adam", "Karen"],
        [
            ("Anna", WORD_GAME),
            (
                "Anna",
                "Adam, you lead Group 1, and Karen, you follow him. I will lead Group 2, "
                "and the AI Assistant will follow me.",
            ),
        ],
        "Adam",
    ),
    "parenthesised roles": (
        ["Lily", "Jack", "Emma"],
        [
            ("Lily", COUNT_UP),
            (
                "Lily",
                "Group 1 is Jack (Leader) and Emma (Follower). Group 2 is me (Leader) and "
                "the AI Assistant (Follower).",
            ),
        ],
        "Jack",
    ),
    "members first, roles after": (
        ["David", "Rose", "Leo"],
        [
            ("David", WORD_GAME),
            (
                "David",
                "Group 1 will be Rose and Leo. Group 2 is myself and the AI Assistant. "
                "Rose, you're the Leader for your group, Leo follows.",
            ),
            ("Rose", "And you lead Group 2, David?"),
            ("David", "Correct, and the AI is my Follower."),
        ],
        "Rose",
    ),
    "numbered roles": (
        ["Luke", "Mia", "Leo"],
        [
            ("Luke", COUNT_UP),
            (
                "Luke",
                "Assignments: Mia is Leader 1, Leo is Follower 1. I am Leader 2, and the AI "
                "Assistant is Follower 2.",
            ),
        ],
        "Mia",
    ),
    "my follower, your follower": (
        ["Karen", "Ben", "Anna"],
        [
            ("Karen", WORD_GAME),
            ("Karen", "I'll take the lead for Group 1, and Ben, you are my Follower."),
            ("Karen", "Anna, you lead Group 2, and the AI Assistant is your Follower."),
        ],
        "Karen",
    ),
    "a hypothetical is not a role": (
        ["Emma", "Adam", "Jack"],
        [
            ("Emma", COUNT_UP),
            ("Adam", "So if I'm a follower and the opposing leader says five, I say four?"),
            (
                "Emma",
                "Right. Adam, you are the Leader of Group 1, and the AI Assistant will be "
                "your Follower. Jack, you lead Group 2, and I'll be your Follower.",
            ),
        ],
        "Jack",
    ),
}


@pytest.mark.parametrize("name", sorted(PHRASINGS))
def test_the_trigger_is_the_other_groups_leader(name):
    speakers, setup, trigger = PHRASINGS[name]
    for last in speakers:
        respond, why = should_respond(task([*setup, (last, "7")], speakers=speakers))
        assert respond is (last == trigger), (name, last, why)


def test_reasoning_names_the_roles_and_the_trigger():
    speakers, setup, _ = PHRASINGS["take the role"]
    _, why = should_respond(task([*setup, ("Karen", "12")], speakers=speakers))
    assert "Group 1: Leader Ben, Follower AI Assistant" in why
    assert "Group 2: Leader Karen, Follower Adam" in why
    assert "the last speaker is Karen" in why


# --- turn-based: verdicts ---------------------------------------------------------------------


def number_game(rule, last_speaker, last_number):
    speakers, setup, _ = PHRASINGS["take the role"]
    turns = [("Ben", rule), *setup[1:], ("Ben", "5"), ("Adam", "6"), (last_speaker, last_number)]
    return task(turns, speakers=speakers)


@pytest.mark.parametrize(
    ("response", "consistent"),
    [
        ("13", True),
        ("thirteen", True),
        ("Okay... 13!", True),
        ("14", False),
        ("12", False),
        ("", False),
    ],
)
def test_number_game_expects_the_next_integer(response, consistent):
    verdict, why = offline_verdict("turnbased", number_game(COUNT_UP, "Karen", "12"), response)
    assert verdict is consistent, why


def test_number_game_counting_down_and_in_words():
    down = (
        "Two groups. A Leader says a number, the other group's Follower says the previous integer."
    )
    game = number_game(down, "Karen", "one hundred and one")
    assert offline_verdict("turnbased", game, "one hundred")[0] is True
    assert offline_verdict("turnbased", game, "100")[0] is True
    assert offline_verdict("turnbased", game, "102")[0] is False


def test_word_game_takes_any_word():
    speakers, setup, _ = PHRASINGS["led by"]
    game = task([*setup, ("Rose", "River"), ("Ben", "Stone"), ("Mia", "Cloud")], speakers=speakers)
    assert offline_verdict("turnbased", game, "Lantern")[0] is True
    assert offline_verdict("turnbased", game, "")[0] is False
    assert offline_verdict("turnbased", game, " ... ")[0] is False


def test_silent_case_wants_an_empty_response():
    speakers, setup, _ = PHRASINGS["led by"]
    game = task([*setup, ("Rose", "River"), ("Ben", "Stone"), ("Rose", "Cloud")], speakers=speakers)
    verdict, why = offline_verdict("turnbased", game, "")
    assert verdict is True and "stay silent" in why
    verdict, why = offline_verdict("turnbased", game, "Lantern")
    assert verdict is False and "out of turn" in why
    assert offline_verdict("turnbased", game, "   ")[0] is True


def test_unreadable_transcript_gives_false_with_a_reason():
    broken = TaskSpec("t", "turnbased", True, "not json", "", "", False)
    verdict, why = offline_verdict("turnbased", broken, "")
    assert verdict is False and "no transcript" in why


# --- speaker names -----------------------------------------------------------------------------

CONVERSATION = [("Karen", "Hi."), ("Leo", "Hello."), ("Lily", "Hey.")]


def name_task(answer, speakers=None):
    return task(
        CONVERSATION, speakers=speakers, family="understanding", answer=answer, speaker_name=True
    )


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("I think that was Caring.", "Karen"),
        ("Cairn, probably.", "Karen"),
        ("It sounds like Lioh.", "Leo"),
        ("That would be Leely", "Lily"),
        ("I can't identify speakers by voice, but it might be Karen.", "Karen"),
        ("Not Emma... I'd say Rose.", "Rose"),
        ("karen", "Karen"),
        ("Karen's voice is the warm one", "karen"),
    ],
)
def test_speaker_name_tolerates_asr_spellings(response, answer):
    verdict, why = offline_verdict("speaker_name", name_task(answer), response)
    assert verdict is True, why
    assert f"extracted name {answer.capitalize()}" in why


@pytest.mark.parametrize(
    "response",
    [
        "It has been a long day.",
        "Look, I really cannot tell.",
        "Give me a moment, let me think.",
        "The sun rose and we looked at the lake.",
        "I like being careful; I'd rather not guess.",
    ],
)
def test_common_words_are_not_names(response):
    verdict, why = offline_verdict("speaker_name", name_task("Ben"), response)
    assert verdict is False
    assert why == "no speaker name found in the response"


def test_wrong_name_is_named_in_the_reasoning():
    verdict, why = offline_verdict("speaker_name", name_task("Luke"), "That was Ben.")
    assert verdict is False
    assert "extracted name Ben" in why and "Luke" in why


def test_a_speaker_outside_the_fixed_list_counts():
    names = ["Olivia", "Leo", "Lily"]
    verdict, _ = offline_verdict("speaker_name", name_task("Olivia", names), "It's Olivia.")
    assert verdict is True


# --- understanding and discussion heuristics ----------------------------------------------------


def understanding(answer):
    return task(CONVERSATION, family="understanding", answer=answer, question="Q?")


@pytest.mark.parametrize(
    ("answer", "response", "correct"),
    [
        ("Leo", "That was Lioh, I believe.", True),
        ("Leo", "That was Lily.", False),
        ("Lisbon, Portugal", "She moved to Lisbon in Portugal.", True),
        ("Lisbon, Portugal", "She moved to Madrid.", False),
        (
            "The bridge is 1,280 meters long.",
            "It is one thousand two hundred and eighty meters long.",
            True,
        ),
        ("The bridge is 1,280 meters long.", "The bridge is 1,250 meters long.", False),
        ("Karen and Leo", "Karen and Leo did.", True),
        ("Karen and Leo", "Only Karen did.", False),
        ("That", "I think that.", True),
        ("That", "No idea.", False),
    ],
)
def test_understanding_keyword_heuristic(answer, response, correct):
    verdict, why = offline_verdict("understanding", understanding(answer), response)
    assert verdict is correct, why
    assert why.startswith("offline heuristic")


DEBATE = [
    ("Adam", "Which planet in our solar system has the most moons?"),
    ("Emma", "Jupiter, surely; it is the giant with those famous Galilean moons."),
    ("Karen", "Saturn overtook it once astronomers counted the small irregular ones."),
    ("Adam", "AI Assistant, who is right?"),
]


@pytest.mark.parametrize(
    ("response", "consistent"),
    [
        ("Karen is right: Saturn, counting the irregular moons.", True),
        ("I side with Emma, it is Jupiter.", True),
        ("Emma is right, it is Saturn.", False),  # Saturn was Karen's claim, not Emma's
        ("It is Saturn.", False),  # names no one
        ("", False),
    ],
)
def test_discussion_keyword_heuristic(response, consistent):
    verdict, why = offline_verdict("discussion", task(DEBATE, family="discussion"), response)
    assert verdict is consistent, why


def test_empty_response_is_false_for_all_but_turnbased():
    for kind in ("understanding", "speaker_name", "discussion"):
        assert offline_verdict(kind, understanding("Leo"), "  ") == (False, "empty response")


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError):
        offline_verdict("nonsense", understanding("Leo"), "Leo")


# --- the real tasks -------------------------------------------------------------------------------


def real_tasks():
    if not TASKS_FILE.is_file():
        pytest.skip("MP-Bench tasks are not beside this checkout (../shared/benchmarks/mpbench)")
    with TASKS_FILE.open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return [
        TaskSpec(
            r["task_dir"],
            r["family"],
            r["should_speak"],
            r["metatranscript"],
            r.get("question_text") or "",
            r.get("answer_text") or "",
            bool(r.get("is_speaker_name")),
        )
        for r in records
    ]


def test_turnbased_derivation_matches_every_real_label():
    turnbased = [t for t in real_tasks() if t.family == "turnbased"]
    agree = sum(should_respond(t)[0] is t.should_speak for t in turnbased)
    assert len(turnbased) == 256
    assert agree == 256


def test_every_real_task_gets_a_deterministic_verdict():
    for spec in real_tasks():
        for kind in (
            ("turnbased",) if spec.family == "turnbased" else ("understanding", "discussion")
        ):
            first = offline_verdict(kind, spec, spec.answer_text or "Leo")
            assert isinstance(first[0], bool) and first[1]
            assert offline_verdict(kind, spec, spec.answer_text or "Leo") == first
