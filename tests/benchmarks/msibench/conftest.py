"""Fixtures of the plug-in's tests: an invented release (with audio); two harness checkouts, one
holding the harness's own judge templates from ../shared (for the few tests whose subject is
their text; they skip without it) and one holding the demo's stand-in templates written by code
(for every other test, so a fresh clone runs them); and an independent render of the judge's
messages written here from the SPEC, not from the code under test."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from pathlib import Path

import jinja2
import pytest

from evaluation.benchmarks.msibench.demo import DEMO_SYSTEM_TEMPLATE, DEMO_USER_TEMPLATE
from evaluation.benchmarks.msibench.demo.bench import score_upload
from evaluation.benchmarks.msibench.demo.synthetic import write_release
from evaluation.benchmarks.msibench.release import read_release
from tests.conftest import completion, require_shared, shared_benchmark

SHARED_TEMPLATES = shared_benchmark("msibench/templates")
TEMPLATE_NAMES = ("judge_system.j2", "judge_user.j2")
CHECKOUT_DIR = Path("src") / "ib" / "llm" / "templates" / "evaluation"
# SPEC §1: the paper's pattern name -> the internal id the judge is shown.
INTERNAL = {
    "sequential_constraint_integration": "constraint_attribution_under_interleaving",
    "speaker_authority_constraint": "authority_gated_override",
    "selective_disclosure": "disclosure_clause_in_instruction",
    "scope_tracking": "distributed_parameters",
    "background_speech_retrieval": "eavesdropping",
    "constraint_prioritization": "hard_vs_soft_constraint",
}


def require_harness_templates() -> Path:
    """The folder of the harness's own templates (../shared), or a skip naming what is missing
    and where it was looked for."""
    return require_shared(
        "msibench/templates", *TEMPLATE_NAMES, what="MSI-Bench's released judge templates"
    )


@pytest.fixture(scope="session")
def harness_checkout(tmp_path_factory) -> Path:
    """A harness checkout holding only the harness's own two templates (from ../shared), where
    the harness keeps them: for the tests whose subject is the templates' text."""
    templates = require_harness_templates()
    root = tmp_path_factory.mktemp("harness") / "MSI-Bench"
    (root / CHECKOUT_DIR).mkdir(parents=True)
    for name in TEMPLATE_NAMES:
        shutil.copy(templates / name, root / CHECKOUT_DIR / name)
    return root


@pytest.fixture(scope="session")
def stand_in_checkout(tmp_path_factory) -> Path:
    """A harness checkout holding the demo's stand-in templates (written by code, nothing of the
    harness's) where the harness keeps its own: what every test imports with whose subject is
    not the templates' text."""
    root = tmp_path_factory.mktemp("stand-in") / "MSI-Bench"
    (root / CHECKOUT_DIR).mkdir(parents=True)
    for name, text in zip(TEMPLATE_NAMES, (DEMO_SYSTEM_TEMPLATE, DEMO_USER_TEMPLATE), strict=True):
        (root / CHECKOUT_DIR / name).write_text(text, "utf-8")
    return root


@pytest.fixture(scope="session")
def release_dir(tmp_path_factory) -> Path:
    """The small invented release (24 cases, both languages), audio included."""
    root = tmp_path_factory.mktemp("msi") / "release"
    write_release(root)
    return root


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


# --- an independent render of the judge's messages (SPEC §6.3) ----------------------------------

TAGS = re.compile(r"(<\|[^<>]*?>|<[^<>]+>|\[[^\[\]]+\])")


def spec_clean(text: str) -> str:
    text = " ".join(TAGS.sub(" ", text).split())
    text = re.sub(r"\s+([,.;:!?])", r"\1", text)
    return re.sub(r"([({])\s+", r"\1", text).strip()


def harness_environment() -> jinja2.Environment:
    return jinja2.Environment(
        autoescape=False, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )


def dumps(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def expected_messages(
    templates_dir: Path, case_row: dict, rubric_row: dict, prediction: dict
) -> tuple[str, str]:
    """(system, user) from the raw release rows and upload row, as SPEC §6.3 words it."""
    env = harness_environment()
    system = env.from_string((templates_dir / "judge_system.j2").read_text("utf-8")).render()
    lines = []
    for number, turn in enumerate(case_row["turns"], start=1):
        cleaned = spec_clean(turn["text"])
        if not cleaned:
            continue
        line = {"line_id": f"L{number}"}
        speaker = "assistant" if turn["role"] == "assistant" else turn.get("speaker")
        if isinstance(speaker, str) and speaker:
            line["speaker"] = speaker
        if isinstance(turn.get("addressed_to"), str) and turn["addressed_to"]:
            line["addressed_to"] = turn["addressed_to"]
        line["text"] = cleaned
        lines.append(line)
    manifest = {
        "scene": case_row["scene"],
        "expected_action": case_row["eval"]["expected_action"],
        "logic_pattern": INTERNAL[case_row["pattern"]],
    }
    if lines:
        manifest["visible_context_lines"] = lines
    confidence = prediction.get("confidence")
    shown = {
        "predicted_action": prediction["predicted_action"],
        "answer_text": prediction.get("answer_text"),
        "tool_calls": [
            {"name": c["name"], "arguments": c.get("arguments", {})}
            for c in prediction.get("tool_calls", [])
        ],
        "confidence": None if confidence is None else float(confidence),
    }
    rubric: dict = {}
    if rubric_row.get("judge_instruction"):
        rubric["judge_instruction"] = rubric_row["judge_instruction"]
    rubric["atomic_criteria"] = [
        {k: atom[k] for k in ("polarity", "dimension", "criterion") if atom.get(k)}
        for atom in rubric_row["atomic_criteria"]
    ]
    user = env.from_string((templates_dir / "judge_user.j2").read_text("utf-8")).render(
        manifest_json=dumps(manifest), prediction_json=dumps(shown), rubric_json=dumps(rubric)
    )
    return system, user


# --- a judge that misbehaves now and then, and what the numbers must then be ----------------


class ScriptedJudge:
    """Answers every rubric with a decision per atom drawn from the user message's hash; the
    first distinct requests meet trouble: a 429, a 500, a malformed answer once, a malformed
    answer every time, and a 500 every time until ``healed``."""

    TROUBLE = ("429", "500", "malformed-once", "malformed-always", "down")

    def __init__(self, trouble: tuple[str, ...] = TROUBLE):
        self.trouble_order = trouble
        self.lock = threading.Lock()
        self.order: list[str] = []  # distinct user messages in arrival order
        self.calls: dict[str, int] = {}
        self.final: dict[str, str] = {}  # the last answer each user message got
        self.healed = False

    def trouble(self, user: str) -> str:
        index = self.order.index(user)
        return self.trouble_order[index] if index < len(self.trouble_order) else ""

    @staticmethod
    def answer(user: str) -> str:
        # The rubric's JSON is the message's last line from its first brace, under the harness's
        # templates ("rubric=...") as under the stand-in ("Rubric: ...").
        last = user.rsplit("\n", 1)[-1]
        rubric = json.loads(last[last.index("{") :])
        digest = hashlib.sha256(user.encode()).digest()
        results = [
            {"passed": digest[i] % 4 != 0, "rationale": f"atom {i} read"}
            for i in range(len(rubric["atomic_criteria"]))
        ]
        return json.dumps({"rationale": "scripted", "atomic_results": results})

    def __call__(self, body: dict, _call: int):
        user = body["messages"][1]["content"]
        with self.lock:
            if user not in self.calls:
                self.order.append(user)
            self.calls[user] = call = self.calls.get(user, 0) + 1
            trouble = self.trouble(user)
        if trouble == "429" and call == 1:
            return 429, {}, {"error": {"message": "rate limited"}}
        if trouble == "500" and call == 1:
            return 500, {}, "upstream exploded"
        if trouble == "down" and not self.healed:
            return 500, {}, "still down"
        content = self.answer(user)
        if trouble == "malformed-once" and call == 1 or trouble == "malformed-always":
            content = "Here you go: {rationale: fine, atomic_results: []}"
        with self.lock:
            self.final[user] = content
        return 200, {}, completion(content)


def pairs_by_message(release_dir, templates_dir, rows) -> dict[str, tuple[str, str]]:
    """user message -> (cell, rubric), from the raw release rows and the upload's rows."""
    cases = {row["case_id"]: row for row in jsonl(release_dir / "index/cases.jsonl")}
    found = {}
    for rubric in jsonl(release_dir / "index/rubrics.jsonl"):
        row = next((r for r in rows if r["cell_id"] == rubric["case_id"]), None)
        if row is None:
            continue
        _, user = expected_messages(templates_dir, cases[rubric["case_id"]], rubric, row)
        found[user] = (rubric["case_id"], rubric["rubric_id"])
    return found


def expected_results(tmp_path, release_dir, upload, answers: dict, mode: str) -> dict:
    path = tmp_path / "answers.jsonl"
    path.write_text(
        "".join(
            json.dumps({"cell_id": c, "rubric_id": r, "raw": raw}) + "\n"
            for (c, r), raw in answers.items()
        ),
        "utf-8",
    )
    return score_upload(
        release=read_release(release_dir),
        prediction_files=[upload],
        judge_outputs=path,
        run_mode=mode,
    )["results"]


def without_half_width(results: dict) -> dict:
    return {
        lang: {k: v for k, v in row.items() if k != "apr_half_width"}
        for lang, row in results.items()
    }
