"""What a plausible MP-Bench bundle holds: bounds on conversation length, files and audio.

The benchmark's conversations last minutes (the harness appends a 30 s tail to each). Anything
far beyond these bounds is not a run of the benchmark; it would only cost the server memory and
disk, so validation refuses it with a message naming the file.
"""

from __future__ import annotations

from evaluation.audio import AudioLimits

# No MP-Bench conversation comes near this; a timestamp or a WAV beyond it is not a real run.
MAX_CONVERSATION_SECONDS = 4 * 3600

# A transcript of a 4-hour conversation is a few megabytes; each word chunk is about five JSON
# values. Parsing is refused above these, so a file of empty chunks cannot take the memory.
MAX_TRANSCRIPT_BYTES = 16 * 1024 * 1024
MAX_TRANSCRIPT_VALUES = 500_000
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_MANIFEST_VALUES = 100_000
# A transcript nests four levels (object, chunks, chunk, timestamp); a manifest a few more.
MAX_JSON_DEPTH = 32
# A chunk is a word: a quarter of an hour of speech at five words a second is 4,500, and a
# conversation of the benchmark lasts minutes (its transcripts hold about a hundred). More is not
# a run; it would only make the task's page draw that many words. The plug-in's
# max_spans_per_run: the core refuses a transcript holding more.
MAX_WORD_CHUNKS = 5_000

# The harness's WAVs: input, response and both together (that one may be stereo). A file of
# silence compresses past 1000:1 and is fine; one declaring more than this is not a task's audio.
AUDIO_LIMITS = AudioLimits(
    max_seconds=MAX_CONVERSATION_SECONDS,
    max_bytes=1024**3,
    max_channels=2,
    max_sample_rate=48_000,
)
# A full run with its audio is a few gigabytes.
MAX_BUNDLE_UNCOMPRESSED_BYTES = 4 * 1024**3
