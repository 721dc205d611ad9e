"""Voice activity found once per test process for each distinct output file, for the tests whose
subject is not Duplex-MPE's detection (tests/conftest.py installs it outside this folder).

The every-plugin tests score Duplex-MPE's first demo runs a dozen times per process: 30 minutes
of audio each, about 4 s of model time, the largest cost of the quick tier. The first time a
file's bytes reach ``vad.detect_stream`` here they go through the model as always; later, the
same bytes with the same settings get a copy of that result. The model is deterministic on the
same input, so what the steps after it see is what the model would give; the reading of every
file from storage, the timing and everything after it run as before. Duplex-MPE's own tests,
where the detection is under test (batching, streaming, decoding errors), never use this.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Hashable, Iterable, Iterator

from evaluation.benchmarks.duplexmpe import vad

_found: dict[tuple[str, vad.VadConfig], vad.VadResult] = {}


def _digest(source) -> str | None:
    """SHA-256 of a seekable file's bytes, read in blocks, left at its start; None otherwise."""
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


def detect_stream_once(detect_stream: Callable) -> Callable:
    """``detect_stream`` answering the files it has seen from what it found for them."""

    def remembered(
        sources: Iterable[tuple[Hashable, vad.Source]],
        *,
        config: vad.VadConfig = vad.DEFAULT_CONFIG,
        **options,
    ) -> Iterator[tuple[Hashable, vad.VadResult]]:
        digests: dict[Hashable, str | None] = {}

        def unseen():
            for key, source in sources:
                digest = digests[key] = _digest(source)
                if digest is not None and (digest, config) in _found:
                    yield_now.append(key)
                    continue
                yield key, source

        yield_now: list[Hashable] = []
        for key, result in detect_stream(unseen(), config=config, **options):
            while yield_now:
                seen = yield_now.pop()
                yield seen, copy.deepcopy(_found[digests[seen], config])
            if digests.get(key) is not None and not result.error:
                _found[digests[key], config] = copy.deepcopy(result)
            yield key, result
        while yield_now:
            seen = yield_now.pop()
            yield seen, copy.deepcopy(_found[digests[seen], config])

    return remembered
