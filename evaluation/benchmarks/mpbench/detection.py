"""MP-Bench turn-taking and latency detection, exactly as the official harness decides them.

Pure Python, no Django: the same functions score a directory from the command line and a
submission inside a worker. The rules are quoted from "MP-Bench scoring rules" in DESIGN.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

# (input, output) layouts, first match wins: both files exist and are non-empty.
TRANSCRIPT_PAIRS: tuple[tuple[str, str], ...] = (
    ("all_stitched.json", "response.json"),
    ("all_stitched/input.json", "all_stitched/output.json"),
    ("all_stitched/input.json", "response.json"),
    ("input.json", "output.json"),
    ("combined.json", "output.json"),
)
# (input, combined) layouts used only for latency.
LATENCY_PAIRS: tuple[tuple[str, str], ...] = (
    ("all_stitched.json", "combined.json"),
    ("all_stitched/input.json", "all_stitched/combined.json"),
    ("input.json", "combined.json"),
)
TRANSCRIPT_NAMES = frozenset(name for pair in TRANSCRIPT_PAIRS + LATENCY_PAIRS for name in pair)

# The half-duplex probe: a run in which fewer than a quarter of the responding tasks have a word
# after the input ends is a model that only answered while the input was still playing.
HALF_DUPLEX_POST_RATIO = 0.25


@dataclass(frozen=True)
class Word:
    text: str
    start: float
    end: float


@dataclass(frozen=True)
class Transcript:
    text: str
    chunks: list = field(default_factory=list)

    @property
    def words(self) -> list[Word]:
        """Chunks whose timestamp is truthy and has exactly two elements, in file order."""
        words = []
        for chunk in self.chunks:
            if not isinstance(chunk, dict):
                continue
            stamp = chunk.get("timestamp")
            if stamp and isinstance(stamp, list | tuple) and len(stamp) == 2:
                words.append(Word(str(chunk.get("text", "")), stamp[0], stamp[1]))
        return words

    @property
    def full_text(self) -> str:
        """`text` stripped or, when that is empty, every chunk's text stripped, joined by spaces."""
        text = self.text.strip()
        if text:
            return text
        parts = (str(c.get("text", "")).strip() for c in self.chunks if isinstance(c, dict))
        return " ".join(parts).strip()


EMPTY = Transcript(text="", chunks=[])


def parse_transcript(raw: bytes | str | None) -> Transcript:
    """A file that does not parse counts as no chunks and no text."""
    if raw is None:
        return EMPTY
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return EMPTY
    return transcript_of(data)


def transcript_of(data) -> Transcript:
    """A transcript from a file's parsed JSON (anything but an object counts as empty)."""
    if not isinstance(data, dict):
        return EMPTY
    text = data.get("text")
    chunks = data.get("chunks")
    return Transcript(
        text=text if isinstance(text, str) else "",
        chunks=chunks if isinstance(chunks, list) else [],
    )


# A task folder as the detector sees it: a name -> size lookup and a reader for the raw bytes.
SizeOf = Callable[[str], int | None]
Reader = Callable[[str], bytes]


def choose_pair(size_of: SizeOf, pairs: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    for first, second in pairs:
        if (size_of(first) or 0) > 0 and (size_of(second) or 0) > 0:
            return first, second
    return None


@dataclass(frozen=True)
class Evidence:
    """What one task folder contributes, before the run-wide half-duplex decision."""

    has_pair: bool
    both_valid: bool
    input_end: float | None
    full_text: str
    post_words: tuple[Word, ...]
    first_output_start: float | None
    # First word of the latency pair's combined transcript at or after its input end.
    combined_latency: float | None

    @property
    def has_post(self) -> bool:
        return bool(self.post_words)


MISSING = Evidence(
    has_pair=False,
    both_valid=False,
    input_end=None,
    full_text="",
    post_words=(),
    first_output_start=None,
    combined_latency=None,
)


def _input_end(words: list[Word]) -> float:
    return max(word.end for word in words)


def collect_evidence(size_of: SizeOf, read: Reader) -> Evidence:
    return evidence_of(size_of, lambda name: parse_transcript(read(name)))


def evidence_of(size_of: SizeOf, transcript: Callable[[str], Transcript]) -> Evidence:
    """collect_evidence with the files' transcripts already at hand (``transcript`` gives the
    one of a non-empty file by name), as validation has them."""
    pair = choose_pair(size_of, TRANSCRIPT_PAIRS)
    if pair is None:
        return MISSING
    cache: dict[str, Transcript] = {}

    def load(name: str) -> Transcript:
        if name not in cache:
            cache[name] = transcript(name)
        return cache[name]

    source, output = load(pair[0]), load(pair[1])
    source_words, output_words = source.words, output.words
    both_valid = bool(source_words) and bool(output_words)
    input_end = _input_end(source_words) if both_valid else None
    post_words: tuple[Word, ...] = ()
    if both_valid:
        post_words = tuple(w for w in output_words if w.start >= input_end)

    combined_latency = None
    latency_pair = choose_pair(size_of, LATENCY_PAIRS)
    if latency_pair is not None:
        lat_input, lat_combined = load(latency_pair[0]).words, load(latency_pair[1]).words
        if lat_input and lat_combined:
            lat_end = _input_end(lat_input)
            after = next((w for w in lat_combined if w.start >= lat_end), None)
            if after is not None:
                combined_latency = after.start - lat_end

    return Evidence(
        has_pair=True,
        both_valid=both_valid,
        input_end=input_end,
        full_text=output.full_text,
        post_words=post_words,
        first_output_start=output_words[0].start if output_words else None,
        combined_latency=combined_latency,
    )


def evidence_json(evidence: Evidence) -> list:
    """Evidence as plain JSON values, kept from validation until ingest (evidence_from_json).
    JSON keeps an int an int and gives a float back exactly."""
    return [
        evidence.has_pair,
        evidence.both_valid,
        evidence.input_end,
        evidence.full_text,
        [[word.text, word.start, word.end] for word in evidence.post_words],
        evidence.first_output_start,
        evidence.combined_latency,
    ]


def evidence_from_json(value: list) -> Evidence:
    has_pair, both_valid, input_end, full_text, post, first_start, combined = value
    return Evidence(
        has_pair=has_pair,
        both_valid=both_valid,
        input_end=input_end,
        full_text=full_text,
        post_words=tuple(Word(text, start, end) for text, start, end in post),
        first_output_start=first_start,
        combined_latency=combined,
    )


@dataclass(frozen=True)
class HalfDuplexProbe:
    n_post: int
    n_text: int

    @property
    def is_half_duplex(self) -> bool:
        return self.n_text > 0 and self.n_post / self.n_text < HALF_DUPLEX_POST_RATIO


def probe_half_duplex(evidence: Iterable[Evidence]) -> HalfDuplexProbe:
    """Once per submission, over tasks whose pair exists and both sides have valid chunks."""
    n_post = n_text = 0
    for item in evidence:
        if not item.both_valid:
            continue
        n_post += item.has_post
        n_text += bool(item.full_text)
    return HalfDuplexProbe(n_post=n_post, n_text=n_text)


SPOKE_POST = "post_input"
SPOKE_HALF_DUPLEX = "half_duplex"
SPOKE_FULL_TEXT = "full_text"


@dataclass(frozen=True)
class Detection:
    spoke: bool
    spoke_via: str | None
    post_text: str
    full_text: str
    latency: float | None
    input_end: float | None


def detect(evidence: Evidence, *, half_duplex: bool) -> Detection:
    via: str | None = None
    post_text = ""
    if evidence.both_valid:
        if evidence.post_words:
            via = SPOKE_POST
            post_text = " ".join(w.text for w in evidence.post_words).strip()
        elif half_duplex and evidence.full_text:
            via = SPOKE_HALF_DUPLEX
            post_text = evidence.full_text
    elif evidence.full_text:
        via = SPOKE_FULL_TEXT
        post_text = evidence.full_text

    latency = None
    if via is not None:
        if evidence.combined_latency is not None:
            latency = evidence.combined_latency
        elif via == SPOKE_POST:
            latency = evidence.post_words[0].start - evidence.input_end
        elif via == SPOKE_HALF_DUPLEX:
            # The harness reports the first output word's start itself here, not an offset.
            latency = evidence.first_output_start
    return Detection(
        spoke=via is not None,
        spoke_via=via,
        post_text=post_text,
        full_text=evidence.full_text,
        latency=round(latency, 3) if latency is not None else None,
        input_end=evidence.input_end,
    )


def directory_reader(folder) -> tuple[SizeOf, Reader]:
    """size_of/read over a task folder on disk (pathlib.Path)."""

    def size_of(name: str) -> int | None:
        path = folder / name
        return path.stat().st_size if path.is_file() else None

    def read(name: str) -> bytes:
        return (folder / name).read_bytes()

    return size_of, read
