"""Which scorer produced a number: the plug-in's rules version, its processing steps' versions
(a VAD model's hash, an ASR's identity), the judge (provider, model per kind, sampling) and the
prompt versions its judgments used. A score stores the identity it was computed under; the
benchmark keeps a changelog of every identity it has had (ScorerVersion), and a row whose
identity differs from the current one says which part is older until it is re-scored.

Plain functions of models; writes only through scorer_log()."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark, Judge, ScorerVersion
from evaluation.selectors import current_prompts, prompt_versions_used

PARTS = ("rules", "processing", "judge", "prompts")
PART_LABELS = {
    "rules": "older scoring rules",
    "processing": "older processing",
    "judge": "an older judge",
    "prompts": "older judge prompts",
}


def _judge(judge: Judge) -> dict:
    return {
        "slug": judge.slug,
        "provider": judge.provider,
        "models": dict(sorted((judge.models_by_kind or {}).items())),
        "sampling": judge.sampling_params(),
    }


def _plugin_parts(benchmark: Benchmark) -> dict:
    plugin = get_plugin(benchmark.plugin)
    return {
        "rules": plugin.rules_version,
        "processing": {step.name: step.version for step in plugin.steps},
    }


def current_scorer(*, benchmark: Benchmark, judge: Judge) -> dict:
    """The identity a score computed now would have: today's judge configuration and the
    newest prompt of each kind the plug-in judges (none for the offline judge's rules)."""
    kinds = [kind.key for kind in get_plugin(benchmark.plugin).judge_kinds]
    prompts = current_prompts(benchmark=benchmark)
    return {
        **_plugin_parts(benchmark),
        "judge": _judge(judge),
        "prompts": {
            kind: [[prompts[kind].version, prompts[kind].sha256[:12]]]
            for kind in sorted(kinds)
            if kind in prompts
        },
    }


def score_scorer(*, submission, judge: Judge, used: list[tuple] | None = None) -> dict:
    """The identity of a score computed now from the stored judgments: the prompt versions
    those judgments actually used (a kind may show two while a re-score is under way).
    ``used``: those versions (prompt_versions_used), when already read."""
    if used is None:
        used = prompt_versions_used(submission_id=submission.pk, judge_id=judge.pk)
    prompts: dict[str, list] = {}
    for kind, version, sha in used:
        if version is not None:
            prompts.setdefault(kind, []).append([version, (sha or "")[:12]])
    return {**_plugin_parts(submission.benchmark), "judge": _judge(judge), "prompts": prompts}


def fingerprint(identity: Mapping | None) -> str:
    if not identity:
        return ""
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def older_parts(row: Mapping | None, current: Mapping) -> list[str]:
    """The parts of the current scorer a row was not scored with. A row without an identity
    (scored before identities were kept) is older in every part. Prompts compare kind by
    kind: only the kinds the row's judgments used."""
    if not row:
        return list(PARTS)
    older = []
    for part in ("rules", "processing", "judge"):
        if row.get(part) != current.get(part):
            older.append(part)
    used = row.get("prompts") or {}
    now = current.get("prompts") or {}
    if any(kind in now and versions != now[kind] for kind, versions in used.items()):
        older.append("prompts")
    return older


def changes(before: Mapping | None, after: Mapping) -> list[str]:
    """What changed between two identities, in words."""
    if not before:
        return ["first scorer"]
    found = []
    if before.get("rules") != after.get("rules"):
        found.append(f"scoring rules {before.get('rules')} → {after.get('rules')}")
    old_steps, new_steps = before.get("processing") or {}, after.get("processing") or {}
    for step in sorted(set(old_steps) | set(new_steps)):
        if old_steps.get(step) != new_steps.get(step):
            found.append(
                f"processing step {step}: {old_steps.get(step, 'none')} → "
                f"{new_steps.get(step, 'none')}"
            )
    old_judge, new_judge = before.get("judge") or {}, after.get("judge") or {}
    if old_judge.get("provider") != new_judge.get("provider"):
        found.append(f"judge provider {old_judge.get('provider')} → {new_judge.get('provider')}")
    old_models, new_models = old_judge.get("models") or {}, new_judge.get("models") or {}
    for kind in sorted(set(old_models) | set(new_models)):
        if old_models.get(kind) != new_models.get(kind):
            found.append(
                f"judge model for {kind}: {old_models.get(kind, 'none')} → "
                f"{new_models.get(kind, 'none')}"
            )
    old_sampling, new_sampling = old_judge.get("sampling") or {}, new_judge.get("sampling") or {}
    for key in sorted(set(old_sampling) | set(new_sampling)):
        if old_sampling.get(key) != new_sampling.get(key):
            found.append(
                f"judge {key}: {old_sampling.get(key, 'not sent')} → "
                f"{new_sampling.get(key, 'not sent')}"
            )
    old_prompts, new_prompts = before.get("prompts") or {}, after.get("prompts") or {}
    for kind in sorted(set(old_prompts) | set(new_prompts)):
        if old_prompts.get(kind) != new_prompts.get(kind):
            found.append(
                f"{kind} prompt {_versions(old_prompts.get(kind))} → "
                f"{_versions(new_prompts.get(kind))}"
            )
    return found or ["no change in what is compared"]


def _versions(found) -> str:
    if not found:
        return "none"
    return ", ".join(f"v{version}" for version, _ in found)


def scorer_log(*, benchmark: Benchmark, judge: Judge, identity: Mapping) -> ScorerVersion:
    """The changelog entry of this identity, added the first time it is seen, with what
    changed since the judge's previous entry; the plug-in's note for a new rules version is
    its first "why" (staff may write or change it)."""
    key = fingerprint(identity)
    found = ScorerVersion.objects.filter(benchmark=benchmark, judge=judge, fingerprint=key).first()
    if found is not None:
        return found
    previous = (
        ScorerVersion.objects.filter(benchmark=benchmark, judge=judge)
        .order_by("-first_seen_at", "-pk")
        .first()
    )
    before = previous.identity if previous else None
    notes = get_plugin(benchmark.plugin).rules_notes
    why = ""
    if before is None or before.get("rules") != identity.get("rules"):
        why = notes.get(identity.get("rules"), "")
    entry, _ = ScorerVersion.objects.get_or_create(
        benchmark=benchmark,
        judge=judge,
        fingerprint=key,
        defaults={"identity": dict(identity), "changes": changes(before, identity), "note": why},
    )
    return entry


def scorer_log_current(*, benchmark: Benchmark) -> None:
    """Log every judge's current identity (after an import, a judge's change, a deploy)."""
    for judge in benchmark.judges.all():
        scorer_log(
            benchmark=benchmark,
            judge=judge,
            identity=current_scorer(benchmark=benchmark, judge=judge),
        )
