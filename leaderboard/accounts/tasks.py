"""Beat's work for accounts: e-mail notices about submissions."""

from celery import shared_task

from leaderboard.accounts.mail import submission_notices_send


@shared_task(name="leaderboard.accounts.tasks.send_submission_notices", ignore_result=True)
def send_submission_notices() -> int:
    return submission_notices_send()
