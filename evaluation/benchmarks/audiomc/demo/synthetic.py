"""Synthetic Audio MultiChallenge data for tests, the demo and the size figures.

Every text is invented here from small word lists; nothing comes from the dataset. The shape
follows SPEC §1: four axes, 1-15 rubric items per task, a last user turn L in 3..8, assistant
turns 1..L-1 with exactly one task missing an intermediate one, some transcripts with leading
whitespace. With n_tasks=452 the per-axis task and item counts and the distribution of L are the
real ones (1,712 items); smaller sets scale them down.

Writers produce the layouts the importer reads: parquet as the dataset tools export it
(``data/test-00000-of-00001.parquet``, audio columns as {bytes, path} structs holding 16 kHz mono
PCM WAV) and JSONL with transcripts only. Submissions come in profiles (strong, weak, empty,
partial) and judge outputs in the judge's formats, some of them unparseable or failed.
"""

from __future__ import annotations

import io
import json
import random
import wave
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..dataset import AXES, Task
from .offline import key_words, offline_raw_output, offline_verdict

REAL_AXIS_TASKS = {
    "INFERENCE_MEMORY": 132,
    "INSTRUCTION_RETENTION": 120,
    "SELF_COHERENCE": 83,
    "VOICE_EDITING": 117,
}
REAL_AXIS_ITEMS = {
    "INFERENCE_MEMORY": 233,
    "INSTRUCTION_RETENTION": 343,
    "SELF_COHERENCE": 352,
    "VOICE_EDITING": 784,
}
REAL_LAST_TURNS = {3: 85, 4: 93, 5: 93, 6: 69, 7: 52, 8: 60}
FULL_TASKS = 452
FULL_ITEMS = 1_712
# Task counts by size: the real set (452 tasks, 1,712 rubric items) and a small one for tests
# (12 tasks, every axis, 44 items).
SIZES = {"full": FULL_TASKS, "small": 12}
MAX_TURNS_USER, MAX_TURNS_ASSISTANT, MAX_ITEMS = 8, 7, 15
SAMPLE_RATE = 16_000
PARQUET_NAME = "data/test-00000-of-00001.parquet"
JSONL_NAME = "test.jsonl"
PROFILES = ("strong", "weak", "empty", "partial")

NAMES = ("Priya", "Tomas", "Lena", "Omar", "Keiko", "Bruno", "Ada", "Felix", "Nia", "Marco")
FOODS = ("walnuts", "shrimp", "mushrooms", "lentils", "cilantro", "eggplant", "sesame", "oats")
CITIES = ("Lisbon", "Oslo", "Denver", "Quito", "Osaka", "Tunis", "Perth", "Leeds", "Graz")
EVENTS = ("picnic", "birthday dinner", "book club", "housewarming", "reunion", "game night")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
THINGS = ("umbrella", "lantern", "notebook", "backpack", "kettle", "bicycle", "telescope", "scarf")
COLOURS = ("teal", "amber", "crimson", "olive", "lilac", "navy", "saffron", "silver")
SIGNOFFS = ("cheers", "onward", "splendid", "noted", "marvelous", "indeed")
HOBBIES = ("pottery", "birdwatching", "chess", "rowing", "baking bread", "sketching", "hiking")
FILLER_USER = (
    "I also have a {thing} that I keep forgetting at home.",
    "My friend {name} says the weather in {city} is lovely in spring.",
    "We might take the {colour} car if it is free.",
    "I have been getting into {hobby} lately, it is relaxing.",
    "Remind me later that {name} likes the colour {colour}.",
)
FILLER_ASSISTANT = (
    "Got it, I will keep that in mind.",
    "That sounds lovely. Tell me more whenever you like.",
    "Noted. Anything else you would like to add?",
    "Sure, happy to help with that.",
    "Understood, I will remember it.",
)


# ---------------------------------------------------------------------------------------------
# Conversations
# ---------------------------------------------------------------------------------------------


def _allocate(total: int, weights: dict, minimum: int = 0) -> dict:
    """Largest-remainder split of total in proportion to weights (each at least minimum)."""
    keys = list(weights)
    scale = sum(weights.values())
    shares = {k: total * weights[k] / scale for k in keys}
    counts = {k: max(minimum, int(shares[k])) for k in keys}
    order = sorted(keys, key=lambda k: shares[k] - int(shares[k]), reverse=True)
    i = 0
    while sum(counts.values()) < total:
        counts[order[i % len(order)]] += 1
        i += 1
    while sum(counts.values()) > total:
        k = max(keys, key=lambda k: counts[k])
        counts[k] -= 1
    return counts


def _items_per_task(n_tasks: int, n_items: int, rng: random.Random) -> list[int]:
    sizes = [1] * n_tasks
    room = [i for i in range(n_tasks)]
    for _ in range(n_items - n_tasks):
        i = rng.choice(room)
        sizes[i] += 1
        if sizes[i] == MAX_ITEMS:
            room.remove(i)
    return sizes


def _task_id(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(16))


def _scenario(axis: str, rng: random.Random) -> dict:
    """Opening user turn, final user question, the reference assistant's first reply, and
    (positive items, negative items) for one invented conversation."""
    name, food, city, event = (rng.choice(x) for x in (NAMES, FOODS, CITIES, EVENTS))
    day, thing, colour = rng.choice(DAYS), rng.choice(THINGS), rng.choice(COLOURS)
    if axis == "INFERENCE_MEMORY":
        return {
            "opening": f"I am hosting a {event} on {day} and {name} is allergic to {food}.",
            "reply": f"A {event} on {day} sounds fun. I will keep {name}'s allergy in mind.",
            "final": f"What main dish should I make for the {event}?",
            "positive": [f"Suggests a dish suitable for the {event}", f"Refers to {name}"],
            "negative": [f"Does not suggest anything containing {food}"],
            "memory": [f"Remembers the {event} is on {day}", f"Recalls {name} by name"],
        }
    if axis == "INSTRUCTION_RETENTION":
        signoff = rng.choice(SIGNOFFS)
        return {
            "opening": f'From now on, end every answer with the word "{signoff}".',
            "reply": f"Of course, I will do that. {signoff.capitalize()}",
            "final": f"Give me two tips for taking up {rng.choice(HOBBIES)}.",
            "positive": [f'Ends the reply with the word "{signoff}"', "Gives two practical tips"],
            "negative": [f"Does not forget the {signoff} instruction"],
            "memory": [f"Keeps the {signoff} sign-off", "Keeps the tips brief"],
        }
    if axis == "SELF_COHERENCE":
        km = rng.randrange(120, 900, 10)
        return {
            "opening": f"How far is {city} from the coast, roughly?",
            "reply": f"{city} is about {km} kilometres from the nearest coast.",
            "final": "So how long would that drive take at a steady pace?",
            "positive": [
                f"Uses the distance of {km} kilometres given earlier",
                "Gives a driving time in hours",
            ],
            "negative": [f"Does not contradict the earlier {km} kilometre figure"],
            "memory": [f"Stays consistent about {city}", "Keeps the same units as before"],
        }
    hour = rng.randrange(5, 9)
    return {
        "opening": f"Book a table for {rng.randrange(2, 9)} at {hour} pm on {day}, "
        f"actually no, make that {hour + 1} pm.",
        "reply": f"All right, a table at {hour + 1} pm on {day}.",
        "final": f"Please read the booking back to me, and add a note about my {colour} {thing}.",
        "positive": [
            f"States the time as {hour + 1} pm",
            f"Gives the day as {day}",
            f"Mentions the {colour} {thing}",
        ],
        "negative": [f"Does not give the corrected-away time of {hour} pm"],
        "memory": [f"Keeps the booking on {day}", f"Notes the {thing}"],
    }


def _rubric(scenario: dict, size: int, rng: random.Random) -> list[str]:
    pool = scenario["positive"] + scenario["negative"] + scenario["memory"]
    items = pool[:size]
    while len(items) < size:
        # More items than the scenario offers: invented detail checks, numbered to stay distinct.
        items.append(
            f"Mentions the {rng.choice(COLOURS)} {rng.choice(THINGS)} (detail {len(items) + 1})"
        )
    return items


def _filler(pool: Sequence[str], rng: random.Random) -> str:
    return rng.choice(pool).format(
        thing=rng.choice(THINGS),
        name=rng.choice(NAMES),
        city=rng.choice(CITIES),
        colour=rng.choice(COLOURS),
        hobby=rng.choice(HOBBIES),
    )


def synthetic_records(n_tasks: int = 48, *, seed: int = 0) -> list[dict]:
    """Dataset rows (transcripts and JSON-encoded rubric; no audio) in the export's field names.

    n_tasks >= 4 so that every axis is present; n_tasks == 452 gives the real counts.
    """
    if n_tasks < len(AXES):
        raise ValueError("at least one task per axis: n_tasks >= 4")
    rng = random.Random(seed)
    axis_tasks = _allocate(n_tasks, REAL_AXIS_TASKS, minimum=1)
    last_turns = _allocate(n_tasks, REAL_LAST_TURNS)
    turns = [k for k, count in last_turns.items() for _ in range(count)]
    rng.shuffle(turns)
    records = []
    for axis in AXES:
        count = axis_tasks[axis]
        items = min(
            count * MAX_ITEMS,
            max(count, round(REAL_AXIS_ITEMS[axis] * count / REAL_AXIS_TASKS[axis])),
        )
        for size in _items_per_task(count, items, rng):
            scenario = _scenario(axis, rng)
            last = turns.pop()
            user = [_filler(FILLER_USER, rng) for _ in range(last)]
            assistant = [_filler(FILLER_ASSISTANT, rng) for _ in range(last - 1)]
            user[0], assistant[0], user[-1] = (
                scenario["opening"],
                scenario["reply"],
                scenario["final"],
            )
            # Real transcripts often start with a space; the judge's history strips it.
            user = [(" " + text) if rng.random() < 0.3 else text for text in user]
            record = {"id": _task_id(rng), "axis": axis}
            for k in range(1, MAX_TURNS_USER + 1):
                record[f"user_turn_{k}_transcript"] = user[k - 1] if k <= last else None
            for k in range(1, MAX_TURNS_ASSISTANT + 1):
                record[f"assistant_turn_{k}_transcript"] = assistant[k - 1] if k < last else None
            record["rubric"] = json.dumps(_rubric(scenario, size, rng))
            records.append(record)
    rng.shuffle(records)
    # One conversation lacks an intermediate assistant turn, as one real task does (turn 7 of 8).
    gap = max(records, key=lambda r: (_last(r), r["id"]))
    gap[f"assistant_turn_{_last(gap) - 1}_transcript"] = None
    return records


def _last(record: dict) -> int:
    return max(k for k in range(1, MAX_TURNS_USER + 1) if record[f"user_turn_{k}_transcript"])


# ---------------------------------------------------------------------------------------------
# Audio
# ---------------------------------------------------------------------------------------------


def speech_like_wav(text: str, *, seed: int, max_seconds: float = 3.0) -> bytes:
    """16 kHz mono 16-bit PCM WAV of a voiced, speech-like signal, one syllable per ~0.2 s.

    A harmonic source (f0 with declination, vibrato and per-syllable accents) is shaped by two
    formant peaks that change per syllable (vowels) and by raised-cosine syllable envelopes.
    The formant gains are computed every 2 ms (they change slowly) and the harmonics by the
    recurrence sin((h + 1)x) = 2 cos(x) sin(hx) - sin((h - 1)x): a few milliseconds per clip.
    """
    rng = np.random.default_rng(seed)
    room = max(1, int((max_seconds - 0.3) / 0.2 + 1e-9))
    syllables = min(room, max(2, round(1.4 * len(text.split()))))
    seconds = 0.2 * syllables + 0.3
    n = int(SAMPLE_RATE * seconds)
    t = np.arange(n) / SAMPLE_RATE
    base = rng.uniform(100, 220)
    which = np.minimum((t / 0.2).astype(int), syllables - 1)  # syllable index of each sample
    accents = rng.uniform(-0.08, 0.12, syllables)
    f0 = base * (1 - 0.15 * t / seconds) * (1 + 0.02 * np.sin(2 * np.pi * 5 * t) + accents[which])
    phase = 2 * np.pi * np.cumsum(f0) / SAMPLE_RATE
    vowels = np.array([(730, 1090), (270, 2290), (530, 1840), (570, 840), (300, 870)], float)
    formants = vowels[rng.integers(0, len(vowels), syllables)][which]  # (n, 2): F1, F2
    harmonics = np.arange(1, int(4000 / base) + 1)[:, None]
    step = 32  # 2 ms at 16 kHz
    freq = harmonics * f0[::step]
    gains = (
        1
        + 4 * np.exp(-(((freq - formants[::step, 0]) / 120) ** 2))
        + 3 * np.exp(-(((freq - formants[::step, 1]) / 200) ** 2))
    ) / harmonics
    gains = np.repeat(gains, step, axis=1)[:, :n]
    signal = np.zeros(n)
    twice_cos = 2 * np.cos(phase)
    previous, current = np.zeros(n), np.sin(phase)  # sin(0 x), sin(1 x)
    for gain in gains:
        signal += gain * current
        previous, current = current, twice_cos * current - previous
    within = (t - 0.2 * which) / 0.2
    envelope = np.where(within < 0.8, np.sin(np.pi * np.clip(within / 0.8, 0, 1)) ** 2, 0.0)
    envelope[t >= 0.2 * syllables] = 0.0  # the trailing 0.3 s is a pause
    signal = signal * envelope + 0.002 * rng.standard_normal(n)
    pcm = (0.3 * 32767 * signal / max(1e-9, np.abs(signal).max())).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes(pcm.tobytes())
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# Writers
# ---------------------------------------------------------------------------------------------


def _schema():
    import pyarrow as pa

    audio = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    fields = [("id", pa.string()), ("axis", pa.string())]
    for k in range(1, MAX_TURNS_USER + 1):
        fields += [(f"user_turn_{k}_audio", audio), (f"user_turn_{k}_transcript", pa.string())]
    fields += [
        (f"assistant_turn_{k}_transcript", pa.string()) for k in range(1, MAX_TURNS_ASSISTANT + 1)
    ]
    fields.append(("rubric", pa.string()))
    return pa.schema(fields)


def write_parquet_export(
    records: Sequence[dict],
    directory: Path,
    *,
    audio: bool = True,
    max_audio_seconds: float = 3.0,
    row_group_rows: int = 16,
) -> Path:
    """directory/data/test-00000-of-00001.parquet; audio built and written one row group at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(directory) / PARQUET_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = _schema()
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, len(records), row_group_rows):
            rows = []
            for index, record in enumerate(records[start : start + row_group_rows], start):
                row = dict(record)
                for k in range(1, MAX_TURNS_USER + 1):
                    text = record.get(f"user_turn_{k}_transcript")
                    row[f"user_turn_{k}_audio"] = (
                        {
                            "bytes": speech_like_wav(
                                text, seed=index * 10 + k, max_seconds=max_audio_seconds
                            ),
                            "path": f"{record['id']}_user_turn_{k}.wav",
                        }
                        if audio and text
                        else None
                    )
                rows.append(row)
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
    return path


def write_jsonl_export(records: Sequence[dict], directory: Path) -> Path:
    """directory/test.jsonl: the same rows without audio."""
    path = Path(directory) / JSONL_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


# ---------------------------------------------------------------------------------------------
# Submissions and judge outputs
# ---------------------------------------------------------------------------------------------


def _negative(item: str) -> bool:
    met_when_silent, _ = offline_verdict(response="", rubric_item=item)
    return met_when_silent


def _reply(task: Task, rng: random.Random, follow: float) -> str:
    """A reply naming the key words of each positive item with probability follow."""
    words = []
    for item in task.spec["rubric"]:
        if not _negative(item) and rng.random() < follow:
            words += [w for w in key_words(item) if w not in words]
            words += [p for p in _quoted(item) if p not in words]
    opening = rng.choice(("Sure thing.", "Here you go.", "Happy to help.", "Okay."))
    return f"{opening} " + (" ".join(words) + "." if words else "I am not sure what you mean.")


def _quoted(item: str) -> list[str]:
    parts = item.split('"')
    return [parts[i] for i in range(1, len(parts) - 1, 2)]


def synthetic_responses(
    tasks: Sequence[Task], profile: str, *, seed: int = 0, key: str = "response"
) -> list[dict]:
    """Submission lines for a profile: strong (most items met), weak (few), empty ("" and null
    replies), partial (strong, with about one task in seven left out)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; one of {', '.join(PROFILES)}")
    rng = random.Random(f"{seed}-{profile}")
    lines = []
    for index, task in enumerate(tasks):
        if profile == "partial" and rng.random() < 1 / 7:
            continue
        if profile == "empty":
            reply = None if index % 2 else ""
        else:
            reply = _reply(task, rng, 0.9 if profile in ("strong", "partial") else 0.25)
        lines.append({"id": task.task_id, key: reply})
    return lines


def responses_jsonl(lines: Iterable[dict]) -> str:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


UNPARSEABLE_OUTPUTS = (
    "The response meets the rubric item.",
    '{"explanation": "quoted boolean", "criteria_met": "true"}',
    "{'explanation': 'Python literal', 'criteria_met': True}",
    '{"explanation": "number", "criteria_met": 1}',
    '{"explanation": "no verdict"}',
)


def _styled(raw_fenced: str, style: int) -> str:
    """The offline answer in one of the shapes judges produce, all parseable."""
    body = raw_fenced.removeprefix("```json\n").removesuffix("\n```")
    if style == 0:
        return raw_fenced
    if style == 1:
        return body
    if style == 2:
        return f"Here is my assessment.\n{body}\nThat is all."
    return f"Thinking about {{the rubric}} first.\n```json\n{body}\n```"


def synthetic_judgments(
    tasks: Sequence[Task],
    responses: dict[str, str],
    *,
    seed: int = 0,
    retry_rate: float = 0.05,
    unparseable_rate: float = 0.01,
    failure_rate: float = 0.01,
) -> list[dict]:
    """Stored judge outputs {"id", "rubric_index", "attempt", "raw"} for every submitted item.

    Verdicts are the offline heuristic's. Some items first answer unparseably and are retried
    (retry_rate), some never answer parseably in three attempts (unparseable_rate), and some end
    on a call that failed for good, raw null (failure_rate).
    """
    rng = random.Random(f"{seed}-judgments")
    rows = []
    for task in tasks:
        if task.task_id not in responses:
            continue
        for index, item in enumerate(task.spec["rubric"]):
            raw = offline_raw_output(response=responses[task.task_id], rubric_item=item)
            draw = rng.random()
            if draw < unparseable_rate:
                outputs = [rng.choice(UNPARSEABLE_OUTPUTS) for _ in range(3)]
            elif draw < unparseable_rate + failure_rate:
                outputs = [rng.choice(UNPARSEABLE_OUTPUTS), None]
            elif draw < unparseable_rate + failure_rate + retry_rate:
                outputs = [rng.choice(UNPARSEABLE_OUTPUTS), _styled(raw, rng.randrange(4))]
            else:
                outputs = [_styled(raw, rng.randrange(4))]
            rows += [
                {"id": task.task_id, "rubric_index": index, "attempt": attempt, "raw": output}
                for attempt, output in enumerate(outputs)
            ]
    return rows
