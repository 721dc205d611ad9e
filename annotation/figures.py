"""The study's reported figures, computed by annotation.stats from the long-format rating rows
alone (so a snapshot's figures can be recomputed from the snapshot), as plain JSON."""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from . import stats
from .models import Item, Study

RESAMPLES = 2000
CONFIDENCE = 0.95


def parameters(*, study: Study) -> dict:
    return {
        "labels": list(study.labels),
        "ties": study.tie_rule,
        "resamples": RESAMPLES,
        "seed": study.seed % 2**32,
        "confidence": CONFIDENCE,
    }


def _figure(figure: stats.Figure) -> dict:
    return {
        "value": figure.value,
        "reason": figure.reason,
        "low": figure.low,
        "high": figure.high,
        "n": figure.n,
        "undefined_resamples": figure.undefined_resamples,
    }


def _agreement(agreement: stats.Agreement) -> dict:
    return {
        "items": agreement.items,
        "ratings": agreement.ratings,
        "missing": agreement.missing,
        "raters": agreement.raters,
        "judged": agreement.judged,
        "ties": agreement.ties,
        "alpha": _figure(agreement.alpha),
        "kappa": _figure(agreement.kappa),
        "raw_agreement": _figure(agreement.raw_agreement),
        "ac1": _figure(agreement.ac1),
        "confusion": [list(row) for row in agreement.confusion],
        "single_majority": agreement.single_majority,
    }


def _report(report: stats.AgreementReport, names: dict[Hashable, str]) -> dict:
    return {
        "excluded": [names.get(r, str(r)) for r in report.excluded],
        "overall": _agreement(report.overall),
        "by_stratum": {str(key): _agreement(value) for key, value in report.by_stratum.items()},
        "by_batch": {str(key): _agreement(value) for key, value in report.by_batch.items()},
        "raters": [
            {
                "rater": summary.rater,
                "name": names.get(summary.rater, str(summary.rater)),
                "excluded": summary.excluded,
                "ratings": summary.ratings,
                "missing": summary.missing,
                "label_counts": summary.label_counts,
                "agreement": _figure(summary.agreement),
                "gold_accuracy": _figure(summary.gold_accuracy),
                "median_seconds": _figure(summary.median_seconds),
                "outlier": summary.outlier,
                "outlier_reasons": list(summary.outlier_reasons),
            }
            for summary in report.raters
        ],
    }


def _attention(rows: Iterable[dict]) -> dict[str, dict]:
    """Attention checks passed per rater (a "can't judge" answer counts as not passed)."""
    result: dict[str, dict] = {}
    for row in rows:
        entry = result.setdefault(str(row["rater"]), {"answered": 0, "passed": 0})
        entry["answered"] += 1
        entry["passed"] += row["label"] == row["expected"]
    return result


def compute(*, study: Study | None = None, ratings: list[dict], parameters: dict) -> dict:
    """Every figure, with all raters and without the excluded ones. Sampled items carry the
    agreement figures, gold items the raters' gold accuracy; attention checks are counted apart."""
    del study  # the rows and parameters are all there is to it
    used = [r for r in ratings if r["role"] in (Item.Role.SAMPLE, Item.Role.GOLD)]
    table = [
        stats.Rating(
            item=row["item"],
            rater=row["rater"],
            label=row["label"],
            seconds=row["time_on_task_ms"] / 1000.0,
        )
        for row in used
    ]
    items = {
        row["item"]: stats.ItemInfo(
            judge=row["judge"] if row["role"] == Item.Role.SAMPLE else None,
            stratum=row["stratum"] if row["role"] == Item.Role.SAMPLE else None,
            batch=row["batch"] if row["role"] == Item.Role.SAMPLE else None,
            gold=row["expected"] if row["role"] == Item.Role.GOLD else None,
        )
        for row in used
    }
    names = {row["rater"]: row["rater_name"] for row in ratings}
    excluded = sorted({row["rater"] for row in ratings if row["rater_excluded"]})
    options = {
        "labels": parameters["labels"],
        "ties": parameters["ties"],
        "resamples": parameters["resamples"],
        "seed": parameters["seed"],
        "confidence": parameters["confidence"],
    }
    everyone = stats.agreement_compute(ratings=table, items=items, rater_names=names, **options)
    result = {
        "labels": parameters["labels"],
        "ties": parameters["ties"],
        "all_raters": _report(everyone, names),
        "without_excluded": None,
        "attention": _attention(r for r in ratings if r["role"] == Item.Role.ATTENTION),
    }
    if excluded:
        kept = stats.agreement_compute(
            ratings=table, items=items, exclude_raters=excluded, rater_names=names, **options
        )
        result["without_excluded"] = _report(kept, names)
    return result
