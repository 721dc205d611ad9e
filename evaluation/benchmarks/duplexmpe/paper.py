"""The five systems of the paper's Table 3 (SPEC §9) as "reported" rows, in the results
structure of metrics.score: rates as {count, total, pct}. Totals are the benchmark's (2,000 T
turns, 20,360 silence windows, 1,911 N4 events per condition); a count is given only where
SPEC §9 states it (yield n and yielded, and the few counts quoted), otherwise null. Yield is
null where the paper did not report it (fewer than 30 eligible events).
"""

from __future__ import annotations

SOURCE = "Duplex-MPE paper, Table 3 (values as on the project page); counts from Tables 15-16"
T_TURNS, WINDOWS, N4_EVENTS = 2000, 20360, 1911

# How to cite the benchmark: its arXiv record (the first author as the record names them; the
# others are left to "and others" rather than guessed).
CITATION = """@misc{ma2026duplexmpe,
      title={Duplex-MPE: Benchmarking Multi-Party Interaction in Full-Duplex Dialogue},
      author={Ma and others},
      year={2026},
      eprint={2609.31948},
      archivePrefix={arXiv},
      url={https://arxiv.org/abs/2609.31948},
}"""

# system -> condition -> (F, A, S, Y, Y_n, Y_yielded, RP, WR); fractions as published.
TABLE_3 = {
    "MiniCPM-o 4.5": {
        "explicit": (0.9500, 0.4730, 0.9242, 0.5964, 1633, 974, 0.9545, 0.9513),
        "implicit": (0.9435, 0.4665, 0.9289, 0.5925, 1664, 986, 0.9485, 0.9461),
    },
    "Moshi": {
        "explicit": (0.6340, 0.0123, 0.2734, 0.1918, 219, 42, 0.8155, 0.9226),
        "implicit": (0.6700, 0.0170, 0.2676, 0.2107, 242, 51, 0.8220, 0.9309),
    },
    "FLM-Audio": {
        "explicit": (0.5380, 0.0011, 0.3957, 0.0082, 977, 8, 0.9505, 0.9927),
        "implicit": (0.5425, 0.0005, 0.3991, 0.0059, 1016, 6, 0.9540, 0.9937),
    },
    "Voila": {
        "explicit": (0.6465, 0.0031, 0.8351, 0.8484, 620, 526, 0.6515, 0.6217),
        "implicit": (0.6670, 0.0075, 0.8307, 0.8046, 650, 523, 0.6690, 0.6196),
    },
    "Freeze-Omni": {
        "explicit": (0.2525, 0.0035, 0.0002, None, 1, 0, 0.9955, 1.0000),
        "implicit": (0.2580, 0.0015, 0.0002, None, 1, 0, 0.9975, 0.9995),
    },
}
# Table 16: presence difference explicit - implicit (pp) and McNemar p.
PAIRED = {
    "MiniCPM-o 4.5": {"diff_pp": 0.60, "explicit_only": 90, "implicit_only": 78, "p": 0.396},
    "Moshi": {"diff_pp": -0.65, "p": 0.614},
    "FLM-Audio": {"diff_pp": -0.35, "p": 0.654},
    "Voila": {"diff_pp": -1.75, "p": 0.237},
    "Freeze-Omni": {"diff_pp": -0.20, "p": 0.424},
}
# Counts quoted in the text (explicit condition only), by system.
COUNTS_EXPLICIT = {
    "MiniCPM-o 4.5": {"fresh_onset": 1900, "already_speaking": 9},
    "Freeze-Omni": {"already_speaking": 1486, "silence": 5,
                    "yield_ineligible": {"active_at_question_start": 1784,
                                         "onset_during_question": 126}},
    "FLM-Audio": {"accuracy": (2, 1901), "yield_failures": {"still_voicing": 968}},
    "Moshi": {"yield_failures": {"resumed": 97}},
}  # fmt: skip


def _pct(fraction: float | None) -> float | None:
    return None if fraction is None else round(fraction * 100, 2)


def _rate(fraction: float | None, total: int | None, count: int | None = None) -> dict:
    return {"count": count, "total": total, "pct": _pct(fraction)}


def reported_results(system: str) -> dict:
    """One system's reported row, shaped like metrics.score's output."""
    results = {}
    for condition, values in TABLE_3[system].items():
        f, a, s, y, y_n, y_yielded, rp, wr = values
        known = COUNTS_EXPLICIT.get(system, {}) if condition == "explicit" else {}
        accuracy_count, accuracy_total = known.get("accuracy", (None, None))
        results[condition] = {
            "runs": T_TURNS,
            "fresh_onset": _rate(f, T_TURNS, known.get("fresh_onset")),
            "presence": _rate(rp, T_TURNS),
            "already_speaking": known.get("already_speaking"),
            "accuracy": _rate(a, accuracy_total, accuracy_count),
            "silence": _rate(s, WINDOWS, known.get("silence")),
            "window_response": _rate(wr, N4_EVENTS),
            "yield": _rate(y, y_n, y_yielded),
            "yield_ineligible": known.get("yield_ineligible"),
            "yield_failures": known.get("yield_failures"),
        }
    results["paired_presence"] = {"explicit_only": None, "implicit_only": None, **PAIRED[system]}
    return results


def reported_rows() -> list[tuple[str, dict]]:
    return [(system, reported_results(system)) for system in TABLE_3]


# Table 17: a text LLM on transcripts; timing metrics are not defined for text.
TEXT_REFERENCE = {
    "system": "Gemini 3.1 Pro (text reference)",
    "explicit": {"presence": _rate(0.9470, T_TURNS), "accuracy": _rate(0.9039, None),
                 "silence": _rate(0.9537, WINDOWS)},
    "implicit": {"presence": _rate(0.3040, T_TURNS), "accuracy": _rate(0.7911, None),
                 "silence": _rate(0.9934, WINDOWS)},
    "note": "accuracy judged by Gemini, not Opus 5; fresh onset, yield and window response "
            "are not defined for text",
}  # fmt: skip
