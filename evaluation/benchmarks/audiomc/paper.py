"""Numbers the Audio MultiChallenge paper reports, preloaded as rows "reported in paper" (SPEC §7).

Only the overall APR that the paper's text quotes for three models is available; its Table 2
(every model's APR and ARS per axis) has not been transcribed, so those cells stay empty and the
board says so in REPORTED_NOTE instead of showing invented figures. Output modality of these
systems is not stated in the source at hand, so it stays unknown too.
"""

from __future__ import annotations

from .dataset import AXES

SOURCE = "Audio MultiChallenge paper, arXiv 2512.14865v1"
REPORTED_NOTE = (
    "Reported rows show only the overall APR quoted in the paper's text for three models. "
    "The paper's Table 2 (APR and ARS per axis for every model) is not transcribed here."
)
N_TASKS = 452

# How to cite the benchmark: its arXiv record (the first author as the record names them; the
# others are left to "and others" rather than guessed).
CITATION = """@misc{gosai2025audiomultichallenge,
      title={Audio MultiChallenge},
      author={Gosai and others},
      year={2025},
      eprint={2512.14865},
      archivePrefix={arXiv},
      url={https://arxiv.org/abs/2512.14865},
}"""

# (model as the paper names it, overall APR in percent)
HEADLINE_APR_PCT = [
    ("Gemini 3 Pro Preview (Thinking)", 54.65),  # the paper's best model
    ("GPT 4o Audio Preview", 25.44),
    ("Voxtral Small 24B", 26.33),
]


def _unknown_rate() -> dict:
    return {"value": None, "exact": None, "pct": None, "ci": None}


def reported_results(apr_pct: float) -> dict:
    """One reported row in the structure metrics.aggregate returns; unknown cells are null."""
    return {
        "overall": {
            "n": N_TASKS,
            "n_pass": None,
            "apr": {
                "count": None,
                "total": N_TASKS,
                "value": None,
                "exact": None,
                "pct": apr_pct,
                "ci": None,
            },
            "ars": {"sum": None, "total": N_TASKS, **_unknown_rate()},
            "rubric_items": None,
            "rubric_items_met": None,
            "rubric_item_rate": None,
        },
        "by_axis": {axis: None for axis in AXES},
        "audio_cue_split": None,
    }


def reported_rows() -> list[tuple[str, str | None, dict]]:
    """(model, output modality or None when the source does not say, results)."""
    return [(model, None, reported_results(apr)) for model, apr in HEADLINE_APR_PCT]
