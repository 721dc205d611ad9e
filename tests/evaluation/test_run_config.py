"""The run configuration's schema: what it keeps, and a clear message for each malformed field."""

import datetime
import hashlib
import io
import json

import pytest

from evaluation.run_config import RunConfigInvalid, config_fingerprint, run_config_clean

TODAY = datetime.date(2026, 12, 1)


def problems(data) -> list[str]:
    with pytest.raises(RunConfigInvalid) as caught:
        run_config_clean(data, today=TODAY)
    return caught.value.problems


def test_a_full_configuration_is_kept_in_schema_order():
    data = {
        "notes": "  greedy  ",
        "model": "Agent-7B",
        "revision": "2026-11-02",
        "system_prompt": "You are a helpful participant.",
        "decoding": {"top_p": 0.9, "temperature": 0.7, "max_tokens": 512, "stop": "</s>"},
        "components": {"tts": "Voice 2", "asr": "Whisper large-v3", "llm": ""},
        "input_modality": "audio",
        "output_modality": "text",
        "hardware": "1x H100 80GB",
        "run_date": "2026-11-30",
    }
    clean = run_config_clean(data, today=TODAY)
    assert list(clean) == [
        "model",
        "revision",
        "system_prompt",
        "decoding",
        "components",
        "input_modality",
        "output_modality",
        "hardware",
        "run_date",
        "notes",
    ]
    assert clean["notes"] == "greedy"
    assert clean["decoding"] == {
        "max_tokens": 512,
        "stop": "</s>",
        "temperature": 0.7,
        "top_p": 0.9,
    }
    assert clean["components"] == {"asr": "Whisper large-v3", "tts": "Voice 2"}
    assert run_config_clean(None) == {} and run_config_clean({}) == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1], "run_config: expected an object, got a list"),
        ({"modle": "x"}, "run_config.modle: unknown field (known: model, revision,"),
        ({"model": 7}, "run_config.model: expected text, got a number"),
        ({"model": "x" * 201}, "run_config.model: at most 200 characters, got 201"),
        (
            {"system_prompt": "a", "system_prompt_sha256": "0" * 64},
            "run_config.system_prompt: give the text or its SHA-256",
        ),
        ({"system_prompt_sha256": "abc"}, "run_config.system_prompt_sha256: expected 64 hex"),
        ({"input_modality": "video"}, "run_config.input_modality: one of audio, text, got 'video'"),
        ({"decoding": [0.7]}, "run_config.decoding: expected an object, got a list"),
        ({"decoding": {"temperature": [1]}}, "run_config.decoding.temperature: expected a number"),
        (
            {"decoding": {"temperature": float("nan")}},
            "run_config.decoding.temperature: not a finite",
        ),
        ({"decoding": {"bad key!": 1}}, "run_config.decoding: 'bad key!' is not a setting name"),
        ({"components": {"vocoder": "x"}}, "run_config.components.vocoder: unknown component"),
        ({"run_date": "30/11/2026"}, "run_config.run_date: expected a date as YYYY-MM-DD"),
        ({"run_date": "2026-12-02"}, "run_config.run_date: 2026-12-02 is in the future"),
        ({"hardware": "GPU\x00"}, "run_config.hardware: contains a NUL character"),
    ],
)
def test_malformed_fields_are_named(data, message):
    found = problems(data)
    assert any(p.startswith(message) for p in found), found


def test_every_problem_is_reported_at_once():
    found = problems({"model": 1, "input_modality": "smell", "extra": True})
    assert len(found) == 3


def test_fingerprint_ignores_date_and_notes_and_treats_a_prompt_as_its_hash():
    base = {"model": "A", "decoding": {"temperature": 0.0}}
    assert config_fingerprint(base) == config_fingerprint(
        {**base, "run_date": "2026-01-01", "notes": "again"}
    )
    assert config_fingerprint(base) != config_fingerprint({**base, "decoding": {"temperature": 1}})
    digest = hashlib.sha256(b"Be brief.").hexdigest()
    assert config_fingerprint({**base, "system_prompt": "Be brief."}) == config_fingerprint(
        {**base, "system_prompt_sha256": digest}
    )
    assert config_fingerprint({}) == "" and config_fingerprint({"notes": "x"}) == ""


# --- Through a submission ----------------------------------------------------------------------

CONFIG = {
    "model": "Agent-7B",
    "decoding": {"temperature": 0.2},
    "components": {"asr": "ASR-1"},
    "input_modality": "audio",
    "output_modality": "audio",
    "run_date": "2026-11-20",
}


def _bundle(tmp_path, manifest: dict):
    """The example plug-in's answers to three of its six tasks, with ``manifest``."""
    from tests.conftest import toy_upload

    tmp_path.mkdir(parents=True, exist_ok=True)
    return toy_upload(tmp_path / "bundle.zip", manifest)


@pytest.mark.django_db
def test_the_manifest_carries_the_configuration_and_the_disclosure(toybench, tmp_path):
    from evaluation.services import submission_create

    manifest = {
        "run_config": CONFIG,
        "contamination": {"saw_benchmark_data": "yes", "note": "tuned on the demo split"},
    }
    submission = submission_create(
        benchmark=toybench,
        bundle_path=_bundle(tmp_path, manifest),
        system_name="Agent",
        allow_partial=True,
    )
    assert submission.run_config == CONFIG
    assert (submission.contamination, submission.contamination_note) == (
        "yes",
        "tuned on the demo split",
    )


@pytest.mark.django_db
def test_given_values_replace_the_manifests(toybench, tmp_path):
    from evaluation.services import submission_create

    submission = submission_create(
        benchmark=toybench,
        bundle_path=_bundle(tmp_path, {"run_config": CONFIG}),
        system_name="Agent",
        allow_partial=True,
        run_config={"model": "Other"},
        contamination="no",
    )
    assert submission.run_config == {"model": "Other"}
    assert submission.contamination == "no"


@pytest.mark.django_db
def test_a_malformed_manifest_is_refused_with_each_problem_named(toybench, tmp_path):
    from evaluation.bundles import BundleRejected
    from evaluation.models import Submission
    from evaluation.services import SubmissionInvalid, submission_create

    manifest = {
        "run_config": {"model": ["x"], "input_modality": "video"},
        "contamination": {"saw_benchmark_data": "maybe"},
    }
    with pytest.raises(BundleRejected) as caught:
        submission_create(
            benchmark=toybench,
            bundle_path=_bundle(tmp_path, manifest),
            system_name="Agent",
            allow_partial=True,
        )
    text = str(caught.value.report.problems)
    assert "run_config.model: expected text, got a list" in text
    assert "run_config.input_modality: one of audio, text, got 'video'" in text
    assert "contamination: one of no, yes, unknown, got 'maybe'" in text
    assert not Submission.objects.filter(is_reported=False).exists()
    with pytest.raises(SubmissionInvalid, match="run_config.temperature: unknown field"):
        submission_create(
            benchmark=toybench,
            bundle_path=_bundle(tmp_path / "b", {}),
            system_name="Agent",
            allow_partial=True,
            run_config={"temperature": 0.1},
        )
    assert not Submission.objects.filter(is_reported=False).exists()


@pytest.mark.django_db
def test_the_command_line_takes_a_configuration_file_and_a_disclosure(toybench, tmp_path):
    from django.core.management import CommandError, call_command

    from evaluation.models import Submission

    bundle = _bundle(tmp_path, {"run_config": {"model": "From manifest"}})
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"model": "Agent-7B", "hardware": "1x H100 80GB"}))
    call_command(
        "submit",
        str(bundle),
        "--benchmark=toy-bench",
        "--system=Agent",
        "--judge=offline",
        "--allow-partial",
        f"--run-config={config}",
        "--contamination=yes",
        "--contamination-note=tuned on the demo split",
        stdout=io.StringIO(),
    )
    submission = Submission.objects.get(system__name="Agent")
    assert submission.run_config == {"model": "Agent-7B", "hardware": "1x H100 80GB"}
    assert (submission.contamination, submission.contamination_note) == (
        "yes",
        "tuned on the demo split",
    )

    config.write_text(json.dumps({"model": "Agent-7B", "temperature": 0.2}))
    with pytest.raises(CommandError, match="run_config.temperature: unknown field"):
        call_command(
            "submit",
            str(bundle),
            "--benchmark=toy-bench",
            "--system=Second",
            "--judge=offline",
            "--allow-partial",
            f"--run-config={config}",
            stdout=io.StringIO(),
        )
    config.write_text("{not json")
    with pytest.raises(CommandError, match="run.json: not JSON"):
        call_command(
            "submit",
            str(bundle),
            "--benchmark=toy-bench",
            "--system=Second",
            f"--run-config={config}",
            stdout=io.StringIO(),
        )
    assert not Submission.objects.filter(system__name="Second").exists()
