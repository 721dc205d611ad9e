"""Names in charts are text: plotly renders a subset of HTML in labels, hover text and tick
labels, so a system or rater named like a link must not become one."""

import json

import pytest

from annotation.charts import raters_chart, strata_chart
from evaluation.benchmarks import get_plugin
from leaderboard.charts import board_figures_json
from leaderboard.selectors import ChartPoint, board_columns

EVIL = '<a href="https://evil.example/">x</a>'
SHOWN = "&lt;a href=&quot;https://evil.example/&quot;&gt;x&lt;/a&gt;"


@pytest.mark.django_db
def test_board_charts_carry_system_names_as_text(toybench):
    columns = board_columns(benchmark=toybench)
    values = {c.key: 50.0 if c.kind == "rate" else 1.5 for c in columns}
    points = [
        ChartPoint(
            system=EVIL,
            system_type="small",
            url="/systems/1/",
            reported_in_paper=False,
            private=False,
            values=values,
            intervals={},
        )
    ]
    figures = board_figures_json(get_plugin(toybench.plugin), columns, points)
    assert "evil.example" in figures
    assert "<a " not in figures and "<a href" not in json.dumps(json.loads(figures))
    texts = json.dumps(json.loads(figures))
    assert SHOWN in texts


def figure_figure(value=0.5) -> dict:
    return {"value": value, "low": 0.4, "high": 0.6, "reason": ""}


def test_study_charts_carry_rater_and_stratum_names_as_text():
    report = {
        "by_stratum": {"1": {"kappa": figure_figure(), "alpha": figure_figure()}},
        "overall": {"kappa": figure_figure()},
        "raters": [
            {
                "name": EVIL,
                "agreement": figure_figure(),
                "median_seconds": figure_figure(12.0),
                "outlier": False,
                "excluded": False,
                "outlier_reasons": [],
                "ratings": 30,
            }
        ],
    }
    for figure in (strata_chart(report, {"1": EVIL}), raters_chart(report)):
        text = figure.to_json()
        assert "<a " not in text and SHOWN.replace("&quot;", "&quot;") in json.dumps(
            json.loads(text)
        )
