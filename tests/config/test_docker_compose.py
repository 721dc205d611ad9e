"""docker/compose.yaml and docker/Dockerfile, checked against what config/settings.py reads.

No Docker engine is needed: the compose file is parsed, its ${VAR...} references are resolved
the way Compose would, and the resulting environment is fed to the real settings in a subprocess.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from django.conf import settings as django_settings

ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = ROOT / "docker"
COMPOSE_FILE = DOCKER_DIR / "compose.yaml"
DOCKERFILE = DOCKER_DIR / "Dockerfile"

APP_SERVICES = ("migrate", "web", "worker", "upload-worker", "beat")
WORKERS = ("worker", "upload-worker")
BACKING_SERVICES = ("postgres", "redis", "s3")
PROXY = "proxy"
NGINX_CONF = DOCKER_DIR / "nginx.conf"
ONE_SHOT_SERVICES = ("migrate", "createbucket")
PRODUCTION_CRITICAL = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "AWS_STORAGE_BUCKET_NAME",
    "AWS_S3_ENDPOINT_URL",
    "DJANGO_SECRET_KEY",
)
# What a shell exports before `docker compose up`: only the required secret.
HOST_ENV = {"DJANGO_SECRET_KEY": "test-only-secret-key-from-the-host-environment"}

_SETTINGS_READ = re.compile(
    r"""(?:env_(?:str|int|bool|list|float)\(|os\.environ\.get\(|os\.environ\.setdefault\(|"""
    r"""os\.getenv\(|os\.environ\[)\s*["']([A-Z][A-Z0-9_]*)["']"""
)
_INTERPOLATION = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def settings_env_names() -> set[str]:
    """Environment variable names read (by literal name) anywhere in config/*.py."""
    names: set[str] = set()
    for path in sorted((ROOT / "config").glob("*.py")):
        names.update(_SETTINGS_READ.findall(path.read_text()))
    return names


def interpolate(value: str, host_env: dict[str, str]) -> str:
    """Resolve Compose interpolation: ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?err}, $$."""

    def replace(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group(1), match.group(2), match.group(3)
        current = host_env.get(name)
        # With a colon, an empty value counts as unset (Compose semantics).
        present = bool(current) if op in (":-", ":?") else current is not None
        if present:
            return current
        if op in (":-", "-"):
            return arg
        if op in (":?", "?"):
            raise LookupError(f"{name} is required: {arg}")
        raise LookupError(f"${{{name}}} has no default; compose would substitute an empty string")

    return _INTERPOLATION.sub(replace, value)


def as_mapping(environment) -> dict[str, str]:
    if environment is None:
        return {}
    if isinstance(environment, dict):
        return {k: "" if v is None else str(v) for k, v in environment.items()}
    return dict(item.split("=", 1) if "=" in item else (item, "") for item in environment)


def as_argv(command) -> list[str]:
    if command is None:
        return []
    if isinstance(command, str):
        return shlex.split(command)
    return [str(part) for part in command]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


@pytest.fixture(scope="module")
def shared_env(compose) -> dict[str, str]:
    return as_mapping(compose["x-floorboard-env"])


@pytest.fixture(scope="module")
def resolved_env(shared_env) -> dict[str, str]:
    return {name: interpolate(value, HOST_ENV) for name, value in shared_env.items()}


# --- Structure ------------------------------------------------------------------------------


def test_all_services_exist(services):
    assert set(APP_SERVICES + BACKING_SERVICES + ONE_SHOT_SERVICES + (PROXY,)) <= set(services)


def test_app_services_share_one_image_and_the_shared_env(services, shared_env):
    images = {services[name]["image"] for name in APP_SERVICES}
    assert len(images) == 1
    for name in APP_SERVICES:
        build = services[name]["build"]
        context = (DOCKER_DIR / build["context"]).resolve()
        assert context == ROOT
        assert (context / build["dockerfile"]).resolve() == DOCKERFILE
        assert as_mapping(services[name]["environment"]) == shared_env, name


def test_migrate_runs_migrations_once(services):
    assert as_argv(services["migrate"]["command"]) == [
        "python",
        "manage.py",
        "migrate",
        "--noinput",
    ]
    assert services["migrate"]["restart"] == "no"
    assert services["createbucket"]["restart"] == "no"


def test_web_runs_the_images_gunicorn(services):
    # web keeps the Dockerfile's CMD (gunicorn config.wsgi), so it must not override it.
    assert "command" not in services["web"]
    assert (ROOT / "config" / "wsgi.py").is_file()


def test_worker_and_beat_run_the_config_celery_app(services):
    worker = as_argv(services["worker"]["command"])
    beat = as_argv(services["beat"]["command"])
    assert worker[:4] == ["celery", "-A", "config", "worker"]
    assert beat[:4] == ["celery", "-A", "config", "beat"]
    concurrency = worker[worker.index("--concurrency") + 1]
    assert re.fullmatch(r"\$\{[A-Z_]+:-\d+\}", concurrency), concurrency
    assert "app = Celery(" in (ROOT / "config" / "celery.py").read_text()


def test_worker_is_scalable(services):
    for name in WORKERS:
        worker = services[name]
        assert "container_name" not in worker
        assert "ports" not in worker
        assert "hostname" not in worker
    for name, service in services.items():
        for port in service.get("ports", []):
            # Only the proxy publishes a port: gunicorn and the backing services stay inside.
            assert name == PROXY, (name, port)


def test_depends_on_waits_for_health_or_completion(services):
    expected_condition = {name: "service_healthy" for name in BACKING_SERVICES}
    expected_condition.update(
        {name: "service_completed_successfully" for name in ONE_SHOT_SERVICES}
    )
    # The proxy waits for gunicorn to answer /healthz with everything it needs reachable.
    expected_condition["web"] = "service_healthy"
    for name, service in services.items():
        depends_on = service.get("depends_on", {})
        assert isinstance(depends_on, dict), f"{name}: use the long depends_on form"
        for target, spec in depends_on.items():
            assert target in services, (name, target)
            assert spec["condition"] == expected_condition[target], (name, target)
    for name in ("web", *WORKERS, "beat"):
        assert (
            services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        )
    for name in ("web", *WORKERS):
        for backing in ("postgres", "redis"):
            assert services[name]["depends_on"][backing]["condition"] == "service_healthy"
        assert "createbucket" in services[name]["depends_on"]
    assert services["createbucket"]["depends_on"]["s3"]["condition"] == "service_healthy"


def test_backing_services_have_healthchecks_and_volumes(compose, services):
    assert services["postgres"]["image"] == "postgres:16"
    assert "pg_isready" in " ".join(as_argv(services["postgres"]["healthcheck"]["test"]))
    assert services["redis"]["image"] == "redis:7"
    assert "ping" in as_argv(services["redis"]["healthcheck"]["test"])
    assert "minio/minio" in services["s3"]["image"]
    assert services["s3"]["healthcheck"]["test"]
    assert "minio/mc" in services["createbucket"]["image"]
    script = " ".join(as_argv(services["createbucket"]["entrypoint"]))
    assert "mc mb" in script and "http://s3:9000" in script
    postgres_volumes = [v.split(":")[0] for v in services["postgres"]["volumes"]]
    assert postgres_volumes and postgres_volumes[0] in compose["volumes"]


# --- Environment vs settings ----------------------------------------------------------------


# Read by gunicorn, not the settings: its worker count.
GUNICORN_ENV = {"WEB_CONCURRENCY"}


def test_every_shared_env_name_is_read_by_settings(shared_env):
    unknown = set(shared_env) - settings_env_names() - GUNICORN_ENV
    assert not unknown, f"set in compose but read nowhere in config/: {sorted(unknown)}"


def test_production_critical_settings_are_set(shared_env):
    assert set(PRODUCTION_CRITICAL) <= set(shared_env)
    assert set(PRODUCTION_CRITICAL) <= settings_env_names()
    assert shared_env["FLOORBOARD_PRODUCTION"] == "1"


def test_service_urls_point_at_the_compose_services(resolved_env, services):
    database = urlsplit(resolved_env["DATABASE_URL"])
    assert database.scheme in ("postgres", "postgresql")
    assert database.hostname == "postgres" and "postgres" in services
    assert database.path == "/floorboard"
    assert database.username == "floorboard"
    assert database.password == interpolate("${POSTGRES_PASSWORD:-floorboard}", HOST_ENV)
    postgres_env = {
        k: interpolate(v, HOST_ENV)
        for k, v in as_mapping(services["postgres"]["environment"]).items()
    }
    assert postgres_env["POSTGRES_USER"] == database.username
    assert postgres_env["POSTGRES_PASSWORD"] == database.password
    assert postgres_env["POSTGRES_DB"] == database.path.lstrip("/")

    broker = urlsplit(resolved_env["CELERY_BROKER_URL"])
    assert broker.scheme == "redis" and broker.hostname == "redis" and "redis" in services

    endpoint = urlsplit(resolved_env["AWS_S3_ENDPOINT_URL"])
    assert endpoint.hostname == "s3" and endpoint.port == 9000 and "s3" in services
    s3_env = {
        k: interpolate(v, HOST_ENV) for k, v in as_mapping(services["s3"]["environment"]).items()
    }
    assert resolved_env["AWS_ACCESS_KEY_ID"] == s3_env["MINIO_ROOT_USER"]
    assert resolved_env["AWS_SECRET_ACCESS_KEY"] == s3_env["MINIO_ROOT_PASSWORD"]
    bucket_env = as_mapping(services["createbucket"]["environment"])
    assert interpolate(bucket_env["BUCKET"], HOST_ENV) == resolved_env["AWS_STORAGE_BUCKET_NAME"]


def test_no_secret_is_committed(compose, shared_env):
    assert re.fullmatch(r"\$\{DJANGO_SECRET_KEY:\?[^}]+\}", shared_env["DJANGO_SECRET_KEY"])
    with pytest.raises(LookupError):
        interpolate(shared_env["DJANGO_SECRET_KEY"], {})
    # Every credential comes from the host environment (with a local-only default at most).
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        assert re.fullmatch(r"\$\{[A-Z_]+:[-?][^}]*\}", shared_env[name]), name
    assert "${POSTGRES_PASSWORD" in shared_env["DATABASE_URL"]
    for service, key in (
        ("postgres", "POSTGRES_PASSWORD"),
        ("s3", "MINIO_ROOT_USER"),
        ("s3", "MINIO_ROOT_PASSWORD"),
    ):
        value = as_mapping(compose["services"][service]["environment"])[key]
        assert value.startswith("${" + key), (service, key)


def test_whole_file_resolves_with_only_the_secret_key_set():
    # Every other ${...} has a default, so `export DJANGO_SECRET_KEY=...` is all compose needs.
    text = COMPOSE_FILE.read_text()
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    # `$${...}` is the shell's own expansion (Compose passes it on as `${...}`), not a reference.
    resolved = interpolate(body.replace("$$", ""), HOST_ENV)
    assert "${" not in resolved
    with pytest.raises(LookupError, match="DJANGO_SECRET_KEY"):
        interpolate(body, {})


_PROBE = """
import json
from celery.app.utils import find_app
from django.conf import settings
from django.core.files.storage import storages

app = find_app("config")  # what `celery -A config` loads
storage = storages["default"]
db = settings.DATABASES["default"]
print(json.dumps({
    "app_main": app.main,
    "db_engine": db["ENGINE"],
    "db_host": db["HOST"],
    "db_port": db["PORT"],
    "db_name": db["NAME"],
    "storage_backend": settings.STORAGES["default"]["BACKEND"],
    "storage_class": type(storage).__module__ + "." + type(storage).__qualname__,
    "storage_endpoint": storage.endpoint_url,
    "storage_bucket": storage.bucket_name,
    "broker_url": settings.CELERY_BROKER_URL,
    "celery_broker_url": app.conf.broker_url,
    "visibility_timeout": app.conf.broker_transport_options.get("visibility_timeout"),
    "debug": settings.DEBUG,
    "secret_key": settings.SECRET_KEY,
}))
"""


def test_settings_resolve_to_postgres_s3_and_redis_with_the_compose_env(resolved_env):
    env = {k: v for k, v in os.environ.items() if k not in settings_env_names()}
    env.update(resolved_env)
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    result = subprocess.run(
        [sys.executable, "-c", _PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])

    assert seen["app_main"] == "floorboard"
    assert seen["db_engine"] == "django.db.backends.postgresql"
    assert (seen["db_host"], int(seen["db_port"]), seen["db_name"]) == (
        "postgres",
        5432,
        "floorboard",
    )
    # The site's S3 backend: django-storages' with bounded calls and SigV4 (config/storage.py).
    assert seen["storage_backend"] == "config.storage.S3Storage"
    assert seen["storage_class"] == "config.storage.S3Storage"
    assert seen["storage_endpoint"] == "http://s3:9000"
    assert seen["storage_bucket"] == resolved_env["AWS_STORAGE_BUCKET_NAME"]
    assert seen["broker_url"] == seen["celery_broker_url"] == "redis://redis:6379/0"
    assert seen["visibility_timeout"] == int(resolved_env["CELERY_VISIBILITY_TIMEOUT"])
    assert seen["debug"] is False
    assert seen["secret_key"] == HOST_ENV["DJANGO_SECRET_KEY"]


# --- Queues ---------------------------------------------------------------------------------

_QUEUES_PROBE = """
import json
from celery.app.utils import find_app

app = find_app("config")  # what `celery -A config` loads
print(json.dumps([app.conf.task_default_queue,
                  *(route["queue"] for route in app.conf.task_routes.values())]))
"""


def _routed_queues(env_overrides: dict[str, str]) -> list[str]:
    """The queues tasks are sent to, as the settings give them under compose's environment."""
    host = {**HOST_ENV, **env_overrides}
    compose_env = {
        name: interpolate(value, host)
        for name, value in as_mapping(
            yaml.safe_load(COMPOSE_FILE.read_text())["x-floorboard-env"]
        ).items()
    }
    env = {k: v for k, v in os.environ.items() if k not in settings_env_names()}
    env.update(compose_env)
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    result = subprocess.run(
        [sys.executable, "-c", _QUEUES_PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _consumed(service: dict, host: dict[str, str]) -> list[str]:
    argv = [interpolate(arg, host) for arg in as_argv(service["command"])]
    assert argv[:4] == ["celery", "-A", "config", "worker"]
    assert argv.count("-Q") == 1, "a worker without -Q consumes the default queue only"
    return argv[argv.index("-Q") + 1].split(",")


@pytest.mark.parametrize(
    "overrides",
    [{}, {"FLOORBOARD_QUEUE": "judging-a", "FLOORBOARD_UPLOAD_QUEUE": "finishing-b"}],
)
def test_the_workers_consume_every_queue_tasks_are_routed_to(services, overrides):
    """`worker` consumes every queue a task is sent to; `upload-worker` the upload queue
    alone, so finishing an upload never waits behind judging. With the defaults, and with the
    queue names changed on the host (both sides read the same variables)."""
    routed = _routed_queues(overrides)
    default_queue, upload_queue = (
        overrides.get("FLOORBOARD_QUEUE", "floorboard"),
        overrides.get("FLOORBOARD_UPLOAD_QUEUE", "floorboard-uploads"),
    )
    assert routed == [default_queue, upload_queue]
    host = {**HOST_ENV, **overrides}
    assert sorted(_consumed(services["worker"], host)) == sorted(routed)
    assert _consumed(services["upload-worker"], host) == [upload_queue]
    consumers = [
        name
        for name, service in services.items()
        if "worker" in as_argv(service.get("command"))[:4]
    ]
    assert sorted(consumers) == sorted(WORKERS)


# --- Dockerfile -----------------------------------------------------------------------------


def _instructions() -> list[tuple[str, str]]:
    lines, current = [], ""
    for raw in DOCKERFILE.read_text().splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        current += stripped[:-1] + " " if stripped.endswith("\\") else stripped
        if not stripped.endswith("\\"):
            keyword, _, rest = current.partition(" ")
            lines.append((keyword.upper(), rest.strip()))
            current = ""
    return lines


def test_dockerfile_builds_a_non_root_gunicorn_image():
    instructions = _instructions()
    keywords = [k for k, _ in instructions]
    assert instructions[0] == ("FROM", "python:3.11-slim")
    runs = [rest for k, rest in instructions if k == "RUN"]
    # Every version from the lock file (gunicorn among them), then the project without deps.
    copies = [rest for k, rest in instructions if k == "COPY"]
    assert any("requirements.lock" in copy.split()[:-1] for copy in copies)
    assert any(re.search(r"pip install -r requirements\.lock\b", run) for run in runs)
    assert any(re.search(r"pip install --no-deps \.(\s|$)", run) for run in runs)
    assert not any(re.search(r"pip install [^&]*\b[a-z-]+==\d", run) for run in runs), (
        "a version pinned in the Dockerfile bypasses the lock file"
    )
    collect = [run for run in runs if "collectstatic" in run]
    assert collect and "DJANGO_SECRET_KEY=" in collect[0] and "--noinput" in collect[0]
    users = [rest for k, rest in instructions if k == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")
    cmd = json.loads(next(rest for k, rest in reversed(instructions) if k == "CMD"))
    assert cmd[:2] == ["gunicorn", "config.wsgi:application"]
    # Every required COPY source exists (wildcard sources may legitimately match nothing).
    for keyword, rest in instructions:
        if keyword == "COPY" and not rest.startswith("--from"):
            for source in rest.split()[:-1]:
                if not any(ch in source for ch in "*?["):
                    assert (ROOT / source).exists(), source


def test_check_deploy_is_clean_with_the_compose_environment(resolved_env):
    """`manage.py check --deploy` with the production environment compose gives the app: no
    warning (HSTS, HTTPS redirect, secure cookies, proxy header all on by default)."""
    env = {k: v for k, v in os.environ.items() if k not in settings_env_names()}
    env.update(resolved_env)
    # What an operator exports: a long random key (a short one is itself a deploy warning).
    env["DJANGO_SECRET_KEY"] = "kq3J9x-production-like-secret-" + "Zb7RtWm2Vn5Lp8" * 3
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout


# --- The proxy ------------------------------------------------------------------------------


def nginx_directives() -> list[tuple[str, list[str]]]:
    """(name, arguments) of every simple directive in docker/nginx.conf, in order."""
    text = "\n".join(line.split("#", 1)[0] for line in NGINX_CONF.read_text().splitlines())
    found = []
    for statement in re.split(r"[;{}]", text):
        words = shlex.split(statement)
        if words:
            found.append((words[0], words[1:]))
    return found


def nginx_values(name: str) -> list[list[str]]:
    return [args for directive, args in nginx_directives() if directive == name]


def nginx_bytes(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([kmg]?)", value.lower()).groups()
    return int(number) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit]


def nginx_seconds(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([sm]?)", value).groups()
    return int(number) * (60 if unit == "m" else 1)


def test_the_proxy_fronts_gunicorn_with_the_config_file(services):
    proxy = services[PROXY]
    assert proxy["image"].startswith("${FLOORBOARD_NGINX_IMAGE:-nginx:")
    mounts = [volume.split(":") for volume in proxy["volumes"]]
    assert ["./nginx.conf", "/etc/nginx/nginx.conf", "ro"] in mounts
    assert (DOCKER_DIR / "nginx.conf").is_file()
    assert [p.split(":")[-1] for p in proxy["ports"]] == [
        args[0] for args in nginx_values("listen")
    ], "the published ports are the ones nginx listens on"
    assert proxy["depends_on"]["web"]["condition"] == "service_healthy"
    assert "ports" not in services["web"]


def test_the_upstream_is_the_web_services_gunicorn_port():
    cmd = json.loads(next(rest for k, rest in reversed(_instructions()) if k == "CMD"))
    bind = cmd[cmd.index("--bind") + 1]
    assert nginx_values("upstream") == [["floorboard_web"]]
    port = bind.rsplit(":", 1)[1]
    assert [a for a in nginx_values("server") if a] == [[f"web:{port}"]]
    # The site's server passes to gunicorn; the store listener (below) to the store.
    assert nginx_values("proxy_pass") == [["http://floorboard_web"], ["http://s3:9000"]]


def test_the_proxy_buffers_whole_requests_and_cuts_slow_clients_off():
    assert nginx_values("proxy_request_buffering") == [["on"]]
    assert nginx_values("proxy_buffering") == [["on"]]
    assert 0 < nginx_seconds(nginx_values("client_header_timeout")[0][0]) <= 30
    assert 0 < nginx_seconds(nginx_values("client_body_timeout")[0][0]) <= 60


def test_the_body_limit_takes_a_chunk_and_the_largest_upload_a_plug_in_allows(resolved_env):
    """Every registered plug-in's upload limit (within the site ceiling Compose leaves it at)
    fits in one API create: Duplex-MPE's is the largest."""
    from evaluation.benchmarks import registry
    from leaderboard.uploads.services import ZIP_OVERHEAD_BYTES

    ceiling = int(
        resolved_env.get("FLOORBOARD_BUNDLE_MAX_UNCOMPRESSED_BYTES", 0)
        or django_settings.BUNDLE_MAX_UNCOMPRESSED_BYTES
    )
    largest = max(min(plugin.max_upload_bytes, ceiling) for plugin in registry().values())
    assert largest >= 32 * 1024**3  # Duplex-MPE's 48 GiB, at the 32 GiB site ceiling
    limit = nginx_bytes(nginx_values("client_max_body_size")[0][0])
    chunk = int(resolved_env["FLOORBOARD_UPLOAD_CHUNK_BYTES"])
    # A chunk arrives with its headers; an API create with the multipart envelope.
    assert limit >= chunk + 64 * 1024
    assert limit >= largest + ZIP_OVERHEAD_BYTES + 1024**2


def _proxy_settings(resolved_env) -> dict:
    """The settings the web service runs with under the compose environment."""
    env = {k: v for k, v in os.environ.items() if k not in settings_env_names()}
    env.update(resolved_env)
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    probe = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({'proxy_ssl_header': s.SECURE_PROXY_SSL_HEADER, "
        "'trusted_proxies': s.TRUSTED_PROXY_COUNT, 'chunk': s.UPLOAD_CHUNK_BYTES, "
        "'forwarded_host': s.USE_X_FORWARDED_HOST, 'forwarded_port': s.USE_X_FORWARDED_PORT, "
        "'ssl_redirect': s.SECURE_SSL_REDIRECT, "
        "'num_proxies': s.REST_FRAMEWORK.get('NUM_PROXIES')}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_proxy_sets_the_headers_the_settings_trust(resolved_env):
    """What the application trusts, nginx writes from its own connection: the scheme it
    served (a client's own X-Forwarded-Proto never reaches gunicorn), the peer's address
    appended to X-Forwarded-For, and the Host the client asked for with its port, which Django
    validates and builds links from."""
    headers = {args[0]: args[1] for args in nginx_values("proxy_set_header")}
    assert headers["X-Forwarded-Proto"] == "$scheme"
    # Appended to: the application reads the entry its outermost trusted proxy appended.
    assert headers["X-Forwarded-For"] == "$proxy_add_x_forwarded_for"
    assert "X-Real-IP" not in headers
    assert headers["Host"] == "$http_host"
    assert headers["X-Forwarded-Host"] == ""  # an empty value: nginx passes no such header
    # No value the client sent is read into a header the application trusts.
    every_argument = [arg for _, args in nginx_directives() for arg in args]
    assert not [arg for arg in every_argument if arg.startswith("$http_x_forwarded")]

    seen = _proxy_settings(resolved_env)
    # X-Forwarded-Proto: https is what nginx sends on the connections whose TLS it ended.
    assert seen["proxy_ssl_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert seen["ssl_redirect"] is True
    # The Host header carries host and port; X-Forwarded-Host/-Port are not read.
    assert seen["forwarded_host"] is False and seen["forwarded_port"] is False
    # The client address, for the account throttles and the API's alike: the X-Forwarded-For
    # entry nginx appended (one trusted proxy).
    assert seen["trusted_proxies"] == seen["num_proxies"] == 1
    assert seen["chunk"] == int(resolved_env["FLOORBOARD_UPLOAD_CHUNK_BYTES"])


def test_the_proxy_ends_tls_on_a_published_port(services):
    """$scheme is "https" only on a listener nginx serves TLS on, with the certificate and key
    compose mounts; the plain listener stays for the redirect to HTTPS."""
    listens = [args for args in nginx_values("listen") if args[0] != STORE_PORT]
    tls = [args for args in listens if "ssl" in args[1:]]
    plain = [args for args in listens if "ssl" not in args[1:]]
    assert len(tls) == 1 and len(plain) == 1
    published = {port.split(":")[-1] for port in services[PROXY]["ports"]} - {STORE_PORT}
    assert {tls[0][0], plain[0][0]} == published
    mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in services[PROXY]["volumes"]}
    for directive in ("ssl_certificate", "ssl_certificate_key"):
        [[path]] = nginx_values(directive)
        folder = str(Path(path).parent)
        assert folder in mounts, (directive, path)
        # Keys stay out of git and out of the image.
        assert mounts[folder] == "./tls"
    assert "docker/tls/" in (ROOT / ".gitignore").read_text().splitlines()
    assert "docker/tls" in (ROOT / ".dockerignore").read_text().splitlines()
    [[protocols_first, *protocols_rest]] = nginx_values("ssl_protocols")
    assert {protocols_first, *protocols_rest} <= {"TLSv1.2", "TLSv1.3"}


# --- Healthchecks ---------------------------------------------------------------------------


def test_web_is_healthy_while_healthz_answers(services):
    """web's healthcheck asks the health endpoint on gunicorn's own port; urlopen raises on a
    503, so a failing database, broker or bucket makes the container unhealthy."""
    from django.urls import Resolver404, resolve

    from config.health import PATH

    check = services["web"]["healthcheck"]
    argv = as_argv(check["test"])
    assert argv[:3] == ["CMD", "python", "-c"]
    script = argv[3]
    url = urlsplit(re.search(r"https?://[^\"']+", script).group(0))
    cmd = json.loads(next(rest for k, rest in reversed(_instructions()) if k == "CMD"))
    port = int(cmd[cmd.index("--bind") + 1].rsplit(":", 1)[1])
    assert (url.hostname, url.port, url.path) == ("127.0.0.1", port, PATH)
    assert "urlopen" in script and "timeout=" in script
    # Answered by the middleware before any URL is resolved (and before host checks).
    assert django_settings.MIDDLEWARE[0] == "config.health.HealthCheckMiddleware"
    with pytest.raises(Resolver404):
        resolve(PATH)
    assert _seconds(check["timeout"]) <= _seconds(check["interval"])
    assert check["retries"] >= 1


@pytest.mark.parametrize("name", WORKERS)
def test_worker_is_healthy_while_it_answers_a_ping(services, name):
    check = services[name]["healthcheck"]
    argv = as_argv(check["test"])
    assert argv[0] == "CMD-SHELL"
    command = shlex.split(interpolate(argv[1], HOST_ENV))
    assert command[:5] == ["celery", "-A", "config", "inspect", "ping"]
    # Its own worker only (celery's default node name is celery@<container hostname>).
    assert command[command.index("--destination") + 1] == "celery@$HOSTNAME"
    assert _seconds(check["timeout"]) <= _seconds(check["interval"])


def _seconds(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([sm])", value).groups()
    return int(number) * (60 if unit == "m" else 1)


def test_the_image_runs_several_web_workers(monkeypatch):
    """One sync worker lets a single slow request hold every page: the image's gunicorn reads
    config/gunicorn.py, two workers per core plus one unless WEB_CONCURRENCY says otherwise."""
    from config import gunicorn

    cmd = json.loads(next(rest for k, rest in reversed(_instructions()) if k == "CMD"))
    assert cmd[cmd.index("--config") + 1] == "python:config.gunicorn"
    env = [rest for keyword, rest in _instructions() if keyword == "ENV"]
    assert not [e for e in env if e.startswith("WEB_CONCURRENCY=")], "the core count decides"
    monkeypatch.setattr(gunicorn.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert gunicorn.workers_from({}) == 5
    monkeypatch.setattr(gunicorn.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert gunicorn.workers_from({"WEB_CONCURRENCY": ""}) == 3
    assert gunicorn.workers_from({"WEB_CONCURRENCY": "7"}) == 7
    with pytest.raises(ValueError, match="WEB_CONCURRENCY='four'"):
        gunicorn.workers_from({"WEB_CONCURRENCY": "four"})


# --- Storage ---------------------------------------------------------------------------------

# The proxy's listener for browsers reaching the store (docker/nginx.conf).
STORE_PORT = "9000"
STORAGE_SETTINGS = (
    "FLOORBOARD_S3_PUBLIC_ENDPOINT_URL",
    "FLOORBOARD_CONTENT_SECURITY_POLICY",
    "FLOORBOARD_STORAGE_CONNECT_TIMEOUT_SECONDS",
    "FLOORBOARD_STORAGE_READ_TIMEOUT_SECONDS",
    "FLOORBOARD_STORAGE_MAX_ATTEMPTS",
    "FLOORBOARD_HEALTH_STORAGE_TIMEOUT_SECONDS",
    "FLOORBOARD_MULTIPART_ABORT_HOURS",
    "FLOORBOARD_PLAIN_HTTP",
    "FLOORBOARD_SITE_URL",
    "DJANGO_EMAIL_HOST",
    "DJANGO_EMAIL_PORT",
    "DJANGO_EMAIL_HOST_USER",
    "DJANGO_EMAIL_HOST_PASSWORD",
    "DJANGO_DEFAULT_FROM_EMAIL",
    "WEB_CONCURRENCY",
)
_STORAGE_PROBE = """
import json, django
django.setup()
from django.conf import settings as s
from django.core.files.storage import default_storage
from django.test import Client
config = default_storage.connection.meta.client.meta.config
home = Client().get("/no-such-page/", HTTP_HOST="localhost:8000")
print(json.dumps({
    "csp": s.CONTENT_SECURITY_POLICY, "link": default_storage.url("a/b.wav"),
    "connect": config.connect_timeout, "read": config.read_timeout,
    "attempts": config.retries["total_max_attempts"],
    "health_timeout": s.HEALTH_STORAGE_TIMEOUT_SECONDS, "abort_hours": s.MULTIPART_ABORT_HOURS,
    "ssl_redirect": s.SECURE_SSL_REDIRECT, "secure_cookies": s.SESSION_COOKIE_SECURE,
    "hsts": s.SECURE_HSTS_SECONDS, "home": home.status_code,
    "beat": sorted(entry["task"] for entry in s.CELERY_BEAT_SCHEDULE.values()),
}))
"""


def _compose_settings(resolved_env, **host: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in settings_env_names()}
    env.update(resolved_env, **host)
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    result = subprocess.run(
        [sys.executable, "-c", _STORAGE_PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_every_storage_and_operator_setting_is_in_the_env_block(shared_env):
    assert set(STORAGE_SETTINGS) <= set(shared_env)


def test_the_store_browsers_reach_is_the_proxys_published_listener(resolved_env, services):
    public = urlsplit(resolved_env["FLOORBOARD_S3_PUBLIC_ENDPOINT_URL"])
    published = {
        port.split(":")[-1]: interpolate(port, HOST_ENV).split(":")[0]
        for port in services[PROXY]["ports"]
    }
    assert str(public.port) == published[STORE_PORT]
    assert [STORE_PORT] in nginx_values("listen")
    assert ["Host", "$http_host"] in nginx_values("proxy_set_header")
    assert ["http://s3:9000"] in nginx_values("proxy_pass")


def test_the_compose_settings_bound_storage_and_let_browsers_reach_it(resolved_env):
    seen = _compose_settings(resolved_env)
    public = resolved_env["FLOORBOARD_S3_PUBLIC_ENDPOINT_URL"]
    for directive in ("connect-src", "media-src"):
        assert re.search(rf"{directive} [^;]*{re.escape(public)}", seen["csp"]), seen["csp"]
    assert (
        seen["link"].startswith(public + "/") and "X-Amz-Algorithm=AWS4-HMAC-SHA256" in seen["link"]
    )
    assert (seen["connect"], seen["read"], seen["attempts"]) == (
        float(resolved_env["FLOORBOARD_STORAGE_CONNECT_TIMEOUT_SECONDS"]),
        float(resolved_env["FLOORBOARD_STORAGE_READ_TIMEOUT_SECONDS"]),
        int(resolved_env["FLOORBOARD_STORAGE_MAX_ATTEMPTS"]),
    )
    assert seen["health_timeout"] < 1.0
    assert "leaderboard.uploads.tasks.sweep_incomplete_multipart_uploads" in seen["beat"]
    # HTTPS by default: plain HTTP is redirected.
    assert seen["ssl_redirect"] and seen["secure_cookies"] and seen["hsts"] > 0
    assert seen["home"] == 301


def test_the_plain_http_switch_serves_the_stack_over_http(resolved_env):
    seen = _compose_settings(resolved_env, FLOORBOARD_PLAIN_HTTP="1")
    assert not seen["ssl_redirect"] and not seen["secure_cookies"] and seen["hsts"] == 0
    assert seen["home"] == 404  # answered over HTTP (no such page), not redirected


def run_bucket_job(services, tmp_path, **host: str) -> subprocess.CompletedProcess:
    """Run createbucket's entrypoint with a stand-in `mc` that keeps the lifecycle it imports."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    mc = fake_bin / "mc"
    mc.write_text(
        f'#!/bin/sh\nif [ "$1 $2" = "ilm import" ]; then cat > {tmp_path}/lifecycle.json; fi\n'
    )
    mc.chmod(0o755)
    job = services["createbucket"]
    env = {k: interpolate(v, HOST_ENV | host) for k, v in as_mapping(job["environment"]).items()}
    env["PATH"] = f"{fake_bin}:{os.environ['PATH']}"
    argv = [interpolate(part, HOST_ENV | host) for part in as_argv(job["entrypoint"])]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)


def imported_abort_rule(tmp_path) -> dict:
    [only] = json.loads((tmp_path / "lifecycle.json").read_text())["Rules"]
    return only


def test_incomplete_multipart_uploads_are_aborted_by_the_bucket_job_and_the_store(
    resolved_env, services, tmp_path
):
    hours = float(resolved_env["FLOORBOARD_MULTIPART_ABORT_HOURS"])
    result = run_bucket_job(services, tmp_path)
    assert result.returncode == 0, result.stderr
    only = imported_abort_rule(tmp_path)
    assert only["Status"] == "Enabled" and only["Filter"] == {"Prefix": ""}  # every prefix
    assert only["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] * 24 == hours
    minio = {
        k: interpolate(v, HOST_ENV) for k, v in as_mapping(services["s3"]["environment"]).items()
    }
    assert minio["MINIO_API_STALE_UPLOADS_EXPIRY"] == f"{hours:g}h"


# S3 lifecycle rules count whole days: the setting's hours rounded up, never below one day.
@pytest.mark.parametrize(
    ("hours", "days"),
    [
        ("72", 3),
        ("24", 1),
        ("25", 2),
        ("100", 5),
        ("1", 1),
        ("0.5", 1),
        ("0", 1),
        ("48.0", 2),
        ("48.25", 3),
        ("072", 3),
        ("720", 30),
    ],
)
def test_the_bucket_jobs_abort_rule_follows_the_abort_hours_setting(
    services, tmp_path, hours, days
):
    result = run_bucket_job(services, tmp_path, FLOORBOARD_MULTIPART_ABORT_HOURS=hours)
    assert result.returncode == 0, result.stderr
    rule = imported_abort_rule(tmp_path)
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": days}


@pytest.mark.parametrize("hours", ["three days", "1e3", "-5", "1.2.3"])
def test_the_bucket_job_refuses_abort_hours_that_are_not_a_number(services, tmp_path, hours):
    result = run_bucket_job(services, tmp_path, FLOORBOARD_MULTIPART_ABORT_HOURS=hours)
    assert result.returncode != 0
    assert f"FLOORBOARD_MULTIPART_ABORT_HOURS='{hours}' is not a number of hours" in result.stderr
    assert not (tmp_path / "lifecycle.json").exists()


def test_docker_env_documents_every_setting_it_names():
    """docker/.env: every variable it names is one compose reads; the storage ones are there."""
    text = (DOCKER_DIR / ".env").read_text()
    named = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", text, flags=re.M))
    compose_text = COMPOSE_FILE.read_text()
    for name in named:
        assert "${" + name in compose_text, name
    for name in (
        "FLOORBOARD_PLAIN_HTTP",
        "FLOORBOARD_S3_PUBLIC_ENDPOINT_URL",
        "FLOORBOARD_CONTENT_SECURITY_POLICY",
        "FLOORBOARD_STORAGE_READ_TIMEOUT_SECONDS",
        "FLOORBOARD_SITE_URL",
    ):
        assert name in named, name
