"""The MSI-Bench answer judge (SPEC §6): which (case, rubric) pairs it sees, the two messages
rendered exactly as the harness renders them, the request body, and the parsing of its answer.
Pure apart from reading the two templates from the harness checkout the operator names.

Rendering (``src/ib/scoring/judge.py``, ``src/ib/llm/templates.py``): a Jinja2 environment with
autoescape off, StrictUndefined, trim_blocks and lstrip_blocks (keep_trailing_newline off, so the
templates' final newline is dropped). The user message fills three variables with
``json.dumps(..., sort_keys=True, ensure_ascii=False)`` of the manifest view (scene, expected
action, internal pattern id, cleaned visible lines), the prediction view and the rubric view.

Parsing (``service.py:parse_json_object``, ``judge.py:_validate_judgment``): ``json.loads``, and
only if that fails the first balanced ``{...}`` (string- and escape-aware); the result must be an
object whose ``atomic_results`` align with the rubric's atoms by position; any shape error fails
every atom of the rubric. The empty-answer guard then fails every atom but ``tool.call_args``
when the prediction has neither answer text nor tool calls.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

SYSTEM_TEMPLATE = "judge_system.j2"
USER_TEMPLATE = "judge_user.j2"
# Where a harness checkout keeps them; the directory itself and templates/ are also accepted.
TEMPLATE_DIRS = ("src/ib/llm/templates/evaluation", "templates", ".")

# The paper's judge (README "Reproducing the paper setting"): JSON mode, provider defaults.
PAPER_JUDGE_MODEL = "deepseek/deepseek-v4-pro"
PAPER_JUDGE_BASE_URL = "https://openrouter.ai/api/v1"
POLICY_VERSION = "ib.answer_judge.llm_tool_args.v1"

TOOL_CALL_ARGS = "tool.call_args"
DEFAULT_DIMENSION = "legacy.unspecified"
# Judged but never scored (eval_pattern_metrics.py:is_ignored_atomic_result).
IGNORED_DIMENSIONS = frozenset({TOOL_CALL_ARGS, "authority.request_authorized_confirmation"})

OMITTED = "judge omitted this atomic criterion"
GUARD = "deterministic guard: empty answer cannot satisfy answer-layer rubric"
FORMAT_ERROR = (
    "format error: prediction recorded a provider_error, so every atom fails without judging"
)
NOT_JUDGED = "not judged: the answer is empty, so the guard fixes every scored atom; this atom is never scored"

_TAG_RE = re.compile(r"(<\|[^<>]*?>|<[^<>]+>|\[[^\[\]]+\])")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
_SPACE_AFTER_OPEN = re.compile(r"([({])\s+")


class JudgeTemplateError(ValueError):
    pass


# --- templates --------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeTemplates:
    """The two templates as the harness has them (text decoded from the exact bytes)."""

    system: str
    user: str
    system_sha256: str
    user_sha256: str
    directory: str = ""


def load_templates(directory: Path | str) -> JudgeTemplates:
    """The templates from a harness checkout (``src/ib/llm/templates/evaluation/``), or from a
    directory holding them directly or under ``templates/``."""
    root = Path(directory)
    for sub in TEMPLATE_DIRS:
        folder = root / sub
        system, user = folder / SYSTEM_TEMPLATE, folder / USER_TEMPLATE
        if system.is_file() and user.is_file():
            system_bytes, user_bytes = system.read_bytes(), user.read_bytes()
            try:
                system_text, user_text = system_bytes.decode("utf-8"), user_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise JudgeTemplateError(
                    f"{folder}: a judge template is not UTF-8: {exc}"
                ) from None
            return JudgeTemplates(
                system=system_text,
                user=user_text,
                system_sha256=hashlib.sha256(system_bytes).hexdigest(),
                user_sha256=hashlib.sha256(user_bytes).hexdigest(),
                directory=str(folder),
            )
    tried = ", ".join(str(root / sub) for sub in TEMPLATE_DIRS)
    raise JudgeTemplateError(f"{SYSTEM_TEMPLATE} and {USER_TEMPLATE} not found (looked in {tried})")


def environment() -> jinja2.Environment:
    """The harness's environment (src/ib/llm/templates.py)."""
    return jinja2.Environment(
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@lru_cache(maxsize=16)
def _compiled(text: str) -> jinja2.Template:
    return environment().from_string(text)


def render_system(templates: JudgeTemplates) -> str:
    return _compiled(templates.system).render()


# --- the views ----------------------------------------------------------------------------------


def clean_spoken_text(text: str) -> str:
    """A line as the judge sees it: markup tags (<...>, <|...>, [...]) become spaces, whitespace
    collapses, no space before , . ; : ! ? or after ( {, stripped (acoustic_markup.py)."""
    collapsed = " ".join(_TAG_RE.sub(" ", text).split())
    collapsed = _SPACE_BEFORE_PUNCT.sub(r"\1", collapsed)
    return _SPACE_AFTER_OPEN.sub(r"\1", collapsed).strip()


def visible_context_lines(turns: list[Mapping]) -> list[dict]:
    """Line i (1-based over all turns, the assistant's included) as L<i>; a line whose cleaned
    text is empty is dropped but keeps its number."""
    lines = []
    for index, turn in enumerate(turns, start=1):
        text = turn.get("text")
        if not isinstance(text, str):
            continue
        cleaned = clean_spoken_text(text)
        if not cleaned:
            continue
        line: dict[str, Any] = {"line_id": f"L{index}"}
        speaker = "assistant" if turn.get("role") == "assistant" else turn.get("speaker")
        for key, value in (("speaker", speaker), ("addressed_to", turn.get("addressed_to"))):
            if isinstance(value, str) and value:
                line[key] = value
        line["text"] = cleaned
        lines.append(line)
    return lines


def manifest_view(spec: Mapping) -> dict:
    view = {
        "scene": spec["scene"],
        "expected_action": spec["expected_action"],
        "logic_pattern": spec["logic_pattern"],
    }
    lines = visible_context_lines(spec["turns"])
    if lines:
        view["visible_context_lines"] = lines
    return view


def prediction_view(prediction: Mapping) -> dict:
    """The four fields the judge may score, after normalisation (arguments default {},
    confidence a float)."""
    return {
        "predicted_action": prediction["predicted_action"],
        "answer_text": prediction.get("answer_text"),
        "tool_calls": [
            {"name": call["name"], "arguments": call.get("arguments", {})}
            for call in prediction.get("tool_calls") or []
        ],
        "confidence": prediction.get("confidence"),
    }


def rubric_view(rubric: Mapping) -> dict:
    view: dict[str, Any] = {}
    instruction = rubric.get("judge_instruction")
    if isinstance(instruction, str) and instruction:
        view["judge_instruction"] = instruction
    atoms = []
    for item in rubric.get("atomic_criteria") or []:
        if not isinstance(item, dict):
            continue
        atom = {
            key: item[key]
            for key in ("polarity", "dimension", "criterion")
            if isinstance(item.get(key), str) and item[key]
        }
        if atom:
            atoms.append(atom)
    view["atomic_criteria"] = atoms
    return view


def judge_json(value: Any) -> str:
    """Default separators (", ", ": "), floats by repr, keys sorted, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def render_user(
    templates: JudgeTemplates, *, spec: Mapping, prediction: Mapping, rubric: Mapping
) -> str:
    return _compiled(templates.user).render(
        manifest_json=judge_json(manifest_view(spec)),
        prediction_json=judge_json(prediction_view(prediction)),
        rubric_json=judge_json(rubric_view(rubric)),
    )


def render_messages(
    templates: JudgeTemplates, *, spec: Mapping, prediction: Mapping, rubric: Mapping
) -> tuple[str, str]:
    """(system message, user message) for one base case, prediction (``to_json`` form) and
    rubric row."""
    return render_system(templates), render_user(
        templates, spec=spec, prediction=prediction, rubric=rubric
    )


def request_body(*, model: str, system: str, user: str) -> dict:
    """The chat-completions body, key for key: JSON mode and no sampling parameters."""
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        "response_format": {"type": "json_object"},
    }


# --- which pairs are judged (§6.1, §6.6) -------------------------------------------------------


def atom_specs(rubric: Mapping) -> list[dict]:
    """The rubric's atoms in order: position, criterion index (default: position), dimension
    (default legacy.unspecified) and whether it counts in APR/ARS."""
    specs = []
    for index, item in enumerate(rubric.get("atomic_criteria") or []):
        dimension = item.get("dimension", DEFAULT_DIMENSION)
        specs.append(
            {
                "index": index,
                "criterion_index": item.get("criterion_index", index),
                "dimension": dimension,
                "scored": dimension not in IGNORED_DIMENSIONS,
            }
        )
    return specs


@dataclass(frozen=True)
class JudgePair:
    """One (case, rubric) judgment: sent to the judge (``needs_call``), or decided without a
    call (``fixed`` holds the structured result)."""

    cell_id: str
    rubric_id: str
    needs_call: bool
    fixed: dict | None
    context: dict


def judge_pairs(spec: Mapping, prediction: Mapping | None) -> list[JudgePair]:
    """The judgments of a base case: none without a prediction (the case is unjudged, §7.2) or
    without a rubric its entry resolves, and none for probe cells. A format-error prediction fixes every atom to fail
    (the harness skips the judge). An empty prediction (blank answer, no calls) is fixed too, a
    site choice: the harness calls the judge, but the guard then fails every atom except
    tool.call_args ones, which are never scored, so no answer can change a number; those atoms
    are stored as not judged. A rubric without atoms needs no call either."""
    if spec.get("kind") != "base" or prediction is None:
        return []
    format_error = _is_format_error(prediction)
    empty = not (prediction.get("answer_text") or "").strip() and not prediction.get("tool_calls")
    pairs = []
    for rubric_id in spec["judge_rubric_ids"]:
        atoms = atom_specs(spec["rubrics"][rubric_id])
        context = {"atoms": atoms, "empty_answer": empty}
        fixed = None
        if format_error:
            fixed = fixed_result(atoms, FORMAT_ERROR, fixed="format_error")
        elif empty:
            fixed = empty_answer_result(atoms)
        elif not atoms:
            fixed = _result(ok=True, error=None, atoms=[], rationale=None, fixed="no_atoms")
        pairs.append(JudgePair(spec["cell_id"], rubric_id, fixed is None, fixed, context))
    return pairs


def _is_format_error(prediction: Mapping) -> bool:
    metadata = prediction.get("metadata")
    return isinstance(metadata, dict) and isinstance(metadata.get("provider_error"), dict)


# --- parsing (§6.5) ---------------------------------------------------------------------------


class JudgeOutputError(ValueError):
    pass


def first_balanced_object(text: str) -> str | None:
    """The substring from the first "{" to its balanced "}", skipping braces inside strings."""
    start = text.find("{")
    if start < 0:
        return None
    depth = 0
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    return None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        extracted = first_balanced_object(text)
        if extracted is None:
            raise JudgeOutputError("the judge returned no JSON object") from None
        try:
            return json.loads(extracted)
        except json.JSONDecodeError:
            raise JudgeOutputError("the first {...} in the judge's answer is not JSON") from None


def parse_json_object(text: str) -> dict:
    try:
        payload = _loads(text)
    except JudgeOutputError:
        raise
    except (ValueError, RecursionError) as exc:
        raise JudgeOutputError(f"the judge's answer is not usable JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise JudgeOutputError("the judge's answer is not a JSON object")
    return payload


def _decisions(payload: dict, atoms: list[dict]) -> tuple[list[tuple[bool, str | None]], str]:
    raw = payload.get("atomic_results")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise JudgeOutputError("atomic_results is not a list")
    decisions: list[tuple[bool, str | None]] = []
    if atoms:
        for index in range(len(atoms)):
            if index >= len(raw):
                decisions.append((False, None))
                continue
            item = raw[index]
            if not isinstance(item, dict):
                raise JudgeOutputError(f"atomic_results[{index}] is not an object")
            passed = item.get("passed")
            if not isinstance(passed, bool):
                raise JudgeOutputError(f"atomic_results[{index}].passed is not a boolean")
            rationale = item.get("rationale", "")
            if not isinstance(rationale, str):
                raise JudgeOutputError(f"atomic_results[{index}].rationale is not a string")
            decisions.append((passed, rationale))
    rationale = payload.get("rationale", "")
    if not isinstance(rationale, str):
        raise JudgeOutputError("rationale is not a string")
    return decisions, rationale


def parse_judge_output(raw: str, *, atoms: list[dict], empty_answer: bool) -> dict:
    """The structured result of one judge answer for a rubric with ``atoms`` (``atom_specs``).
    ``ok`` is False when the answer is unusable: then every atom fails (what the harness
    stores once its retries are spent)."""
    try:
        payload = parse_json_object(raw if isinstance(raw, str) else "")
        decisions, rationale = _decisions(payload, atoms)
    except JudgeOutputError as exc:
        return fixed_result(atoms, f"judge answer rejected: {exc}", ok=False, error=str(exc))
    out = []
    for atom, (passed, atom_rationale) in zip(atoms, decisions, strict=True):
        reason = None if atom_rationale is not None else OMITTED
        if empty_answer and atom["dimension"] != TOOL_CALL_ARGS:
            passed, reason = False, GUARD
        out.append(_atom(atom, passed, atom_rationale, reason))
    return _result(ok=True, error=None, atoms=out, rationale=rationale, fixed=None)


def _atom(atom: Mapping, passed: bool | None, rationale: str | None, reason: str | None) -> dict:
    return {
        "index": atom["index"],
        "dimension": atom["dimension"],
        "scored": atom["scored"],
        "passed": passed,
        "rationale": rationale,
        "reason_if_forced": reason,
    }


def _result(*, ok, error, atoms, rationale, fixed) -> dict:
    scored = [atom["passed"] is True for atom in atoms if atom["scored"]]
    return {
        "ok": ok,
        "error": error,
        "fixed": fixed,
        "rationale": rationale,
        "atoms": atoms,
        # The rubric passes when every atom passes (the harness's per-judgment "passed").
        "passed": all(atom["passed"] is True for atom in atoms),
        # What APR reads: every scored atom passed (None: the rubric has no scored atom).
        "scored_passed": all(scored) if scored else None,
    }


def fixed_result(
    atoms: list[dict], reason: str, *, ok: bool = True, error: str | None = None, fixed=None
) -> dict:
    """Every atom failed for one stated reason (format error, unusable answer, failed call)."""
    return _result(
        ok=ok,
        error=error,
        atoms=[_atom(atom, False, None, reason) for atom in atoms],
        rationale=None,
        fixed=fixed,
    )


def empty_answer_result(atoms: list[dict]) -> dict:
    out = [
        _atom(atom, None, None, NOT_JUDGED)
        if atom["dimension"] == TOOL_CALL_ARGS
        else _atom(atom, False, None, GUARD)
        for atom in atoms
    ]
    return _result(ok=True, error=None, atoms=out, rationale=None, fixed="empty_answer")


def failed_call_result(atoms: list[dict], message: str) -> dict:
    """A judgment whose calls kept failing, stored only when a board must publish (§6.4)."""
    return fixed_result(
        atoms, f"answer judge failed: {message}", ok=False, error=message, fixed="failed"
    )
