"""Offline judge: a deterministic stand-in for the MP-Bench LLM judges (demos, tests, no network).

Standard library only. Turn-based verdicts follow the game's roles and rules as spoken in the
transcript; speaker names are matched with tolerance for ASR misspellings; understanding and
discussion verdicts are honest keyword heuristics and say so in their reasoning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from itertools import permutations

from ..conversation import conversation_turns
from ..scoring import DISCUSSION, SPEAKER_NAME, TURNBASED, UNDERSTANDING, TaskSpec

AI = "AI"
AI_LABEL = "AI Assistant"
FIXED_NAMES = (
    "Adam",
    "Anna",
    "Ben",
    "David",
    "Emma",
    "Jack",
    "Karen",
    "Leo",
    "Lily",
    "Luke",
    "Mia",
    "Rose",
)
LEADER, FOLLOWER = "Leader", "Follower"


def offline_verdict(kind: str, task: TaskSpec, response: str) -> tuple[bool, str]:
    """(verdict, reasoning) for one judge kind; deterministic."""
    if kind == TURNBASED:
        return _turnbased_verdict(task, response)
    if not response.strip():
        return False, "empty response"
    if kind == SPEAKER_NAME:
        return _speaker_name_verdict(task, response)
    if kind == UNDERSTANDING:
        return _understanding_verdict(task, response)
    if kind == DISCUSSION:
        return _discussion_verdict(task, response)
    raise ValueError(f"unknown judge kind {kind!r}")


# ---------------------------------------------------------------------------------------------
# Transcript
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    speaker: str
    content: str


@dataclass(frozen=True)
class Transcript:
    speakers: tuple[str, ...]
    turns: tuple[Turn, ...]


@lru_cache(maxsize=4096)
def load_transcript(metatranscript: str) -> Transcript:
    """The task's metatranscript; anything malformed reads as an empty transcript. Kept per
    process (a transcript is read once per task however many answers are judged against it)."""
    conversation = conversation_turns(metatranscript)
    turns = tuple(Turn(t["speaker"], t["content"]) for t in conversation.turns)
    return Transcript(conversation.speaker_names, turns)


def _humans(transcript: Transcript) -> list[str]:
    names = [s for s in transcript.speakers if not _is_ai_label(s)]
    for turn in transcript.turns:  # speakers missing from the list still take part
        if turn.speaker and not _is_ai_label(turn.speaker) and turn.speaker not in names:
            names.append(turn.speaker)
    return names


def _is_ai_label(name: str) -> bool:
    return name.strip().lower() in {"ai", "ai assistant", "assistant"}


# ---------------------------------------------------------------------------------------------
# Turn-based game: who plays which role
# ---------------------------------------------------------------------------------------------
#
# Each setup sentence is rewritten with people resolved to "@Name" tokens (I/me/my -> the
# speaker, you/your -> the addressee, "the AI Assistant" -> @AI), cut into clauses, and each
# clause yields weighted facts (role, group, same group, "X's turn triggers Y"). The assignment
# of the four players to Group 1/2 Leader/Follower that satisfies the most weight wins.


@dataclass(frozen=True)
class Fact:
    kind: str  # "role", "group", "same", "trigger"
    a: str
    b: str | int
    weight: float = 1.0


@dataclass(frozen=True)
class Roles:
    leaders: dict[int, str]
    followers: dict[int, str]

    def group_of(self, person: str) -> int | None:
        for group in (1, 2):
            if person in (self.leaders.get(group), self.followers.get(group)):
                return group
        return None

    def role_of(self, person: str) -> str | None:
        if person in self.leaders.values():
            return LEADER
        if person in self.followers.values():
            return FOLLOWER
        return None

    @property
    def trigger(self) -> str | None:
        """The Leader of the group the AI Assistant is not in: whose turns the AI answers."""
        ai_group = self.group_of(AI)
        return self.leaders.get(3 - ai_group) if ai_group else None

    def describe(self) -> str:
        def name(person: str | None) -> str:
            return AI_LABEL if person == AI else (person or "?")

        return "; ".join(
            f"Group {g}: Leader {name(self.leaders.get(g))}, Follower {name(self.followers.get(g))}"
            for g in (1, 2)
        )


_WORD_NUMBERS = {"one": 1, "two": 2, "a": 1, "b": 2, "first": 1, "second": 2}
# "Group 1", "G2", "Team One", "Pair B", "Leader 1", "the second group".
_GROUP_RE = re.compile(
    r"\b(?:group|team|pair|g)\s*(1|2|one|two|(?-i:A|B))\b|\b(?:leader|follower)\s+(1|2)\b"
    r"|\b(first|second)\s+(?:group|team|pair)\b",
    re.IGNORECASE,
)
_PERSON_RE = re.compile(r"@(\w+)('s)?")
# A role word qualified like this names no one ("a leader", "the opposing follower").
_GENERIC_BEFORE_RE = re.compile(
    r"\b(?:a|an|each|every|opposing|other|opponent|rival|opposite|own|another|team's|group's)"
    r"\s+(?:\w+\s+)?$",
    re.IGNORECASE,
)
_LEAD_RE = re.compile(
    r"\b(?:leader|boss|helm|captain|lead|leads|leading|charge)\b|\bled\s+by\b", re.IGNORECASE
)
_FOLLOW_RE = re.compile(
    r"\b(?:follower|follow|follows|following|support|supports|supporting)\b(?<!as follows)"
    r"|\bback(?:s|ing)?\s+@\w+\s+up\b",
    re.IGNORECASE,
)
# Verbs whose subject is a Follower reacting to the object (a Leader of the other group) ...
_REACTS_TO_RE = re.compile(
    r"\b(?:answer(?:s|ing)?|respond(?:s|ing)?\s+to|repl(?:y|ies|ying)\s+to|react(?:s|ing)?\s+to"
    r"|watch(?:es|ing)?(?:\s+out)?(?:\s+for)?|listen(?:s|ing)?(?:\s+out)?\s+(?:for|to)"
    r"|wait(?:s|ing)?\s+for)\s+(?:only\s+)?(?:the\s+)?",
    re.IGNORECASE,
)
# ... and verbs whose subject is a Leader setting off the object (a Follower of the other group).
_SETS_OFF_RE = re.compile(
    r"\b(?:trigger(?:s|ing)?|targeting|test(?:s|ing)?|stump|trick|confuse|activates?)\s+",
    re.IGNORECASE,
)
_CONDITION_RE = re.compile(r"\b(?:if|when|whenever)\b", re.IGNORECASE)
_SPEECH_RE = re.compile(
    r"\b(?:speak|speaks|talk|talks|say|says|said|shout|shouts|call|calls|give|gives|start|starts)\b",
    re.IGNORECASE,
)
_RESPONSE_RE = re.compile(
    r"^\s*(?:only\s+|then\s+|also\s+)?(?:answer|respond|repl|jump|handle|say|says|is up|am up|"
    r"has to|have to|must|need|should|will|subtract|add|increment|act|fire|throw|hit|take)",
    re.IGNORECASE,
)


def derive_roles(transcript: Transcript) -> tuple[Roles | None, list[Fact]]:
    """The best-supported role assignment and the facts read from the transcript."""
    facts = extract_facts(transcript)
    humans = _humans(transcript)
    if not facts or not humans:
        return None, facts
    best: tuple[float, Roles] | None = None
    for roles in _candidate_assignments(humans):
        score = sum(f.weight for f in facts if _holds(f, roles))
        if best is None or score > best[0]:  # first best wins: deterministic
            best = (score, roles)
    return (best[1] if best else None), facts


def _candidate_assignments(humans: list[str]):
    """Every way to seat the humans, the AI Assistant always one group's Follower."""
    pool = humans + [""] * max(0, 3 - len(humans))
    for ai_group in (1, 2):
        other = 3 - ai_group
        for partner, other_leader, other_follower in permutations(pool, 3):
            yield Roles(
                leaders={ai_group: partner, other: other_leader},
                followers={ai_group: AI, other: other_follower},
            )


def _holds(fact: Fact, roles: Roles) -> bool:
    if fact.kind == "role":
        return roles.role_of(fact.a) == fact.b
    if fact.kind == "group":
        return roles.group_of(fact.a) == fact.b
    if fact.kind == "same":
        group = roles.group_of(fact.a)
        return group is not None and group == roles.group_of(str(fact.b))
    if fact.kind == "trigger":  # a = Leader, b = the other group's Follower answering a
        group_a, group_b = roles.group_of(fact.a), roles.group_of(str(fact.b))
        return (
            roles.role_of(fact.a) == LEADER
            and roles.role_of(str(fact.b)) == FOLLOWER
            and None not in (group_a, group_b)
            and group_a != group_b
        )
    return False


def extract_facts(transcript: Transcript) -> list[Fact]:
    names = _humans(transcript)
    facts: list[Fact] = []
    previous_speaker = ""
    for turn in transcript.turns:
        resolver = _Resolver(turn.speaker, names, previous_speaker)
        for sentence in _sentences(turn.content):
            facts.extend(_sentence_facts(resolver.resolve(sentence), turn.speaker))
        previous_speaker = turn.speaker
    return [f for f in facts if f.a != f.b]


def _sentences(text: str) -> list[str]:
    text = text.replace("\u2019", "'").replace("\u2014", ", ").replace("\u2013", ", ")
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


_OPENER_RE = re.compile(
    r"(?:^|[,.!?:;]\s*|\b(?:hey|hi|okay|ok|yes|right|exactly|so|and|correct|precisely|great"
    r"|well|now|alright|remember|perfect)\s*,?\s*)$",
    re.IGNORECASE,
)


def _is_vocative(before: str, after: str) -> bool:
    """'Emma, you ...', 'Yes, Anna, ...', '... right Ben?': a name said to its bearer."""
    if re.match(r"\s*,|\s+you\b", after):
        return _OPENER_RE.search(before) is not None
    ends_sentence = re.match(r"\s*[.?!]?\s*$", after) is not None
    return ends_sentence and re.search(r"(?:,\s*|\b(?:right|hey|hi)\s+)$", before, re.I) is not None


@dataclass
class _Resolver:
    """Rewrites people as @Name tokens; remembers vocatives to know who "you" is."""

    speaker: str
    names: list[str]
    previous_speaker: str
    vocatives: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.mention_re = self._mention_re()

    _CONTRACTIONS = {"'re": " are", "'m": " am", "'ll": " will", "'ve": " have", "'d": " would"}

    def _mention_re(self) -> re.Pattern:
        names = "|".join(re.escape(n) for n in sorted(self.names, key=len, reverse=True)) or "(?!)"
        return re.compile(
            r"(?P<ai>\b(?:(?:[Tt]he|[Oo]ur)\s+)?(?:silent\s+friend\s+the\s+)?\bAI\b(?:\s+[Aa]ssistant)?"
            r"(?:\s+friend)?)(?P<ai_pos>'s)?"
            rf"|\b(?P<name>{names})\b(?P<name_pos>'s)?"
            r"|\b(?P<you_plural>[Yy]ou\s+(?:two|guys|all|both))\b"
            r"|\b(?P<you>[Yy]ou)(?P<you_c>'re|'ll|'ve|'d)?\b"
            r"|\b(?P<your>[Yy]ours?|[Yy]ourself)\b"
            r"|\b(?P<i>I)(?P<i_c>'m|'ll|'ve|'d)?\b"
            r"|\b(?P<me>[Mm]e|[Mm]yself)\b"
            r"|\b(?P<my>[Mm]y|[Mm]ine|[Oo]ur)\b"
            r"|\b(?P<we>[Ww]e(?:'ll| will)?\s+be\s+(?=(?:in\s+)?[Gg]roup))"
            r"|(?<=\bis )(?P<us>us)\b"
            r"|\b(?P<third>her|him)\b"
        )

    def _sentence_vocatives(self, sentence: str) -> list[tuple[int, str]]:
        found = []
        for match in self.mention_re.finditer(sentence):
            who = AI if match.group("ai") else match.group("name")
            possessive = match.group("ai_pos") or match.group("name_pos")
            if (
                who
                and not possessive
                and _is_vocative(sentence[: match.start()], sentence[match.end() :])
            ):
                found.append((match.start(), who))
        return found

    def _addressee(self, position: int, sentence_vocatives: list[tuple[int, str]]) -> str:
        before = [who for start, who in sentence_vocatives if start < position]
        if before:
            return before[-1]
        if sentence_vocatives:
            return sentence_vocatives[0][1]
        if self.vocatives:
            return self.vocatives[-1]
        return self.previous_speaker

    def resolve(self, sentence: str) -> str:
        sentence_vocatives = self._sentence_vocatives(sentence)
        out: list[str] = []
        last = 0
        referents: list[str] = []
        for match in self.mention_re.finditer(sentence):
            out.append(sentence[last : match.start()])
            last = match.end()
            token = self._token(match, sentence_vocatives, referents)
            out.append(token)
            person = _PERSON_RE.match(token)
            if person:
                referents.append(person.group(1))
        out.append(sentence[last:])
        self.vocatives.extend(who for _, who in sentence_vocatives)
        return "".join(out)

    def _token(
        self, match: re.Match, vocatives: list[tuple[int, str]], referents: list[str]
    ) -> str:
        if match.group("ai"):
            return f"@{AI}" + ("'s" if match.group("ai_pos") else "")
        if match.group("name"):
            return f"@{match.group('name')}" + ("'s" if match.group("name_pos") else "")
        if match.group("you_plural"):
            return "they"
        if match.group("you"):
            who = self._addressee(match.start(), vocatives)
            return f"@{who}" + self._CONTRACTIONS.get(match.group("you_c") or "", "")
        if match.group("your"):
            return f"@{self._addressee(match.start(), vocatives)}'s"
        if match.group("i"):
            return f"@{self.speaker}" + self._CONTRACTIONS.get(match.group("i_c") or "", "")
        if match.group("me"):
            return f"@{self.speaker}"
        if match.group("my"):
            return f"@{self.speaker}'s"
        if match.group("we"):
            return f"@{self.speaker} will be "
        if match.group("us"):
            return f"@{self.speaker}"
        if match.group("third"):
            # "you follow her": the most recent person other than the one just named.
            others = [r for r in reversed(referents) if referents and r != referents[-1]]
            return f"@{others[0]}" if others else match.group(0)
        return match.group(0)


def _sentence_facts(sentence: str, speaker: str) -> list[Fact]:
    facts = _condition_triggers(sentence)
    group_context: int | None = None
    previous_person: str | None = None
    for clause in _clauses(sentence):
        if _CONDITION_RE.search(clause):
            break  # a hypothetical or a condition; what follows is its consequence, not a role
        groups = _groups(clause)
        if len(set(groups)) == 1:
            group_context = groups[0]
        clause_group = groups[0] if len(set(groups)) == 1 else group_context
        facts.extend(_clause_facts(clause, clause_group, bool(groups), previous_person, speaker))
        people = [p for p, possessive, _ in _people(clause) if not possessive]
        if people:
            previous_person = people[-1]
    return facts


def _condition_triggers(sentence: str) -> list[Fact]:
    """'If X speaks, Y answers': X is the Leader whose turns Y reacts to."""
    facts = []
    for match in re.finditer(
        r"\b(?:if|when|whenever)\s+@(\w+)\b(?!')([^,]*),(.*?)(?=\b(?:if|when|whenever)\b|$)",
        sentence,
        re.IGNORECASE,
    ):
        leader, condition, consequence = match.group(1), match.group(2), match.group(3)
        if not _SPEECH_RE.search(condition) or _LEAD_RE.search(condition):
            continue
        for person in re.finditer(r"@(\w+)\b(?!')", consequence):
            if _RESPONSE_RE.match(consequence[person.end() :]):
                facts.append(Fact("trigger", leader, person.group(1)))
                break
    return facts


def _clauses(sentence: str) -> list[str]:
    """Cut at punctuation and at 'and'/'with' (except 'X and Y' naming a pair)."""
    clauses = []
    for piece in re.split(r"\s*[,;:()]\s*|\s+-\s+", sentence):
        parts = re.split(r"\s+and\s+", piece)
        merged = [parts[0]]
        for part in parts[1:]:
            if re.search(r"@\w+$", merged[-1]) and part.startswith("@"):
                merged[-1] += " and " + part
            else:
                merged.append(part)
        for part in merged:
            clauses.extend(_split_with(part))
    return [c for c in clauses if c.strip()]


def _split_with(clause: str) -> list[str]:
    """'X leads Group 2 with Y as Follower' is two facts; 'X is with Y' is one."""
    match = re.search(r"\s+with\s+(?=@)", clause)
    if match and _role_words(clause[: match.start()]):
        return [clause[: match.start()], clause[match.end() :]]
    return [clause]


def _groups(clause: str) -> list[int]:
    groups = []
    for match in _GROUP_RE.finditer(clause):
        value = next(g for g in match.groups() if g)
        groups.append(int(value) if value.isdigit() else _WORD_NUMBERS[value.lower()])
    return groups


def _people(clause: str) -> list[tuple[str, bool, int]]:
    """(person, possessive, position) for each @token."""
    return [(m.group(1), bool(m.group(2)), m.start()) for m in _PERSON_RE.finditer(clause)]


def _role_words(clause: str) -> list[tuple[str, re.Match]]:
    found = []
    for role, pattern in ((LEADER, _LEAD_RE), (FOLLOWER, _FOLLOW_RE)):
        for match in pattern.finditer(clause):
            if not _GENERIC_BEFORE_RE.search(clause[: match.start()]):
                found.append((role, match))
    return sorted(found, key=lambda item: item[1].start())


def _clause_facts(
    clause: str,
    group: int | None,
    explicit_group: bool,
    previous_person: str | None,
    speaker: str,
) -> list[Fact]:
    reactions = _reaction_facts(clause, previous_person)
    if reactions is not None:
        return reactions
    clause, facts = _companions(clause, group)
    people = _people(clause)
    roles = _role_words(clause)
    if not roles:
        return facts + _membership(people, group if explicit_group else None, clause)
    holders: dict[str, str | None] = {}
    for role, match in roles:
        # A second word for the same role is about the same person: "X backs Y up as Follower".
        if role not in holders:
            holders[role] = _holder(clause, match, people, previous_person, speaker)
        holder = holders[role]
        if holder is None:
            continue
        facts.append(Fact("role", holder, role))
        if group is not None:
            facts.append(Fact("group", holder, group))
        facts.extend(_partner_facts(clause, match, holder, role))
    return facts


def _reaction_facts(clause: str, previous_person: str | None) -> list[Fact] | None:
    """'X answers Y', 'X listens for Y's voice', 'X triggers Y': None if no such verb."""
    facts: list[Fact] = []
    matched = False
    for pattern, subject_leads in ((_REACTS_TO_RE, False), (_SETS_OFF_RE, True)):
        for verb in pattern.finditer(clause):
            matched = True
            subject = _nearest_before(clause, verb.start(), allow_possessive=subject_leads)
            subject = subject or previous_person
            rest = clause[verb.end() :]
            target = re.match(r"@(\w+)", rest)
            if subject and target and subject != target.group(1):
                leader, follower = (
                    (subject, target.group(1)) if subject_leads else (target.group(1), subject)
                )
                if leader != AI:  # the AI Assistant is always a Follower
                    facts.append(Fact("trigger", leader, follower))
            elif subject and not subject_leads:
                # "I listen for the Group 2 Leader": a Follower of the other group.
                leader_group = re.match(r"group\s+(1|2)(?:'s)?\s+leader", rest, re.IGNORECASE)
                if leader_group:
                    facts.append(Fact("role", subject, FOLLOWER))
                    facts.append(Fact("group", subject, 3 - int(leader_group.group(1))))
    return facts if matched else None


def _nearest_before(clause: str, position: int, *, allow_possessive: bool = False) -> str | None:
    before = [
        p
        for p, possessive, start in _people(clause)
        if start < position and (allow_possessive or not possessive)
    ]
    return before[-1] if before else None


def _companions(clause: str, group: int | None) -> tuple[str, list[Fact]]:
    """'X is with Y', 'X sticks with me as Follower': same group; drop 'with Y' for the role."""
    facts = []
    match = re.search(r"\s+with\s+@(\w+)\b(?!')", clause)
    if match:
        subject = _nearest_before(clause, match.start())
        if subject:
            facts.append(Fact("same", subject, match.group(1)))
            if group is not None:
                facts.append(Fact("group", match.group(1), group))
        clause = clause[: match.start()] + clause[match.end() :]
    return clause, facts


def _membership(people: list[tuple[str, bool, int]], group: int | None, clause: str) -> list[Fact]:
    """'Group 1 will be X and Y', 'that leaves me and the AI': grouping without roles."""
    members = list(dict.fromkeys(p for p, possessive, _ in people if not possessive))
    facts = [Fact("group", p, group) for p in members] if group is not None else []
    owner = re.search(r"@(\w+)'s\s+(?:own\s+)?(?:group|team)\b", clause, re.I)
    if owner and members and members[0] != owner.group(1):
        facts.append(Fact("same", members[0], owner.group(1)))  # "the AI is on my team"
    if len(members) >= 2 and (
        group is not None or re.search(r"\b(?:leaves|puts|together|pair|team)\b", clause, re.I)
    ):
        facts.extend(Fact("same", a, b) for a, b in zip(members, members[1:], strict=False))
    return facts


def _holder(
    clause: str,
    match: re.Match,
    people: list[tuple[str, bool, int]],
    previous_person: str | None,
    speaker: str,
) -> str | None:
    """Who a role word is about: 'led by X' is X; otherwise the nearest person, before first."""
    if match.group(0).lower().startswith("led"):
        after = [p for p, possessive, start in people if start > match.start() and not possessive]
        return after[0] if after else None
    plain = [(p, start) for p, possessive, start in people if not possessive]
    before = [p for p, start in plain if start < match.start()]
    if before:
        return before[-1]
    after = [p for p, start in plain if start > match.start()]
    if after:
        return after[0]
    if previous_person:
        return previous_person
    if re.search(r"\bas\s+(?:the\s+)?(?:group\s+\w+\s+)?$", clause[: match.start()], re.I):
        return speaker  # "Checking in as Group 1 Follower"
    return None


_VERBS_WITH_PARTNER = frozenset(
    {"follow", "follows", "following", "support", "supports", "lead", "leads", "leading"}
)


def _partner_facts(clause: str, match: re.Match, holder: str, role: str) -> list[Fact]:
    """'my Follower', 'follow you', 'lead the AI': the other person is in the same group."""
    facts = []
    owner = re.search(r"@(\w+)'s\s+(?:(?:group|team)\s+\w+\s+)?$", clause[: match.start()], re.I)
    if owner and owner.group(1) != holder:
        opposite = FOLLOWER if role == LEADER else LEADER
        facts += [Fact("same", holder, owner.group(1)), Fact("role", owner.group(1), opposite, 0.5)]
    verb = match.group(0).lower()
    if verb.startswith("back"):
        partner = re.search(r"@(\w+)", match.group(0))
        if partner and partner.group(1) != holder:
            facts += [
                Fact("same", holder, partner.group(1)),
                Fact("role", partner.group(1), LEADER),
            ]
    elif verb in _VERBS_WITH_PARTNER:
        partner = re.match(r"\s+(?:the\s+)?@(\w+)\b(?!')", clause[match.end() :])
        if partner and partner.group(1) != holder:
            opposite = FOLLOWER if role == LEADER else LEADER
            facts += [
                Fact("same", holder, partner.group(1)),
                Fact("role", partner.group(1), opposite),
            ]
    group_owner = re.search(r"@(\w+)'s\s+(?:own\s+)?(?:group|team)\b", clause, re.I)
    if group_owner and group_owner.group(1) != holder:
        facts.append(Fact("same", holder, group_owner.group(1)))
    return facts


# ---------------------------------------------------------------------------------------------
# Turn-based game: the verdict
# ---------------------------------------------------------------------------------------------


def should_respond(task: TaskSpec) -> tuple[bool | None, str]:
    """Whether the AI Assistant's turn has come (None if the roles cannot be read), and why."""
    return _should_respond(load_transcript(task.metatranscript))


@lru_cache(maxsize=4096)
def _should_respond(transcript: Transcript) -> tuple[bool | None, str]:
    if not transcript.turns:
        return None, "no transcript turns"
    roles, _ = derive_roles(transcript)
    if roles is None or not roles.trigger:
        return None, "could not read the group roles from the transcript"
    last = transcript.turns[-1].speaker
    respond = last == roles.trigger
    why = (
        f"{roles.describe()}. The AI Assistant answers the other group's Leader, {roles.trigger}; "
        f"the last speaker is {last}, so it should {'respond' if respond else 'stay silent'}."
    )
    return respond, why


def _turnbased_verdict(task: TaskSpec, response: str) -> tuple[bool, str]:
    transcript = load_transcript(task.metatranscript)
    respond, why = _should_respond(transcript)
    text = response.strip()
    if respond is None:
        return False, f"offline judge: {why}; no verdict on the response."
    if not respond:
        if text:
            return False, f"{why} It spoke out of turn: {_quote(text)}."
        return True, f"{why} It stayed silent."
    if not text:
        return False, f"{why} It stayed silent."
    expected = _expected_number(transcript)
    if expected is None:
        if re.search(r"[A-Za-z0-9]", text):
            return True, f"{why} It said a word: {_quote(text)}."
        return False, f"{why} The response holds no word: {_quote(text)}."
    if expected in _numbers_in(text):
        return True, f"{why} It said {expected}, the expected number."
    return False, f"{why} The expected number {expected} is not in {_quote(text)}."


def _quote(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


_UP_RE = re.compile(
    r"next (?:integer|number|one)|adds? one|add(?:ing)? one|increment|plus one|\+\s*1|count(?:s|ing)? up"
    r"|one (?:up|higher|more)|number after|comes after|up by one|next up",
    re.IGNORECASE,
)
_DOWN_RE = re.compile(
    r"previous|before it|minus one|minus 1|subtract|-\s*1\b|preceding|one less|step-down|number before"
    r"|comes before|count(?:s|ing)? down|decrement|one lower",
    re.IGNORECASE,
)


def _words(text: str, *, ordered: bool = False):
    """A word list written as one string: a tuple in order, or a frozenset."""
    words = tuple(text.split())
    return words if ordered else frozenset(words)


def _expected_number(transcript: Transcript) -> int | None:
    """For a number game, the last number spoken plus or minus one (per the spoken rule)."""
    if not transcript.turns:
        return None
    last_numbers = _numbers_in(transcript.turns[-1].content)
    if len(last_numbers) != 1 or not _is_bare_number(transcript.turns[-1].content):
        return None
    step = _number_step(transcript)
    return last_numbers[0] + step


def _is_bare_number(text: str) -> bool:
    words = re.findall(r"[A-Za-z]+", text)
    return all(w.lower() in _NUMBER_WORDS or w.lower() == "and" for w in words)


def _number_step(transcript: Transcript) -> int:
    rules = " ".join(t.content for t in transcript.turns)
    up, down = len(_UP_RE.findall(rules)), len(_DOWN_RE.findall(rules))
    if up != down:
        return 1 if up > down else -1
    # No clear wording: follow what the players did (a Follower's answer is the Leader's +-1).
    numbers = [_numbers_in(t.content) for t in transcript.turns if _is_bare_number(t.content)]
    steps = [b[0] - a[0] for a, b in zip(numbers, numbers[1:], strict=False) if a and b]
    return -1 if steps.count(-1) > steps.count(1) else 1


_UNITS = _words(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen",
    ordered=True,
)
_TENS = _words("twenty thirty forty fifty sixty seventy eighty ninety", ordered=True)
_NUMBER_WORDS = {w: i for i, w in enumerate(_UNITS)}
_NUMBER_WORDS.update({w: 10 * (i + 2) for i, w in enumerate(_TENS)})
_NUMBER_WORDS.update({"hundred": 100, "thousand": 1000, "million": 1_000_000})


def _numbers_in(text: str) -> list[int]:
    """Integers written as digits ('1,001') or words ('one hundred and one')."""
    numbers = []
    run: list[str] = []
    for token in re.findall(r"\d[\d,]*|[A-Za-z]+", text.replace("-", " ")):
        word = token.lower()
        if token[0].isdigit():
            _flush(run, numbers)
            numbers.append(int(token.replace(",", "")))
        elif word in _NUMBER_WORDS or (word == "and" and run):
            run.append(word)
        else:
            _flush(run, numbers)
    _flush(run, numbers)
    return numbers


def _flush(run: list[str], numbers: list[int]) -> None:
    while run and run[-1] == "and":
        run.pop()
    if not run:
        return
    total = current = 0
    for word in run:
        value = _NUMBER_WORDS.get(word)
        if value is None:
            continue
        if value == 100:
            current = (current or 1) * 100
        elif value >= 1000:
            total += (current or 1) * value
            current = 0
        else:
            current += value
    numbers.append(total + current)
    run.clear()


# ---------------------------------------------------------------------------------------------
# Names, with tolerance for ASR spellings
# ---------------------------------------------------------------------------------------------

# Common words that sound like a name but are not one ("been" is not Ben, "look" is not Luke).
_NOT_NAMES = _words(
    """
    an and any ann anno annoy been bean bin ban bun bone bane band bend being begin buying
    bang bing bong bung boon bunny bonny may mayo mom moo mow mew mean mine
    look like lake leak luck lick lock lack leek leaky likely looked looking lucky lucid
    lie lay low law loo lee lea lye lieu allow ale alley loyal lull lolly lowly lol loll
    rise rice race raise rays rows rues ross rosy ruse reuse rouse res roses erase arise
    corn crane crown crayon korean keyring carry care core cure kern
    joke jake jock juke jokey check chuck dad did dead avid divide devoid dived
    atom item am em emu emo aim
    """
)
# Names that are also everyday words count only when capitalised ("the sun rose" is not Rose).
_WORD_LIKE_NAMES = frozenset({"rose", "jack", "lily"})


def valid_names(transcript: Transcript) -> list[str]:
    names = list(FIXED_NAMES)
    for name in _humans(transcript):
        if name not in names:
            names.append(name)
    return names


def names_mentioned(text: str, names: list[str]) -> list[str]:
    """Every name mentioned, in order; ASR misspellings ('Caring', 'Lioh') map to the name."""
    found = []
    for token in re.findall(r"[A-Za-z]+(?:'[A-Za-z]+)?", text):
        word = re.sub(r"'s$", "", token)
        name = _match_name(word, names)
        if name:
            found.append(name)
    return found


def _match_name(word: str, names: list[str]) -> str | None:
    lower = word.lower()
    for name in names:
        if lower == name.lower():
            if lower in _WORD_LIKE_NAMES and not word[0].isupper():
                return None
            return name
    if lower in _NOT_NAMES or len(lower) < 3:
        return None
    best, best_ratio = None, 0.0
    for name in names:
        if _skeleton(lower) != _skeleton(name.lower()):
            continue
        ratio = SequenceMatcher(None, lower, name.lower()).ratio()
        if ratio >= 0.5 and abs(len(lower) - len(name)) <= 3 and ratio > best_ratio:
            best, best_ratio = name, ratio
    return best


def _skeleton(word: str) -> str:
    """A rough sound key: first letter, then consonants (Karen, Caring, Cairn -> krn)."""
    w = re.sub(r"[^a-z]", "", word.lower())
    for old, new in (("ph", "f"), ("ck", "k"), ("q", "k"), ("x", "ks"), ("z", "s"), ("gh", "")):
        w = w.replace(old, new)
    w = re.sub(r"c(?=[eiy])", "s", w).replace("c", "k")
    w = re.sub(r"ng$", "n", w)
    w = w[:1] + w[1:].replace("h", "")
    w = re.sub(r"(.)\1+", r"\1", w)  # double letters, before vowels go: Lily keeps two l's
    return w[:1] + re.sub(r"[aeiouy]", "", w[1:])


def _speaker_name_verdict(task: TaskSpec, response: str) -> tuple[bool, str]:
    names = valid_names(load_transcript(task.metatranscript))
    mentioned = names_mentioned(response, names)
    if not mentioned:
        return False, "no speaker name found in the response"
    extracted = mentioned[-1]  # the last name given is taken as the answer
    correct = extracted.lower() == task.answer_text.strip().lower()
    return correct, (
        f"extracted name {extracted}; ground truth {task.answer_text.strip() or '?'}: "
        f"{'match' if correct else 'no match'}"
    )


# ---------------------------------------------------------------------------------------------
# Understanding and discussion: keyword heuristics
# ---------------------------------------------------------------------------------------------

_STOPWORDS = _words(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    let me more most my no nor not now of off on once only or other our ours out over own same
    she should so some such than that the their theirs them then there these they this those
    through to too under until up very was we were what when where which while who whom why will
    with would you your yours yes yeah okay ok well oh um uh like think really actually sure
    said say says one ai assistant speaker speakers name named answer question right correct
    """
)


def _content_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'s", ""))
    return {_stem(w) for w in words if w not in _STOPWORDS and len(w) > 1}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _understanding_verdict(task: TaskSpec, response: str) -> tuple[bool, str]:
    names = valid_names(load_transcript(task.metatranscript))
    answer = task.answer_text
    want_names = list(dict.fromkeys(names_mentioned(answer, names)))
    got_names = set(names_mentioned(response, names))
    want_numbers = set(_numbers_in(answer))
    got_numbers = set(_numbers_in(response))
    name_words = {n.lower() for n in want_names}
    number_words = set(_NUMBER_WORDS)
    want_words = {
        w
        for w in _content_words(answer)
        if w not in name_words and w not in number_words and not w.isdigit()
    }
    got_words = _content_words(response)
    missing_names = [n for n in want_names if n not in got_names]
    missing_numbers = sorted(want_numbers - got_numbers)
    shared = want_words & got_words
    enough_words = not want_words or len(shared) * 2 >= len(want_words)
    if not (want_names or want_numbers or want_words):
        # Only function words ("That"): look for the answer as a phrase.
        phrase = " ".join(re.findall(r"[a-z0-9]+", answer.lower()))
        said = " ".join(re.findall(r"[a-z0-9]+", response.lower()))
        found = bool(phrase) and re.search(rf"\b{re.escape(phrase)}\b", said) is not None
        return (
            found,
            f"offline heuristic (phrase match): {answer.strip()!r} {'found' if found else 'not found'}",
        )
    correct = not missing_names and not missing_numbers and enough_words
    reasoning = (
        "offline heuristic (keyword match, not an LLM judgement): "
        f"names {want_names or '-'} missing {missing_names or 'none'}; "
        f"numbers {sorted(want_numbers) or '-'} missing {missing_numbers or 'none'}; "
        f"content words shared {len(shared)}/{len(want_words)}"
    )
    return correct, reasoning


def _discussion_verdict(task: TaskSpec, response: str) -> tuple[bool, str]:
    transcript = load_transcript(task.metatranscript)
    humans = _humans(transcript)
    named = list(dict.fromkeys(names_mentioned(response, humans)))
    named = [n for n in named if n in humans]
    if not named:
        return False, "offline heuristic: the response names no speaker from the conversation"
    words = {
        h: _content_words(" ".join(t.content for t in transcript.turns if t.speaker == h))
        for h in humans
    }
    said = _content_words(response) - {h.lower() for h in humans}
    best, best_shared = None, set()
    for name in named:
        others = set().union(*(words[h] for h in humans if h != name))
        own = words[name] - others or words[name]  # words that are this speaker's own claim
        shared = said & own
        if len(shared) > len(best_shared):
            best, best_shared = name, shared
    if best is None:
        return False, (
            f"offline heuristic: names {', '.join(named)} but shares no content word "
            "with their turns"
        )
    return True, (
        f"offline heuristic (keyword match, not an LLM judgement): sides with {best}, "
        f"sharing {', '.join(sorted(best_shared))}"
    )
