"""The speakers and turns of a task's metatranscript (the raw JSON string from tasks.jsonl)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

# Speakers get one of six colours in order of appearance in the speaker list; others the seventh.
COLOURS = 6


@dataclass(frozen=True)
class Conversation:
    speakers: list[dict] = field(default_factory=list)  # as listed, each with a "colour"
    turns: list[dict] = field(default_factory=list)  # speaker, content, addressee, colour
    raw: str = ""  # the metatranscript as given, when it does not parse

    @property
    def speaker_names(self) -> tuple[str, ...]:
        return tuple(str(s["name"]) for s in self.speakers if s.get("name"))


def conversation_turns(metatranscript: str) -> Conversation:
    """Parsed turns; a metatranscript that is not a JSON object with a list of turns comes back
    whole in ``raw``."""
    try:
        data = json.loads(metatranscript)
    except (TypeError, ValueError):
        data = None
    turns = data.get("metatranscript") if isinstance(data, dict) else None
    if not isinstance(turns, list):
        return Conversation(raw=str(metatranscript))
    speakers = [s for s in data.get("speakers") or [] if isinstance(s, dict)]
    colour = {str(s.get("name")): index % COLOURS for index, s in enumerate(speakers)}
    return Conversation(
        speakers=[{**s, "colour": colour.get(str(s.get("name")), COLOURS)} for s in speakers],
        turns=[
            {
                "speaker": str(t.get("speaker", "")),
                "content": str(t.get("content", "")),
                "addressee": ", ".join(map(str, t.get("addressee") or [])),
                "colour": colour.get(str(t.get("speaker")), COLOURS),
            }
            for t in turns
            if isinstance(t, dict)
        ],
    )
