"""A template comment is for the template's reader only: Django's ``{# #}`` ends on its own line,
so one that runs over two lines is printed on the page (MP-Bench's task page printed its own
comment, twice on the compare-task page). Every template of the project and its plug-ins is
read with Django's own lexer: no text it leaves for the page opens a comment."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.template.base import Lexer, TokenType
from django.template.utils import get_app_template_dirs


def project_templates() -> list[Path]:
    folders = [Path(d) for engine in settings.TEMPLATES for d in engine.get("DIRS", [])]
    folders += [Path(d) for d in get_app_template_dirs("templates")]
    repo = Path(settings.BASE_DIR).resolve()
    return sorted(
        path
        for folder in folders
        if folder.resolve().is_relative_to(repo)
        for path in folder.rglob("*.html")
    )


def test_no_template_prints_a_comment():
    templates = project_templates()
    assert any(path.name == "task.html" and "mpbench" in path.parts for path in templates)
    printed = [
        f"{path}:{token.lineno}"
        for path in templates
        for token in Lexer(path.read_text()).tokenize()
        if token.token_type == TokenType.TEXT and "{#" in token.contents
    ]
    assert not printed, printed
