"""Voice activity found once per test run for each distinct output file, for the tests whose
subject is not Duplex-MPE's detection (tests/conftest.py installs it for every test process; it
stands aside in this folder's tests, except the demo's).

The every-plugin tests score Duplex-MPE's first demo runs a dozen times per run: 30 minutes of
audio each, about 4 s of model time, the largest cost of the quick tier. The first time a file's
bytes reach ``vad.detect_stream`` they go through the model as always, and what it found is
written to a folder every process of the run shares; later, the same bytes with the same
settings get what was found. The model is deterministic on the same input, so the steps after it
see what the model gives; the reading of every file from storage, the timing and everything
after it run as before. Duplex-MPE's own tests of the detection (batching, streaming, decoding
errors, the timing against what a system said) never use this.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path

from evaluation.benchmarks.duplexmpe import vad

OWN_TESTS = "tests/benchmarks/duplexmpe/"
# Tests of this folder that score Duplex-MPE runs without the detection being their subject.
DETECTION_NOT_UNDER_TEST = ("test_demo.py",)


def detection_under_test() -> bool:
    """Whether the test running (pytest names it in PYTEST_CURRENT_TEST, while its fixtures are
    set up too) is one of Duplex-MPE's own tests of the detection."""
    path = os.environ.get("PYTEST_CURRENT_TEST", "").partition("::")[0]
    return path.startswith(OWN_TESTS) and path[len(OWN_TESTS) :] not in DETECTION_NOT_UNDER_TEST


def _digest(source) -> str | None:
    """SHA-256 of a seekable file's bytes, read in blocks, left where it was; None otherwise."""
    if not hasattr(source, "read"):
        return None
    try:
        start = source.tell()
        digest = hashlib.sha256()
        while block := source.read(1 << 20):
            digest.update(block)
        source.seek(start)
    except (OSError, ValueError):
        return None
    return digest.hexdigest()


class Found:
    """Results by (file digest, settings), one JSON file each in ``folder``."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def _path(self, digest: str, config: vad.VadConfig) -> Path:
        settings = json.dumps(dataclasses.asdict(config), sort_keys=True)
        return self.folder / f"{digest}-{hashlib.sha256(settings.encode()).hexdigest()[:16]}.json"

    def get(self, digest: str, config: vad.VadConfig) -> vad.VadResult | None:
        try:
            stored = json.loads(self._path(digest, config).read_text())
        except FileNotFoundError:
            return None
        return vad.VadResult(
            duration_s=stored["duration_s"],
            timestamps=[tuple(pair) for pair in stored["timestamps"]],
            segments=[tuple(pair) for pair in stored["segments"]],
        )

    def put(self, digest: str, config: vad.VadConfig, result: vad.VadResult) -> None:
        """Written whole under a temporary name, then renamed: a reader never sees half."""
        fields = {
            "duration_s": result.duration_s,
            "timestamps": [list(pair) for pair in result.timestamps],
            "segments": [list(pair) for pair in result.segments],
        }
        handle, name = tempfile.mkstemp(dir=self.folder, suffix=".part")
        with os.fdopen(handle, "w") as out:
            json.dump(fields, out)
        os.replace(name, self._path(digest, config))


def detect_stream_once(detect_stream: Callable, found: Found) -> Callable:
    """``detect_stream`` answering the files it has seen from what it found for them."""

    @functools.wraps(detect_stream)
    def remembered(
        sources: Iterable[tuple[Hashable, vad.Source]],
        *,
        config: vad.VadConfig = vad.DEFAULT_CONFIG,
        **options,
    ) -> Iterator[tuple[Hashable, vad.VadResult]]:
        if detection_under_test():
            yield from detect_stream(sources, config=config, **options)
            return
        digests: dict[Hashable, str | None] = {}
        known: list[tuple[Hashable, vad.VadResult]] = []

        def unseen():
            for key, source in sources:
                digest = digests[key] = _digest(source)
                result = found.get(digest, config) if digest else None
                if result is None:
                    yield key, source
                else:
                    known.append((key, result))

        for key, result in detect_stream(unseen(), config=config, **options):
            yield from _drain(known)
            if digests.get(key) and not result.error:
                found.put(digests[key], config, result)
            yield key, result
        yield from _drain(known)

    return remembered


def _drain(known: list) -> Iterator:
    while known:
        yield known.pop()
