from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.exceptions import ValidationError

from evaluation.models import Membership
from leaderboard.accounts.throttle import attempt_record, attempts, client_address

LOGIN_REFUSED = (
    "Too many failed logins for this account or from your address. No password is checked "
    "for a while; try again in {minutes} minutes."
)


class ThrottledLoginMixin:
    """After too many failures for one account or from one address within the window, no
    password is checked at all (the right one neither) until the window ends."""

    def clean(self):
        username = (self.data.get("username") or "").strip().lower()
        address = client_address(self.request) if self.request else ""
        if (
            attempts(scope="login-account", who=username) >= settings.LOGIN_MAX_FAILURES_PER_ACCOUNT
            or attempts(scope="login-address", who=address)
            >= settings.LOGIN_MAX_FAILURES_PER_ADDRESS
        ):
            minutes = max(1, settings.LOGIN_FAILURE_WINDOW_SECONDS // 60)
            raise ValidationError(LOGIN_REFUSED.format(minutes=minutes), code="throttled")
        try:
            return super().clean()
        except ValidationError:
            window = settings.LOGIN_FAILURE_WINDOW_SECONDS
            attempt_record(scope="login-account", who=username, window_seconds=window)
            attempt_record(scope="login-address", who=address, window_seconds=window)
            raise


class ThrottledAuthenticationForm(ThrottledLoginMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledLoginMixin, AdminAuthenticationForm):
    pass


class SignUpForm(UserCreationForm):
    email = forms.EmailField(required=False, help_text="Optional; never shown publicly.")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class TeamForm(forms.Form):
    name = forms.CharField(max_length=200)


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'CI uploads'.")
