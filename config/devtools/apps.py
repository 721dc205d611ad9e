from django.apps import AppConfig


class DevToolsConfig(AppConfig):
    """Installed only where FLOORBOARD_DEV_TOOLS=1 (config/settings.py)."""

    name = "config.devtools"
    label = "devtools"
    verbose_name = "Development tools"
