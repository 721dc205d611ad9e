"""The lock files pin every dependency pyproject.toml declares, at the version it declares, and
are what `make install` and the image install."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(?:==\s*([^\s;]+))?")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(*extras: str) -> dict[str, str | None]:
    """{name: pinned version or None} of the main dependencies and the given extras."""
    requirements = list(PYPROJECT["project"]["dependencies"])
    for extra in extras:
        requirements += PYPROJECT["project"]["optional-dependencies"][extra]
    found = {}
    for requirement in requirements:
        name, _, version = _REQUIREMENT.match(requirement).groups()
        found[normalized(name)] = version
    return found


def locked(filename: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / filename).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)(\s*;.*)?", line)
        assert match, f"{filename}: not an exact pin: {line!r}"
        pins[normalized(match.group(1))] = match.group(2)
    return pins


@pytest.mark.parametrize(
    ("filename", "extras"), [("requirements.lock", ("prod",)), ("requirements-dev.lock", ("dev",))]
)
def test_every_declared_dependency_is_locked_at_its_version(filename, extras):
    pins = locked(filename)
    wanted = declared(*extras)
    missing = sorted(set(wanted) - set(pins))
    assert not missing, f"{filename} lacks {missing}: run `make lock`"
    differing = {
        name: (version, pins[name])
        for name, version in wanted.items()
        if version is not None and pins[name] != version
    }
    assert not differing, f"{filename}: pyproject vs lock {differing}: run `make lock`"


def test_the_locks_agree_where_they_overlap():
    prod, dev = locked("requirements.lock"), locked("requirements-dev.lock")
    differing = {n: (prod[n], dev[n]) for n in set(prod) & set(dev) if prod[n] != dev[n]}
    assert not differing


def test_where_they_are_used_they_are_declared():
    """gunicorn serves the image; openapi-spec-validator checks the API schema in the tests."""
    assert "gunicorn" in declared("prod")
    assert "openapi-spec-validator" in declared("dev")
    assert "openapi_spec_validator" in (ROOT / "tests/leaderboard/api/test_schema.py").read_text()


def test_make_install_and_the_image_install_from_the_locks():
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install --quiet -r requirements-dev.lock" in makefile
    assert "pip install --quiet --no-deps -e ." in makefile
    assert re.search(r"^\$\(STAMP\):.*requirements-dev\.lock", makefile, re.MULTILINE)
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "pip install -r requirements.lock" in dockerfile
    assert "pip install --no-deps ." in dockerfile
