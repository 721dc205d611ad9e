"""Who may know which system a submission is, and what everyone else is shown instead.

A submission shown anonymously (a paper under review) reads "Anonymous (under review)" to
everyone outside its team; staff know every one. For those viewers its system, team and
organisation, everything that came from its manifest (free text, a run configuration naming
models, a contamination note) and its bundle's digest (which links a team's uploads) are never
shown, and it cannot be found by them: a filter or an order on any of them leaves it out or
treats it as its shown name.

Every page, picker, export, chart, serializer and cache key asks here: ``viewer_for(user)``
once per request or loop (it reads the user's teams once), then ``hides``, ``name``,
``hidden_q`` and ``redacted``; ``identity_state`` goes into the key of anything cached that
shows submissions, so that showing one anonymously or revealing it changes what is served at
once.
"""

from __future__ import annotations

import hashlib
from functools import cached_property

from django.db.models import Q

ANONYMOUS_NAME = "Anonymous (under review)"

# A submission's fields that identify it beyond its system and team, and the value a viewer
# it is hidden from reads instead.
IDENTIFYING_FIELDS = {
    "run_config": {},
    "contamination_note": "",
    "bundle_sha256": "",
    "manifest": {},
    "error": "",
}


class Viewer:
    """One user's view of submissions' identities."""

    def __init__(self, user):
        self.user = user
        self.signed_in = user is not None and user.is_authenticated
        self.is_staff = self.signed_in and user.is_staff

    @cached_property
    def team_ids(self) -> frozenset[int]:
        if not self.signed_in:
            return frozenset()
        return frozenset(self.user.memberships.values_list("team_id", flat=True))

    def hides(self, submission) -> bool:
        """Whether this viewer may not know which system the submission is."""
        if not submission.is_anonymous or self.is_staff:
            return False
        return submission.team_id is None or submission.team_id not in self.team_ids

    def hidden_q(self) -> Q:
        """``hides`` as a filter over submissions."""
        if self.is_staff:
            return Q(pk__in=[])
        if not self.signed_in:
            return Q(is_anonymous=True)
        return Q(is_anonymous=True) & (Q(team__isnull=True) | ~Q(team_id__in=self.team_ids))

    def name(self, submission) -> str:
        """The system name this viewer is shown for the submission."""
        return ANONYMOUS_NAME if self.hides(submission) else submission.system.name

    def redacted(self, submission, data: dict) -> dict:
        """A submission's serialized fields as this viewer may read them: for a hidden one,
        system and team None and every identifying field emptied."""
        if not self.hides(submission):
            return data
        shown = dict(data)
        for field in ("system", "team", "organization", "system_id", "submitted_by"):
            if field in shown:
                shown[field] = None
        for field, empty in IDENTIFYING_FIELDS.items():
            if field in shown:
                shown[field] = type(empty)()
        return shown

    @property
    def cache_class(self) -> str:
        """Who is shown the same: everyone without a team alike, team members per set of
        teams, staff everything."""
        if self.is_staff:
            return "staff"
        if not self.team_ids:
            return "public"
        return "teams-" + "-".join(map(str, sorted(self.team_ids)))


def viewer_for(user) -> Viewer:
    """The user's Viewer: make one per request or loop and ask it for every submission (it
    reads the user's teams once)."""
    return Viewer(user)


def identity_state(submissions) -> str:
    """Which of these submissions are shown anonymously, as a short digest for cache keys."""
    anonymous = submissions.filter(is_anonymous=True).order_by("pk").values_list("pk", flat=True)
    return hashlib.sha256(",".join(map(str, anonymous)).encode()).hexdigest()[:16]
