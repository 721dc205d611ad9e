"""The Celery app really loads the CELERY_* settings (namespace="CELERY")."""

from config.celery import app


def test_loaded_celery_configuration():
    conf = app.conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.task_serializer == "json"
    assert conf.result_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.worker_prefetch_multiplier == 1
    # Pipeline messages are bounded (FLOORBOARD_WORK_SECONDS), so the limits are short.
    assert conf.task_soft_time_limit == 30 * 60
    assert conf.task_time_limit == 35 * 60
    assert conf.task_time_limit > conf.task_soft_time_limit


def _run_fresh_process(code: str):
    """``code`` run in a new Python process on the shipped settings (the finished process)."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_SECRET_KEY": "test-only-secret-key",
            "PATH": "",
        },
    )


def _printed_by_fresh_process(code: str) -> str:
    """What ``code`` prints in a new Python process on the shipped settings."""
    return _run_fresh_process(code).stdout.strip()


def test_redis_visibility_timeout_outlasts_the_time_limit(monkeypatch):
    code = (
        "import django, os; os.environ['CELERY_BROKER_URL']='redis://127.0.0.1:6379/0'; django.setup();"
        "from config.celery import app; print(app.conf.broker_transport_options['visibility_timeout'], app.conf.task_time_limit)"
    )
    visibility, limit = map(int, _printed_by_fresh_process(code).split())
    assert visibility > limit


def test_the_embedded_broker_connects_without_a_warning():
    """The shipped default (no CELERY_BROKER_URL) is the filesystem broker under var/broker, and
    kombu has nothing to warn about when the site or a worker connects to it: `make demo` and
    the worker's log start clean."""
    # kombu warns from Connection._info, which clone() and info() call (a worker does both);
    # declaring a queue alone does not reach it, and would pass with the old URL too.
    code = (
        "import django, logging, os; os.environ.pop('CELERY_BROKER_URL', None); django.setup();"
        "logging.basicConfig(level=logging.WARNING, format='%(name)s: %(message)s');"
        "from config.celery import app;"
        "print(app.conf.broker_url, app.conf.broker_transport_options['data_folder_in']);"
        "connection = app.connection_for_write(); connection.clone().info();"
        "connection.default_channel.queue_declare(queue=app.conf.task_default_queue);"
        "connection.release()"
    )
    result = _run_fresh_process(code)
    url, folder = result.stdout.split()
    assert url.startswith("filesystem://")
    assert folder.endswith("/var/broker/queue")
    assert result.stderr == ""


def test_pipeline_tasks_are_registered_with_late_acks():
    from evaluation import tasks
    from leaderboard.uploads import tasks as upload_tasks

    pipeline = (
        upload_tasks.finish_upload,
        tasks.ingest_submission,
        tasks.run_step,
        tasks.judge_submission,
        tasks.judge_work,
        tasks.finish_judging,
    )
    for task in pipeline:
        assert task.name in app.tasks
        assert task.acks_late and task.reject_on_worker_lost


def test_env_helpers_fail_loudly(monkeypatch):
    import pytest
    from django.core.exceptions import ImproperlyConfigured

    from config.env import env_bool, env_int

    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG='maybe' is not a boolean"):
        env_bool("X_FLAG")
    monkeypatch.setenv("X_NUM", "12x")
    with pytest.raises(ImproperlyConfigured, match="X_NUM='12x' is not an integer"):
        env_int("X_NUM", 1)


def test_beat_schedules_a_registered_task():
    import leaderboard.accounts.tasks  # noqa: F401  (registers the task)
    import leaderboard.uploads.tasks  # noqa: F401  (registers the task)

    for entry in app.conf.beat_schedule.values():
        assert entry["task"] in app.tasks


def test_a_worker_process_loads_the_judge_client_modules_before_its_first_task():
    """A pool process starting (the solo pool, which the demo and the overhead bench use,
    sends the same signal) loads the TLS roots and httpx's transport modules, which the first
    judge client would otherwise load on the first judging task's clock."""
    code = (
        "import sys, django; django.setup();"
        "from celery.signals import worker_process_init; import evaluation.tasks;"
        "from evaluation.judges import tls_context;"
        "before = ('httpcore' in sys.modules, tls_context.cache_info().currsize);"
        "worker_process_init.send(sender=None);"
        "print(before, ('httpcore' in sys.modules, tls_context.cache_info().currsize))"
    )
    assert _printed_by_fresh_process(code) == "(False, 0) (True, 1)"


def test_finishing_an_upload_has_a_queue_of_its_own():
    """A judging backlog (a judge outage, a large re-score) queues on "floorboard"; the finish
    of a browser upload goes to "floorboard-uploads" (the settings' defaults), so a worker on
    that queue takes it at once."""
    from evaluation import tasks
    from leaderboard.uploads import tasks as upload_tasks

    assert app.conf.task_routes == {
        "leaderboard.uploads.tasks.finish_upload": {"queue": "floorboard-uploads"}
    }

    def queue_of(task) -> str:
        return app.amqp.router.route({}, task.name)["queue"].name

    assert queue_of(upload_tasks.finish_upload) == "floorboard-uploads"
    for task in (
        tasks.ingest_submission,
        tasks.run_step,
        tasks.judge_submission,
        tasks.judge_work,
        tasks.finish_judging,
        tasks.sweep_stalled,
    ):
        assert queue_of(task) == "floorboard", task.name


def test_the_demos_worker_consumes_every_queue():
    from evaluation.management.commands.run_demo import worker_command

    command = worker_command()
    assert command[1:6] == ["-m", "celery", "-A", "config", "worker"]
    assert command.count("-Q") == 1
    consumed = command[command.index("-Q") + 1].split(",")
    routed = {app.conf.task_default_queue} | {
        route["queue"] for route in app.conf.task_routes.values()
    }
    assert sorted(consumed) == sorted(routed) == ["floorboard", "floorboard-uploads"]
