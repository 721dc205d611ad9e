"""Duplex-MPE: full-duplex voice models in multi-party conversation (SPEC:
../shared/benchmarks/duplexmpe/SPEC.md). A Floorboard plug-in (``plugin``); every module but
plugin.py's hooks and models.py is plain Python with no Django import.

segments  time conventions (§5) and episode normalisation (§4)
vad       Silero VAD v5 via onnxruntime, streamed and batched (§4)
manifest  the scenario manifest (our JSONL format) and its validation
schedule  scheduler logs, their check against the manifest (§2a), GT runs (§3), input channel
metrics   per-run timing, judgment items, per-condition results, paired McNemar (§6)
judge     our two prompts, parsing and outcomes (§7)
asr       span extraction, transcript cache key, OpenAI-compatible ASR client
offline   demo stand-ins: transcripts from synthetic sidecars, a keyword judge (not an LLM)
paper     the five systems of §9 as reported rows
synthetic scenarios, clips, simulated submissions, §8 boundary runs
bench     VAD throughput and memory figures (the model alone)
upload    the upload format, its validation and ingest
processing  the VAD step, the input channel, the submission's facts
transcribing  transcripts of the judged spans (submitted, or ASR here with a cache)
scoring   judge requests, parsing and aggregation on the plug-in interface
pages     the drill-down and the rating-study units
demo      the demo release and uploads
plugin    the declarations and hooks; models.py holds the transcript cache
"""

from .judge import KINDS, outcome, parse, request, template, template_version
from .manifest import ManifestError, Scenario, parse_manifest, read_manifest
from .metrics import Run, ScoringError, judgment_items, run_timing, score, score_condition
from .plugin import plugin
from .schedule import gt_run, parse_log, validate_gt_run, validate_log, write_input_channel

__all__ = [
    "KINDS",
    "ManifestError",
    "Run",
    "Scenario",
    "ScoringError",
    "gt_run",
    "judgment_items",
    "outcome",
    "parse",
    "parse_log",
    "parse_manifest",
    "plugin",
    "read_manifest",
    "request",
    "run_timing",
    "score",
    "score_condition",
    "template",
    "template_version",
    "validate_gt_run",
    "validate_log",
    "write_input_channel",
]
