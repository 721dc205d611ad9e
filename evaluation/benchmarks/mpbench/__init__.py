"""The MP-Bench plug-in (927 tasks; Table 3 of the paper). The declarations and hooks are in
plugin.py; the harness's rules in detection.py, scoring.py and bundle.py."""

from .plugin import plugin

__all__ = ["plugin"]
