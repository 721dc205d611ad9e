"""The development tools (config/devtools: every bench_* command and soak) are not part of the
product: the settings the image runs with (docker/compose.yaml's environment, nothing else) do
not install them, and only the Makefile's local targets turn them on."""

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.config.test_docker_compose import (
    COMPOSE_FILE,
    DOCKER_DIR,
    HOST_ENV,
    as_mapping,
    interpolate,
    settings_env_names,
)

ROOT = Path(__file__).resolve().parents[2]
SWITCH = "FLOORBOARD_DEV_TOOLS"
DEV_COMMANDS = sorted(
    path.stem
    for path in (ROOT / "config" / "devtools" / "management" / "commands").glob("*.py")
    if path.stem != "__init__"
)
PROBE = "import django; django.setup(); from django.conf import settings; print(settings.INSTALLED_APPS)"


def run(argv: list[str], env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def image_env() -> dict[str, str]:
    """This process's environment without anything config/ reads, plus what compose gives the
    image's processes."""
    env = {k: v for k, v in os.environ.items() if k not in settings_env_names()}
    shared = as_mapping(yaml.safe_load(COMPOSE_FILE.read_text())["x-floorboard-env"])
    env.update({name: interpolate(value, HOST_ENV) for name, value in shared.items()})
    return env | {"DJANGO_SETTINGS_MODULE": "config.settings"}


def commands(env: dict[str, str]) -> set[str]:
    return set(run(["manage.py", "help", "--commands"], env).split())


def test_the_development_app_holds_every_bench_command_and_soak():
    assert "soak" in DEV_COMMANDS
    assert {"bench_overhead", "bench_scoring", "bench_leaderboard", "bench_attacks"} <= set(
        DEV_COMMANDS
    )
    stray = [
        str(path.relative_to(ROOT))
        for top in ("evaluation", "leaderboard", "annotation")
        for path in (ROOT / top).rglob("management/commands/*.py")
        if path.stem.startswith("bench_") or path.stem == "soak"
    ]
    assert not stray, f"development commands outside config/devtools: {stray}"


def test_the_images_settings_do_not_install_the_development_tools():
    env = image_env()
    assert SWITCH not in env
    assert "config.devtools" not in run(["-c", PROBE], env)
    found = commands(env)
    assert "seed_demo" in found  # the product's own commands are listed
    assert not [name for name in found if name.startswith("bench_") or name == "soak"]


def test_the_switch_installs_them_under_their_names():
    env = image_env() | {SWITCH: "1"}
    assert "config.devtools" in run(["-c", PROBE], env)
    assert set(DEV_COMMANDS) <= commands(env)


def test_the_image_leaves_the_app_out_and_the_product_never_imports_it():
    assert "config/devtools" in (ROOT / ".dockerignore").read_text().splitlines()
    # Only the app itself and the plug-ins' own bench commands (which only the app loads) may
    # import it: anything else would break in the image, which does not have it.
    found = []
    for top in ("config", "evaluation", "leaderboard", "annotation"):
        for path in (ROOT / top).rglob("*.py"):
            relative = path.relative_to(ROOT)
            own_commands = "/demo/commands/" in f"/{relative.as_posix()}"
            if relative.parts[:2] == ("config", "devtools") or own_commands:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                if any(name.startswith("config.devtools") for name in names):
                    found.append(f"{relative}:{node.lineno}")
    assert not found, "product modules importing the development tools: " + ", ".join(found)


def test_nothing_in_docker_sets_the_switch():
    mentions = [
        str(path.relative_to(ROOT))
        for path in DOCKER_DIR.rglob("*")
        if path.is_file() and SWITCH in path.read_text(errors="replace")
    ]
    assert not mentions


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_makefiles_bench_soak_and_test_targets_set_the_switch_and_demo_does_not():
    def recipe(*targets: str) -> list[str]:
        # -n prints each command the targets would run, variables expanded, and runs none.
        result = subprocess.run(
            ["make", "-n", "-B", *targets], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    local = recipe("bench", "bench-load", "bench-attacks", "soak", "test")
    running = [line for line in local if re.search(r"manage\.py (bench_|soak)|-m pytest", line)]
    assert len(running) >= 10  # bench's eight commands and more: the recipe was read
    for name in ("bench_scoring", "bench_overhead", "bench_load", "bench_attacks", "soak"):
        assert any(f"manage.py {name}" in line for line in running), name
    unset = [line for line in running if f"{SWITCH}=1" not in line]
    assert not unset, "run without the development tools:\n" + "\n".join(unset)
    assert not [line for line in recipe("demo") if SWITCH in line]
