"""Every registered plug-in (the toy plug-in included) through the submit page in headless
Chromium: its About page's example upload is downloaded, the page describes the benchmark's own
format in its words, its file picker takes the benchmark's file types, and each declared upload
option is shown with its help text; the example goes up through the form with an option other
than its default chosen, and the browser lands on the submission, which carries that option."""

from __future__ import annotations

import re

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client

from evaluation.benchmarks import registry
from evaluation.models import Membership, Submission, Team
from leaderboard.uploads.models import Upload
from tests.conftest import REPO, every_plugin_board

pytestmark = pytest.mark.django_db(transaction=True)

SLUGS = [*sorted(registry()), "toy-bench"]
ARTIFACTS = REPO / "test-artifacts"


def signed_in_page(browser, live_server, user):
    client = Client()
    client.force_login(user)
    cookie = django_settings.SESSION_COOKIE_NAME
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.add_cookies(
        [{"name": cookie, "value": client.cookies[cookie].value, "url": live_server.url}]
    )
    return context.new_page()


@pytest.mark.parametrize("slug", SLUGS)
def test_the_example_goes_through_the_submit_form_with_the_declared_options(
    slug, module_browser, live_server, settings, tmp_path, eager
):
    benchmark, plugin = every_plugin_board(slug, settings, tmp_path, name="form")
    team = Team.objects.create(slug="gamma", name="Gamma Lab")
    owner = User.objects.create_user("gina", "gina@example.org", "pw")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    page = signed_in_page(module_browser, live_server, owner)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_server.url}/benchmarks/{benchmark.slug}/about/")
    with page.expect_download() as download:
        page.click("#example-upload")
    example = tmp_path / download.value.suggested_filename
    download.value.save_as(example)
    assert example.name.endswith(plugin.upload.suffixes)

    page.goto(f"{live_server.url}/benchmarks/{benchmark.slug}/submit/")
    described = page.inner_text("#upload-format")
    assert plugin.upload.label in described
    assert plugin.upload.description in described
    accept = page.get_attribute("#bundle-file", "accept")
    assert sorted(accept.split(",")) == sorted(plugin.upload.suffixes)
    chosen = {}
    for option in plugin.upload.options:
        field = f"#id_option_{option.name}"
        assert page.input_value(field) == option.default
        if option.help:
            help_id = page.get_attribute(field, "aria-describedby")
            assert page.inner_text(f"#{help_id}") == option.help
        assert page.inner_text(f"label[for=id_option_{option.name}]") == option.label
        chosen[option.name] = next(value for value, _ in option.choices if value != option.default)
        page.select_option(field, chosen[option.name])

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"submit-form-{slug}.png"), full_page=True)
    page.select_option("#id_team", "gamma")
    page.fill("#id_system_name", "Form Agent")
    page.select_option("#id_judge", "offline")
    page.check("#id_allow_partial")
    page.set_input_files("#bundle-file", str(example))
    page.click("#upload-button")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=120_000)

    upload = Upload.objects.get()
    assert upload.status == Upload.Status.ACCEPTED, upload.error
    assert upload.options == chosen
    submission = Submission.objects.get(pk=upload.submission_id)
    assert submission.options == chosen
    assert submission.system.name == "Form Agent"
    assert page.url == f"{live_server.url}/submissions/{submission.pk}/"
    assert errors == []
    page.context.close()
