"""Account pages: sign-up, profile, teams and their members, API tokens. Login and logout are
Django's own views (see leaderboard/urls_accounts.py)."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from evaluation.models import Membership, Team
from leaderboard.accounts import mail, selectors, services
from leaderboard.accounts.forms import EmailForm, MemberAddForm, SignUpForm, TeamForm, TokenForm
from leaderboard.accounts.models import ApiToken, EmailAddress
from leaderboard.accounts.throttle import attempt_record, attempts, client_address


def signup(request):
    if request.user.is_authenticated:
        return redirect("profile")
    form = SignUpForm(request.POST or None)
    address = client_address(request)
    if (
        request.method == "POST"
        and attempts(scope="signup", who=address) >= settings.SIGNUPS_PER_ADDRESS_PER_HOUR
    ):
        form.is_valid()
        form.add_error(None, "Too many sign-ups from your address; try again in an hour.")
        return render(request, "accounts/signup.html", {"form": form}, status=429)
    if request.method == "POST" and form.is_valid():
        attempt_record(scope="signup", who=address, window_seconds=3600)
        user = services.user_create(
            username=form.cleaned_data["username"],
            password=form.cleaned_data["password1"],
            email=form.cleaned_data.get("email", ""),
        )
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        welcome = f"Welcome, {user.get_username()}. Create or join a team next."
        if user.email:
            try:
                mail.email_address_set(user=user, email=user.email, request=request)
            except mail.MailRefused as error:
                welcome += f" No link to confirm {user.email} was sent: {error}"
            else:
                welcome += f" We sent a link to {user.email}: open it to confirm the address."
        messages.success(request, welcome)
        return redirect("profile")
    return render(
        request,
        "accounts/signup.html",
        {"form": form},
        status=400 if request.method == "POST" else 200,
    )


@login_required
def profile(request):
    address = EmailAddress.objects.filter(user=request.user).first()
    form = EmailForm(initial={"email": request.user.email})
    status = 200
    if request.method == "POST":
        form = EmailForm(request.POST)
        if form.is_valid():
            try:
                done = _email_change(request, address, form.cleaned_data["email"])
            except mail.MailRefused as error:
                form.add_error(None, str(error))
                status = 429
            else:
                if done:
                    messages.success(request, done)
                return redirect("profile")
        else:
            status = 400
    return render(
        request,
        "accounts/profile.html",
        {
            "address": address,
            "email_form": form,
            "memberships": selectors.memberships_of(user=request.user),
            "submissions": selectors.team_submissions(user=request.user),
            "token_count": selectors.api_tokens_of(user=request.user)
            .filter(revoked_at__isnull=True)
            .count(),
        },
        status=status,
    )


def _email_change(request, address: EmailAddress | None, email: str) -> str:
    """Send a new link, change or remove the address; what to tell the user. One link waits
    at a time: a new one replaces the link sent before, which the message says."""
    unconfirmed = address if address and not address.is_verified else None
    replaced = (
        f" The link sent to {unconfirmed.email} before no longer works: only the newest does."
        if unconfirmed and unconfirmed.sent_at
        else ""
    )
    if request.POST.get("action") == "resend" and unconfirmed:
        mail.email_verification_send(address=unconfirmed, request=request)
        return f"A new link is on its way to {unconfirmed.email}.{replaced}"
    if address and email == address.email:
        return ""
    mail.email_address_set(user=request.user, email=email, request=request)
    if not email:
        return "Your e-mail address is removed."
    return f"We sent a link to {email}: open it to confirm the address.{replaced}"


class PasswordResetView(auth_views.PasswordResetView):
    """Django's, with the client's address handed to the form (its limits count by it), and a
    429 when a limit refused the request."""

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "request": self.request}

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if any(error.code == "throttled" for error in form.non_field_errors().as_data()):
            response.status_code = 429
        return response


def email_verify(request, token: str):
    """The link sent to an address: confirms it (no login needed: the token names the account
    and the address)."""
    try:
        address = mail.email_verify(token=token)
    except mail.VerificationFailed as error:
        return render(request, "accounts/email_verified.html", {"error": str(error)}, status=400)
    return render(request, "accounts/email_verified.html", {"address": address})


# --- Teams ------------------------------------------------------------------------------------


@login_required
def team_list(request):
    form = TeamForm(request.POST or None)
    address = client_address(request)
    account = str(request.user.pk)
    if request.method == "POST" and (
        attempts(scope="team-account", who=account) >= settings.TEAMS_PER_ACCOUNT_PER_DAY
        or attempts(scope="team-address", who=address) >= settings.TEAMS_PER_ADDRESS_PER_DAY
    ):
        form.is_valid()
        form.add_error(None, "Too many teams created by this account or address today.")
        return render(
            request,
            "accounts/team_list.html",
            {"memberships": selectors.memberships_of(user=request.user), "form": form},
            status=429,
        )
    if request.method == "POST" and form.is_valid():
        try:
            team = services.team_create(name=form.cleaned_data["name"], owner=request.user)
        except ValidationError as error:
            form.add_error("name", error)
        else:
            attempt_record(scope="team-account", who=account, window_seconds=24 * 3600)
            attempt_record(scope="team-address", who=address, window_seconds=24 * 3600)
            messages.success(request, f"Team {team.name} created; you are its owner.")
            return redirect("team-detail", slug=team.slug)
    return render(
        request,
        "accounts/team_list.html",
        {"memberships": selectors.memberships_of(user=request.user), "form": form},
        status=400 if request.method == "POST" else 200,
    )


def _team_for(request, slug: str) -> tuple[Team, str | None]:
    """The team and the user's role in it. Anyone outside it, staff aside, gets a 404."""
    team = get_object_or_404(Team, slug=slug)
    role = selectors.team_role(team=team, user=request.user)
    if role is None and not request.user.is_staff:
        raise Http404("No such team.")
    return team, role


def _team_page(request, team: Team, role: str | None, form=None, status: int = 200):
    return render(
        request,
        "accounts/team_detail.html",
        {
            "team": team,
            "role": role,
            "is_owner": role == Membership.Role.OWNER,
            "members": selectors.team_members(team=team),
            "form": form or MemberAddForm(),
        },
        status=status,
    )


@login_required
def team_detail(request, slug: str):
    team, role = _team_for(request, slug)
    return _team_page(request, team, role)


@login_required
@require_POST
def team_member_add(request, slug: str):
    team, role = _team_for(request, slug)
    if role != Membership.Role.OWNER:
        raise PermissionDenied(f"Only an owner of {team.name} can add members.")
    form = MemberAddForm(request.POST)
    if form.is_valid():
        try:
            membership = services.membership_add(
                team=team,
                username=form.cleaned_data["username"],
                role=form.cleaned_data["role"],
                by=request.user,
            )
        except ValidationError as error:
            form.add_error("username", error)
        else:
            messages.success(
                request,
                f"{membership.user.get_username()} joined {team.name} as {membership.role}.",
            )
            return redirect("team-detail", slug=team.slug)
    return _team_page(request, team, role, form=form, status=400)


@login_required
@require_POST
def team_member_remove(request, slug: str, membership_id: int):
    team, role = _team_for(request, slug)
    membership = get_object_or_404(
        Membership.objects.select_related("user"), pk=membership_id, team=team
    )
    if role != Membership.Role.OWNER:
        raise PermissionDenied(f"Only an owner of {team.name} can remove members.")
    try:
        services.membership_remove(membership=membership, by=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("team-detail", slug=team.slug)
    messages.success(request, f"{membership.user.get_username()} no longer belongs to {team.name}.")
    if membership.user_id == request.user.pk:
        return redirect("team-list")
    return redirect("team-detail", slug=team.slug)


# --- API tokens ---------------------------------------------------------------------------


@login_required
def token_list(request):
    form = TokenForm(request.POST or None)
    created = secret = None
    if request.method == "POST" and form.is_valid():
        try:
            created, secret = services.api_token_create(
                user=request.user, name=form.cleaned_data["name"]
            )
        except ValidationError as error:
            form.add_error("name", error)
        else:
            form = TokenForm()
    response = render(
        request,
        "accounts/token_list.html",
        {
            "tokens": selectors.api_tokens_of(user=request.user),
            "form": form,
            "created": created,
            "secret": secret,
        },
        status=201 if created else (400 if request.method == "POST" else 200),
    )
    if secret:
        # The one response that carries the secret must not be kept by any cache.
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def token_revoke(request, pk: int):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    services.api_token_revoke(token=token, by=request.user)
    messages.success(request, f"Token {token.name} revoked; requests using it now get 401.")
    return redirect("token-list")
