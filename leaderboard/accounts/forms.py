from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm, UserCreationForm
from django.core.exceptions import ValidationError

from evaluation.models import Membership
from leaderboard.accounts.mail import MailRefused, mail_allowance_take
from leaderboard.accounts.throttle import (
    attempt_record,
    attempts,
    client_address,
    login_account,
    pair,
    turn_take,
)

LOGIN_REFUSED_HERE = (
    "Too many failed logins for this account from your address. No password is checked for it "
    "from here for a while; try again in {minutes} minutes."
)
LOGIN_REFUSED_ADDRESS = (
    "Too many failed logins from your address. No password is checked from it for a while; "
    "try again in {minutes} minutes."
)
LOGIN_SLOWED = (
    "Too many failed logins for this account from many addresses, so its password is checked "
    "at most once every {seconds} seconds for now; try again in {seconds} seconds."
)


class ThrottledLoginMixin:
    """Failed logins are counted per account and address, per address, and per account. After
    too many for an account from one address (or from one address for any accounts) within the
    window, no password is checked from there at all (the right one neither) until the window
    ends. Elsewhere the account still logs in: after many failures from all addresses its
    password is only checked less often, so no one address can lock its owner out."""

    def clean(self):
        account = login_account(self.data.get("username"))
        address = client_address(self.request) if self.request else ""
        window = settings.LOGIN_FAILURE_WINDOW_SECONDS
        minutes = max(1, window // 60)
        if (
            attempts(scope="login-account-address", who=pair(account, address))
            >= settings.LOGIN_MAX_FAILURES_PER_ACCOUNT_ADDRESS
        ):
            raise ValidationError(LOGIN_REFUSED_HERE.format(minutes=minutes), code="throttled")
        if attempts(scope="login-address", who=address) >= settings.LOGIN_MAX_FAILURES_PER_ADDRESS:
            raise ValidationError(LOGIN_REFUSED_ADDRESS.format(minutes=minutes), code="throttled")
        every = settings.LOGIN_ACCOUNT_BACKOFF_SECONDS
        if attempts(
            scope="login-account", who=account
        ) >= settings.LOGIN_ACCOUNT_BACKOFF_FAILURES and not turn_take(
            scope="login-account", who=account, every_seconds=every
        ):
            raise ValidationError(LOGIN_SLOWED.format(seconds=every), code="throttled")
        try:
            return super().clean()
        except ValidationError:
            attempt_record(
                scope="login-account-address", who=pair(account, address), window_seconds=window
            )
            attempt_record(scope="login-address", who=address, window_seconds=window)
            attempt_record(
                scope="login-account",
                who=account,
                window_seconds=settings.LOGIN_ACCOUNT_BACKOFF_WINDOW_SECONDS,
            )
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


class EmailForm(forms.Form):
    email = forms.EmailField(
        required=False, label="E-mail address", help_text="Empty: remove it. Never shown publicly."
    )


class VerifiedPasswordResetForm(PasswordResetForm):
    """Reset links go to verified addresses only: an address nobody confirmed may not be its
    account's owner's. Requests are limited per client address and per recipient (the form
    says so), and per account (silently: the page never tells whether an address has one)."""

    def __init__(self, *args, request=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.request = request

    def clean(self):
        cleaned = super().clean()
        email = cleaned.get("email")
        if email:
            client = client_address(self.request) if self.request else ""
            try:
                mail_allowance_take(account="", client=client, recipient=email)
            except MailRefused as error:
                raise ValidationError(str(error), code="throttled") from None
        return cleaned

    def get_users(self, email):
        users = get_user_model()._default_manager.filter(
            email__iexact=email,
            is_active=True,
            email_address__verified_at__isnull=False,
            email_address__email__iexact=email,
        )
        for user in users:
            if not user.has_usable_password():
                continue
            try:
                mail_allowance_take(account=str(user.pk), client="", recipient="")
            except MailRefused:
                continue
            yield user
