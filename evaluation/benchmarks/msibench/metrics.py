"""MSI-Bench aggregation (SPEC §7): APR with its Wilson half-width, ARS, per-pattern APR, Tool,
PRR and BIR, per language and never pooled. Pure.

Per base case (``eval_pattern_metrics.py:judge_by_cell``, ``tools/paper_table_rows.py``):

- A case is judged when it has a prediction and its entry resolves at least one of its rubric
  ids. Its atoms are the scored atoms of its rubrics (``tool.call_args`` and
  ``authority.request_authorized_confirmation`` never count) plus, when the case has a validator
  spec, one validator atom that passes iff the raw verdict passes and the row is no format error.
  It passes iff it has at least one rubric with a scored atom or a validator atom, and every one
  passes; otherwise it fails, with 0 atoms when it has none.
- Otherwise (no prediction, or no resolvable rubric) it fails with the fallback atoms of §7.2,
  computed at import (``spec["fallback_atoms"]``); it is "unjudged" unless the row is a format
  error.
- Tool reads the raw validator verdict over cases requiring at least one call (a missing
  prediction is validated as no calls and fails; a format-error row with the right calls passes).

Rates are {"count", "total", "pct"}; pct is ``100 * count / total`` rounded half-up on the float's
repr to one decimal (the paper's ``half_up``), None when the total is 0 (shown "–").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal

from .judge import IGNORED_DIMENSIONS
from .predictions import FULL_DUPLEX, TURN_BASED
from .release import BASE, HEAR, PATTERN_CODES, SPEAK
from .tool_match import call_names, calls_preserved
from .validator import validate_tool_calls

BIR_VARIANTS = {TURN_BASED: "barge_in_resume", FULL_DUPLEX: "fullduplex_live"}
# Action labels the full-duplex summary counts as answering (scoring/eval.py:_action_class).
RESPOND_CLASS = frozenset({"respond", "refuse", "clarify", "incorporate"})
POLICY_VERSION = "ib.leaderboard.judge_metrics.judge_gated_validator_tool.raw_apr.v3"


def half_up(value: float) -> str:
    """One decimal, half-up, on the float's shortest repr: 28.125 -> "28.1", 12.25 -> "12.3"."""
    return str(Decimal(repr(value)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def rate(count: int, total: int) -> dict:
    pct = float(half_up(100 * count / total)) if total else None
    return {"count": count, "total": total, "pct": pct}


def wilson_half_width(k: int, n: int, z: float = 1.96) -> float:
    """In percent (paper_table_rows.py:wilson_half_width)."""
    p = k / n
    return 100 * (z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n)


def _format_error(prediction: Mapping | None) -> bool:
    metadata = (prediction or {}).get("metadata")
    return isinstance(metadata, dict) and isinstance(metadata.get("provider_error"), dict)


def _blank(text) -> bool:
    return not (text or "").strip()


# --- per cell ----------------------------------------------------------------------------------


def raw_validator(spec: Mapping, prediction: Mapping | None) -> dict | None:
    """The validator's verdict on the row's raw calls (none when missing); None without a spec."""
    if spec.get("tool_validation") is None:
        return None
    calls = (prediction or {}).get("tool_calls") or []
    return validate_tool_calls(spec=spec["tool_validation"], calls=calls).to_json()


def base_cell_outcome(
    *,
    spec: Mapping,
    prediction: Mapping | None,
    validator: Mapping | None,
    judged: Mapping[str, Mapping],
) -> dict:
    """One base case: pass/fail, atoms passed and counted, and how it was scored. ``validator``
    is ``raw_validator``'s output, ``judged`` maps rubric id to the stored structured result
    (parsed or fixed); a rubric without one counts as a failed judgment (``judge_missing``)."""
    format_error = _format_error(prediction)
    requires_call = spec["required_call_count"] > 0
    has_validator = spec.get("tool_validation") is not None
    raw_pass = bool(validator and validator["passed"])
    outcome = {
        "cell_id": spec["cell_id"],
        "pattern_code": spec["pattern_code"],
        "missing": prediction is None,
        "format_error": format_error,
        "requires_call": requires_call,
        "tool_passed": raw_pass if requires_call else None,
        "validator_atom": None,
        "judged": False,
        "unjudged": False,
        "ignored_atoms": 0,
        "judge_missing": 0,
    }
    if prediction is None or not spec["judge_rubric_ids"]:
        outcome.update(
            passed=False,
            atoms=spec["fallback_atoms"],
            atoms_passed=0,
            unjudged=not format_error,
        )
        return outcome
    judgments = passed_judgments = atoms = atoms_passed = 0
    for rubric_id in spec["judge_rubric_ids"]:
        result = judged.get(rubric_id)
        if result is None:
            outcome["judge_missing"] += 1
            scored = [False] * sum(
                1
                for atom in spec["rubrics"][rubric_id].get("atomic_criteria") or []
                if atom.get("dimension", "legacy.unspecified") not in IGNORED_DIMENSIONS
            )
        else:
            scored = [
                atom["passed"] is True
                for atom in result["atoms"]
                if atom["dimension"] not in IGNORED_DIMENSIONS
            ]
            outcome["ignored_atoms"] += len(result["atoms"]) - len(scored)
        atoms += len(scored)
        atoms_passed += sum(scored)
        if scored:
            judgments += 1
            passed_judgments += all(scored)
    if has_validator:
        atom = raw_pass and not format_error
        outcome["validator_atom"] = atom
        atoms += 1
        atoms_passed += atom
        judgments += 1
        passed_judgments += atom
    outcome.update(
        judged=True,
        passed=judgments > 0 and passed_judgments == judgments,
        atoms=atoms,
        atoms_passed=atoms_passed,
    )
    return outcome


def hear_cell_outcome(*, spec: Mapping, prediction: Mapping | None) -> dict:
    """A hear-time probe: valid unless missing or a format error; fails unless silent, with a
    blank answer (``str.strip``) and no tool call. Only disc/retr probes count in PRR."""
    valid = prediction is not None and not _format_error(prediction)
    failed = None
    if valid:
        silent = (
            prediction["predicted_action"] == "silent"
            and _blank(prediction.get("answer_text"))
            and not prediction.get("tool_calls")
        )
        failed = not silent
    return {
        "cell_id": spec["cell_id"],
        "counts_in_prr": spec["counts_in_prr"],
        "valid": valid,
        "failed": failed,
    }


def speak_cell_outcome(*, spec: Mapping, prediction: Mapping | None, run_mode: str) -> dict:
    """A speak-time probe under the system's run mode (§7.6)."""
    gold = spec.get("gold_tool_calls") or []
    if run_mode == TURN_BASED:
        executed = prediction is not None and not _format_error(prediction)
        action = prediction["predicted_action"] if prediction else None
        calls = (prediction or {}).get("tool_calls") or []
        names_match = sorted(call_names(gold)) == sorted(call_names(calls))
        tool_ok = executed and calls_preserved(gold, calls)
        followed = bool(calls) and not names_match
        passed = executed and action == "respond" and tool_ok and not followed
        interrupted = None
    elif run_mode == FULL_DUPLEX:
        metadata = (prediction or {}).get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        live = metadata.get("live_probe")
        live = live if isinstance(live, dict) else {}
        action = live.get("predicted_action")
        if not isinstance(action, str):
            action = prediction["predicted_action"] if prediction else None
        live_calls = live.get("tool_calls")
        if isinstance(live_calls, list):
            calls = [call for call in live_calls if isinstance(call, dict)]
        else:
            calls = (prediction or {}).get("tool_calls") or []
        executed = bool(
            metadata.get("live_probe_executed")
            or live.get("executed")
            or live.get("injection_started")
        )
        interrupted = bool(metadata.get("interrupted") or live.get("interrupted"))
        followed = bool(metadata.get("followed_bystander") or live.get("followed_bystander"))
        tool_ok = calls_preserved(gold, calls)
        passed = (
            executed and action in RESPOND_CLASS and tool_ok and not interrupted and not followed
        )
    else:
        raise ValueError(f"unknown run mode {run_mode!r}")
    return {
        "cell_id": spec["cell_id"],
        "executed": executed,
        "passed": passed,
        "action": action,
        "tool_calls_preserved": tool_ok,
        "interrupted": interrupted,
        "followed_bystander": followed,
    }


# --- per language ------------------------------------------------------------------------------


def language_results(
    *,
    specs: list[Mapping],
    predictions: Mapping[str, Mapping],
    validators: Mapping[str, Mapping | None] | None = None,
    judged: Mapping[str, Mapping[str, Mapping]],
    run_mode: str,
) -> dict:
    """The table row of one language from every cell of that language. ``predictions`` hold
    ``Prediction.to_json()`` dicts by cell id; ``validators`` the stored raw verdicts (computed
    when absent); ``judged`` cell id -> rubric id -> structured judge result."""
    validators = validators or {}
    base = [spec for spec in specs if spec["kind"] == BASE]
    hear = [spec for spec in specs if spec["kind"] == HEAR]
    speak = [spec for spec in specs if spec["kind"] == SPEAK]
    cells = []
    for spec in base:
        prediction = predictions.get(spec["cell_id"])
        validator = (
            validators.get(spec["cell_id"])
            if spec["cell_id"] in validators
            else raw_validator(spec, prediction)
        )
        cells.append(
            base_cell_outcome(
                spec=spec,
                prediction=prediction,
                validator=validator,
                judged=judged.get(spec["cell_id"], {}),
            )
        )
    n = len(cells)
    k = sum(cell["passed"] for cell in cells)
    apr = rate(k, n)
    apr["half_width"] = float(half_up(wilson_half_width(k, n))) if n else None
    tool_cells = [cell for cell in cells if cell["requires_call"]]
    per_pattern = {}
    for code in PATTERN_CODES:
        members = [cell for cell in cells if cell["pattern_code"] == code]
        per_pattern[code] = rate(sum(cell["passed"] for cell in members), len(members))

    hear_outcomes = [
        hear_cell_outcome(spec=spec, prediction=predictions.get(spec["cell_id"])) for spec in hear
    ]
    prr_cells = [h for h in hear_outcomes if h["counts_in_prr"]]
    valid = [h for h in prr_cells if h["valid"]]
    prr = rate(sum(h["failed"] for h in valid), len(valid))
    prr["probes"] = len(prr_cells)

    speak_outcomes = [
        speak_cell_outcome(
            spec=spec, prediction=predictions.get(spec["cell_id"]), run_mode=run_mode
        )
        for spec in speak
    ]
    executed = [s for s in speak_outcomes if s["executed"]]
    bir = rate(sum(s["passed"] for s in executed), len(executed))
    bir["probes"] = len(speak_outcomes)
    bir["variant"] = BIR_VARIANTS[run_mode]

    missing = {
        kind: sum(1 for spec in group if spec["cell_id"] not in predictions)
        for kind, group in ((BASE, base), (HEAR, hear), (SPEAK, speak))
    }
    return {
        "n": n,
        "apr": apr,
        "ars": rate(sum(c["atoms_passed"] for c in cells), sum(c["atoms"] for c in cells)),
        "tool": rate(sum(c["tool_passed"] for c in tool_cells), len(tool_cells)),
        "bir": bir,
        "prr": prr,
        "per_pattern": per_pattern,
        "format_errors": sum(c["format_error"] for c in cells),
        "unjudged": sum(c["unjudged"] for c in cells),
        "ignored_atoms": sum(c["ignored_atoms"] for c in cells),
        "judge_missing": sum(c["judge_missing"] for c in cells),
        "missing": missing,
        "complete": not any(missing.values()),
        "run_mode": run_mode,
    }


def submission_results(
    *,
    specs: Mapping[str, Mapping],
    predictions: Mapping[str, Mapping],
    validators: Mapping[str, Mapping | None] | None = None,
    judged: Mapping[str, Mapping[str, Mapping]],
    run_mode: str,
    languages: list[str],
) -> dict:
    """{language: row} for the languages the submission covers, each scored on its own cells."""
    by_language: dict[str, list[Mapping]] = {language: [] for language in languages}
    for spec in specs.values():
        if spec["language"] in by_language:
            by_language[spec["language"]].append(spec)
    return {
        language: language_results(
            specs=members,
            predictions=predictions,
            validators=validators,
            judged=judged,
            run_mode=run_mode,
        )
        for language, members in by_language.items()
    }
