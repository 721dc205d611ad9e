from rest_framework.authentication import BaseAuthentication


class ApiTokenAuthentication(BaseAuthentication):
    """Placeholder until API tokens land: authenticates nobody."""

    def authenticate(self, request):
        return None
