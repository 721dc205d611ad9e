"""A plain-Python scoring pass over files, no Django: a release directory, an upload (one or more
JSONL files) and the stored raw judge answers (JSONL of {"cell_id", "rubric_id", "raw"}) in, the
per-language results out. It is the reference the site's pipeline is timed against.

    python -m evaluation.benchmarks.msibench.demo.bench --workdir /tmp/msi [--size full|small]
        [--templates DIR] [--run-mode turn-based|full-duplex]

writes an invented release, a "weak" upload and the offline judge's answers under --workdir (once),
then times reading the release (an import, once per release) and scoring the upload (validation,
validator, stored answers, aggregation; once per submission) and prints wall times and the
scoring's peak traced memory as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

from ..jsontext import iter_jsonl_lines
from ..judge import JudgeTemplates, judge_pairs, load_templates, parse_judge_output, render_messages
from ..metrics import raw_validator, submission_results
from ..predictions import read_predictions
from ..release import Release, read_release
from .offline import offline_output
from .synthetic import FULL_SIZE, synthetic_predictions, write_predictions, write_release


def read_judge_outputs(path: Path | None) -> dict[tuple[str, str], str]:
    if path is None or not Path(path).is_file():
        return {}
    stored = {}
    for _, line in iter_jsonl_lines(Path(path).read_text("utf-8")):
        row = json.loads(line)
        stored[(row["cell_id"], row["rubric_id"])] = row["raw"]
    return stored


def score_files(
    *,
    release_dir: Path,
    prediction_files: Sequence[Path],
    judge_outputs: Path | None,
    run_mode: str,
    check_audio: bool = False,
    templates: JudgeTemplates | None = None,
) -> dict:
    """Read the release, then ``score_upload``."""
    release = read_release(release_dir, check_audio=check_audio)
    return score_upload(
        release=release,
        prediction_files=prediction_files,
        judge_outputs=judge_outputs,
        run_mode=run_mode,
        templates=templates,
    )


def score_upload(
    *,
    release: Release,
    prediction_files: Sequence[Path],
    judge_outputs: Path | None,
    run_mode: str,
    templates: JudgeTemplates | None = None,
) -> dict:
    """One submission against an imported release: upload validation, the validator, stored
    judge answers parsed (or fixed outcomes), aggregation. Returns the results dict ({language:
    row}) and "calls_needed": judged pairs without a stored answer (counted as failed
    judgments). With ``templates``, every judge request is also rendered, as the site does when
    it lists judgment requests."""
    specs = release.specs()
    upload = read_predictions(
        [(path.name, path.read_bytes()) for path in prediction_files],
        specs=specs,
        run_mode=run_mode,
    )
    predictions = {cell_id: p.to_json() for cell_id, p in upload.predictions.items()}
    stored = read_judge_outputs(judge_outputs)
    validators, judged = {}, {}
    calls_needed = 0
    for cell_id, spec in specs.items():
        if spec["kind"] != "base":
            continue
        prediction = predictions.get(cell_id)
        validators[cell_id] = raw_validator(spec, prediction)
        results = {}
        for pair in judge_pairs(spec, prediction):
            if pair.fixed is not None:
                results[pair.rubric_id] = pair.fixed
                continue
            if templates is not None:
                render_messages(
                    templates,
                    spec=spec,
                    prediction=prediction,
                    rubric=spec["rubrics"][pair.rubric_id],
                )
            raw = stored.get((cell_id, pair.rubric_id))
            if raw is None:
                calls_needed += 1
                continue
            results[pair.rubric_id] = parse_judge_output(raw, **pair.context)
        judged[cell_id] = results
    results = submission_results(
        specs=specs,
        predictions=predictions,
        validators=validators,
        judged=judged,
        run_mode=run_mode,
        languages=upload.languages,
    )
    return {"results": results, "calls_needed": calls_needed}


def write_offline_answers(
    release_dir: Path, prediction_file: Path, out: Path, *, run_mode: str
) -> int:
    """The offline judge's answer to every pair that needs a call; returns how many."""
    release = read_release(release_dir, check_audio=False)
    specs = release.specs()
    upload = read_predictions(
        [(prediction_file.name, prediction_file.read_bytes())], specs=specs, run_mode=run_mode
    )
    lines = []
    for cell_id, spec in specs.items():
        prediction = upload.get(cell_id)
        if spec["kind"] != "base" or prediction is None:
            continue
        for pair in judge_pairs(spec, prediction.to_json()):
            if pair.needs_call:
                raw = offline_output(spec["rubrics"][pair.rubric_id], prediction.to_json())
                lines.append(
                    json.dumps(
                        {"cell_id": cell_id, "rubric_id": pair.rubric_id, "raw": raw},
                        ensure_ascii=False,
                    )
                )
    out.write_text("".join(line + "\n" for line in lines), "utf-8")
    return len(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--size", choices=("small", "full"), default="full")
    parser.add_argument("--templates", type=Path, default=None)
    parser.add_argument("--run-mode", default="turn-based")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    release_dir = args.workdir / f"release-{args.size}"
    upload = args.workdir / f"weak-{args.size}.jsonl"
    answers = args.workdir / f"answers-{args.size}.jsonl"
    if not (release_dir / "index" / "cases.jsonl").is_file():
        size = FULL_SIZE if args.size == "full" else {}
        write_release(release_dir, audio=False, **size)
    if not upload.is_file():
        specs = read_release(release_dir, check_audio=False).specs()
        write_predictions(
            upload, synthetic_predictions(specs, profile="weak", run_mode=args.run_mode)
        )
        write_offline_answers(release_dir, upload, answers, run_mode=args.run_mode)
    templates = load_templates(args.templates) if args.templates else None
    import_times, score_times = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        release = read_release(release_dir, check_audio=False)
        import_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        outcome = score_upload(
            release=release,
            prediction_files=[upload],
            judge_outputs=answers,
            run_mode=args.run_mode,
            templates=templates,
        )
        score_times.append(time.perf_counter() - start)
    tracemalloc.start()
    score_upload(
        release=release,
        prediction_files=[upload],
        judge_outputs=answers,
        run_mode=args.run_mode,
        templates=templates,
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        json.dumps(
            {
                "cells": len(release.tasks),
                "base_cases": sum(row["n"] for row in outcome["results"].values()),
                "release_read_seconds_min": round(min(import_times), 3),
                "score_seconds_min": round(min(score_times), 3),
                "score_seconds_all": [round(t, 3) for t in score_times],
                "score_peak_traced_mib": round(peak / 2**20, 1),
                "rendered": templates is not None,
                "calls_needed": outcome["calls_needed"],
                "apr": {lang: row["apr"]["pct"] for lang, row in outcome["results"].items()},
            }
        )
    )


if __name__ == "__main__":
    main()
