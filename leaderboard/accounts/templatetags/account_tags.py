from django import template

from leaderboard.accounts.selectors import memberships_of

register = template.Library()


@register.simple_tag
def user_memberships(user):
    """The user's memberships with their teams (none for anonymous visitors)."""
    return list(memberships_of(user=user))
