"""The MP-Bench plug-in (927 tasks; Table 3 of the paper)."""

from .bundle import BundleContents, accepts_file, is_audio, is_task_folder, validate_contents
from .detection import Detection, Evidence, collect_evidence, detect, probe_half_duplex
from .importer import Source, SourceError, read_source
from .limits import AUDIO_LIMITS, MAX_BUNDLE_UNCOMPRESSED_BYTES
from .offline import offline_verdict
from .paper import SOURCE as REPORTED_SOURCE
from .paper import reported_rows
from .scoring import (
    CHANCE_PCT,
    KINDS,
    VERDICT_KEYS,
    TaskOutcome,
    TaskSpec,
    aggregate,
    build_prompt,
    kinds_for,
    parse_verdict,
    response_for,
    skips_judge,
)

SCHEMA_NAME = "mpbench_eval"

__all__ = [
    "AUDIO_LIMITS",
    "MAX_BUNDLE_UNCOMPRESSED_BYTES",
    "BundleContents",
    "accepts_file",
    "is_audio",
    "VERDICT_KEYS",
    "CHANCE_PCT",
    "Detection",
    "Evidence",
    "KINDS",
    "SCHEMA_NAME",
    "REPORTED_SOURCE",
    "Source",
    "SourceError",
    "TaskOutcome",
    "TaskSpec",
    "aggregate",
    "build_prompt",
    "collect_evidence",
    "detect",
    "is_task_folder",
    "kinds_for",
    "offline_verdict",
    "parse_verdict",
    "probe_half_duplex",
    "read_source",
    "reported_rows",
    "response_for",
    "skips_judge",
    "validate_contents",
]
