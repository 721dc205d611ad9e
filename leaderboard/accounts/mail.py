"""E-mail for accounts: verifying an address, and notices when a submission is scored, fails or
stalls. Sent through Django's e-mail backend (the console in the demo, SMTP in production);
links point at FLOORBOARD_SITE_URL when no request is at hand. The links people ask for
(verification, password reset) are limited per account, per client address and per recipient."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Submission
from leaderboard.accounts.models import EmailAddress, SubmissionNotice
from leaderboard.accounts.throttle import attempt_forget, attempt_record, client_address

VERIFY_SALT = "floorboard.email-verify"
VERIFY_MAX_AGE = 3 * 24 * 3600
S = Submission.Status


def site_url(path: str, request=None) -> str:
    if request is not None:
        return request.build_absolute_uri(path)
    return settings.FLOORBOARD_SITE_URL.rstrip("/") + path


# --- How many e-mails a request may cause ------------------------------------------------------

MAIL_WINDOW_SECONDS = 3600


class MailRefused(ValueError):
    """Too many e-mails for the account, from the client's address or to the recipient; the
    message says which."""


def mail_allowance_take(*, account: str, client: str, recipient: str) -> None:
    """Count one e-mail (a verification or password-reset link) against the account it is
    about, the client address that asked for it and the address it goes to, each over the
    last hour; MailRefused names the first limit passed. Counted before checking, so requests
    racing each other cannot pass a limit together; a refused one takes its counts back."""
    limits = [
        (
            "mail-account",
            account,
            settings.EMAILS_PER_ACCOUNT_PER_HOUR,
            "{limit} e-mails for your account were asked for in the last hour, the most it gets",
        ),
        (
            "mail-address",
            client,
            settings.EMAILS_PER_ADDRESS_PER_HOUR,
            "{limit} e-mails were asked for from your address in the last hour, the most it may",
        ),
        (
            "mail-recipient",
            recipient.strip().casefold(),
            settings.EMAILS_PER_RECIPIENT_PER_HOUR,
            f"{{limit}} e-mails to {recipient} were asked for in the last hour, the most it gets",
        ),
    ]
    taken = []
    for scope, who, limit, said in limits:
        if not who:
            continue
        taken.append((scope, who))
        if attempt_record(scope=scope, who=who, window_seconds=MAIL_WINDOW_SECONDS) > limit:
            for counted in taken:  # a refused request uses up nothing
                attempt_forget(scope=counted[0], who=counted[1])
            raise MailRefused(
                said.format(limit=limit) + "; nothing was sent. Try again in an hour."
            )


def _client(request) -> str:
    return client_address(request) if request is not None else ""


# --- Verifying an address ---------------------------------------------------------------------


def email_address_set(*, user, email: str, request=None) -> EmailAddress | None:
    """Record the account's address (unverified) and send the link that verifies it. An empty
    address removes it. Raises MailRefused, changing nothing, when the link may not be sent.
    Only the newest link works: one sent earlier, to this address or another, stops working."""
    email = email.strip()
    if email:
        mail_allowance_take(account=str(user.pk), client=_client(request), recipient=email)
    if user.email != email:
        user.email = email
        user.save(update_fields=["email"])
    if not email:
        EmailAddress.objects.filter(user=user).delete()
        return None
    address, _ = EmailAddress.objects.update_or_create(
        user=user, defaults={"email": email, "verified_at": None}
    )
    _verification_send(address, request)
    return address


def verification_token(address: EmailAddress) -> str:
    """Names the account, the address and when the link was sent: a later link replaces it."""
    sent = address.sent_at.isoformat() if address.sent_at else ""
    return signing.dumps({"u": address.user_id, "e": address.email, "s": sent}, salt=VERIFY_SALT)


def email_verification_send(*, address: EmailAddress, request=None) -> None:
    """A new link to the address; the one sent before stops working. Raises MailRefused when
    no more may be sent for now (the earlier link keeps working then)."""
    mail_allowance_take(
        account=str(address.user_id), client=_client(request), recipient=address.email
    )
    _verification_send(address, request)


def _verification_send(address: EmailAddress, request) -> None:
    with transaction.atomic():
        # The link carries this time; the row keeps the newest, which alone verifies.
        address.sent_at = timezone.now()
        EmailAddress.objects.filter(pk=address.pk).update(sent_at=address.sent_at)
        link = site_url(reverse("email-verify", args=[verification_token(address)]), request)
        send_mail(
            "Floorboard: confirm your e-mail address",
            f"Hello {address.user.get_username()},\n\n"
            f"Open this link to confirm that {address.email} is yours:\n\n{link}\n\n"
            "It works for three days, until a newer link is sent. Floorboard sends notices "
            "about your submissions and password-reset links to confirmed addresses only.\n",
            settings.DEFAULT_FROM_EMAIL,
            [address.email],
        )


class VerificationFailed(ValueError):
    pass


def email_verify(*, token: str) -> EmailAddress:
    """Mark the address the token names as verified; VerificationFailed says why not."""
    try:
        payload = signing.loads(token, salt=VERIFY_SALT, max_age=VERIFY_MAX_AGE)
    except signing.SignatureExpired:
        raise VerificationFailed(
            "This link has expired; ask for a new one from your profile."
        ) from None
    except signing.BadSignature:
        raise VerificationFailed("This link is not valid.") from None
    address = EmailAddress.objects.filter(user_id=payload.get("u"), email=payload.get("e")).first()
    if address is None:
        raise VerificationFailed("This link is for an address the account no longer uses.")
    if address.verified_at is not None:
        return address
    sent = address.sent_at.isoformat() if address.sent_at else ""
    if "s" not in payload:  # made before links carried their time
        raise VerificationFailed(
            "This link is no longer valid; ask for a new one from your profile."
        )
    if payload["s"] != sent:
        raise VerificationFailed(
            "A newer link was sent to this address since, and only the newest works: open "
            "that one, or ask for another from your profile."
        )
    address.verified_at = timezone.now()
    address.save(update_fields=["verified_at"])
    return address


def verified_email(user) -> str:
    """The account's address if it is verified, else ""."""
    if user is None:
        return ""
    address = EmailAddress.objects.filter(user=user, verified_at__isnull=False).first()
    return address.email if address else ""


# --- Submission notices -----------------------------------------------------------------------

SUBJECTS = {
    SubmissionNotice.Kind.SCORED: "scored",
    SubmissionNotice.Kind.FAILED: "failed",
    SubmissionNotice.Kind.STALLED: "has stalled",
}


def _notice_body(submission: Submission, kind: str, link: str) -> str:
    name = f"{submission.system.name} on {submission.benchmark.name}"
    if kind == SubmissionNotice.Kind.SCORED:
        what = "has been scored. Its numbers and every judgment are on its page"
    elif kind == SubmissionNotice.Kind.FAILED:
        error = (submission.error or "").strip().splitlines()[:1]
        what = "failed" + (f": {error[0]}" if error else "") + ". Its page says where and lets "
        what += "your team retry from that point"
    else:
        what = (
            "has not moved for a while. The site re-queues stalled work by itself; its page "
            "shows how long it has waited and lets your team re-queue it"
        )
    return f"Submission #{submission.pk} ({name}) {what}:\n\n{link}\n"


def _notice_send(submission: Submission, kind: str) -> bool:
    to = verified_email(submission.submitted_by)
    if not to:
        return False
    try:
        with transaction.atomic():
            SubmissionNotice.objects.create(submission=submission, kind=kind, recipients=[to])
    except IntegrityError:
        return False  # sent already (by another beat run)
    link = site_url(reverse("submission", args=[submission.pk]))
    send_mail(
        f"Floorboard: submission #{submission.pk} {SUBJECTS[kind]}",
        _notice_body(submission, kind, link),
        settings.DEFAULT_FROM_EMAIL,
        [to],
    )
    return True


def submission_notices_send(*, now=None) -> int:
    """Send what is due, each kind once per submission, to the submitter's verified address:
    scored, failed, or stalled (no sign of a worker for NOTICE_STALL_SECONDS). Looks at the
    last NOTICE_LOOKBACK_DAYS of submissions only."""
    now = now or timezone.now()
    recent = (
        Submission.objects.filter(
            is_reported=False,
            submitted_by__email_address__verified_at__isnull=False,
            created_at__gte=now - timedelta(days=settings.NOTICE_LOOKBACK_DAYS),
        )
        .select_related("system", "benchmark", "submitted_by")
        .exclude(status=S.SCORED, notices__kind=SubmissionNotice.Kind.SCORED)
        .exclude(status=S.FAILED, notices__kind=SubmissionNotice.Kind.FAILED)
    )
    sent = 0
    stalled_before = now - timedelta(seconds=settings.NOTICE_STALL_SECONDS)
    for submission in recent:
        if submission.status == S.SCORED:
            sent += _notice_send(submission, SubmissionNotice.Kind.SCORED)
        elif submission.status == S.FAILED:
            sent += _notice_send(submission, SubmissionNotice.Kind.FAILED)
        elif (submission.heartbeat_at or submission.created_at) < stalled_before:
            sent += _notice_send(submission, SubmissionNotice.Kind.STALLED)
    return sent
