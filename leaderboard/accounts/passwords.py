"""A new password revokes the account's API tokens. Django tells every entry of
AUTH_PASSWORD_VALIDATORS when a user's password has changed (AbstractBaseUser.save calls
password_changed), whichever way it changed: a reset link, the admin's password forms, or
`manage.py changepassword`. This entry checks nothing; it only listens for that."""

from __future__ import annotations

from leaderboard.accounts.services import api_tokens_revoke_all

HELP_TEXT = "A new password revokes every API token of the account."


class RevokeApiTokensOnPasswordChange:
    def validate(self, password, user=None) -> None:
        return None

    def password_changed(self, password, user=None) -> None:
        if user is not None and user.pk is not None:
            api_tokens_revoke_all(user=user)

    def get_help_text(self) -> str:
        return HELP_TEXT
