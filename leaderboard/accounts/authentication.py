"""`Authorization: Bearer <token>` for the API, with tokens made on the account's tokens page."""

from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

from leaderboard.accounts.selectors import api_token_for_secret
from leaderboard.accounts.services import api_token_touch

KEYWORD = "Bearer"


class ApiTokenAuthentication(BaseAuthentication):
    """No Authorization header: not this scheme (the session may still authenticate). A bearer
    token that is malformed, unknown or revoked: 401 with the reason."""

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != KEYWORD.lower().encode():
            return None
        if len(parts) != 2:
            raise AuthenticationFailed(
                "Malformed Authorization header: expected 'Bearer <token>' with no spaces in the "
                "token."
            )
        try:
            secret = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed(
                "The API token contains characters a token never has."
            ) from None
        token = api_token_for_secret(secret=secret)
        if token is None:
            raise AuthenticationFailed("Unknown API token.")
        if token.is_revoked:
            raise AuthenticationFailed(
                f"API token '{token.name}' was revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC."
            )
        if not token.user.is_active:
            raise AuthenticationFailed("The account this API token belongs to is disabled.")
        api_token_touch(token=token)
        return token.user, token

    def authenticate_header(self, request):
        # Makes DRF answer 401 (not 403) when credentials are missing or wrong.
        return f'{KEYWORD} realm="api"'
