"""Settings helpers that read the environment and fail loudly on values they cannot parse."""

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r} is below {minimum}, its smallest value")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None


def env_retired(names: dict[str, str]) -> None:
    """Refuse to start while the environment still sets a name no longer read: a limit that
    was meant to apply would otherwise silently not."""
    for name, instead in names.items():
        if name in os.environ:
            raise ImproperlyConfigured(f"{name} is no longer read: {instead}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_map(name: str, default: dict[str, str]) -> dict[str, str]:
    """``key=value`` pairs separated by commas; a value may be empty. Unset: ``default``."""
    raw = os.environ.get(name)
    if raw is None:
        return dict(default)
    found = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ImproperlyConfigured(
                f"{name}={raw!r}: {item.strip()!r} is not a key=value pair (pairs are separated "
                "by commas)"
            )
        found[key.strip()] = value.strip()
    return found
