"""The generated demo data: benchmark checkout, judge templates, bundles and their audio."""

from __future__ import annotations

import importlib
import itertools
import json
import string
import sys
import wave
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # runs without pytest-django (-p no:django), which adds it
    sys.path.insert(0, str(ROOT))

demo = importlib.import_module("evaluation.benchmarks.mpbench.demo")

SR = 16_000
SHARED_TASKS = ROOT.parent / "shared" / "benchmarks" / "mpbench" / "tasks.jsonl"


def benchmark_names() -> set[str]:
    """The speaker names the real benchmark uses (its tasks.jsonl), which the demo reuses so
    that the offline judge's name matching meets the same names."""
    if not SHARED_TASKS.is_file():
        pytest.skip("the MP-Bench data is not beside this checkout")
    names = set()
    for line in SHARED_TASKS.read_text(encoding="utf-8").splitlines():
        meta = json.loads(line)["metatranscript"]
        meta = json.loads(meta) if isinstance(meta, str) else meta
        names |= {speaker["name"] for speaker in meta["speakers"]}
    return names


@pytest.fixture(autouse=True)
def _isolated_media():
    """These tests touch neither Django nor storage: stand in for the suite-wide media fixture,
    so the module also runs with ``-p no:django``."""


@pytest.fixture(scope="session")
def benchmark_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("demo-benchmark")
    demo.write_demo_benchmark(directory)
    return directory


@pytest.fixture(scope="session")
def records(benchmark_dir) -> list[dict]:
    lines = (benchmark_dir / "benchmark" / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> dict[str, Path]:
    """One folder bundle per profile (seed as in DEMO_SYSTEMS)."""
    root = tmp_path_factory.mktemp("demo-bundles")
    out = {}
    for system in demo.DEMO_SYSTEMS:
        directory = root / system["profile"]
        demo.write_demo_bundle(directory, profile=system["profile"], seed=system["seed"])
        out[system["profile"]] = directory
    return out


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def spans(transcript: dict) -> list[tuple[float, float]]:
    return [tuple(c["timestamp"]) for c in transcript["chunks"]]


def read_wav(path: Path) -> tuple[wave._wave_params, np.ndarray]:
    with wave.open(str(path), "rb") as handle:
        params = handle.getparams()
        frames = handle.readframes(handle.getnframes())
    return params, np.frombuffer(frames, "<i2").astype(np.float64) / 32768


def rms(signal: np.ndarray) -> float:
    return float(np.sqrt(np.mean(signal**2))) if len(signal) else 0.0


def segment(signal: np.ndarray, start: float, end: float) -> np.ndarray:
    return signal[int(round(start * SR)) : int(round(end * SR))]


def estimate_f0(signal: np.ndarray) -> float:
    """Autocorrelation pitch: the shortest strong peak between 60 and 400 Hz."""
    x = signal - signal.mean()
    spectrum = np.fft.rfft(x, n=2 * len(x))
    r = np.fft.irfft(np.abs(spectrum) ** 2)[: len(x)]
    low, high = SR // 400, SR // 60
    window = r[low:high]
    threshold = 0.9 * window.max()
    for lag in range(low + 1, high - 1):
        if r[lag] >= threshold and r[lag] >= r[lag - 1] and r[lag] >= r[lag + 1]:
            return SR / lag
    return SR / (low + int(np.argmax(window)))


def speaker_of_chunks(record: dict) -> list[str]:
    meta = json.loads(record["metatranscript"])
    return [t["speaker"] for t in meta["metatranscript"] for _ in t["content"].split()]


def input_end(transcript: dict) -> float:
    return max(end for _, end in spans(transcript))


# --------------------------------------------------------------------------------------------
# Benchmark checkout


def test_tasks_jsonl_has_the_mpbench_fields(records):
    families = [r["family"] for r in records]
    assert {f: families.count(f) for f in set(families)} == {
        "understanding": 6,
        "discussion": 6,
        "turnbased": 6,
    }
    assert len({r["task_dir"] for r in records}) == len(records)
    known = benchmark_names()
    for r in records:
        assert set(r) == {
            "task_dir",
            "family",
            "should_speak",
            "metatranscript",
            "question_text",
            "answer_text",
            "is_speaker_name",
        }
        assert r["task_dir"].startswith(f"scenario_demo-{r['family']}-")
        assert isinstance(r["should_speak"], bool) and isinstance(r["is_speaker_name"], bool)
        assert isinstance(r["metatranscript"], str)
        meta = json.loads(r["metatranscript"])
        speakers = meta["speakers"]
        assert len(speakers) == 3
        names = {s["name"] for s in speakers}
        assert len(names) == 3 and names <= known
        for s in speakers:
            assert set(s) == {"name", "gender", "voice_characteristics"}
        assert meta["metatranscript"], r["task_dir"]
        for turn in meta["metatranscript"]:
            assert turn["speaker"] in names and turn["content"].strip()
        assert "AI Assistant" in meta["metatranscript"][-1]["content"] or r["family"] == "turnbased"


def test_family_specific_fields(records):
    understanding = [r for r in records if r["family"] == "understanding"]
    assert all(r["question_text"] and r["answer_text"] and r["should_speak"] for r in understanding)
    named = [r for r in understanding if r["is_speaker_name"]]
    assert 2 <= len(named) <= 3
    for r in named:
        names = {s["name"] for s in json.loads(r["metatranscript"])["speakers"]}
        assert r["answer_text"] in names
    for r in records:
        if r["family"] != "understanding":
            assert not r["is_speaker_name"] and not r["question_text"] and not r["answer_text"]
    assert all(r["should_speak"] for r in records if r["family"] == "discussion")
    turnbased = [r for r in records if r["family"] == "turnbased"]
    assert sorted(r["should_speak"] for r in turnbased) == [False] * 3 + [True] * 3
    for r in turnbased:
        turns = json.loads(r["metatranscript"])["metatranscript"]
        spoken = " ".join(t["content"] for t in turns)
        for word in ("Group 1", "Group 2", "Leader", "Follower", "AI Assistant"):
            assert word in spoken
        assert turns[-1]["content"].isdigit()


def test_voice_questions_match_the_voices(records):
    """'Deepest' / 'highest' questions are answered by the voice table the audio is made from."""
    for r in records:
        if not r["is_speaker_name"]:
            continue
        names = [s["name"] for s in json.loads(r["metatranscript"])["speakers"]]
        pitches = {n: demo.VOICES[n].f0 for n in names}
        if "deepest" in r["question_text"]:
            assert r["answer_text"] == min(pitches, key=pitches.get)
        if "highest" in r["question_text"]:
            assert r["answer_text"] == max(pitches, key=pitches.get)


def test_no_text_taken_from_the_real_benchmark(records):
    if not SHARED_TASKS.is_file():
        pytest.skip("the licensed MP-Bench data is not checked out beside the project")
    real = SHARED_TASKS.read_text(encoding="utf-8").lower()
    for r in records:
        for turn in json.loads(r["metatranscript"])["metatranscript"]:
            words = turn["content"].lower().split()
            for i in range(len(words) - 6):
                assert " ".join(words[i : i + 7]) not in real, turn["content"]
    for template in demo.PROMPTS.values():
        for line in template.splitlines():
            if len(line) > 40:
                assert line.lower() not in real


def test_the_project_importer_reads_the_checkout(benchmark_dir):
    importer = pytest.importorskip("evaluation.benchmarks.mpbench.importer")
    source = importer.read_source(benchmark_dir)
    assert len(source.tasks) == 18
    assert {p.kind for p in source.prompts} == set(demo.KIND_PLACEHOLDERS)


@pytest.mark.parametrize("kind", sorted(demo.KIND_PLACEHOLDERS))
def test_templates_format_with_their_placeholders(benchmark_dir, kind):
    template = (benchmark_dir / "prompts" / f"{kind}.txt").read_text(encoding="utf-8")
    used = {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    assert used == set(demo.KIND_PLACEHOLDERS[kind])
    values = {name: f"<{name}>" for name in demo.KIND_PLACEHOLDERS[kind]}
    filled = template.format(**values)
    for value in values.values():
        assert value in filled
    assert "{" in filled  # the doubled braces of the JSON example survive as literal braces


@pytest.mark.parametrize(
    ("kind", "properties"),
    [
        ("understanding", {"correct": "boolean"}),
        (
            "speaker_name",
            {"extracted_name": ["string", "null"], "correct": "boolean", "reasoning": "string"},
        ),
        ("discussion", {"consistent": "boolean"}),
        ("turnbased", {"reasoning": "string", "consistent": "boolean"}),
    ],
)
def test_schemas(benchmark_dir, kind, properties):
    schema = load(benchmark_dir / "prompts" / f"{kind}.schema.json")
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(properties)
    assert {k: v["type"] for k, v in schema["properties"].items()} == properties


# --------------------------------------------------------------------------------------------
# Bundles


def test_every_task_folder_is_written(bundles, records):
    for directory in bundles.values():
        assert sorted(p.name for p in directory.iterdir()) == sorted(r["task_dir"] for r in records)
        for r in records:
            folder = directory / r["task_dir"]
            for name in ("all_stitched.json", "response.json", "all_stitched.wav", "response.wav"):
                assert (folder / name).is_file(), folder / name
            for name in ("all_stitched.json", "response.json"):
                data = load(folder / name)
                assert isinstance(data["text"], str) and isinstance(data["chunks"], list)
                for chunk in data["chunks"]:
                    start, end = chunk["timestamp"]
                    assert 0 <= start < end and chunk["text"].strip()


def test_input_transcript_is_the_conversation(bundles, records):
    for r in records:
        data = load(bundles["strong"] / r["task_dir"] / "all_stitched.json")
        turns = json.loads(r["metatranscript"])["metatranscript"]
        assert [c["text"] for c in data["chunks"]] == " ".join(t["content"] for t in turns).split()
        starts = [c["timestamp"][0] for c in data["chunks"]]
        assert starts == sorted(starts)


def test_wavs_are_valid_and_cover_the_words(bundles, records):
    for directory in bundles.values():
        for r in records:
            folder = directory / r["task_dir"]
            words = spans(load(folder / "all_stitched.json")) + spans(
                load(folder / "response.json")
            )
            last = max(end for _, end in words)
            lengths = set()
            for name in ("all_stitched.wav", "response.wav"):
                with wave.open(str(folder / name), "rb") as handle:
                    assert handle.getframerate() == SR
                    assert handle.getnchannels() == 1
                    assert handle.getsampwidth() == 2
                    assert handle.getcomptype() == "NONE"
                    duration = handle.getnframes() / SR
                    assert len(handle.readframes(handle.getnframes())) == 2 * handle.getnframes()
                assert last + 2.5 <= duration <= last + 3.5
                lengths.add(duration)
            assert len(lengths) == 1  # one timeline


def test_sound_inside_words_and_silence_between_turns(bundles, records):
    for r in records[::3]:
        folder = bundles["streaming-chatty"] / r["task_dir"]
        conversation = load(folder / "all_stitched.json")
        _, audio = read_wav(folder / "all_stitched.wav")
        for start, end in spans(conversation):
            assert rms(segment(audio, start, end)) > 0.03, (r["task_dir"], start)
        turn_gaps = [
            (a_end, b_start)
            for (_, a_end), (b_start, _) in itertools.pairwise(spans(conversation))
            if b_start - a_end >= 0.4
        ]
        assert len(turn_gaps) >= 3
        for a_end, b_start in turn_gaps:
            assert rms(segment(audio, a_end + 0.05, b_start - 0.05)) < 1e-3
        assert rms(segment(audio, input_end(conversation) + 0.1, len(audio) / SR)) < 1e-3

        response = load(folder / "response.json")
        _, agent = read_wav(folder / "response.wav")
        agent_spans = spans(response)
        assert agent_spans
        for start, end in agent_spans:
            assert rms(segment(agent, start, end)) > 0.03
        first = agent_spans[0][0]
        assert rms(segment(agent, 0, first - 0.01)) < 1e-3  # nothing before its first word


def test_the_three_voices_differ_in_pitch(bundles, records):
    for r in records:
        folder = bundles["strong"] / r["task_dir"]
        _, audio = read_wav(folder / "all_stitched.wav")
        pitches: dict[str, list[float]] = {}
        for speaker, (start, end) in zip(
            speaker_of_chunks(r), spans(load(folder / "all_stitched.json")), strict=True
        ):
            if end - start >= 0.2:
                middle = segment(audio, start + 0.3 * (end - start), end - 0.3 * (end - start))
                pitches.setdefault(speaker, []).append(estimate_f0(middle))
        assert len(pitches) == 3, r["task_dir"]
        f0 = {name: float(np.median(values)) for name, values in pitches.items()}
        for name, value in f0.items():  # the audio matches the voice the metadata describes
            assert abs(value - demo.VOICES[name].f0) < 0.12 * demo.VOICES[name].f0, (name, value)
        for a, b in itertools.combinations(f0, 2):
            assert abs(f0[a] - f0[b]) > 20, (r["task_dir"], f0)


# --------------------------------------------------------------------------------------------
# Profiles


def post_input_words(folder: Path) -> list[dict]:
    end = input_end(load(folder / "all_stitched.json"))
    return [c for c in load(folder / "response.json")["chunks"] if c["timestamp"][0] >= end]


def half_duplex_ratio(directory: Path, records) -> float:
    n_post = n_text = 0
    for r in records:
        response = load(directory / r["task_dir"] / "response.json")
        if not response["chunks"]:
            continue
        n_text += bool(response["text"].strip())
        n_post += bool(post_input_words(directory / r["task_dir"]))
    return n_post / n_text


def test_half_duplex_never_speaks_after_the_input(bundles, records):
    directory = bundles["half-duplex"]
    for r in records:
        folder = directory / r["task_dir"]
        assert load(folder / "response.json")["text"].strip()
        assert post_input_words(folder) == []
    assert half_duplex_ratio(directory, records) < 0.25
    for profile in ("strong", "streaming-chatty"):
        assert half_duplex_ratio(bundles[profile], records) >= 0.25


def test_strong_answers_after_the_input_and_keeps_quiet_when_it_should(bundles, records):
    tasks = {t.task_dir: t for t in demo.DEMO_TASKS}
    for r in records:
        folder = bundles["strong"] / r["task_dir"]
        said = load(folder / "response.json")
        post = post_input_words(folder)
        assert bool(post) == r["should_speak"]
        assert len(post) == len(said["chunks"])
        assert said["text"] == tasks[r["task_dir"]].good_reply
        if r["is_speaker_name"]:
            assert r["answer_text"] in said["text"]
        if r["family"] == "turnbased" and r["should_speak"]:
            last = json.loads(r["metatranscript"])["metatranscript"][-1]["content"]
            assert said["text"] == str(int(last) + 1)
        if post:
            assert (
                0.3
                <= post[0]["timestamp"][0] - input_end(load(folder / "all_stitched.json"))
                <= 1.5
            )


def test_chatty_greets_during_the_input_and_mostly_answers_after(bundles, records):
    directory = bundles["streaming-chatty"]
    answered_after = 0
    for r in records:
        folder = directory / r["task_dir"]
        end = input_end(load(folder / "all_stitched.json"))
        chunks = load(folder / "response.json")["chunks"]
        assert chunks and chunks[0]["timestamp"][0] < end
        answered_after += bool(post_input_words(folder))
    assert answered_after >= 12


def test_silent_says_nothing_on_most_tasks(bundles, records):
    empty = sum(
        not load(bundles["silent"] / r["task_dir"] / "response.json")["chunks"] for r in records
    )
    assert empty > len(records) / 2


def test_unknown_profile_is_refused(tmp_path):
    with pytest.raises(ValueError):
        demo.write_demo_bundle(tmp_path, profile="genius", seed=1)


def test_generation_is_deterministic(tmp_path):
    for system in demo.DEMO_SYSTEMS[:2]:
        first, second = tmp_path / "a", tmp_path / "b"
        for directory in (first, second):
            demo.write_demo_bundle(directory, profile=system["profile"], seed=system["seed"])
        files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
        for relative in files:
            assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative
        for directory in (first, second):
            for path in sorted(directory.rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()


def test_zip_bundle_matches_the_folders_and_is_small(tmp_path, bundles):
    total = 0
    for system in demo.DEMO_SYSTEMS:
        path = tmp_path / f"{system['profile']}.zip"
        manifest = demo.system_manifest(system)
        demo.write_demo_bundle_zip(
            path, profile=system["profile"], seed=system["seed"], manifest=manifest
        )
        total += path.stat().st_size
        with zipfile.ZipFile(path) as archive:
            assert json.loads(archive.read("manifest.json")) == manifest
            folder = bundles[system["profile"]]
            names = sorted(n for n in archive.namelist() if n != "manifest.json")
            assert names == sorted(
                str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()
            )
            for name in names[:8]:
                assert archive.read(name) == (folder / name).read_bytes()
    assert total < 30 * 1024 * 1024


# --------------------------------------------------------------------------------------------
# Manifest and systems


def test_manifest(tmp_path):
    demo.write_demo_manifest(
        tmp_path,
        name="Demo Thing (demo)",
        system_type="realtime",
        architecture="cascaded",
        open_weights=True,
    )
    manifest = load(tmp_path / "manifest.json")
    assert manifest["name"] == "Demo Thing (demo)"
    assert manifest["system_type"] == "realtime"
    assert manifest["architecture"] == "cascaded"
    assert manifest["open_weights"] is True
    assert manifest["organization"]
    with pytest.raises(ValueError):
        demo.write_demo_manifest(tmp_path, name="x", system_type="telepathic")
    with pytest.raises(ValueError):
        demo.write_demo_manifest(tmp_path, name="x", system_type="realtime", architecture="magic")


def test_demo_systems():
    assert 3 <= len(demo.DEMO_SYSTEMS) <= 4
    assert {s["profile"] for s in demo.DEMO_SYSTEMS} <= set(demo.PROFILES)
    assert len({s["name"] for s in demo.DEMO_SYSTEMS}) == len(demo.DEMO_SYSTEMS)
    for system in demo.DEMO_SYSTEMS:
        assert {"name", "profile", "seed", "system_type", "organization", "description"} <= set(
            system
        )
        assert "(demo)" in system["name"]
        assert system["system_type"] in demo.SYSTEM_TYPES
        manifest = demo.system_manifest(system)
        assert manifest["name"] == system["name"] and manifest["demo"] is True
