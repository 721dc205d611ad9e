"""What a plausible MP-Bench bundle holds: bounds on conversation length, files and audio.

The benchmark's conversations last minutes (the harness appends a 30 s tail to each). Anything
far beyond these bounds is not a run of the benchmark; it would only cost the server memory and
disk, so validation refuses it with a message naming the file.
"""

from __future__ import annotations

# No MP-Bench conversation comes near this; a timestamp or a WAV beyond it is not a real run.
MAX_CONVERSATION_SECONDS = 4 * 3600
