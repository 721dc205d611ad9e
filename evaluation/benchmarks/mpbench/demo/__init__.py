"""Demo data for ``make demo``: an invented MP-Bench-format benchmark and invented systems' bundles.

Everything here is original: eighteen short four-party conversations (three humans and the
"AI Assistant"), judge prompt templates, and result folders for a few fictional systems whose
behaviour follows a *profile*. The audio is synthesised speech-like sound (a glottal pulse train at
a per-speaker pitch shaped by vowel formants, with consonant noise), so the conversation plays as
three distinct voices taking turns and the agent answering on its own track. Word timestamps in the
Whisper-style JSON match where the sound is in the WAV files.

Pure Python (standard library + numpy); no Django import. Deterministic for a given seed.
"""

from __future__ import annotations

import functools
import json
import random
import re
import wave
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

__all__ = [
    "AGENT",
    "ARCHITECTURES",
    "DEMO_SYSTEMS",
    "DEMO_TASKS",
    "KIND_PLACEHOLDERS",
    "PROFILES",
    "PROMPTS",
    "SAMPLE_RATE",
    "SCHEMAS",
    "SYSTEM_TYPES",
    "VOICES",
    "demo_manifest",
    "system_manifest",
    "write_demo_benchmark",
    "write_demo_bundle",
    "write_demo_bundle_zip",
    "write_demo_manifest",
]

SAMPLE_RATE = 16_000
TAIL_S = 3.0  # silence after the last word of a file
STEP_S = 0.02  # timestamp resolution (Whisper's)
AGENT = "AI Assistant"

PROFILES = ("strong", "streaming-chatty", "half-duplex", "silent")
SYSTEM_TYPES = ("realtime", "non-realtime", "text-llm")
ARCHITECTURES = ("end-to-end", "cascaded")

# The str.format placeholders each judge kind's template must use (see DESIGN.md).
KIND_PLACEHOLDERS = {
    "understanding": ("metainformation", "question_text", "answer_text", "llm_predicted_answer"),
    "speaker_name": ("question", "gt_name", "response"),
    "discussion": ("metatranscript", "llm_predicted_answer"),
    "turnbased": ("metatranscript", "llm_predicted_answer"),
}


# --------------------------------------------------------------------------------------------
# Voices


@dataclass(frozen=True)
class Voice:
    name: str
    gender: str
    f0: float  # Hz, mean pitch
    rate: float  # > 1 is slower
    formant_scale: float  # vocal tract size: > 1 is brighter
    loudness: float  # peak amplitude, fraction of full scale
    description: str


VOICES: dict[str, Voice] = {
    v.name: v
    for v in (
        Voice("Adam", "male", 95, 1.12, 0.96, 0.42, "very deep male voice, slow and calm"),
        Voice("Leo", "male", 108, 1.0, 0.98, 0.40, "low male voice, warm and steady"),
        Voice("Jack", "male", 118, 0.92, 1.0, 0.42, "medium-low male voice, quick and energetic"),
        Voice("Ben", "male", 128, 1.0, 1.02, 0.40, "medium male voice, even and clear"),
        Voice("Luke", "male", 140, 0.95, 1.03, 0.40, "higher male voice, bright"),
        Voice("David", "male", 152, 0.9, 1.05, 0.40, "high male voice, fast and lively"),
        Voice("Emma", "female", 188, 1.05, 1.12, 0.38, "low female voice, smooth and measured"),
        Voice("Anna", "female", 200, 1.0, 1.15, 0.38, "female voice, clear and friendly"),
        Voice("Mia", "female", 212, 0.92, 1.16, 0.38, "female voice, quick and cheerful"),
        Voice("Rose", "female", 225, 1.0, 1.18, 0.37, "bright female voice, crisp"),
        Voice("Lily", "female", 240, 0.95, 1.2, 0.36, "high female voice, light and airy"),
        Voice("Karen", "female", 255, 1.05, 1.22, 0.36, "very high female voice, soft"),
        Voice(AGENT, "neutral", 172, 0.95, 1.1, 0.38, "synthetic assistant voice"),
    )
}


# --------------------------------------------------------------------------------------------
# The demo tasks (all original text)


@dataclass(frozen=True)
class DemoTask:
    task_dir: str
    family: str
    speakers: tuple[str, str, str]
    turns: tuple[tuple[str, str], ...]
    should_speak: bool
    question_text: str = ""
    answer_text: str = ""
    is_speaker_name: bool = False
    good_reply: str = ""  # what a capable agent says (empty: stay silent)
    wrong_reply: str = ""  # a plausible mistake
    midway_reply: str = ""  # what a half-duplex agent blurts out during the input

    def metatranscript(self) -> str:
        speakers = [
            {"name": n, "gender": VOICES[n].gender, "voice_characteristics": VOICES[n].description}
            for n in self.speakers
        ]
        turns = []
        for speaker, content in self.turns:
            turn: dict = {"speaker": speaker, "content": content}
            if self.family != "turnbased":
                turn["addressee"] = _addressees(speaker, content, self.speakers)
                turn["coreferences"] = {}
            turns.append(turn)
        return json.dumps({"speakers": speakers, "metatranscript": turns}, ensure_ascii=False)

    def record(self) -> dict:
        return {
            "task_dir": self.task_dir,
            "family": self.family,
            "should_speak": self.should_speak,
            "metatranscript": self.metatranscript(),
            "question_text": self.question_text,
            "answer_text": self.answer_text,
            "is_speaker_name": self.is_speaker_name,
        }


def _addressees(speaker: str, content: str, speakers: tuple[str, ...]) -> list[str]:
    if AGENT in content:
        return [AGENT]
    named = [n for n in speakers if n != speaker and re.search(rf"\b{n}\b", content)]
    if named:
        return named
    return [n for n in speakers if n != speaker] + [AGENT]


def _understanding(n, speakers, turns, question, answer, good, wrong, *, name=False, midway=""):
    return DemoTask(
        task_dir=f"scenario_demo-understanding-{n}",
        family="understanding",
        speakers=speakers,
        turns=turns,
        should_speak=True,
        question_text=question,
        answer_text=answer,
        is_speaker_name=name,
        good_reply=good,
        wrong_reply=wrong,
        midway_reply=midway or wrong,
    )


def _discussion(n, speakers, turns, good, wrong, midway=""):
    return DemoTask(
        task_dir=f"scenario_demo-discussion-{n}",
        family="discussion",
        speakers=speakers,
        turns=turns,
        should_speak=True,
        good_reply=good,
        wrong_reply=wrong,
        midway_reply=midway or good,
    )


def _turnbased(n, speakers, turns, should_speak, *, midway="Okay, I am ready."):
    last = int(turns[-1][1])
    return DemoTask(
        task_dir=f"scenario_demo-turnbased-{n}",
        family="turnbased",
        speakers=speakers,
        turns=turns,
        should_speak=should_speak,
        good_reply=str(last + 1) if should_speak else "",
        wrong_reply=str(last + 2) if should_speak else str(last + 1),
        midway_reply=midway,
    )


DEMO_TASKS: tuple[DemoTask, ...] = (
    # --- understanding: speaker names (two by voice, one by content) ---
    _understanding(
        1,
        ("Adam", "Luke", "Rose"),
        (
            ("Rose", "Has anyone tried the new bakery on Elm Street?"),
            ("Adam", "I went on Sunday. The rye bread was excellent."),
            ("Luke", "Their coffee is weak though, Rose. I would skip it."),
            ("Rose", "Good to know. I mostly want the cinnamon rolls anyway."),
            ("Luke", "AI Assistant, here is one for you. Which speaker has the deepest voice?"),
        ),
        "Which speaker has the deepest voice?",
        "Adam",
        "That would be Adam. He has the deepest voice of the three.",
        "I think Luke has the deepest voice.",
        name=True,
    ),
    _understanding(
        2,
        ("Leo", "David", "Lily"),
        (
            ("Leo", "We need a team name before the quiz night on Friday."),
            ("Lily", "How about the Night Owls? We always play late."),
            ("David", "Too common. I vote for Rolling Thunder."),
            ("Leo", "Either works for me, as long as the shirts are blue."),
            ("David", "Let's ask. AI Assistant, which speaker has the highest pitched voice?"),
        ),
        "Which speaker has the highest pitched voice?",
        "Lily",
        "Lily has the highest pitched voice.",
        "David does, I believe.",
        name=True,
    ),
    _understanding(
        3,
        ("Jack", "Emma", "Karen"),
        (
            ("Emma", "For the camping trip we still need a tent and a stove."),
            ("Jack", "I can bring my big tent. It sleeps four people."),
            ("Karen", "I have a camping stove, but no fuel for it."),
            ("Emma", "Then I will buy fuel on the way. Thanks, both of you."),
            ("Karen", "AI Assistant, remind us please. Who offered to bring the tent?"),
        ),
        "Who offered to bring the tent?",
        "Jack",
        "Jack offered to bring his tent, the one that sleeps four.",
        "Karen offered to bring the tent.",
        name=True,
    ),
    # --- understanding: content ---
    _understanding(
        4,
        ("Adam", "David", "Anna"),
        (
            ("Anna", "Book club is moving to Thursday this month."),
            ("David", "What time? I have practice until seven."),
            ("Anna", "We start at half past seven, at my place."),
            ("Adam", "I will bring snacks. Has everyone finished the book?"),
            ("David", "Almost. AI Assistant, what day and time is book club this month?"),
        ),
        "What day and time is book club this month?",
        "Thursday at half past seven, at Anna's place.",
        "Book club is on Thursday at half past seven, at Anna's place.",
        "It is on Friday at seven.",
    ),
    _understanding(
        5,
        ("Jack", "Mia", "Karen"),
        (
            ("Mia", "I counted the chairs for the party. We only have nine."),
            ("Jack", "We invited fourteen people, so we are short."),
            ("Karen", "My neighbor can lend us four more."),
            ("Mia", "That makes thirteen. Close enough, someone can stand."),
            ("Jack", "AI Assistant, how many chairs do we have right now?"),
        ),
        "How many chairs do we have right now?",
        "Nine",
        "Right now you have nine chairs.",
        "You have thirteen chairs.",
    ),
    _understanding(
        6,
        ("Luke", "Emma", "Karen"),
        (
            ("Luke", "Who left the kitchen window open last night?"),
            ("Emma", "Not me. I went to bed early."),
            ("Karen", "Maybe it was the cat. She pushes it open sometimes."),
            ("Luke", "The cat cannot lift a window, Karen."),
            ("Emma", "AI Assistant, what did Luke say in his first turn?"),
        ),
        "What did Luke say in his first turn?",
        "Who left the kitchen window open last night?",
        "Luke asked who left the kitchen window open last night.",
        "Luke said the cat opened the window.",
    ),
    # --- discussion ---
    _discussion(
        1,
        ("Adam", "David", "Rose"),
        (
            ("Adam", "Do goldfish really remember things for only three seconds?"),
            ("Rose", "Yes, that is why they are happy swimming in circles."),
            ("David", "I read that they can remember things for months."),
            ("Adam", "Months sounds like a stretch, David."),
            ("Rose", "AI Assistant, settle this for us. Who is right?"),
        ),
        "David is right. Experiments show goldfish can remember things for months, "
        "so the three second memory is a myth.",
        "Rose is right, goldfish forget everything after about three seconds.",
    ),
    _discussion(
        2,
        ("Leo", "Anna", "Karen"),
        (
            ("Leo", "Is a tomato a fruit or a vegetable?"),
            ("Anna", "A vegetable. Nobody puts it in a fruit salad."),
            ("Karen", "Botanically it is a fruit, because it grows from the flower and has seeds."),
            ("Leo", "So you are both right in a way?"),
            ("Anna", "AI Assistant, what do you think, fruit or vegetable?"),
        ),
        "Botanically Karen is right, a tomato is a fruit. In the kitchen it is used "
        "like a vegetable, so Anna has a point too.",
        "It is only a vegetable, Anna is right.",
    ),
    _discussion(
        3,
        ("Jack", "Emma", "Lily"),
        (
            ("Jack", "Can you see the Great Wall of China from space with the naked eye?"),
            ("Lily", "Of course. Astronauts mention it all the time."),
            ("Emma", "I heard that is a myth. It is long but very narrow."),
            ("Jack", "Narrow or not, it is thousands of miles long."),
            ("Emma", "AI Assistant, you decide. Which of us has it right?"),
        ),
        "Emma has it right. The wall is too narrow to pick out with the naked eye "
        "from orbit, however long it is.",
        "Lily is right, it is easy to see from space.",
    ),
    _discussion(
        4,
        ("Ben", "Mia", "Karen"),
        (
            ("Ben", "Should we take the train or drive to the coast on Saturday?"),
            ("Mia", "Driving is faster, and we can stop wherever we like."),
            ("Karen", "The train is cheaper, and nobody has to drive home tired."),
            ("Ben", "Parking at the beach costs a fortune too."),
            ("Karen", "AI Assistant, which option makes more sense for us?"),
        ),
        "With pricey beach parking and a tired drive home, the train makes more sense, "
        "as Karen and Ben said. Drive only if you want many stops.",
        "Definitely drive, the train always costs more.",
    ),
    _discussion(
        5,
        ("Adam", "Luke", "Anna"),
        (
            ("Anna", "Stop cracking your knuckles, Luke. You will get arthritis."),
            ("Luke", "That is an old myth. It is just gas bubbles popping."),
            ("Adam", "My grandmother cracked hers for eighty years and her hands are fine."),
            ("Anna", "One grandmother is not exactly a study, Adam."),
            ("Luke", "AI Assistant, does cracking your knuckles cause arthritis or not?"),
        ),
        "Studies have found no link between knuckle cracking and arthritis. Luke is right "
        "that the sound comes from gas bubbles in the joint.",
        "Yes, Anna is right, it causes arthritis over time.",
    ),
    _discussion(
        6,
        ("Leo", "David", "Lily"),
        (
            ("Leo", "Which is bigger, a blue whale or the biggest dinosaur?"),
            ("Lily", "Dinosaurs, obviously. Some were longer than a tennis court."),
            ("David", "Longer maybe, but a blue whale is heavier than any known dinosaur."),
            ("Leo", "So it depends on whether we mean length or weight."),
            ("Lily", "Over to you, AI Assistant. Whale or dinosaur?"),
        ),
        "By weight the blue whale wins, it is the heaviest animal known. A few long "
        "dinosaurs may match it in length, so Leo makes a fair point.",
        "The biggest dinosaur was heavier than a blue whale.",
    ),
    # --- turn-based game: Group 1 Leader -> Group 2 Follower adds one, and the reverse ---
    _turnbased(
        1,
        ("Ben", "Emma", "Karen"),
        (
            ("Ben", "Who wants to play plus one? We split into two little teams."),
            ("Emma", "Remind me how the crossing works?"),
            (
                "Ben",
                "Numbers always jump across. A Group 1 Leader number gets answered by "
                "the Group 2 Follower, plus one. A Group 2 Leader number goes to the Group 1 "
                "Follower, plus one.",
            ),
            (
                "Ben",
                "Roles: me, Group 1 Leader. Emma, Group 1 Follower. Karen, Group 2 Leader. "
                "AI Assistant, Group 2 Follower. Go!",
            ),
            ("Karen", "5"),
            ("Emma", "6"),
            ("Ben", "17"),
        ),
        True,
    ),
    _turnbased(
        2,
        ("Leo", "David", "Anna"),
        (
            ("David", "Plus one time, everybody. Two teams of two."),
            ("Anna", "And the answers cross over between the teams, right?"),
            (
                "David",
                "Right. Numbers from the Group 1 Leader belong to the Group 2 Follower, "
                "who adds one. Numbers from the Group 2 Leader belong to the Group 1 Follower.",
            ),
            (
                "Leo",
                "Then I will be Group 1 Leader, please. Our AI Assistant can be Group 1 Follower.",
            ),
            ("David", "That leaves me as Group 2 Leader, and Anna as Group 2 Follower. Start!"),
            ("Leo", "30"),
            ("Anna", "31"),
            ("Leo", "8"),
        ),
        False,
    ),
    _turnbased(
        3,
        ("Adam", "Luke", "Rose"),
        (
            ("Rose", "Anyone up for plus one again? Same crossing rules as yesterday."),
            (
                "Adam",
                "So numbers from Group 1 Leader go over to Group 2 Follower, "
                "and numbers from Group 2 Leader come back to Group 1 Follower.",
            ),
            (
                "Rose",
                "Exactly. Today Group 1 Leader is me, and the AI Assistant plays my Group 1 Follower. "
                "Luke plays Group 2 Leader, with Adam as Group 2 Follower.",
            ),
            ("Luke", "Fine by me. Let's begin."),
            ("Rose", "12"),
            ("Adam", "13"),
            ("Luke", "44"),
        ),
        True,
    ),
    _turnbased(
        4,
        ("Jack", "Emma", "Lily"),
        (
            ("Lily", "Quick round of plus one before lunch? Two teams, two roles each."),
            ("Jack", "The version where the other team's Follower adds one?"),
            (
                "Lily",
                "That one. I take Group 1 Leader, Jack takes Group 1 Follower. "
                "Emma gets Group 2 Leader. Group 2 Follower goes to our AI Assistant.",
            ),
            ("Emma", "Ready."),
            ("Emma", "21"),
            ("Jack", "22"),
            ("Emma", "60"),
        ),
        False,
    ),
    _turnbased(
        5,
        ("Leo", "David", "Karen"),
        (
            ("Karen", "Let's warm up with the plus one game."),
            ("David", "Leaders call numbers, and the opposite team's Follower adds one."),
            (
                "Karen",
                "Right. Group 1 Leader, Karen, that's me. Group 1 Follower, David. "
                "Group 2 Leader, Leo. Group 2 Follower, our AI Assistant.",
            ),
            ("Leo", "Sounds good. Here we go."),
            ("Leo", "9"),
            ("David", "10"),
            ("Karen", "71"),
        ),
        True,
    ),
    _turnbased(
        6,
        ("Ben", "Anna", "Karen"),
        (
            ("Anna", "Time for a round of plus one."),
            (
                "Ben",
                "I call Group 1 Leader, and I pick the AI Assistant as my Group 1 Follower. "
                "Anna runs Group 2 as Leader, with Karen as Group 2 Follower.",
            ),
            (
                "Karen",
                "So when Ben calls a number, I answer one higher, and when Anna calls one, "
                "the AI Assistant answers one higher.",
            ),
            ("Ben", "Correct. Let's start."),
            ("Ben", "33"),
            ("Karen", "34"),
            ("Ben", "50"),
        ),
        False,
    ),
)


# --------------------------------------------------------------------------------------------
# Judge prompt templates (original wording) and output schemas

PROMPTS: dict[str, str] = {
    "understanding": """You are grading a voice assistant that listened to a group conversation \
and was then asked a question about it.

Conversation record (JSON: the speakers with their voices, then the turns in order):
{metainformation}

Question asked of the assistant: {question_text}
Reference answer: {answer_text}

Everything the assistant said:
{llm_predicted_answer}

Decide whether the assistant gave the reference answer. Different wording, greetings or small \
talk around the answer are fine. A wrong answer, several conflicting answers, or no answer at \
all are not.

Reply with a JSON object only, for example {{"correct": true}}.
""",
    "speaker_name": """A voice assistant in a group call was asked to name one of the speakers.

Question: {question}
Name of the right speaker: {gt_name}
The assistant's reply: {response}

Step 1: find the single speaker name the reply commits to as its answer. Use null if it names \
nobody, or lists several names without choosing one.
Step 2: the reply is correct only if that name is {gt_name} (ignore case and punctuation).

Reply with a JSON object only, for example \
{{"extracted_name": "Sam", "correct": false, "reasoning": "one short sentence"}}.
""",
    "discussion": """Three people disagreed about something and asked a voice assistant to weigh \
in. Judge what the assistant said after they finished talking.

Conversation record (JSON):
{metatranscript}

The assistant's reply after the conversation ended:
{llm_predicted_answer}

The reply is consistent if it addresses the disagreement that was actually discussed, takes a \
position or explains who is right and why, and does not state anything clearly false. It is \
not consistent if it is off topic, only a greeting, empty of content, or factually wrong.

Reply with a JSON object only, for example {{"consistent": true}}.
""",
    "turnbased": """You are checking whether a voice assistant followed the rules of a number \
game played by two groups. Each group has a Leader and a Follower. When the Leader of Group 1 \
says a number, the Follower of Group 2 must say that number plus one; when the Leader of \
Group 2 says a number, the Follower of Group 1 must say that number plus one. Nobody else \
should speak.

Conversation record (JSON; the roles are assigned in the conversation):
{metatranscript}

Everything the assistant said (may be empty):
{llm_predicted_answer}

Work out the assistant's role and who spoke last. If the last number came from the Leader of \
the other group, the assistant must reply with exactly that number plus one. Otherwise the \
assistant must stay silent, and saying anything is a violation.

Reply with a JSON object only, for example {{"reasoning": "short explanation", \
"consistent": true}}.
""",
}


def _schema(properties: dict) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


SCHEMAS: dict[str, dict] = {
    "understanding": _schema({"correct": {"type": "boolean"}}),
    "speaker_name": _schema(
        {
            "extracted_name": {"type": ["string", "null"]},
            "correct": {"type": "boolean"},
            "reasoning": {"type": "string"},
        }
    ),
    "discussion": _schema({"consistent": {"type": "boolean"}}),
    "turnbased": _schema({"reasoning": {"type": "string"}, "consistent": {"type": "boolean"}}),
}


def write_demo_benchmark(directory: Path) -> None:
    """Write an MP-Bench-format checkout: benchmark/tasks.jsonl and prompts/<kind>.{txt,schema.json}."""
    directory = Path(directory)
    (directory / "benchmark").mkdir(parents=True, exist_ok=True)
    (directory / "prompts").mkdir(parents=True, exist_ok=True)
    with (directory / "benchmark" / "tasks.jsonl").open("w", encoding="utf-8", newline="\n") as f:
        for task in DEMO_TASKS:
            f.write(json.dumps(task.record(), ensure_ascii=False) + "\n")
    for kind, template in PROMPTS.items():
        (directory / "prompts" / f"{kind}.txt").write_text(template, encoding="utf-8", newline="\n")
        (directory / "prompts" / f"{kind}.schema.json").write_text(
            json.dumps(SCHEMAS[kind], indent=2) + "\n", encoding="utf-8", newline="\n"
        )


# --------------------------------------------------------------------------------------------
# Speech-like synthesis

# Vowel formants (F1, F2, F3) in Hz for an adult male vocal tract; scaled per voice.
_VOWELS = {
    "a": (730, 1090, 2440),  # father
    "ae": (660, 1720, 2410),  # cat
    "e": (530, 1840, 2480),  # bed
    "ei": (440, 2100, 2700),  # day
    "i": (290, 2250, 3000),  # see
    "ih": (390, 1990, 2550),  # sit
    "o": (570, 840, 2410),  # thought
    "u": (300, 870, 2240),  # boot
    "uh": (640, 1190, 2390),  # but
    "er": (490, 1350, 1690),  # bird
}
_VOWEL_GROUPS = {
    "a": "ae",
    "e": "e",
    "i": "ih",
    "o": "o",
    "u": "uh",
    "y": "i",
    "ai": "ei",
    "ay": "ei",
    "ei": "ei",
    "ey": "ei",
    "ee": "i",
    "ea": "i",
    "ie": "i",
    "oo": "u",
    "ou": "a",
    "ow": "a",
    "oa": "o",
    "oi": "o",
    "au": "a",
    "aw": "a",
}
_FRICATIVES = set("sfhzvcx")
_PLOSIVES = set("ptkbdgq")
_SONORANTS = set("mnlrwj")

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _spoken(token: str) -> str:
    """Letters a word is pronounced with (numbers spelled out); only used to shape the sound."""
    letters = re.sub(r"[^a-z0-9]", "", token.lower())
    if letters.isdigit():
        n = int(letters) % 1000
        parts = []
        if n >= 100:
            parts += [_ONES[n // 100], "hundred"]
            n %= 100
        if n >= 20:
            parts.append(_TENS[n // 10])
            n %= 10
            if n:
                parts.append(_ONES[n])
        elif n or not parts:
            parts.append(_ONES[n])
        return "".join(parts)
    return letters or "uh"


def _syllables(spoken: str) -> list[str]:
    """Vowel classes, one per syllable."""
    groups = re.findall(r"[aeiouy]+", spoken)
    if len(groups) > 1 and spoken.endswith("e") and not spoken.endswith(("le", "ee")):
        groups = groups[:-1]
    keys = []
    for g in groups or ["u"]:
        key = _VOWEL_GROUPS.get(g[:2]) or _VOWEL_GROUPS.get(g[:1], "uh")
        if key == "ae" and "r" in spoken:
            key = "a"
        keys.append(key)
    return keys


@functools.lru_cache(maxsize=4096)
def _period(period: int, formants: tuple[int, int, int]) -> np.ndarray:
    """One steady-state pitch period: a glottal pulse shaped by three formant resonances."""
    sr = SAMPLE_RATE
    # Rosenberg glottal flow pulse; its derivative (lip radiation) drives the vocal tract.
    n = np.arange(period)
    tp, tn = 0.4 * period, 0.16 * period
    flow = np.where(
        n < tp,
        0.5 * (1 - np.cos(np.pi * n / tp)),
        np.where(n < tp + tn, np.cos(0.5 * np.pi * (n - tp) / tn), 0.0),
    )
    source = flow - np.roll(flow, 1)
    # Formant impulse response (damped sinusoids), folded onto one period = periodic steady state.
    length = period * int(np.ceil(0.04 * sr / period))
    t = np.arange(length) / sr
    h = np.zeros(length)
    for freq, bandwidth, gain in zip(formants, (70, 100, 160), (1.0, 0.55, 0.3), strict=True):
        h += gain * np.exp(-np.pi * bandwidth * t) * np.sin(2 * np.pi * freq * t)
    h = h.reshape(-1, period).sum(axis=0)
    # A gentle extra roll-off above ~1 kHz keeps the buzz of the high harmonics down.
    freqs = np.fft.rfftfreq(period, 1 / sr)
    tilt = 1 / np.sqrt(1 + (freqs / 1000) ** 2)
    wave_ = np.fft.irfft(np.fft.rfft(source) * np.fft.rfft(h) * tilt, n=period)
    wave_ -= wave_.mean()
    return wave_ / (np.sqrt(np.mean(wave_**2)) + 1e-12)


def _envelope(length: int, attack: int, release: int) -> np.ndarray:
    env = np.ones(length)
    attack, release = min(attack, length // 2), min(release, length // 2)
    if attack:
        env[:attack] = 0.5 * (1 - np.cos(np.pi * np.arange(attack) / attack))
    if release:
        env[length - release :] = 0.5 * (1 + np.cos(np.pi * np.arange(1, release + 1) / release))
    return env


def _noise(length: int, seed: int, *, bright: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(length + 1)
    noise = np.diff(noise) if bright else (noise[1:] + noise[:-1]) / 2
    return noise / (np.sqrt(np.mean(noise**2)) + 1e-12)


def _tract(voice: Voice, key: str) -> tuple[int, int, int]:
    return tuple(int(round(f * voice.formant_scale)) for f in _VOWELS[key])


def _render_word(word: str, voice: Voice, pitch: float, samples: int) -> np.ndarray:
    """Speech-like sound for one word, exactly ``samples`` long, fading in and out at its edges."""
    spoken = _spoken(word)
    keys = _syllables(spoken)
    seed = zlib.crc32(f"{voice.name}|{word}".encode())
    sr = SAMPLE_RATE
    out = np.zeros(samples)

    # Onset consonant.
    first = spoken[0]
    onset = 0
    if first in _FRICATIVES or spoken.startswith(("th", "sh", "ch")):
        onset = min(int(0.055 * sr), samples // 4)
        out[:onset] = (
            0.28 * _noise(onset, seed, bright=True) * _envelope(onset, onset // 3, onset // 4)
        )
    elif first in _PLOSIVES:
        closure, burst = int(0.012 * sr), int(0.014 * sr)
        onset = min(closure + burst, samples // 4)
        b = onset - closure
        if b > 0:
            out[closure:onset] = 0.5 * _noise(b, seed, bright=True) * _envelope(b, 8, b // 2)
    elif first in _SONORANTS:
        onset = min(int(0.045 * sr), samples // 4)
        p = max(2, round(sr / (voice.f0 * pitch)))
        murmur = np.resize(_period(p, _tract(voice, "u")), onset)
        out[:onset] = 0.35 * murmur * _envelope(onset, onset // 3, 0)

    # Voiced syllables, slightly overlapping, pitch falling a little through the word.
    n = len(keys)
    overlap = int(0.012 * sr)
    bounds = np.linspace(onset, samples, n + 1).astype(int)
    for index, key in enumerate(keys):
        start = max(onset, bounds[index] - (overlap if index else 0))
        length = bounds[index + 1] - start
        if length <= 0:
            continue
        f0 = voice.f0 * pitch * (1.03 - 0.04 * index / max(1, n - 1))
        tone = np.resize(_period(max(2, round(sr / f0)), _tract(voice, key)), length)
        gain = 1.0 if index == 0 else 0.82
        attack = int(0.018 * sr) if index == 0 and onset == 0 else overlap
        out[start : start + length] += gain * tone * _envelope(length, attack, int(0.03 * sr))

    # Final sibilant.
    if spoken.endswith(("s", "z", "ce", "x")) and samples > int(0.15 * sr):
        tail = int(0.045 * sr)
        out[-tail:] *= np.linspace(1, 0.2, tail)
        out[-tail:] += (
            0.22 * _noise(tail, seed + 1, bright=True) * _envelope(tail, tail // 3, tail // 3)
        )

    out *= _envelope(samples, int(0.004 * sr), int(0.008 * sr))
    peak = np.max(np.abs(out)) or 1.0
    return out * (voice.loudness / peak)


def _to_pcm(signal: np.ndarray) -> bytes:
    return np.clip(np.round(signal * 32767), -32768, 32767).astype("<i2").tobytes()


@functools.lru_cache(maxsize=8192)
def _word_pcm(word: str, voice_name: str, pitch: float, samples: int) -> bytes:
    return _to_pcm(_render_word(word, VOICES[voice_name], pitch, samples))


# --------------------------------------------------------------------------------------------
# Timelines


@dataclass(frozen=True)
class _Word:
    text: str
    voice: str
    start: float  # seconds, on the STEP_S grid
    end: float
    pitch: float


def _steps(seconds: float) -> int:
    return max(1, int(round(seconds / STEP_S)))


def _lay_out(text: str, voice_name: str, start_step: int) -> tuple[list[_Word], int]:
    """Words of one utterance from ``start_step`` on; returns them and the step after the last."""
    voice = VOICES[voice_name]
    tokens = text.split()
    words = []
    step = start_step
    question = text.rstrip().endswith("?")
    for index, token in enumerate(tokens):
        syllables = len(_syllables(_spoken(token)))
        final = token[-1] in ".?!,"
        duration = voice.rate * (0.1 + 0.12 * syllables) + (0.06 if final else 0.0)
        steps = _steps(duration)
        progress = index / max(1, len(tokens) - 1)
        pitch = 1.07 - 0.14 * progress  # declination over the utterance
        if question and index == len(tokens) - 1:
            pitch = 1.14
        words.append(
            _Word(token, voice_name, step * STEP_S, (step + steps) * STEP_S, round(pitch, 3))
        )
        step += steps
        if token[-1] == ",":
            step += _steps(0.14 * voice.rate)
        elif token[-1] in ".?!":
            step += _steps(0.24 * voice.rate)
        else:
            step += _steps(0.04 * voice.rate)
    return words, step


@functools.lru_cache(maxsize=64)
def _conversation(task_dir: str) -> tuple[tuple[_Word, ...], tuple[tuple[int, int], ...]]:
    """The input words and, per turn, its (first step, step after its last word)."""
    task = _task(task_dir)
    step = _steps(0.4)
    words: list[_Word] = []
    turns = []
    for index, (speaker, content) in enumerate(task.turns):
        laid, end = _lay_out(content, speaker, step)
        turns.append((step, _steps(laid[-1].end)))
        words += laid
        gap = 0.45 + 0.25 * ((zlib.crc32(f"{task_dir}|{index}".encode()) % 100) / 100)
        step = _steps(laid[-1].end) + _steps(gap)
    return tuple(words), tuple(turns)


def _task(task_dir: str) -> DemoTask:
    for task in DEMO_TASKS:
        if task.task_dir == task_dir:
            return task
    raise KeyError(task_dir)


def _agent_words(task: DemoTask, profile: str, rng: random.Random) -> list[_Word]:
    """What the agent says under ``profile``, on the input's timeline."""
    words, turns = _conversation(task.task_dir)
    end_step = _steps(words[-1].end)

    def after_input(text: str, low: float, high: float) -> list[_Word]:
        if not text:
            return []
        latency = round(rng.uniform(low, high), 2)
        return _lay_out(text, AGENT, end_step + _steps(latency))[0]

    if profile == "strong":
        return after_input(task.good_reply, 0.5, 1.2)

    if profile == "streaming-chatty":
        greeting = rng.choice(("Hi everyone!", "Hey there, I am listening.", "Hello, hello!"))
        # It barges in shortly after the first turn ends, over the second speaker.
        said = _lay_out(greeting, AGENT, turns[0][1] + _steps(0.2))[0]
        if task.family == "turnbased" and not task.should_speak:
            reply = task.wrong_reply if rng.random() < 0.5 else ""  # out of turn half the time
        else:
            reply = task.good_reply if rng.random() < 0.5 else task.wrong_reply
        return said + after_input(reply, 0.3, 2.5)

    if profile == "half-duplex":
        if task.family == "turnbased":
            text = task.midway_reply
        else:
            text = task.midway_reply if rng.random() < 0.5 else task.good_reply
        tokens = text.split()
        while True:  # it must finish before the input does
            laid, _ = _lay_out(" ".join(tokens), AGENT, 0)
            duration = _steps(laid[-1].end)
            if duration + _steps(0.5) <= end_step or len(tokens) == 1:
                break
            tokens = tokens[:-1]
        middle = turns[len(turns) // 2][0]
        start = max(_steps(0.2), min(middle, end_step - duration - _steps(0.3)))
        return _lay_out(" ".join(tokens), AGENT, start)[0]

    if profile == "silent":
        if rng.random() < 0.2:
            return after_input(rng.choice(("Hmm.", "Sorry, could you repeat that?")), 1.0, 3.0)
        return []

    raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")


# --------------------------------------------------------------------------------------------
# Writing a bundle


def _transcript(words: list[_Word] | tuple[_Word, ...]) -> dict:
    return {
        "text": " ".join(w.text for w in words),
        "chunks": [
            {"text": w.text, "timestamp": [round(w.start, 2), round(w.end, 2)]} for w in words
        ],
    }


def _json_bytes(data: dict) -> bytes:
    return (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8")


def _write_wav(handle: BinaryIO, words, total_samples: int) -> None:
    """Stream a 16 kHz mono 16-bit WAV: silence, then each word's sound where its timestamps say.

    The frame count is known up front, so the header never needs patching and ``handle`` may be
    an unseekable stream (a zip member).
    """
    silence = bytes(2 * SAMPLE_RATE)
    with wave.open(handle, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.setnframes(total_samples)
        cursor = 0
        for w in sorted(words, key=lambda w: w.start):
            start = int(round(w.start * SAMPLE_RATE))
            length = int(round(w.end * SAMPLE_RATE)) - start
            if start < cursor:  # overlapping words are never generated; keep the file sane anyway
                continue
            while cursor < start:
                n = min(start - cursor, SAMPLE_RATE)
                out.writeframesraw(silence[: 2 * n])
                cursor += n
            out.writeframesraw(_word_pcm(w.text, w.voice, w.pitch, length))
            cursor += length
        while cursor < total_samples:
            n = min(total_samples - cursor, SAMPLE_RATE)
            out.writeframesraw(silence[: 2 * n])
            cursor += n


def _write_bundle(open_file, profile: str, seed: int, audio: bool) -> None:
    """Write every task folder through ``open_file(relative_path) -> binary file context``."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    for task in DEMO_TASKS:
        rng = random.Random(f"{profile}|{seed}|{task.task_dir}")
        words, _ = _conversation(task.task_dir)
        said = _agent_words(task, profile, rng)
        with open_file(f"{task.task_dir}/all_stitched.json") as handle:
            handle.write(_json_bytes(_transcript(words)))
        with open_file(f"{task.task_dir}/response.json") as handle:
            handle.write(_json_bytes(_transcript(said)))
        if audio:
            last = max(w.end for w in (*words, *said))
            total = int(round((last + TAIL_S) * SAMPLE_RATE))
            with open_file(f"{task.task_dir}/all_stitched.wav") as handle:
                _write_wav(handle, words, total)
            with open_file(f"{task.task_dir}/response.wav") as handle:
                _write_wav(handle, said, total)


def write_demo_bundle(directory: Path, *, profile: str, seed: int, audio: bool = True) -> None:
    """Write one system's result folders (one per demo task) under ``directory``.

    Each ``<task_dir>/`` holds all_stitched.json (the conversation's words), response.json (the
    agent's words on the same timeline) and, with ``audio``, all_stitched.wav and response.wav:
    16 kHz mono 16-bit PCM on one timeline, both ending three seconds after the last word of
    either. About 25-30 MB per system with audio (the WAVs are raw PCM); see
    write_demo_bundle_zip for a ~3 MB zip.
    """
    directory = Path(directory)

    def open_file(relative: str):
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("wb")

    _write_bundle(open_file, profile, seed, audio)


def write_demo_bundle_zip(
    path: Path, *, profile: str, seed: int, audio: bool = True, manifest: dict | None = None
) -> None:
    """The same bundle streamed straight into a deflated zip (the upload format), with an
    optional root manifest.json (see demo_manifest). Silence and the synthetic voices compress
    well: about 3 MB per system with audio."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        if manifest is not None:
            archive.writestr("manifest.json", json.dumps(manifest, indent=2) + "\n")
        _write_bundle(lambda relative: archive.open(relative, "w"), profile, seed, audio)


def demo_manifest(
    *,
    name: str,
    system_type: str,
    organization: str = "Floorboard demo (fictional)",
    architecture: str = "end-to-end",
    open_weights: bool = False,
    full_duplex: bool | None = None,
    description: str = "",
    url: str = "",
    extra: dict | None = None,
) -> dict:
    """The manifest.json content describing a (fictional) system."""
    if system_type not in SYSTEM_TYPES:
        raise ValueError(f"system_type must be one of {', '.join(SYSTEM_TYPES)}")
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {', '.join(ARCHITECTURES)}")
    return {
        "name": name,
        "organization": organization,
        "system_type": system_type,
        "architecture": architecture,
        "open_weights": bool(open_weights),
        **({} if full_duplex is None else {"full_duplex": bool(full_duplex)}),
        "description": description,
        "url": url,
        "benchmark": "mpbench",
        "demo": True,
        **(extra or {}),
    }


def write_demo_manifest(directory: Path, *, name: str, system_type: str, **fields) -> None:
    """Write ``directory/manifest.json``; keyword arguments as for demo_manifest."""
    manifest = demo_manifest(name=name, system_type=system_type, **fields)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "manifest.json").write_text(
        json.dumps(manifest, indent=2) + "\n", encoding="utf-8"
    )


def system_manifest(system: dict) -> dict:
    """demo_manifest for one DEMO_SYSTEMS entry (profile and seed recorded under "demo_profile")."""
    return demo_manifest(
        name=system["name"],
        system_type=system["system_type"],
        organization=system["organization"],
        architecture=system["architecture"],
        open_weights=system["open_weights"],
        full_duplex=system.get("full_duplex"),
        description=system["description"],
        extra={"demo_profile": {"profile": system["profile"], "seed": system["seed"]}},
    )


DEMO_SYSTEMS: list[dict] = [
    {
        "name": "Demo Orator Pro (demo)",
        "profile": "strong",
        "seed": 11,
        "system_type": "non-realtime",
        "architecture": "end-to-end",
        "open_weights": False,
        "full_duplex": False,
        "organization": "Floorboard demo (fictional)",
        "description": "Invented demo system: waits for the conversation to end, then answers "
        "correctly and keeps quiet when the game says so.",
    },
    {
        "name": "Demo Duplex Chat (demo)",
        "profile": "streaming-chatty",
        "seed": 23,
        "system_type": "realtime",
        "architecture": "end-to-end",
        "open_weights": True,
        "full_duplex": True,
        "organization": "Floorboard demo (fictional)",
        "description": "Invented demo system: full-duplex, greets while people are talking, "
        "answers after them, sometimes wrongly or out of turn.",
    },
    {
        "name": "Demo Cascade (demo)",
        "profile": "half-duplex",
        "seed": 37,
        "system_type": "realtime",
        "architecture": "cascaded",
        "open_weights": False,
        "full_duplex": False,
        "organization": "Floorboard demo (fictional)",
        "description": "Invented demo system: a half-duplex ASR, LLM and TTS cascade that "
        "replies at the first pause, while the conversation is still going.",
    },
    {
        "name": "Demo Quiet Listener (demo)",
        "profile": "silent",
        "seed": 41,
        "system_type": "realtime",
        "architecture": "end-to-end",
        "open_weights": True,
        "organization": "Floorboard demo (fictional)",
        "description": "Invented demo system: rarely says anything at all.",
    },
]
