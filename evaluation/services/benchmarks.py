"""Importing a benchmark's release: tasks, their files, judge prompts (versioned), the default
judges and the rows its paper reports."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction

from evaluation.benchmarks import get_plugin
from evaluation.benchmarks.base import BenchmarkPlugin, PromptSource, SourceError
from evaluation.links import web_url_problem
from evaluation.models import Benchmark, Judge, PromptVersion, Submission, System, Task
from evaluation.selectors import current_prompts

SQL_IN_BATCH = 500
OFFLINE_JUDGE_SLUG = "offline"


@dataclass(frozen=True)
class ImportSummary:
    benchmark: Benchmark
    tasks_created: int
    tasks_updated: int
    prompts_added: list[str]
    assets_stored: int = 0


def prompt_sha256(prompt: PromptSource) -> str:
    """What versions a prompt: its template and schema (and further parts, when it has any)."""
    text = prompt.template + json.dumps(prompt.schema, sort_keys=True)
    if prompt.parts:
        text += json.dumps(dict(prompt.parts), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _asset_key(benchmark: Benchmark, task_id: str, name: str) -> str:
    return f"benchmarks/{benchmark.slug}/{task_id}/{name}"


@transaction.atomic
def benchmark_import(
    *,
    slug: str,
    directory: Path,
    plugin: str,
    name: str = "",
    is_demo: bool = False,
    options: dict | None = None,
) -> ImportSummary:
    """Idempotent. A changed task is updated; a changed prompt becomes a new version while the
    earlier ones and the judgments made with them are kept. Files of the release (audio) are
    streamed into storage once per task and name."""
    source_plugin = get_plugin(plugin)
    source = source_plugin.read_source(Path(directory), **(options or {}))
    benchmark, _ = Benchmark.objects.get_or_create(
        slug=slug,
        defaults={
            "name": name or source_plugin.name,
            "plugin": plugin,
            "is_demo": is_demo,
            "description": source_plugin.description,
        },
    )
    existing = {task.task_id: task for task in benchmark.tasks.all()}
    created, updated = [], []
    for spec in source.tasks:
        task = existing.get(spec.task_id)
        if task is None:
            task = Task(
                benchmark=benchmark, task_id=spec.task_id, spec=spec.spec, held_out=spec.held_out
            )
            created.append(task)
            existing[spec.task_id] = task
        elif task.spec != spec.spec or (spec.held_out and not task.held_out):
            task.spec = spec.spec
            task.held_out = task.held_out or spec.held_out
            updated.append(task)
    Task.objects.bulk_create(created, batch_size=SQL_IN_BATCH)
    Task.objects.bulk_update(updated, ["spec", "held_out"], batch_size=SQL_IN_BATCH)

    stored = _assets_store(benchmark, source.assets, existing)
    added = prompts_add(benchmark=benchmark, prompts=source.prompts)
    _ensure_default_judges(benchmark, source_plugin)
    if not is_demo:
        reported_rows_load(benchmark=benchmark)
    return ImportSummary(benchmark, len(created), len(updated), added, stored)


def _assets_store(benchmark: Benchmark, assets, tasks: dict[str, Task]) -> int:
    changed: dict[str, Task] = {}
    stored = 0
    for asset in assets:
        task = tasks.get(asset.task_id)
        if task is None:
            continue
        key = _asset_key(benchmark, asset.task_id, asset.name)
        with asset.open() as handle:
            known = (task.assets or {}).get(asset.name)
            if known and default_storage.exists(known["key"]):
                continue  # stored by an earlier import; releases do not rewrite audio
            saved = default_storage.save(key, File(handle, name=asset.name))
        size = default_storage.size(saved)
        task.assets = {**(task.assets or {}), asset.name: {"key": saved, "size": size}}
        changed[task.task_id] = task
        stored += 1
    Task.objects.bulk_update(list(changed.values()), ["assets"], batch_size=SQL_IN_BATCH)
    return stored


def prompts_add(*, benchmark: Benchmark, prompts: list[PromptSource]) -> list[str]:
    """A new version of each prompt whose text changed (or is new); the kinds added."""
    current = current_prompts(benchmark=benchmark)
    added = []
    for prompt in prompts:
        sha = prompt_sha256(prompt)
        latest = current.get(prompt.kind)
        if latest is not None and latest.sha256 == sha:
            continue
        PromptVersion.objects.create(
            benchmark=benchmark,
            kind=prompt.kind,
            version=(latest.version + 1) if latest else 1,
            template=prompt.template,
            schema=prompt.schema,
            parts=dict(prompt.parts),
            sha256=sha,
        )
        added.append(prompt.kind)
    return added


def _ensure_default_judges(benchmark: Benchmark, plugin: BenchmarkPlugin) -> None:
    """The judge the benchmark's paper used (not on a demo) and the offline judge."""
    defaults = plugin.official_judge
    if defaults is not None and not benchmark.is_demo:
        Judge.objects.get_or_create(
            benchmark=benchmark,
            slug=defaults.slug,
            defaults={
                "name": defaults.name,
                "provider": defaults.provider,
                "models_by_kind": dict(defaults.models_by_kind),
                "send_sampling_params": defaults.send_sampling_params,
                "base_url": defaults.base_url,
                "is_official": True,
            },
        )
    Judge.objects.get_or_create(
        benchmark=benchmark,
        slug=OFFLINE_JUDGE_SLUG,
        defaults={
            "name": "Offline heuristic judge (not an LLM)",
            "provider": Judge.Provider.OFFLINE,
            "models_by_kind": {},
        },
    )


def reported_rows_load(*, benchmark: Benchmark) -> int:
    """Preload the rows the benchmark's paper reports, labelled as such. Their systems belong
    to staff (no team). Idempotent."""
    plugin = get_plugin(benchmark.plugin)
    loaded = 0
    for row in plugin.reported_rows():
        system, _ = System.objects.get_or_create(
            name=row.system, team=None, defaults=_system_facts(row.facts, system=row.system)
        )
        _, created = Submission.objects.update_or_create(
            benchmark=benchmark,
            system=system,
            is_reported=True,
            defaults={
                "status": Submission.Status.SCORED,
                "reported_source": plugin.reported_source,
                "reported_results": row.results,
                "row_group": row.row_group,
            },
        )
        loaded += created
    return loaded


SYSTEM_FACTS = (
    "organization",
    "description",
    "architecture",
    "asr_model",
    "llm_model",
    "tts_model",
    "open_weights",
    "full_duplex",
    "parameters",
    "license",
    "paper_url",
    "code_url",
)


def _system_facts(facts, *, system: str = "") -> dict:
    """A paper row's system facts; an address that is not http(s) is refused, named."""
    for key in ("paper_url", "code_url"):
        problem = web_url_problem(key, facts.get(key))
        if problem:
            raise SourceError(f"reported row {system!r}: {problem}")
    return {key: facts[key] for key in SYSTEM_FACTS if key in facts}
