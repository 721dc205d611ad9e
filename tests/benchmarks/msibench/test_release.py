"""Reading a release (SPEC §1, §2): the cells, the rubric lookups, and every validation rule."""

import hashlib
import json
from collections import defaultdict
from pathlib import Path

import pytest

from evaluation.benchmarks.msibench.demo.synthetic import write_release
from evaluation.benchmarks.msibench.release import (
    ReleaseError,
    barge_in_prefix,
    read_release,
    speak_truncate_fraction,
)

CASES = "index/cases.jsonl"
RUBRICS = "index/rubrics.jsonl"
SPEAK = "probes/speak_probe.jsonl"
HEAR = "probes/hear_probe.jsonl"


@pytest.fixture
def release(tmp_path) -> Path:
    root = tmp_path / "release"
    write_release(root, audio=False)
    return root


def rows(root: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (root / name).read_text("utf-8").splitlines() if line]


def write_rows(root: Path, name: str, items: list[dict]) -> None:
    (root / name).write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), "utf-8"
    )


def edit(root: Path, name: str, index: int, change) -> dict:
    items = rows(root, name)
    change(items[index])
    write_rows(root, name, items)
    return items[index]


def problems(root: Path, **kwargs) -> list[str]:
    with pytest.raises(ReleaseError) as caught:
        read_release(root, check_audio=False, **kwargs)
    return [str(problem) for problem in caught.value.problems]


# --- what a release yields --------------------------------------------------------------------


def test_cells_of_the_synthetic_release(release):
    read = read_release(release, check_audio=False)
    kinds = defaultdict(list)
    for task in read.tasks:
        kinds[task.spec["kind"]].append(task.task_id)
    assert len(kinds["base"]) == 24 and len(kinds["speak"]) == 24
    # disc and retr cases (2 each per language) and one auth case per language.
    assert len(kinds["hear"]) == 10
    assert all(t.endswith("s") for t in kinds["speak"]) and all(
        t.endswith("h") for t in kinds["hear"]
    )
    assert {t[:-1] for t in kinds["speak"]} == set(kinds["base"])
    assert read.languages == ["en", "zh"]


def test_base_spec_fields(release):
    specs = read_release(release, check_audio=False).specs()
    spec = specs["msi-en-auth-kitchen-001"]
    assert spec["pattern_code"] == "auth" and spec["pattern_label"] == "Auth"
    assert spec["logic_pattern"] == "authority_gated_override"
    assert spec["entry"] == "en_speaker_authority_constraint"
    assert spec["turns"][0]["audio"].endswith("msi-en-auth-kitchen-001/lines/01.wav")
    assert spec["required_call_count"] == 1
    assert spec["judge_rubric_ids"] == ["r-kitchen-001-main"]
    # The entry's own rubric (English), not the Mandarin one sharing its id.
    assert "blue kettle" in spec["rubrics"]["r-kitchen-001-main"]["atomic_criteria"][0]["criterion"]


def test_pattern_ids_for_the_judge(release):
    specs = read_release(release, check_audio=False).specs()
    internal = {s["pattern"]: s["logic_pattern"] for s in specs.values()}
    assert internal == {
        "sequential_constraint_integration": "constraint_attribution_under_interleaving",
        "speaker_authority_constraint": "authority_gated_override",
        "selective_disclosure": "disclosure_clause_in_instruction",
        "scope_tracking": "distributed_parameters",
        "background_speech_retrieval": "eavesdropping",
        "constraint_prioritization": "hard_vs_soft_constraint",
    }


def expected_release_wide_map(root: Path) -> dict:
    cases = rows(root, CASES)
    entry_of = {c["case_id"]: f"{c['language']}_{c['pattern']}" for c in cases}
    by_entry = defaultdict(list)
    for case in cases:
        for rubric in rows(root, RUBRICS):
            if rubric["case_id"] == case["case_id"]:
                by_entry[entry_of[case["case_id"]]].append(rubric)
    out = {}
    for entry in sorted(by_entry):
        for rubric in by_entry[entry]:
            out[rubric["rubric_id"]] = rubric
    return out


def test_release_wide_map_later_entries_overwrite(release):
    read = read_release(release, check_audio=False)
    expected = expected_release_wide_map(release)
    assert read.rubric_map == expected
    # "zh_speaker_authority_constraint" sorts last, so the shared id resolves to Mandarin.
    assert read.rubric_map["r-kitchen-001-main"]["case_id"] == "msi-zh-auth-kitchen-001"


def test_fallback_atoms_follow_rubric_ids_and_the_release_wide_map(release):
    specs = read_release(release, check_audio=False).specs()
    wide = expected_release_wide_map(release)
    for case in rows(release, CASES):
        ev = case["eval"]
        spec_tv = ev["tool_validation"]
        requires = spec_tv is not None and len(spec_tv.get("required_calls", [])) > 0
        atoms = sum(len(wide[r]["atomic_criteria"]) for r in ev["rubric_ids"] or [] if r in wide)
        assert specs[case["case_id"]]["fallback_atoms"] == atoms + int(requires), case["case_id"]
    # A duplicated id counts twice; the Mandarin row of a shared id has one more atom.
    spec = specs["msi-en-disc-kitchen-001"]
    assert spec["rubric_ids"] == ["r-kitchen-001-main", "r-kitchen-001-main"]


def test_hear_probe_cells(release):
    specs = read_release(release, check_audio=False).specs()
    hear = {cid: s for cid, s in specs.items() if s["kind"] == "hear"}
    assert hear["msi-en-auth-kitchen-001h"]["counts_in_prr"] is False
    assert {s["pattern_code"] for s in hear.values() if s["counts_in_prr"]} == {"disc", "retr"}
    spec = hear["msi-en-disc-kitchen-001h"]
    base = specs["msi-en-disc-kitchen-001"]
    assert spec["turns"] == base["turns"][: spec["n_lines"]]
    assert spec["probe_line"]["text"] == base["turns"][spec["n_lines"] - 1]["text"]


def test_speak_probe_stimulus_fields(release):
    specs = read_release(release, check_audio=False).specs()
    spec = specs["msi-en-auth-kitchen-001s"]
    digest = hashlib.md5(b"speak_truncate:internal-msi-en-auth-kitchen-001").hexdigest()
    assert spec["truncate_fraction"] == 0.1 + 0.4 * int(digest[:8], 16) / 2**32
    assert spec["barge_in_prefix"].endswith(" <STOPPED>")
    assert spec["audio"] == "probes/audio_live/msi-en-auth-kitchen-001.wav"
    assert spec["gold_tool_calls"] == []


def test_barge_in_prefix_by_hand():
    answer = "one two three four five six seven eight nine ten"
    # 10 words x 0.25 = 2.5 -> banker's round 2 -> at least 3 words.
    assert barge_in_prefix(answer, 0.25) == "one two three <STOPPED>"
    assert barge_in_prefix(answer, 0.45) == "one two three four <STOPPED>"  # 4.5 -> 4
    assert barge_in_prefix(answer, 0.5) == "one two three four five <STOPPED>"
    # Fewer than six words: characters, at least 4, right-stripped.
    assert barge_in_prefix("好的我马上安排", 0.3) == "好的我马 <STOPPED>"  # 7 x 0.3 = 2.1 -> 4
    assert barge_in_prefix("ok sure go", 0.5) == "ok su <STOPPED>"  # 10 x 0.5 = 5
    assert (
        barge_in_prefix("abc defg", 0.5) == "abc <STOPPED>"
    )  # 4 characters "abc ", right-stripped
    assert 0.1 <= speak_truncate_fraction("anything") < 0.5


def test_warnings_for_what_the_harness_tolerates(release):
    items = rows(release, RUBRICS)
    items.append({"case_id": "msi-en-auth-nowhere-001", "rubric_id": "x", "atomic_criteria": []})
    write_rows(release, RUBRICS, items)
    speak = rows(release, SPEAK)
    speak.append(dict(speak[0]))
    write_rows(release, SPEAK, speak)
    read = read_release(release, check_audio=False)
    warnings = "\n".join(read.warnings)
    assert "index/rubrics.jsonl line 31 (msi-en-auth-nowhere-001): no such case" in warnings
    assert (
        f"probes/speak_probe.jsonl line 25 ({speak[0]['case_id']}): repeats the row of line 1"
        in warnings
    )
    assert "rubric 'r-kitchen-002-absent' is not in entry en_selective_disclosure" in warnings
    assert "is not data/" not in warnings  # the synthetic layout is the release's


def test_a_case_directory_outside_the_layout_is_a_warning(release):
    case = rows(release, CASES)[0]
    moved = "data/elsewhere/" + case["case_id"]
    (release / moved).parent.mkdir(parents=True)
    (release / case["path"]).rename(release / moved)
    edit(release, CASES, 0, lambda c: c.update(path=moved))
    warnings = read_release(release, check_audio=False).warnings
    assert (
        f"index/cases.jsonl line 1 ({case['case_id']}): path {moved} is not {case['path']}"
        in warnings
    )


# --- validation errors, each naming file, line and case ---------------------------------------------


def test_case_id_must_match_the_harness_pattern(release):
    edit(release, CASES, 0, lambda c: c.update(case_id="msi-en-auth"))
    assert any(
        p.startswith("index/cases.jsonl line 1 (msi-en-auth): case_id does not match")
        for p in problems(release)
    )


def test_case_id_code_must_be_a_pattern(release):
    edit(release, CASES, 0, lambda c: c.update(case_id="msi-en-xyz-kitchen-001"))
    assert any("case_id pattern code 'xyz' is none of auth, disc" in p for p in problems(release))


def test_unknown_pattern(release):
    edit(release, CASES, 0, lambda c: c.update(pattern="turn_taking"))
    assert any(
        "line 1 (msi-en-auth-kitchen-001): pattern 'turn_taking' is none of the six" in p
        for p in problems(release)
    )


def test_code_must_belong_to_the_pattern(release):
    edit(release, CASES, 0, lambda c: c.update(pattern="selective_disclosure"))
    assert any(
        "case_id code 'auth' does not belong to pattern 'selective_disclosure'" in p
        for p in problems(release)
    )


def test_duplicate_case_id(release):
    items = rows(release, CASES)
    items.append(items[0])
    write_rows(release, CASES, items)
    assert (
        "index/cases.jsonl line 25 (msi-en-auth-kitchen-001): case_id repeats line 1"
        in problems(release)
    )


def test_case_json_must_exist_and_match(release):
    case = rows(release, CASES)[0]
    (release / case["path"] / "case.json").write_text('{"case_id": "other"}')
    assert any(
        "case.json does not describe case 'msi-en-auth-kitchen-001'" in p for p in problems(release)
    )
    (release / case["path"] / "case.json").unlink()
    assert any(
        p.endswith("msi-en-auth-kitchen-001/case.json is missing") for p in problems(release)
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c: c.update(turns=[]), "turns must be a non-empty list"),
        (lambda c: c["turns"][0].update(text=None), "turns[0].text must be a string"),
        (lambda c: c["turns"][0].pop("speaker"), "turns[0].speaker must be a string"),
        (lambda c: c["turns"][0].pop("addressed_to"), "turns[0].addressed_to is required"),
        (lambda c: c["turns"][0].pop("audio"), "turns[0].audio must name the line's clip"),
        (lambda c: c["turns"][0].update(role=""), "turns[0].role must be a non-empty string"),
        (lambda c: c.pop("scene"), "scene must be a non-empty string"),
        (lambda c: c.pop("path"), "path (the case directory, relative to the release) must be"),
        (lambda c: c.update(path="data/none"), "case directory data/none does not exist"),
        (lambda c: c.pop("eval"), "eval must be an object"),
        (
            lambda c: c["eval"].pop("expected_action"),
            "eval.expected_action must be a non-empty string",
        ),
        (
            lambda c: c["eval"].update(rubric_ids="r1"),
            "eval.rubric_ids must be a list of non-empty strings or null",
        ),
        (
            lambda c: c["eval"].update(rubric_ids=[""]),
            "eval.rubric_ids must be a list of non-empty strings or null",
        ),
        (
            lambda c: c["eval"].update(answer_judge_inputs=[{"rubric_id": ""}]),
            "eval.answer_judge_inputs[0].rubric_id must be a non-empty string",
        ),
        (
            lambda c: c["eval"].update(answer_judge_inputs={"rubric_id": "x"}),
            "eval.answer_judge_inputs must be a list of objects or null",
        ),
        (
            lambda c: c["eval"].update(standard_answer=3),
            "eval.standard_answer must be a string or null",
        ),
        (
            lambda c: c["eval"].update(tool_validation={"call_policy": "no_calls", "x": 1}),
            "eval.tool_validation.x: unknown field",
        ),
        (
            lambda c: c["eval"].update(
                tool_validation={
                    "call_policy": "required_subset",
                    "required_calls": [{"name": "a"}],
                    "forbidden_call_names": ["a"],
                }
            ),
            "eval.tool_validation: required tool names cannot also be forbidden: ['a']",
        ),
    ],
)
def test_case_field_errors(release, change, message):
    edit(release, CASES, 0, change)
    found = problems(release)
    assert any(
        p.startswith("index/cases.jsonl line 1 (msi-en-auth-kitchen-001): " + message)
        for p in found
    ), found


def test_audio_files_are_checked(tmp_path):
    root = tmp_path / "with-audio"
    write_release(root, languages=("en",), cases_per_scene=1)
    read_release(root)  # every clip present
    case = rows(root, CASES)[0]
    (root / case["path"] / "lines" / "02.wav").unlink()
    speak = rows(root, SPEAK)[1]
    (root / speak["audio"]).unlink()
    with pytest.raises(ReleaseError) as caught:
        read_release(root)
    found = [str(p) for p in caught.value.problems]
    assert (
        f"index/cases.jsonl line 1 ({case['case_id']}): turns[1].audio {case['path']}/lines/02.wav does not exist"
        in found
    )
    assert (
        f"probes/speak_probe.jsonl line 2 ({speak['case_id']}): audio {speak['audio']} does not exist"
        in found
    )


def test_duplicate_rubric_id_inside_an_entry(release):
    items = rows(release, RUBRICS)
    # Give the second English auth case a rubric with the first case's id: same entry.
    items.append(
        {
            "case_id": "msi-en-auth-kitchen-002",
            "rubric_id": "r-kitchen-001-main",
            "atomic_criteria": [],
        }
    )
    write_rows(release, RUBRICS, items)
    found = problems(release)
    assert (
        "index/rubrics.jsonl line 31 (msi-en-auth-kitchen-002): rubric_id 'r-kitchen-001-main' repeats "
        "line 1 inside entry en_speaker_authority_constraint (ids must be unique per language and pattern)"
    ) in found


def test_same_rubric_id_in_other_entries_is_fine(release):
    read_release(release, check_audio=False)  # the synthetic release shares ids across entries


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda r: r["atomic_criteria"][0].update(criterion=""),
            "atomic_criteria[0].criterion must be a non-empty string",
        ),
        (
            lambda r: r["atomic_criteria"][0].update(dimension=None),
            "atomic_criteria[0].dimension must be a non-empty string when present",
        ),
        (
            lambda r: r["atomic_criteria"][0].update(criterion_index=-1),
            "atomic_criteria[0].criterion_index must be a non-negative integer",
        ),
        (lambda r: r.update(atomic_criteria={}), "atomic_criteria must be a list"),
        (lambda r: r.update(rubric_id=""), "rubric_id must be a non-empty string"),
    ],
)
def test_rubric_errors(release, change, message):
    edit(release, RUBRICS, 0, change)
    assert any(
        p.startswith("index/rubrics.jsonl line 1 (msi-en-auth-kitchen-001): ") and message in p
        for p in problems(release)
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda h: h["probe_line"].update(text="something else"), "probe_line is not line"),
        (lambda h: h.update(n_lines=0), "n_lines 0 is outside 1.."),
        (lambda h: h.update(n_lines=True), "n_lines must be an integer"),
        (lambda h: h.update(n_lines=2), "probe_line is not line 2 of the case"),
        (
            lambda h: h.update(probe_line="x"),
            "probe_line must be an object with string speaker and text",
        ),
    ],
)
def test_hear_probe_errors(release, change, message):
    probe = edit(release, HEAR, 0, change)
    found = problems(release)
    assert any(
        p.startswith(f"probes/hear_probe.jsonl line 1 ({probe['case_id']}): {message}")
        for p in found
    ), found


def test_every_case_needs_a_speak_probe(release):
    items = rows(release, SPEAK)
    write_rows(release, SPEAK, items[1:])
    assert (
        f"probes/speak_probe.jsonl ({items[0]['case_id']}): the case has no speak probe row"
        in problems(release)
    )


@pytest.mark.parametrize(
    "key",
    ["source_cell_id", "expansion_type", "audio", "live_event", "anchor", "expected_live_behavior"],
)
def test_speak_probe_fields(release, key):
    probe = edit(release, SPEAK, 0, lambda p: p.pop(key))
    assert any(
        p.startswith(f"probes/speak_probe.jsonl line 1 ({probe['case_id']}): {key} must be")
        for p in problems(release)
    )


def test_jsonl_level_errors(release):
    path = release / CASES
    lines = path.read_text("utf-8").splitlines()
    lines.insert(2, "")  # blank lines are skipped but counted
    lines.insert(3, "{not json")
    lines.insert(4, "[1, 2]")
    lines.insert(5, '{"case_id": NaN}')
    path.write_text("\n".join(lines) + "\n", "utf-8")
    found = problems(release)
    assert any(p.startswith("index/cases.jsonl line 4: invalid JSON") for p in found)
    assert "index/cases.jsonl line 5: a line must hold a JSON object" in found
    assert "index/cases.jsonl line 6: NaN is not allowed (only finite JSON numbers)" in found


def test_bom_and_missing_files(release):
    path = release / RUBRICS
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    (release / HEAR).unlink()
    found = problems(release)
    assert "index/rubrics.jsonl: line 1: file starts with a UTF-8 byte-order mark (BOM)" in found
    assert "probes/hear_probe.jsonl: file is missing" in found


def test_specs_are_plain_json(release):
    read = read_release(release, check_audio=False)
    for task in read.tasks:
        assert json.loads(json.dumps(task.spec, ensure_ascii=False)) == task.spec
