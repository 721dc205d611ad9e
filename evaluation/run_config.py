"""A submission's run configuration: what produced the outputs, as structured fields with one
documented schema for the bundle's manifest, the API and the upload form. Rows of one system
run under different configurations are told apart by config_fingerprint().

Every field is optional; what is given must be well formed. Unknown fields are refused, so a
misspelt key never silently disappears. The schema, as JSON:

    {
      "model": "name of the model (or of the cascade's LLM)",
      "revision": "checkpoint, commit or API version",
      "system_prompt": "the exact system prompt, or",
      "system_prompt_sha256": "its SHA-256 (64 hex digits) when the text is private",
      "decoding": {"temperature": 0.7, "top_p": 0.9, "max_tokens": 512, "seed": 1},
      "components": {"asr": "...", "llm": "...", "tts": "...", "vad": "..."},
      "input_modality": "audio" | "text",
      "output_modality": "audio" | "text",
      "hardware": "e.g. 1x H100 80GB",
      "run_date": "YYYY-MM-DD",
      "notes": "anything else a reader needs to reproduce the run"
    }
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from collections.abc import Mapping

TEXT_FIELDS = {"model": 200, "revision": 200, "hardware": 200, "notes": 2000}
SYSTEM_PROMPT_MAX = 100_000
MODALITIES = ("audio", "text")
COMPONENTS = ("asr", "llm", "tts", "vad")
DECODING_MAX_KEYS = 30
FIELDS = (
    "model",
    "revision",
    "system_prompt",
    "system_prompt_sha256",
    "decoding",
    "components",
    "input_modality",
    "output_modality",
    "hardware",
    "run_date",
    "notes",
)
# What a reader compares between two runs of one system: everything but when and the notes.
FINGERPRINT_IGNORES = ("run_date", "notes")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")

CONTAMINATION = ("no", "yes", "unknown")


class RunConfigInvalid(ValueError):
    """Every problem of a run configuration, each naming its field."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def _text(problems, name: str, value, limit: int) -> str | None:
    if not isinstance(value, str):
        problems.append(f"run_config.{name}: expected text, got {_kind(value)}")
        return None
    value = value.strip()
    if len(value) > limit:
        problems.append(f"run_config.{name}: at most {limit:,} characters, got {len(value):,}")
        return None
    if "\x00" in value:
        problems.append(f"run_config.{name}: contains a NUL character")
        return None
    return value


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def run_config_clean(data, *, today: datetime.date | None = None) -> dict:
    """The configuration as stored: known fields only, texts stripped, empty ones left out.
    RunConfigInvalid lists every problem at once."""
    if data in (None, ""):
        return {}
    if not isinstance(data, Mapping):
        raise RunConfigInvalid([f"run_config: expected an object, got {_kind(data)}"])
    problems: list[str] = []
    clean: dict = {}
    for name in sorted(set(data) - set(FIELDS)):
        problems.append(f"run_config.{name}: unknown field (known: {', '.join(FIELDS)})")
    for name, limit in TEXT_FIELDS.items():
        if data.get(name) not in (None, ""):
            value = _text(problems, name, data[name], limit)
            if value:
                clean[name] = value
    if data.get("system_prompt") not in (None, ""):
        if data.get("system_prompt_sha256") not in (None, ""):
            problems.append(
                "run_config.system_prompt: give the text or its SHA-256 "
                "(system_prompt_sha256), not both"
            )
        else:
            value = _text(problems, "system_prompt", data["system_prompt"], SYSTEM_PROMPT_MAX)
            if value:
                clean["system_prompt"] = value
    elif data.get("system_prompt_sha256") not in (None, ""):
        value = data["system_prompt_sha256"]
        if not isinstance(value, str) or not SHA256.match(value.strip().lower()):
            problems.append(
                "run_config.system_prompt_sha256: expected 64 hexadecimal digits "
                "(the SHA-256 of the prompt's UTF-8 text)"
            )
        else:
            clean["system_prompt_sha256"] = value.strip().lower()
    for name in ("input_modality", "output_modality"):
        if data.get(name) not in (None, ""):
            if data[name] not in MODALITIES:
                problems.append(
                    f"run_config.{name}: one of {', '.join(MODALITIES)}, got {data[name]!r}"
                )
            else:
                clean[name] = data[name]
    if data.get("decoding") not in (None, {}):
        decoding = data["decoding"]
        if not isinstance(decoding, Mapping):
            problems.append(f"run_config.decoding: expected an object, got {_kind(decoding)}")
        elif len(decoding) > DECODING_MAX_KEYS:
            problems.append(f"run_config.decoding: at most {DECODING_MAX_KEYS} settings")
        else:
            found = {}
            for key, value in decoding.items():
                if not isinstance(key, str) or not KEY.match(key):
                    problems.append(
                        f"run_config.decoding: {key!r} is not a setting name "
                        "(letters, digits, _ . -; at most 64)"
                    )
                elif isinstance(value, bool) or value is None:
                    found[key] = value
                elif isinstance(value, int | float):
                    if value != value or value in (float("inf"), float("-inf")):
                        problems.append(f"run_config.decoding.{key}: not a finite number")
                    else:
                        found[key] = value
                elif isinstance(value, str) and len(value) <= 200:
                    found[key] = value
                else:
                    problems.append(
                        f"run_config.decoding.{key}: expected a number, text (at most 200 "
                        f"characters), a boolean or null, got {_kind(value)}"
                    )
            if found:
                clean["decoding"] = dict(sorted(found.items()))
    if data.get("components") not in (None, {}):
        components = data["components"]
        if not isinstance(components, Mapping):
            problems.append(f"run_config.components: expected an object, got {_kind(components)}")
        else:
            found = {}
            for key, value in components.items():
                if key not in COMPONENTS:
                    problems.append(
                        f"run_config.components.{key}: unknown component "
                        f"(known: {', '.join(COMPONENTS)})"
                    )
                elif value not in (None, ""):
                    text = _text(problems, f"components.{key}", value, 200)
                    if text:
                        found[key] = text
            if found:
                clean["components"] = dict(sorted(found.items()))
    if data.get("run_date") not in (None, ""):
        value = data["run_date"]
        try:
            day = datetime.date.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            day = None
        if day is None or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(value)):
            problems.append(f"run_config.run_date: expected a date as YYYY-MM-DD, got {value!r}")
        elif day > (today or datetime.date.today()):
            problems.append(f"run_config.run_date: {value} is in the future")
        else:
            clean["run_date"] = value
    if problems:
        raise RunConfigInvalid(problems)
    return {name: clean[name] for name in FIELDS if name in clean}


def config_fingerprint(config: Mapping | None) -> str:
    """Equal for two runs under the same configuration (the date and notes aside); "" for
    none given. A system prompt and its hash count as the same prompt."""
    if not config:
        return ""
    compared = {k: v for k, v in config.items() if k not in FINGERPRINT_IGNORES}
    prompt = compared.pop("system_prompt", None)
    if prompt is not None:
        compared["system_prompt_sha256"] = hashlib.sha256(prompt.encode()).hexdigest()
    if not compared:
        return ""
    text = json.dumps(compared, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


CONTAMINATION_NOTE_MAX = 2000


def contamination_clean(value, note="") -> tuple[str, str]:
    """Whether the system saw the benchmark's data in training ("no", "yes", "unknown"; empty
    is "unknown") and a free-text note."""
    problems = []
    value = "unknown" if value in (None, "") else value
    if value not in CONTAMINATION:
        problems.append(f"contamination: one of {', '.join(CONTAMINATION)}, got {value!r}")
    if note is None:
        note = ""
    if not isinstance(note, str):
        problems.append(f"contamination_note: expected text, got {_kind(note)}")
        note = ""
    note = note.strip()
    if len(note) > CONTAMINATION_NOTE_MAX:
        problems.append(
            f"contamination_note: at most {CONTAMINATION_NOTE_MAX:,} characters, got {len(note):,}"
        )
    if "\x00" in note:
        problems.append("contamination_note: contains a NUL character")
    if problems:
        raise RunConfigInvalid(problems)
    return value, note


def manifest_disclosures(manifest) -> tuple[dict, str, str]:
    """A bundle manifest's run configuration ("run_config") and contamination disclosure
    ("contamination": {"saw_benchmark_data": "no" | "yes" | "unknown", "note": "..."}), each
    checked. RunConfigInvalid lists every problem."""
    problems = []
    config, value, note = {}, "unknown", ""
    try:
        config = run_config_clean(manifest.get("run_config"))
    except RunConfigInvalid as invalid:
        problems += invalid.problems
    disclosed = manifest.get("contamination")
    if disclosed not in (None, ""):
        if not isinstance(disclosed, Mapping):
            problems.append(
                "contamination: expected an object "
                '{"saw_benchmark_data": "no" | "yes" | "unknown", "note": "..."}, '
                f"got {_kind(disclosed)}"
            )
        else:
            unknown = sorted(set(disclosed) - {"saw_benchmark_data", "note"})
            for name in unknown:
                problems.append(
                    f"contamination.{name}: unknown field (known: saw_benchmark_data, note)"
                )
            try:
                value, note = contamination_clean(
                    disclosed.get("saw_benchmark_data"), disclosed.get("note", "")
                )
            except RunConfigInvalid as invalid:
                problems += invalid.problems
    if problems:
        raise RunConfigInvalid(problems)
    return config, value, note


# What each field holds, for the pages that document the manifest (the About pages).
HELP = {
    "model": "the model's name (or the cascade's LLM)",
    "revision": "checkpoint, commit or API version",
    "system_prompt": "the exact system prompt, or",
    "system_prompt_sha256": "its SHA-256 (64 hex digits) when the text is private",
    "decoding": 'sampling settings, e.g. {"temperature": 0.7, "top_p": 0.9, "seed": 1}',
    "components": 'the parts of a cascade: {"asr", "llm", "tts", "vad"}, each a model name',
    "input_modality": "audio or text",
    "output_modality": "audio or text",
    "hardware": "e.g. 1x H100 80GB",
    "run_date": "YYYY-MM-DD",
    "notes": "anything else a reader needs to reproduce the run",
}
LABELS = {
    "model": "Model",
    "revision": "Revision",
    "system_prompt": "System prompt",
    "system_prompt_sha256": "System prompt (SHA-256)",
    "decoding": "Decoding",
    "components": "Components",
    "input_modality": "Input",
    "output_modality": "Output",
    "hardware": "Hardware",
    "run_date": "Run date",
    "notes": "Notes",
}


def config_rows(config: Mapping | None) -> list[tuple[str, str, str]]:
    """(field, label, text) of each field a stored configuration gives, in the schema's order;
    decoding and components read as "name: value" pairs (components as ASR, LLM, ...)."""
    rows = []
    for name in FIELDS:
        value = (config or {}).get(name)
        if value in (None, "", {}):
            continue
        # In key order whatever the database keeps (PostgreSQL's jsonb reorders keys).
        if name == "components":
            text = ", ".join(f"{key.upper()}: {part}" for key, part in sorted(value.items()))
        elif name == "decoding":
            text = ", ".join(f"{key}: {json.dumps(part)}" for key, part in sorted(value.items()))
        else:
            text = str(value)
        rows.append((name, LABELS[name], text))
    return rows
