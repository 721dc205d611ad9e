"""The plug-in's hooks without a database: declarations, import, upload validation and ingest,
the validator step, judge requests (byte for byte against an independent render), parsing,
aggregation from stored outcomes, the drill-down, rating units and the paper's rows.

The release is imported with the demo's stand-in templates; only the two tests whose subject is
the harness's own templates (what the import reads, the messages rendered from them) import with
those, and skip without ../shared."""

from __future__ import annotations

import hashlib
import io
import json
import math
import shutil
import zipfile
from pathlib import Path

import pytest

from evaluation.benchmarks import registry
from evaluation.benchmarks.base import (
    JudgedSlot,
    SourceError,
    TaskInput,
    TaskOutcome,
    UploadLimits,
)
from evaluation.benchmarks.msibench import plugin
from evaluation.benchmarks.msibench.demo.bench import score_upload, write_offline_answers
from evaluation.benchmarks.msibench.demo.synthetic import (
    synthetic_predictions,
    wrap_judge_output,
    write_predictions,
)
from evaluation.benchmarks.msibench.judge import load_templates
from evaluation.benchmarks.msibench.predictions import parse_predictions
from evaluation.benchmarks.msibench.release import read_release
from evaluation.benchmarks.msibench.upload import SINGLE_FILE, prediction_data
from evaluation.bundles import ValidationReport

from .conftest import CHECKOUT_DIR, expected_messages, jsonl

LIMITS = UploadLimits(max_bytes=10**9, max_ratio=200.0)
SEQ = "msi-en-seq-kitchen-001"  # slot 6: two set_status requirements (SPEC §4.5's example)
AUTH = "msi-en-auth-kitchen-001"  # slot 0: exact_multiset reserve_item, forbidden transfer_item
AUTH2 = "msi-en-auth-kitchen-002"  # slot 1: notify, an assistant line, a second rubric


@pytest.fixture(scope="module")
def source(release_dir, stand_in_checkout):
    return plugin.read_source(release_dir, templates=str(stand_in_checkout))


@pytest.fixture(scope="module")
def harness_source(release_dir, harness_checkout):
    return plugin.read_source(release_dir, templates=str(harness_checkout))


@pytest.fixture(scope="module")
def specs(source) -> dict[str, dict]:
    return {task.task_id: task.spec for task in source.tasks}


def version_of(source):
    found = source.prompts[0]

    class Version:  # what the engine hands the hook: a prompt version's fields
        template = found.template
        parts = found.parts
        schema = found.schema

    return Version


@pytest.fixture(scope="module")
def prompt(source):
    return version_of(source)


@pytest.fixture(scope="module")
def harness_prompt(harness_source):
    return version_of(harness_source)


def strong_rows(specs, **kwargs) -> list[dict]:
    return synthetic_predictions(specs, profile="strong", **kwargs)


def row_of(rows: list[dict], cell_id: str) -> dict:
    return next(row for row in rows if row["cell_id"] == cell_id)


def validate(path: Path, specs, *, allow_partial=False, mode="turn-based"):
    report = ValidationReport()
    contents = plugin.validate_upload(
        path,
        report,
        tasks=specs,
        allow_partial=allow_partial,
        options={"mode": mode},
        limits=LIMITS,
    )
    return report, contents


def data_of(row: dict) -> dict:
    """A row as ingest stores it (normalised, with where it came from)."""
    (prediction,), problems = parse_predictions(json.dumps(row) + "\n", source=SINGLE_FILE)
    assert not problems
    return prediction_data(prediction)


# --- declarations ----------------------------------------------------------------------------


def test_declarations_follow_the_paper_and_the_harness():
    assert "msi-bench" in registry() and registry()["msi-bench"] is plugin
    assert [s.key for s in plugin.splits] == ["en", "zh"]
    assert plugin.rank_keys == ("apr",)
    by_key = {m.key: m for m in plugin.metrics}
    assert list(by_key)[:6] == ["apr", "apr_half_width", "ars", "tool", "bir", "prr"]
    assert [k for k in by_key if k.startswith("per_pattern.")] == [
        f"per_pattern.{code}" for code in ("auth", "disc", "prior", "seq", "scope", "retr")
    ]
    assert [by_key[f"per_pattern.{c}"].label for c in ("auth", "disc", "prior")] == [
        "Auth",
        "Discl",
        "Prior",
    ]
    rates = [m for m in plugin.metrics if m.type == "rate"]
    assert all(m.decimals == 1 and m.unit == "%" for m in rates)
    assert by_key["apr"].interval == "wilson" and by_key["apr_half_width"].decimals == 1
    assert by_key["prr"].higher_is_better is False
    assert "barge-in (harness v2)" in by_key["bir"].label
    assert (by_key["prr.total"].label, by_key["prr.probes"].label) == ("V", "T")
    scatter, bars = plugin.charts
    assert (scatter.kind, scatter.metrics) == ("scatter", ("prr", "apr"))
    assert bars.kind == "bars" and len(bars.metrics) == 6
    judge = plugin.official_judge
    assert judge.provider == "openai" and judge.models_by_kind == {
        "rubric": "deepseek/deepseek-v4-pro"
    }
    assert judge.base_url == "https://openrouter.ai/api/v1"
    assert judge.send_sampling_params is False
    (kind,) = plugin.judge_kinds
    assert kind.key == "rubric" and kind.response_format == "json_object"
    assert kind.answer_attempts > 1 and kind.unparseable == "outcome"
    (option,) = plugin.upload.options
    assert option.name == "mode" and [c for c, _ in option.choices] == [
        "turn-based",
        "full-duplex",
    ]
    assert set(plugin.upload.suffixes) == {".jsonl", ".zip"}
    assert [s.scope for s in plugin.steps] == ["task"]


# --- import ------------------------------------------------------------------------------------


def test_import_reads_the_templates_from_the_harness_checkout(harness_source, harness_checkout):
    (prompt,) = harness_source.prompts
    folder = harness_checkout / CHECKOUT_DIR
    assert prompt.kind == "rubric"
    assert prompt.template == (folder / "judge_system.j2").read_bytes().decode("utf-8")
    assert dict(prompt.parts) == {"user": (folder / "judge_user.j2").read_bytes().decode("utf-8")}
    assert prompt.schema is None


def test_import_yields_every_cell_with_rubric_versions(source, release_dir):
    release = read_release(release_dir)
    assert [t.task_id for t in source.tasks] == [t.task_id for t in release.tasks]
    rubrics = {
        (r["case_id"], r["rubric_id"]): r for r in jsonl(release_dir / "index/rubrics.jsonl")
    }
    specs = {task.task_id: task.spec for task in source.tasks}
    for task in source.tasks:
        if task.spec["kind"] == "speak":
            # The case's lines stay on its base cell.
            assert "turns" not in task.spec
            assert task.spec["n_lines"] == len(specs[task.spec["case_id"]]["turns"])
        if task.spec["kind"] != "base":
            assert "rubric_versions" not in task.spec
            continue
        for rubric_id, version in task.spec["rubric_versions"].items():
            row = {k: v for k, v in rubrics[(task.task_id, rubric_id)].items() if k != "case_id"}
            text = json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            assert version == hashlib.sha256(text.encode()).hexdigest()[:12]


def test_import_streams_each_line_and_bystander_clip(source, release_dir):
    assets = list(source.assets)
    cases = {row["case_id"]: row for row in jsonl(release_dir / "index/cases.jsonl")}
    expected = set()
    for case_id, row in cases.items():
        for turn in row["turns"]:
            if turn.get("audio"):
                expected.add((case_id, turn["audio"]))
        expected.add((case_id + "s", "bystander.wav"))
    assert {(a.task_id, a.name) for a in assets} == expected
    first = next(a for a in assets if a.name == "lines/02.wav")
    with first.open() as handle:
        data = handle.read()
    assert data == (release_dir / cases[first.task_id]["path"] / "lines/02.wav").read_bytes()
    assert data[:4] == b"RIFF"


def test_import_without_templates_says_where_to_find_them(release_dir):
    with pytest.raises(SourceError, match="--templates"):
        plugin.read_source(release_dir)
    with pytest.raises(SourceError, match="not found"):
        plugin.read_source(release_dir, templates=str(release_dir / "nowhere"))


def test_a_changed_rubric_changes_only_its_case(tmp_path, release_dir, stand_in_checkout, specs):
    copy = tmp_path / "release"
    shutil.copytree(release_dir, copy)
    path = copy / "index/rubrics.jsonl"
    rows = jsonl(path)
    target = next(r for r in rows if r["case_id"] == AUTH)
    target["atomic_criteria"][0]["criterion"] += " Exactly."
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    changed = {
        t.task_id: t.spec for t in plugin.read_source(copy, templates=str(stand_in_checkout)).tasks
    }
    differing = sorted(cell for cell in specs if changed[cell] != specs[cell])
    assert differing == [AUTH]
    rubric_id = target["rubric_id"]
    assert changed[AUTH]["rubric_versions"][rubric_id] != specs[AUTH]["rubric_versions"][rubric_id]


def test_a_broken_template_is_refused(tmp_path, release_dir, stand_in_checkout):
    folder = tmp_path / "templates"
    shutil.copytree(stand_in_checkout / CHECKOUT_DIR, folder)
    (folder / "judge_user.j2").write_text("manifest={{ manifest_json }\n", "utf-8")
    with pytest.raises(SourceError, match="judge_user.j2 line 1"):
        plugin.read_source(release_dir, templates=str(folder))


# --- uploads ---------------------------------------------------------------------------------


def test_whole_file_rules_reject_with_line_and_field(tmp_path, specs):
    rows = strong_rows(specs, languages=("en",))
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    lines[1] = json.dumps({**json.loads(lines[1]), "predicted_action": "Respond"})
    bad = json.loads(lines[2])
    bad["tool_calls"] = None
    lines[2] = json.dumps(bad)
    lines[3] = lines[3][:-1] + ', "confidence": NaN}'
    lines[4] = json.dumps({**json.loads(lines[4]), "cell_id": json.loads(lines[0])["cell_id"]})
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    report, contents = validate(path, specs)
    found = [(p.file, p.message) for p in report.problems]
    assert (
        "run.jsonl",
        'line 2, field predicted_action: must be "respond" or "silent" (case-sensitive)',
    ) in found
    assert any(m.startswith("line 3, field tool_calls:") for _, m in found)
    assert any(m.startswith("line 4: NaN is not allowed") for _, m in found)
    assert any(m.startswith("line 5, field cell_id: duplicate cell_id") for _, m in found)
    assert len(found) == 4 and not contents.present


def test_text_no_database_stores_is_refused(tmp_path, specs):
    rows = strong_rows(specs, languages=("en",))
    rows[2]["answer_text"] = "nul\x00here"
    path = tmp_path / "nul.jsonl"
    write_predictions(path, rows)
    report, contents = validate(path, specs)
    (problem,) = report.problems
    assert problem.message == (
        "line 3, field answer_text: holds a NUL character (\\u0000), which cannot be stored"
    )
    assert not contents.present


def test_a_file_without_the_jsonl_suffix_is_read_as_jsonl(tmp_path, specs):
    # Uploads through the site arrive under a temporary name.
    path = tmp_path / "floorboard-upload-x.zip"
    write_predictions(path, strong_rows(specs))
    report, contents = validate(path, specs)
    assert report.ok, report.problems
    assert contents.present == set(specs) and contents.missing == []


def test_languages_covered_follow_the_predictions(tmp_path, specs):
    path = tmp_path / "en.jsonl"
    write_predictions(path, strong_rows(specs, languages=("en",)))
    report, contents = validate(path, specs)
    assert report.ok and contents.missing == []
    assert contents.present == {c for c, s in specs.items() if s["language"] == "en"}


def test_missing_cells_need_allow_partial(tmp_path, specs):
    rows = [
        r
        for r in strong_rows(specs, languages=("zh",))
        if r["cell_id"] != "msi-zh-disc-kitchen-001h"
    ]
    rows.append({"cell_id": "msi-zh-nothing-here", "predicted_action": "silent"})
    path = tmp_path / "zh.jsonl"
    write_predictions(path, rows)
    report, _ = validate(path, specs)
    assert len(report.problems) == 1
    assert (
        "1 cell(s) of the languages covered (zh) have no prediction: msi-zh-disc-kitchen-001h"
        in (report.problems[0].message)
    )
    assert any("msi-zh-nothing-here" in w.message for w in report.warnings)
    report, contents = validate(path, specs, allow_partial=True)
    assert report.ok and contents.missing == ["msi-zh-disc-kitchen-001h"]


def test_a_zip_of_base_hear_and_speak_files_with_a_manifest(tmp_path, specs):
    rows = strong_rows(specs)
    path = tmp_path / "run.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            "out/base_hear.jsonl",
            "".join(json.dumps(r) + "\n" for r in rows if r["cell_id"][-1] != "s"),
        )
        archive.writestr(
            "out/speak.jsonl",
            "".join(json.dumps(r) + "\n" for r in rows if r["cell_id"][-1] == "s"),
        )
        archive.writestr("manifest.json", json.dumps({"organization": "Lab", "open_weights": True}))
        archive.writestr("README.txt", "notes")
    report, contents = validate(path, specs)
    assert report.ok, report.problems
    assert contents.present == set(specs) and contents.manifest["organization"] == "Lab"
    assert [w.file for w in report.warnings] == ["README.txt"]
    assert plugin.group_for(manifest=contents.manifest, declared="") == "open-weights"
    with path.open("rb") as handle:
        ingested = {t.task_id: t.data for t in plugin.ingest(handle, tasks=specs, limits=LIMITS)}
    assert set(ingested) == set(specs)
    speak = next(c for c in ingested if c.endswith("s"))
    assert ingested[speak]["source"] == {"file": "out/speak.jsonl", "line": 1}


def test_a_cell_in_two_files_is_a_duplicate(tmp_path, specs):
    row = strong_rows(specs)[0]
    path = tmp_path / "dup.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.jsonl", json.dumps(row) + "\n")
        archive.writestr("b.jsonl", "\n" + json.dumps(row) + "\n")
    report, _ = validate(path, specs, allow_partial=True)
    (problem,) = report.problems
    assert problem.file == "b.jsonl" and problem.message.startswith("line 2, field cell_id")
    assert "also a.jsonl line 1" in problem.message


def test_ingest_stores_the_normalised_row(specs):
    line = {
        "cell_id": AUTH,
        "predicted_action": "respond",
        "answer_text": "ok",
        "confidence": "0.5",
    }
    handle = io.BytesIO((json.dumps(line) + "\n").encode())
    (task,) = plugin.ingest(handle, tasks=specs, limits=LIMITS)
    assert task.task_id == AUTH and task.data == data_of(line) == {
        "cell_id": AUTH,
        "predicted_action": "respond",
        "answer_text": "ok",
        "tool_calls": [],
        "confidence": 0.5,
        "metadata": None,
        "source": {"file": "predictions.jsonl", "line": 1},
    }


# --- the validator step ----------------------------------------------------------------------


def test_validator_step_stores_verdict_pairs_and_reasons(specs):
    calls = [
        {"name": "set_status", "arguments": {"state": "held"}},
        {"name": "set_status", "arguments": {"state": "kept"}},
    ]
    data = data_of({"cell_id": SEQ, "predicted_action": "respond", "tool_calls": calls})
    task = TaskInput(SEQ, specs[SEQ], data=data)
    found = plugin.run_task_step(plugin.steps[0], task, facts={"mode": "turn-based"})
    # held satisfies both requirements, kept only the first: the matching must pair them
    # crosswise (SPEC §4.5), in the harness's augmenting order.
    assert found["validator"]["passed"] is True and found["tool_passed"] is True
    assert found["validator"]["matched_pairs"] == [
        {"required_index": 0, "predicted_index": 1, "name": "set_status"},
        {"required_index": 1, "predicted_index": 0, "name": "set_status"},
    ]
    wrong = [
        {
            "name": "reserve_item",
            "arguments": {"item": "blue kettle", "holder": "Theo", "days": "3"},
        },
        {"name": "transfer_item", "arguments": {}},
    ]
    data = data_of({"cell_id": AUTH, "predicted_action": "respond", "tool_calls": wrong})
    found = plugin.run_task_step(plugin.steps[0], TaskInput(AUTH, specs[AUTH], data=data), facts={})
    verdict = found["validator"]
    assert verdict["passed"] is False and found["tool_passed"] is False
    assert verdict["forbidden_predicted"] == [1] and verdict["matched_pairs"] == []
    assert verdict["reasons"][0] == "call 1 ('transfer_item') calls a forbidden tool"
    assert "days" in verdict["reasons"][1]
    missing = plugin.run_task_step(plugin.steps[0], TaskInput(AUTH, specs[AUTH]), facts={})
    assert missing["predicted"] is False and missing["tool_passed"] is False


def test_probe_outcomes_follow_the_declared_mode(specs):
    hear = "msi-en-disc-kitchen-001h"
    for action, answer, failed in (("silent", "\u3000", False), ("respond", "Sure", True)):
        data = data_of({"cell_id": hear, "predicted_action": action, "answer_text": answer})
        found = plugin.run_task_step(
            plugin.steps[0], TaskInput(hear, specs[hear], data=data), facts={}
        )
        assert found["probe"]["failed"] is failed and found["probe"]["counts_in_prr"] is True
    speak = AUTH + "s"
    row = {
        "cell_id": speak,
        "predicted_action": "respond",
        "answer_text": "…",
        "metadata": {"live_probe": {"executed": True, "interrupted": True}},
    }
    task = TaskInput(speak, specs[speak], data=data_of(row))
    live = plugin.run_task_step(plugin.steps[0], task, facts={"mode": "full-duplex"})
    turn = plugin.run_task_step(plugin.steps[0], task, facts={"mode": "turn-based"})
    # Full-duplex reads the live probe (interrupted: fails); turn-based passes any respond
    # without tool calls (SPEC §9.24).
    assert (live["probe"]["passed"], turn["probe"]["passed"]) == (False, True)
    assert (live["run_mode"], turn["run_mode"]) == ("full-duplex", "turn-based")


# --- judge requests --------------------------------------------------------------------------


def test_requests_are_the_harness_messages_byte_for_byte(
    harness_source, harness_prompt, release_dir, harness_checkout
):
    specs = {task.task_id: task.spec for task in harness_source.tasks}
    prompt = harness_prompt
    cases = {row["case_id"]: row for row in jsonl(release_dir / "index/cases.jsonl")}
    rubrics = {}
    for row in jsonl(release_dir / "index/rubrics.jsonl"):
        rubrics[(row["case_id"], row["rubric_id"])] = row
    rows = strong_rows(specs)
    # Lax confidence (SPEC §9.6), non-ASCII and markup reach the judge as the harness shows them.
    row_of(rows, AUTH).update(confidence="0.5", answer_text="Gern – «keep» [ok] 好")
    row_of(rows, AUTH2).update(confidence=True)
    checked = 0
    for cell_id, spec in specs.items():
        row = row_of(rows, cell_id)
        requests = plugin.judgment_requests(
            TaskInput(cell_id, spec, data=data_of(row)), prompts={"rubric": prompt}, facts={}
        )
        if spec["kind"] != "base":
            assert requests == []
            continue
        entry_ids = sorted({r[1] for r in rubrics if r[0] == cell_id})
        refs = set(cases[cell_id]["eval"]["rubric_ids"] or [])
        refs |= {i["rubric_id"] for i in cases[cell_id]["eval"]["answer_judge_inputs"] or []}
        assert [r.slot for r in requests] == sorted(refs & set(entry_ids))
        for request in requests:
            system, user = expected_messages(
                harness_checkout / CHECKOUT_DIR,
                cases[cell_id],
                rubrics[(cell_id, request.slot)],
                row,
            )
            assert request.system.encode() == system.encode()
            assert request.prompt.encode() == user.encode()
            assert request.fixed is None and request.kind == "rubric"
            assert len(request.context["atoms"]) == len(
                rubrics[(cell_id, request.slot)]["atomic_criteria"]
            )
            checked += 1
    assert checked == 2 * 12 + 2 * 3  # every base case, plus the second rubric of slots 1, 5, 9
    assert (
        '"confidence": 0.5'
        in plugin.judgment_requests(
            TaskInput(AUTH, specs[AUTH], data=data_of(row_of(rows, AUTH))),
            prompts={"rubric": prompt},
            facts={},
        )[0].prompt
    )


def test_no_call_where_the_outcome_is_fixed(specs, prompt):
    def requests(row):
        task = TaskInput(row["cell_id"], specs[row["cell_id"]], data=data_of(row) if row else {})
        return plugin.judgment_requests(task, prompts={"rubric": prompt}, facts={})

    empty = requests({"cell_id": AUTH2, "predicted_action": "respond", "answer_text": " \u3000"})
    assert [r.slot for r in empty] == sorted(specs[AUTH2]["judge_rubric_ids"])
    assert all(r.prompt == "" and r.fixed["verdict"] is False for r in empty)
    assert all(r.fixed["fixed"] == "empty_answer" for r in empty)
    main = next(r for r in empty if r.slot.endswith("-main")).fixed["atoms"]
    # The guard fails every atom but tool.call_args, which is never scored (shown as not judged).
    assert [(a["dimension"], a["passed"]) for a in main][-1] == ("tool.call_args", None)
    assert all(a["passed"] is False for a in main[:-1])
    error = requests(
        {
            "cell_id": AUTH,
            "predicted_action": "respond",
            "answer_text": "x",
            "metadata": {"provider_error": {}},
        }
    )
    assert [r.fixed["fixed"] for r in error] == ["format_error"]
    assert "format error" in error[0].label
    assert (
        plugin.judgment_requests(TaskInput(AUTH, specs[AUTH]), prompts={"rubric": prompt}, facts={})
        == []
    )


# --- parsing -------------------------------------------------------------------------------------


def context_of(specs, prompt, cell_id=AUTH, slot=None):
    """The parsing context of a case's rubric (its main one by default)."""
    data = data_of({"cell_id": cell_id, "predicted_action": "respond", "answer_text": "hi"})
    requests = plugin.judgment_requests(
        TaskInput(cell_id, specs[cell_id], data=data), prompts={"rubric": prompt}, facts={}
    )
    return next(r for r in requests if r.slot.endswith(slot or "-main")).context


def test_parsing_aligns_atoms_by_position(specs, prompt):
    context = context_of(specs, prompt)  # four atoms, the last tool.call_args (never scored)
    parsed = plugin.parse_output(
        "rubric", wrap_judge_output([True, True, True, False]), context=context
    )
    assert parsed.verdict is True and parsed.output["verdict"] is True
    assert [a["passed"] for a in parsed.output["atoms"]] == [True, True, True, False]
    fenced = plugin.parse_output(
        "rubric", wrap_judge_output([True, False, True, True], style="fenced"), context=context
    )
    assert fenced.verdict is False and fenced.reasoning == "ok"
    short = plugin.parse_output(
        "rubric", wrap_judge_output([True] * 4, style="short"), context=context
    )
    assert short.output["atoms"][3]["reason_if_forced"] == "judge omitted this atomic criterion"


@pytest.mark.parametrize("style", ["list", "string_bool", "null_rationale", "empty"])
def test_malformed_answers_are_unparseable(specs, prompt, style):
    parsed = plugin.parse_output(
        "rubric", wrap_judge_output([True] * 4, style=style), context=context_of(specs, prompt)
    )
    assert parsed.output is None and parsed.verdict is None and parsed.error


# --- aggregation -----------------------------------------------------------------------------


def outcome(specs, cell_id, row=None, judged=None, detection=None) -> TaskOutcome:
    return TaskOutcome(
        cell_id, specs[cell_id], data_of(row) if row else {}, detection or {}, judged or {}
    )


def test_aggregation_counted_by_hand(specs, prompt):
    rows = strong_rows(specs)
    a, b = row_of(rows, AUTH), row_of(rows, AUTH2)
    (main_a,) = specs[AUTH]["judge_rubric_ids"]
    extra_b, main_b = specs[AUTH2]["judge_rubric_ids"]  # sorted: "...-extra" < "...-main"
    good = plugin.parse_output(
        "rubric", wrap_judge_output([True] * 4), context=context_of(specs, prompt)
    )
    outcomes = [
        # A: its rubric passes (3 scored atoms) and the validator passes: 4 of 4 atoms.
        outcome(specs, AUTH, a, {("rubric", main_a): JudgedSlot("done", True, good.output)}),
        # B: the main rubric's answer never parsed (3 scored atoms fail), the extra rubric's call
        # failed (its 1 atom fails); the validator passes: 1 of 5 atoms.
        outcome(
            specs,
            AUTH2,
            b,
            {
                ("rubric", main_b): JudgedSlot("done", None, None),
                ("rubric", extra_b): JudgedSlot("failed", None, None),
            },
        ),
    ]
    (language,) = plugin.aggregate(outcomes, facts={}).values()
    assert language["apr"]["count"] == 1 and language["apr"]["total"] == 2
    assert language["apr"]["pct"] == 50.0
    # Wilson half-width at k=1, n=2, z=1.96, written out here.
    z, n, p = 1.96, 2, 0.5
    hw = 100 * z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert language["apr_half_width"] == {"value": round(hw + 1e-9, 1)} == {"value": 40.5}
    assert (language["ars"]["count"], language["ars"]["total"], language["ars"]["pct"]) == (
        5,
        9,
        55.6,
    )
    assert (language["tool"]["count"], language["tool"]["total"]) == (2, 2)
    assert language["judge_missing"] == 1
    assert language["per_pattern"]["auth"]["pct"] == 50.0
    assert language["per_pattern"]["disc"] == {"count": 0, "total": 0, "pct": None}
    assert language["prr"]["pct"] is None and language["bir"]["pct"] is None


def test_aggregation_matches_the_plain_pass(tmp_path, specs, release_dir, stand_in_checkout):
    """The engine's route (rows stored by ingest, the step's verdicts, stored judge answers)
    against bench.py's pass over the same files."""
    upload = tmp_path / "weak.jsonl"
    write_predictions(upload, synthetic_predictions(specs, profile="weak", run_mode="full-duplex"))
    answers = tmp_path / "answers.jsonl"
    write_offline_answers(release_dir, upload, answers, run_mode="full-duplex")
    stored = {(r["cell_id"], r["rubric_id"]): r["raw"] for r in jsonl(answers)}
    facts = {"mode": "full-duplex"}
    prompt = type("Version", (), {"template": "", "parts": {"user": ""}})
    outcomes = []
    with upload.open("rb") as handle:
        ingested = {t.task_id: t.data for t in plugin.ingest(handle, tasks=specs, limits=LIMITS)}
    templates = load_templates(stand_in_checkout)
    prompt.template, prompt.parts = templates.system, {"user": templates.user}
    for cell_id, spec in specs.items():
        task = TaskInput(cell_id, spec, data=ingested.get(cell_id, {}))
        detection = plugin.run_task_step(plugin.steps[0], task, facts=facts)
        judged = {}
        for request in plugin.judgment_requests(task, prompts={"rubric": prompt}, facts=facts):
            if request.fixed is not None:
                judged[("rubric", request.slot)] = JudgedSlot(
                    "fixed", request.fixed["verdict"], request.fixed
                )
            else:
                parsed = plugin.parse_output(
                    "rubric", stored[(cell_id, request.slot)], context=request.context
                )
                judged[("rubric", request.slot)] = JudgedSlot("done", parsed.verdict, parsed.output)
        outcomes.append(TaskOutcome(cell_id, spec, task.data, detection, judged))
    ours = plugin.aggregate(outcomes, facts=facts)
    plain = score_upload(
        release=read_release(release_dir),
        prediction_files=[upload],
        judge_outputs=answers,
        run_mode="full-duplex",
    )
    assert plain["calls_needed"] == 0
    for language, row in plain["results"].items():
        assert {k: v for k, v in ours[language].items() if k != "apr_half_width"} == row
        assert ours[language]["apr_half_width"]["value"] == row["apr"]["half_width"]


# --- drill-down and rating units ---------------------------------------------------------------


def test_drill_down_shows_pairs_atoms_and_ignored_dimensions(specs, prompt):
    calls = [
        {"name": "set_status", "arguments": {"state": "held"}},
        {"name": "set_status", "arguments": {"state": "kept"}},
    ]
    data = data_of(
        {"cell_id": SEQ, "predicted_action": "respond", "answer_text": "Done.", "tool_calls": calls}
    )
    (rubric_id,) = specs[SEQ]["judge_rubric_ids"]
    atoms = len(specs[SEQ]["rubrics"][rubric_id]["atomic_criteria"])
    parsed = plugin.parse_output(
        "rubric",
        wrap_judge_output([True] * (atoms - 1) + [False]),
        context=context_of(specs, prompt, SEQ),
    )
    assets = {f"lines/{n:02d}.wav": f"benchmarks/x/{SEQ}/lines/{n:02d}.wav" for n in range(1, 6)}
    task = TaskInput(SEQ, specs[SEQ], data=data, assets=assets)
    judged = {("rubric", rubric_id): JudgedSlot("done", parsed.verdict, parsed.output)}
    context = plugin.task_context(task, judged=judged)
    validator = context["validator"]
    assert [r["matched_call"] for r in validator["required"]] == [1, 0]
    assert [p["status"] for p in validator["predicted"]] == [
        "matches required call 1",
        "matches required call 0",
    ]
    (rubric,) = context["rubrics"]
    assert rubric["state"] == "judged" and rubric["scored_passed"] is True
    assert rubric["atoms"][-1]["dimension"] == "tool.call_args"
    assert rubric["atoms"][-1]["ignored"] is True and rubric["atoms"][-1]["passed"] is False
    assert context["cell"]["passed"] is True
    assert [c.name for c in context["clips"]] == list(assets)
    assert context["clips"][0].label.startswith("L1 ")
    # The markup line cleans to nothing: shown, but marked as not shown to the judge.
    assert [t["judge_text"] is None for t in context["turns"]].count(True) == 1


def test_rating_units_are_the_judged_atoms(specs, prompt):
    kind = plugin.study_kind("rubric_atom")
    data = data_of(
        {
            "cell_id": AUTH2,
            "predicted_action": "respond",
            "answer_text": "Sure.",
            "tool_calls": [{"name": "notify", "arguments": {"channel": "sms"}}],
        }
    )
    extra, main = specs[AUTH2]["judge_rubric_ids"]
    parsed = plugin.parse_output(
        "rubric",
        wrap_judge_output([True, False, True], style="plain"),
        context=context_of(specs, prompt, AUTH2),
    )
    judged = {
        ("rubric", main): JudgedSlot("done", parsed.verdict, parsed.output),
        ("rubric", extra): JudgedSlot("fixed", False, {"atoms": []}),
    }
    assets = {"lines/01.wav": "k1", "lines/03.wav": "k3"}
    units = plugin.study_units(
        kind, TaskInput(AUTH2, specs[AUTH2], data=data, assets=assets), judged=judged
    )
    criteria = specs[AUTH2]["rubrics"][main]["atomic_criteria"]
    assert [u.slot for u in units] == [f"{main}#{i}" for i in range(len(criteria))]
    # The judge answered three atoms: pass, fail, pass; the fourth it left out (no label).
    assert [u.judge_label for u in units] == ["pass", "fail", "pass", None]
    assert all(criteria[i]["criterion"] in u.prompt for i, u in enumerate(units))
    assert "Tool calls:\n- notify" in units[0].response_text
    assert [c.key for c in units[0].clips] == ["k1", "k3"]
    assert units[0].transcript[0]["speaker"].endswith("→ assistant")


# --- the paper's rows ----------------------------------------------------------------------------


def test_reported_rows_land_in_both_languages_with_the_marker():
    rows = {row.system: row for row in plugin.reported_rows()}
    assert len(rows) == 15
    gemini = rows["Gemini 3.1 Pro†"]
    assert gemini.results["en"]["apr"]["pct"] == 66.8
    assert gemini.results["en"]["apr_half_width"] == {"value": 3.8}
    assert gemini.results["zh"]["apr"]["pct"] == 52.8
    assert gemini.results["zh"]["apr_half_width"] == {"value": None}  # Table 4 prints no ±
    assert gemini.row_group == "proprietary" and gemini.facts["organization"] == "Google"
    assert "thinking" in gemini.facts["description"]
    assert rows["Gemma 4-12B"].row_group == rows["Gemma 4-12B†"].row_group == "open-weights"
    assert rows["Qwen2-Audio-7B"].results["en"]["prr"]["pct"] == 5.7
    assert rows["MiMo-Audio-7B"].results["zh"]["prr"]["pct"] is None
