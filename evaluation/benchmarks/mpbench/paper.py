"""Table 3 of the MP-Bench paper, preloaded as rows labelled "reported in paper".

Only percentages and latencies were published, so counts stay null. Split sizes are the
benchmark's (543 understanding, 128 discussion, 256 turn-based tasks).
"""

from __future__ import annotations

SOURCE = "MP-Bench paper, Table 3"
SPLIT_SIZES = {"understanding": 543, "discussion": 128, "turnbased": 256}

# system, type, (Overall, Spk Name, Lat | Disc T, App, Lat | Turn T, App, Lat); None is "–".
TABLE_3 = [
    (
        "Gemini-3.1-Pro (ASR-only)",
        "text-llm",
        (4.79, 27.27, None, 100, 75.00, None, 49.22, 49.22, None),
    ),
    (
        "Gemini-3.1-Pro (SpkD-ASR)",
        "text-llm",
        (87.48, 93.94, None, 100, 89.06, None, 98.44, 98.44, None),
    ),
    ("Qwen3-Omni", "non-realtime", (34.44, 36.11, None, 100, 60.16, None, 52.73, 46.87, None)),
    ("Gemini-3.1-Pro", "non-realtime", (73.30, 78.28, None, 100, 90.63, None, 52.73, 51.95, None)),
    ("Freeze-Omni", "realtime", (0.18, 0.00, 1.8, 17.71, 0.00, 1.0, 49.61, 48.44, 0.6)),
    ("Moshi", "realtime", (1.66, 0.00, 0.9, 75.00, 1.56, 0.5, 52.73, 28.12, 1.5)),
    ("PersonaPlex", "realtime", (3.14, 7.32, 0.6, 96.09, 0.00, 0.5, 51.17, 4.69, 0.7)),
    ("Ultravox", "realtime", (21.36, 25.00, 4.5, 99.22, 39.06, 3.6, 46.09, 31.25, 4.0)),
    ("GLM-4-Voice", "realtime", (11.60, 12.63, 2.4, 100.00, 34.38, 2.3, 49.14, 45.35, 2.6)),
    ("Covo-Audio", "realtime", (32.60, 37.37, 1.9, 99.22, 42.19, 1.7, 48.83, 48.44, 1.3)),
    ("GPT-Realtime", "realtime", (14.00, 16.67, 5.9, 100.00, 53.13, 6.0, 48.44, 28.13, 6.7)),
    ("DuplexCascade", "realtime", (6.45, 9.23, 2.7, 100.00, 3.91, 2.1, 48.63, 48.63, 17.2)),
    ("Gemini-2.5 Live", "realtime", (10.58, 11.87, 8.5, 78.13, 36.72, 6.5, 48.00, 20.00, 8.6)),
    ("Gemini-3.1 Live", "realtime", (4.90, 5.81, 8.7, 99.22, 57.03, 7.4, 52.57, 38.99, 8.2)),
]


def _pct(value: float) -> dict:
    return {"count": None, "total": None, "pct": float(value)}


def reported_results(values: tuple) -> dict:
    """One paper row in the RESULTS.json structure."""
    overall, spk, u_lat, d_tt, d_app, d_lat, t_tt, t_app, t_lat = values
    return {
        "understanding": {
            "n": SPLIT_SIZES["understanding"],
            "overall_acc": _pct(overall),
            "spk_name_acc": _pct(spk),
            "latency_s": u_lat,
        },
        "discussion": {
            "n": SPLIT_SIZES["discussion"],
            "tt_acc": _pct(d_tt),
            "app_acc": _pct(d_app),
            "latency_s": d_lat,
        },
        "turnbased": {
            "n": SPLIT_SIZES["turnbased"],
            "tt_acc": _pct(t_tt),
            "app_acc": _pct(t_app),
            "latency_s": t_lat,
        },
    }


def reported_rows() -> list[tuple[str, str, dict]]:
    return [(name, system_type, reported_results(values)) for name, system_type, values in TABLE_3]


# What the paper says of each system beyond its numbers (architecture, open weights, size, links),
# keyed by the row's name; shown on the system page and used by the board's filters. Table 3 and
# the README name each system and its group (text LLM, non-realtime, realtime) only: they state
# no architecture, open weights, parameter count or link for any of them, so none is filled in
# rather than guessed from a name.
FACTS: dict[str, dict] = {}

# The BibTeX the benchmark's README gives.
CITATION = """@misc{shih2026mpbench,
      title={MP-Bench: Evaluating Voice Agents as a Multiparty Conversation Participant},
      author={Yi-Jen Shih and Shih-Yun Shan Kuan and Guan-Ting Lin and Kai-Wei Chang and Siddhant Arora and Shu-wen Yang and Abdelrahman Mohamed and Shinji Watanabe and Hung-yi Lee and David Harwath},
      year={2026},
      eprint={2609.13076},
      archivePrefix={arXiv},
      primaryClass={eess.AS},
      url={https://arxiv.org/abs/2609.13076},
}"""

# The paper's checks of its LLM judge (Sec. 7 and App. C).
JUDGE_VALIDATION = (
    "Human evaluation (paper, Sec. 7): 280 discussion-behaviour items (14 settings x 20), "
    "3 annotators each, in batches of 30; Krippendorff's alpha 0.745 among the annotators; "
    "Cohen's kappa 0.646 between the judge and the per-item human majority.",
    "Judge robustness (paper, App. C): 720 items re-judged; Cohen's kappa against GPT-5: "
    "Gemini-3.1-Flash-Lite 0.78 (88.9% exact agreement), Gemini-3.1-Pro 0.77 (88.8%), "
    "Claude Opus 4.6 0.83 (91.7%).",
)
