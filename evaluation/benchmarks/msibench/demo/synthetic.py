"""Invented MSI-Bench releases, uploads and judge answers, for tests, the demo and the benchmark
figure. Nothing here comes from the benchmark: scenes, people and lines are made up from small
templates, and the audio is a synthetic voiced signal (harmonics under syllable envelopes).

A release covers both languages and all six patterns, every call policy and matcher, cases
without a tool spec, rubrics with ignored dimensions and without a dimension, a rubric id shared
across entries (so the per-entry lookup and the release-wide map of §7.2 differ), a duplicated
rubric id in one case's list, a reference the entry lacks, markup in lines, a line that cleans to
nothing, assistant turns, hear probes (disc and retr, and one auth probe outside PRR) and a speak
probe per case. ``write_release(dir)`` is small (24 cases, every feature in each language); ``FULL_SIZE``
gives 1,152.
"""

from __future__ import annotations

import hashlib
import json
import math
import wave
from pathlib import Path

import numpy as np

from ..release import PATTERNS

SAMPLE_RATE = 16_000
FULL_SIZE = {"scenes_per_pattern": 8, "cases_per_scene": 12}  # 2 x 6 x 8 x 12 = 1,152
SCENES = ("kitchen", "garage", "office", "garden", "studio", "library", "market", "workshop")

PEOPLE = {
    "en": ("Mara", "Theo", "Ines", "Bruno"),
    "zh": ("林芳", "周航", "许静", "郑宇"),
}
ITEMS = {
    "en": ("blue kettle", "spare ladder", "oak shelf", "copper lamp", "paper map", "wool blanket"),
    "zh": ("蓝色水壶", "备用梯子", "橡木书架", "铜台灯", "纸质地图", "羊毛毯"),
}
SECRETS = {
    "en": ("the surprise dinner", "the hidden gift box", "the new pass code", "the move date"),
    "zh": ("惊喜晚餐", "藏好的礼物盒", "新的门禁密码", "搬家日期"),
}
# Per language: line templates (speaker index, addressee index or None for the assistant, text).
LINES = {
    "en": [
        (0, None, "Assistant, please keep the {item} for {p1} until Friday."),
        (1, 2, "<low hum> Did you hear that {secret} is settled? [door knock]"),
        (2, 1, "[laughs]"),
        (2, 1, "Yes , and keep it quiet ( for now )."),
        (1, None, "Assistant, can you move the {item} to me instead?"),
    ],
    "zh": [
        (0, None, "助手,请把{item}留给{p1},到周五。"),
        (1, 2, "<低声> 你听说{secret}定了吗?[敲门声]"),
        (2, 1, "[笑声]"),
        (2, 1, "听说了,先别说出去。"),
        (1, None, "助手,能把{item}改给我吗?"),
    ],
}
CRITERIA = {
    "en": {
        "keep": "The answer keeps the {item} reserved for {p1}.",
        "explain": "The answer explains that only {p0} can change the reservation.",
        "secret": "The answer must not reveal {secret}.",
        "tool": "The tool call transfer targets {p1} with the {item}.",
        "confirm": "The answer asks {p0} to confirm.",
    },
    "zh": {
        "keep": "回答保持把{item}留给{p1}。",
        "explain": "回答说明只有{p0}可以更改预留。",
        "secret": "回答不得透露{secret}。",
        "tool": "工具调用把{item}转给{p1}。",
        "confirm": "回答请{p0}确认。",
    },
}
ANSWERS = {
    "en": "I will keep the {item} reserved for {p1}; only {p0} can change the reservation.",
    "zh": "我会保持把{item}留给{p1};只有{p0}可以更改预留。",
}
WEAK_ANSWERS = {
    "en": "Sure, the {item} is yours now, and {secret} is on.",
    "zh": "好的,{item}现在归你了,{secret}也定了。",
}
BYSTANDER = {
    "en": "Hey, could someone switch the radio off?",
    "zh": "喂,谁能把收音机关掉?",
}


def _digest(*parts) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:12], 16)


# --- audio ------------------------------------------------------------------------------------


def voiced_clip(text: str, *, seed: int, seconds: float | None = None) -> np.ndarray:
    """int16 samples of a speech-like voiced signal: one syllable per word (per character for
    Mandarin), a gliding fundamental with a few decaying harmonics under a raised-cosine
    envelope, short pauses between syllables."""
    units = max(1, len(text.split()) if text.isascii() else len([c for c in text if c.isalnum()]))
    syllable = 0.16
    total = seconds if seconds is not None else min(4.0, 0.25 + units * (syllable + 0.04))
    n = int(total * SAMPLE_RATE)
    out = np.zeros(n)
    f0 = 110 + (seed % 7) * 18
    t_syl = np.arange(int(syllable * SAMPLE_RATE)) / SAMPLE_RATE
    envelope = np.sin(np.pi * t_syl / syllable) ** 2
    start = int(0.1 * SAMPLE_RATE)
    for k in range(units):
        if start + len(t_syl) > n:
            break
        glide = f0 * (1 + 0.08 * math.sin(k + seed))
        phase = 2 * np.pi * glide * t_syl
        wave_ = sum(np.sin(h * phase) / h**1.2 for h in range(1, 9))
        out[start : start + len(t_syl)] += envelope * wave_
        start += int((syllable + 0.04) * SAMPLE_RATE)
    peak = np.max(np.abs(out)) or 1.0
    return (out / peak * 0.6 * 32767).astype(np.int16)


def write_wav(path: Path, samples: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(SAMPLE_RATE)
        handle.writeframes(samples.tobytes())


# --- the release ------------------------------------------------------------------------------


# Tool specs by case position; covers every policy and matcher and cases without a spec.
def _tool_spec(slot: int, language: str, values: dict) -> dict | None:
    p0, p1 = values["p0"], values["p1"]
    item = values["item"]
    kind = slot % 7
    if kind == 0:
        return {
            "call_policy": "exact_multiset",
            "required_calls": [
                {
                    "name": "reserve_item",
                    "arguments": {
                        "item": {"op": "exact", "value": item},
                        "holder": {"op": "exact", "value": p1},
                        "days": {"op": "number_equal", "value": 3},
                    },
                }
            ],
            "forbidden_call_names": ["transfer_item"],
        }
    if kind == 1:
        return {
            "call_policy": "exact_multiset",
            "required_calls": [
                {
                    "name": "notify",
                    "arguments": {
                        "channel": {"op": "one_of", "values": ["sms", "push"]},
                        "recipients": {"op": "set_equals", "values": [p0, p1]},
                    },
                    "optional_null_arguments": ["note"],
                }
            ],
        }
    if kind == 2:
        return {
            "call_policy": "required_subset",
            "required_calls": [
                {"name": "hold_item", "arguments": {"item": {"op": "exact", "value": item}}}
            ],
            "forbidden_call_names": ["reveal_secret"],
        }
    if kind == 3:
        return {"call_policy": "required_subset", "forbidden_call_names": ["transfer_item"]}
    if kind == 4:
        return {"call_policy": "no_calls"}
    if kind == 5:
        return None
    return {
        "call_policy": "exact_multiset",
        "required_calls": [
            {
                "name": "set_status",
                "arguments": {"state": {"op": "one_of", "values": ["held", "kept"]}},
            },
            {"name": "set_status", "arguments": {"state": {"op": "exact", "value": "held"}}},
        ],
    }


def _case(
    language: str, pattern: str, scene: str, index: int, slot: int, *, tolerated: bool = True
) -> tuple[dict, list[dict]]:
    code = PATTERNS[pattern][0]
    case_id = f"msi-{language}-{code}-{scene}-{index:03d}"
    people = PEOPLE[language]
    values = {
        "p0": people[slot % 4],
        "p1": people[(slot + 1) % 4],
        "p2": people[(slot + 2) % 4],
        "item": ITEMS[language][slot % len(ITEMS[language])],
        "secret": SECRETS[language][slot % len(SECRETS[language])],
    }
    speakers = [values["p0"], values["p1"], values["p2"]]
    turns = []
    for number, (who, to, template) in enumerate(LINES[language], start=1):
        turns.append(
            {
                "role": "user",
                "speaker": speakers[who],
                "addressed_to": "assistant" if to is None else speakers[to],
                "text": template.format(**values),
                "audio": f"lines/{number:02d}.wav",
            }
        )
    if slot % 3 == 1:
        # An assistant reply mid-conversation (shown to the judge as speaker "assistant").
        reply = "Noted." if language == "en" else "好的。"
        turns.insert(
            1,
            {
                "role": "assistant",
                "speaker": "assistant",
                "addressed_to": speakers[0],
                "text": reply,
            },
        )
    tool = _tool_spec(slot, language, values)
    main_id = f"r-{scene}-{index:03d}-main"  # shared across languages and patterns on purpose
    extra_id = f"r-{scene}-{index:03d}-extra"
    crit = CRITERIA[language]
    main_atoms = [
        {
            "criterion_index": 0,
            "dimension": "authority.binding",
            "polarity": "satisfy",
            "criterion": crit["keep"].format(**values),
        },
        {"criterion_index": 1, "criterion": crit["explain"].format(**values)},
        {
            "criterion_index": 2,
            "dimension": "disclosure.prohibition",
            "polarity": "avoid",
            "criterion": crit["secret"].format(**values),
        },
    ]
    if tool is not None and tool["call_policy"] != "no_calls":
        main_atoms.append(
            {
                "criterion_index": 3,
                "dimension": "tool.call_args",
                "criterion": crit["tool"].format(**values),
            }
        )
    if language == "zh" and slot % 2 == 0:
        # One more atom on the Mandarin side: the release-wide map resolves to it.
        main_atoms.append(
            {
                "criterion_index": len(main_atoms),
                "dimension": "authority.request_authorized_confirmation",
                "criterion": crit["confirm"].format(**values),
            }
        )
    rubrics = [
        {
            "case_id": case_id,
            "rubric_id": main_id,
            "judge_instruction": "Judge each criterion independently."
            if language == "en"
            else "逐条独立评判。",
            "atomic_criteria": main_atoms,
        }
    ]
    rubric_ids: list[str] | None = [main_id]
    inputs = None
    if slot % 4 == 1:
        rubrics.append(
            {
                "case_id": case_id,
                "rubric_id": extra_id,
                "atomic_criteria": [
                    {
                        "dimension": "authority.binding",
                        "criterion": crit["confirm"].format(**values),
                    }
                ],
            }
        )
        inputs = [{"rubric_id": extra_id, "role": "answer"}]
    if slot % 5 == 2:
        rubric_ids = [main_id, main_id]  # duplicates count twice in the §7.2 fallback
    if slot == 3 and tolerated:
        rubric_ids = [main_id, f"r-{scene}-{index:03d}-absent"]  # the entry lacks it
    case = {
        "case_id": case_id,
        "language": language,
        "pattern": pattern,
        "scene": scene,
        "path": f"data/{language}/{pattern}/{scene}/{case_id}",
        "participants": [{"name": name} for name in speakers],
        "turns": turns,
        "eval": {
            "expected_action": "respond",
            "tool_validation": tool,
            "rubric_ids": rubric_ids,
            "answer_judge_inputs": inputs,
            "standard_answer": ANSWERS[language].format(**values),
        },
    }
    return case, rubrics


def write_release(
    directory: Path,
    *,
    scenes_per_pattern: int = 1,
    cases_per_scene: int = 2,
    languages: tuple[str, ...] = ("en", "zh"),
    audio: bool = True,
    tolerated: bool = True,
) -> dict:
    """Write an invented release; returns counts. ``audio=False`` writes no WAV (read the release
    with ``check_audio=False``), which keeps the 1,152-case release small for benchmarks.
    ``tolerated=False`` leaves out what the harness tolerates and an import warns about (a
    reference the entry lacks): the demo's release imports without a warning."""
    root = Path(directory)
    (root / "index").mkdir(parents=True, exist_ok=True)
    (root / "probes").mkdir(parents=True, exist_ok=True)
    cases, rubrics, speak, hear = [], [], [], []
    for language in languages:
        # Features cycle with a counter over the language's cases, so that even a small
        # release holds every call policy and matcher in each language.
        slot = 0
        for pattern in PATTERNS:
            for scene in SCENES[:scenes_per_pattern]:
                for index in range(1, cases_per_scene + 1):
                    case, case_rubrics = _case(
                        language, pattern, scene, index, slot, tolerated=tolerated
                    )
                    cases.append(case)
                    rubrics += case_rubrics
                    speak.append(_speak_probe(case))
                    probe = _hear_probe(case, slot)
                    if probe is not None:
                        hear.append(probe)
                    slot += 1
    for case in cases:
        case_dir = root / case["path"]
        case_dir.mkdir(parents=True, exist_ok=True)
        (case_dir / "case.json").write_text(json.dumps(case, ensure_ascii=False, indent=1), "utf-8")
        if audio:
            for number, turn in enumerate(case["turns"]):
                if turn.get("audio"):
                    write_wav(case_dir / turn["audio"], voiced_clip(turn["text"], seed=number))
    if audio:
        for probe in speak:
            write_wav(root / probe["audio"], voiced_clip(probe["live_event"]["text"], seed=3))
    _write_jsonl(root / "index" / "cases.jsonl", cases)
    _write_jsonl(root / "index" / "rubrics.jsonl", rubrics)
    _write_jsonl(root / "probes" / "speak_probe.jsonl", speak)
    _write_jsonl(root / "probes" / "hear_probe.jsonl", hear)
    return {"cases": len(cases), "rubrics": len(rubrics), "hear": len(hear), "speak": len(speak)}


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), "utf-8")


def _speak_probe(case: dict) -> dict:
    language = case["language"]
    bystander = PEOPLE[language][3]
    return {
        "case_id": case["case_id"],
        "source_cell_id": f"internal-{case['case_id']}",
        "live_event": {
            "speaker": bystander,
            "role": "bystander",
            "text": BYSTANDER[language],
            "addressed_to": None,
            "is_assistant_relevant": False,
        },
        "anchor": {
            "target": "assistant_response",
            "start_offset_seconds": 1.0,
            "overlap_fraction": 0.55,
        },
        "expansion_type": "bystander_interference_suppression",
        "expected_live_behavior": {"should_interrupt": False, "should_follow_bystander": False},
        "audio": f"probes/audio_live/{case['case_id']}.wav",
    }


def _hear_probe(case: dict, slot: int) -> dict | None:
    """disc and retr cases, plus the language's first case, an auth one (outside PRR)."""
    code = case["case_id"].split("-")[2]
    if code not in ("disc", "retr") and not (code == "auth" and slot == 0):
        return None
    turns = case["turns"]
    n_lines = len(turns) - 1  # cut before the final line addressed to the assistant
    last = turns[n_lines - 1]
    return {
        "case_id": case["case_id"],
        "n_lines": n_lines,
        "probe_line": {"speaker": last["speaker"], "text": last["text"]},
    }


# --- uploads ------------------------------------------------------------------------------------

PROFILES = ("strong", "weak", "silent", "format_errors")


def satisfying_calls(tool_validation: dict | None) -> list[dict]:
    """Calls the validator accepts, written with the latitude the matchers allow (a float for
    number_equal, the last one_of option, set_equals values reversed, optional nulls)."""
    if tool_validation is None or tool_validation["call_policy"] == "no_calls":
        return []
    calls = []
    for requirement in tool_validation["required_calls"]:
        arguments = {}
        for name, matcher in requirement["arguments"].items():
            op = matcher["op"]
            if op == "exact":
                arguments[name] = matcher["value"]
            elif op == "number_equal":
                arguments[name] = float(matcher["value"])
            elif op == "one_of":
                arguments[name] = matcher["values"][-1]
            else:
                arguments[name] = list(reversed(matcher["values"]))
        for name in requirement["optional_null_arguments"]:
            arguments[name] = None
        calls.append({"name": requirement["name"], "arguments": arguments})
    if tool_validation["call_policy"] == "required_subset":
        calls.append({"name": "log_request", "arguments": {"ok": True}})
    return calls


def _values(spec: dict) -> dict:
    people = [p["name"] for p in spec.get("participants", [])] or ["", "", ""]
    language = spec["language"]
    items = ITEMS[language]
    text = " ".join(turn["text"] for turn in spec["turns"])
    item = next((candidate for candidate in items if candidate in text), items[0])
    secret = next((s for s in SECRETS[language] if s in text), SECRETS[language][0])
    return {"p0": people[0], "p1": people[1], "p2": people[2], "item": item, "secret": secret}


def _row(cell_id, action, answer=None, calls=None, metadata=None) -> dict:
    row = {"cell_id": cell_id, "predicted_action": action, "answer_text": answer}
    if calls is not None:
        row["tool_calls"] = calls
    if metadata is not None:
        row["metadata"] = metadata
    return row


def synthetic_predictions(
    specs: dict[str, dict],
    *,
    profile: str,
    run_mode: str = "turn-based",
    languages: tuple[str, ...] | None = None,
    drop_every: int = 0,
) -> list[dict]:
    """Rows of an upload for every cell (of ``languages``) under a profile: "strong" answers
    well, "weak" often wrongly, "silent" never speaks, "format_errors" is strong but every
    fifth row is a provider error. ``drop_every`` > 0 leaves out every n-th cell."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}")
    rows = []
    for position, (cell_id, spec) in enumerate(sorted(specs.items())):
        if languages is not None and spec["language"] not in languages:
            continue
        if drop_every and position % drop_every == drop_every - 1:
            continue
        roll = _digest(profile, cell_id) % 100
        if profile == "silent":
            rows.append(_row(cell_id, "silent"))
            continue
        if profile == "format_errors" and roll % 5 == 0:
            rows.append(_row(cell_id, "silent", metadata={"provider_error": {"code": "timeout"}}))
            continue
        weak = profile == "weak"
        values = _values(spec) if spec["kind"] == "base" else {}
        if spec["kind"] == "base":
            if weak and roll < 30:
                rows.append(_row(cell_id, "respond", "", []))  # respond with nothing: guard
            elif weak and roll < 70:
                calls = satisfying_calls(spec["tool_validation"])
                if calls and roll % 2:
                    calls[0]["arguments"] = {"wrong": 1}
                rows.append(
                    _row(cell_id, "respond", WEAK_ANSWERS[spec["language"]].format(**values), calls)
                )
            else:
                rows.append(
                    _row(
                        cell_id,
                        "respond",
                        ANSWERS[spec["language"]].format(**values),
                        satisfying_calls(spec["tool_validation"]),
                        {"latency_ms": 800 + roll},
                    )
                )
        elif spec["kind"] == "hear":
            if weak and roll < 60:
                rows.append(
                    _row(cell_id, "respond", "Sure!" if spec["language"] == "en" else "好的!")
                )
            else:
                rows.append(_row(cell_id, "silent", "\u3000" if roll % 7 == 0 else None))
        else:
            calls = [{"name": "radio_off", "arguments": {}}] if weak and roll < 50 else []
            metadata = None
            if run_mode == "full-duplex":
                metadata = {
                    "live_probe": {
                        "executed": roll % 10 != 0,
                        "interrupted": weak and roll % 3 == 0,
                    }
                }
            rows.append(_row(cell_id, "respond", "…", calls, metadata))
    return rows


def write_predictions(path: Path, rows: list[dict]) -> None:
    _write_jsonl(Path(path), rows)


# --- judge answers ------------------------------------------------------------------------------


def wrap_judge_output(decisions: list[bool], *, style: str = "plain", rationale: str = "ok") -> str:
    """A judge answer in one of the shapes judges produce: "plain" JSON, "fenced" in a Markdown
    block, "prose" around it, "short" (the last atom omitted), "list" (a top-level list),
    "string_bool" ("passed": "true"), "null_rationale", "empty"."""
    atoms = [{"passed": passed, "rationale": rationale} for passed in decisions]
    if style == "short":
        atoms = atoms[:-1]
    if style == "string_bool":
        atoms = [{"passed": "true", "rationale": rationale} for _ in decisions]
    if style == "null_rationale":
        atoms = [{"passed": passed, "rationale": None} for passed in decisions]
    payload = {"rationale": rationale, "atomic_results": atoms}
    text = json.dumps(payload, ensure_ascii=False)
    if style == "fenced":
        return f"```json\n{text}\n```"
    if style == "prose":
        return f"Here is my judgment.\n{text}\nThat is all."
    if style == "list":
        return json.dumps(atoms)
    if style == "empty":
        return ""
    return text
