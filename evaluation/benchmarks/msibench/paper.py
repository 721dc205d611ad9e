"""The MSI-Bench paper's Table 1 (English) and Table 4 (Mandarin), as printed (SPEC §8), in the
results structure metrics.py produces. Pure.

Only percentages were printed, so counts are null, except where a count is exact: APR over the
576 base cases and each per-pattern APR over its 96. A printed tenth of a percent names at most
one count there, because one case moves the rate by 100/576 = 0.17 points (1.04 over 96), more
than a tenth; the count is the k with half_up(100·k/N) equal to the printed value, and null if no
k gives it. (For Table 1 the Wilson half-width of that k is the printed ±, and for both tables
the six per-pattern counts add up to APR's; tests check both.) ARS, Tool, BIR and PRR
denominators were not printed and stay null. "–" is None. † marks a thinking/reasoning mode.
"""

from __future__ import annotations

from .metrics import half_up
from .release import PATTERN_CODES

SOURCE = "MSI-Bench paper, Table 1 (English) and Table 4 (Mandarin)"
N_CASES = 576
N_PER_PATTERN = 96

# How to cite the benchmark: its paper's title and its public harness at the commit the scoring
# follows (no author list or year is given rather than a guessed one).
CITATION = r"""@misc{msibench,
      title={MSI-Bench: Evaluating Multi-Speaker Voice Interaction for Collaborative AI Agents},
      howpublished={\url{https://github.com/boson-ai/MSI-Bench}},
      note={Harness commit 6d8313f90c00b6cfbd0e0d643fa981f3e9c8af3b},
}"""

# system, thinking, APR, ±, ARS, Tool, BIR, PRR, (Auth, Discl, Prior, Seq, Scope, Retr)
TABLE_1 = (
    (
        "Gemini 3.1 Pro",
        True,
        66.8,
        3.8,
        78.0,
        58.8,
        86.5,
        21.5,
        (76.0, 85.4, 69.8, 77.1, 72.9, 19.8),
    ),
    (
        "Gemini 3.5 Flash",
        True,
        63.2,
        3.9,
        73.6,
        55.5,
        74.9,
        48.2,
        (79.2, 67.7, 77.1, 71.9, 74.0, 9.4),
    ),
    (
        "GPT Realtime 2.1 (xhigh)",
        True,
        58.3,
        4.0,
        73.7,
        44.8,
        83.6,
        28.1,
        (86.5, 82.3, 70.8, 51.0, 50.0, 9.4),
    ),
    (
        "GPT Realtime 2.1 (medium)",
        True,
        55.4,
        4.0,
        70.1,
        41.8,
        81.5,
        35.6,
        (81.3, 83.3, 68.8, 41.7, 43.8, 13.5),
    ),
    (
        "GPT Audio 1.5",
        False,
        49.5,
        4.1,
        64.4,
        40.3,
        70.2,
        52.4,
        (78.1, 63.5, 55.2, 47.9, 37.5, 14.6),
    ),
    ("GPT Audio", False, 43.9, 4.0, 61.5, 41.8, 64.1, 62.8, (66.7, 54.2, 50.0, 44.8, 33.3, 14.6)),
    (
        "GPT Audio Mini",
        False,
        20.7,
        3.3,
        40.0,
        26.3,
        None,
        97.9,
        (30.2, 11.5, 38.5, 20.8, 15.6, 7.3),
    ),
    (
        "Qwen3-Omni-30B",
        False,
        34.0,
        3.9,
        53.3,
        26.5,
        43.6,
        92.2,
        (63.5, 57.3, 33.3, 27.1, 15.6, 7.3),
    ),
    ("Gemma 4-12B", False, 22.6, 3.4, 43.9, 20.0, 57.5, 85.9, (42.7, 38.5, 26.0, 12.5, 13.5, 2.1)),
    ("Gemma 4-12B", True, 19.8, 3.2, 41.3, 18.3, 60.9, 66.1, (37.5, 33.3, 24.0, 10.4, 11.5, 2.1)),
    (
        "Qwen2.5-Omni-7B",
        False,
        16.1,
        3.0,
        38.2,
        10.0,
        None,
        100.0,
        (30.2, 43.8, 15.6, 2.1, 3.1, 2.1),
    ),
    ("MiMo-Audio-7B", True, 14.6, 2.9, 33.4, 6.0, None, 86.6, (39.6, 33.3, 11.5, 2.1, 1.0, 0.0)),
    ("MiMo-Audio-7B", False, 7.8, 2.2, 24.6, 8.3, None, 98.8, (21.9, 5.2, 11.5, 4.2, 2.1, 2.1)),
    ("Phi-4-Multimodal", False, 5.4, 1.9, 32.0, 0.0, None, 100.0, (0.0, 32.3, 0.0, 0.0, 0.0, 0.0)),
    ("Qwen2-Audio-7B", False, 1.6, 1.1, 11.8, 0.0, None, 5.7, (0.0, 9.4, 0.0, 0.0, 0.0, 0.0)),
)

# system, thinking, APR, ARS, Tool, BIR, PRR, (Auth, Discl, Prior, Seq, Scope, Retr); no ± printed.
TABLE_4 = (
    ("Gemini 3.1 Pro", True, 52.8, 69.9, 58.8, 74.6, 32.5, (80.2, 53.1, 51.0, 71.9, 59.4, 1.0)),
    ("Gemini 3.5 Flash", True, 50.2, 67.5, 58.8, 67.4, 74.9, (81.3, 35.4, 58.3, 64.6, 61.5, 0.0)),
    (
        "GPT Realtime 2.1 (xhigh)",
        True,
        54.5,
        76.4,
        54.1,
        None,
        37.8,
        (87.5, 71.9, 58.3, 51.0, 56.3, 2.1),
    ),
    (
        "GPT Realtime 2.1 (medium)",
        True,
        49.3,
        70.2,
        47.6,
        None,
        43.1,
        (85.4, 67.7, 51.0, 44.8, 44.8, 2.1),
    ),
    ("GPT Audio 1.5", False, 42.5, 59.6, 51.0, 53.3, 70.2, (67.7, 39.6, 46.9, 51.0, 45.8, 4.2)),
    ("GPT Audio", False, 41.1, 60.1, 46.5, 60.9, 80.6, (74.0, 39.6, 49.0, 44.8, 35.4, 4.2)),
    ("GPT Audio Mini", False, 16.5, 36.6, 22.7, None, 97.9, (27.1, 20.8, 27.1, 7.3, 15.6, 1.0)),
    ("Qwen3-Omni-30B", False, 19.3, 41.8, 26.3, 43.3, 99.5, (28.1, 19.8, 35.4, 17.7, 11.5, 3.1)),
    ("Gemma 4-12B", False, 4.5, 28.3, 0.0, 60.0, 92.6, (0.0, 27.1, 0.0, 0.0, 0.0, 0.0)),
    ("Gemma 4-12B", True, 2.3, 16.7, 0.0, 45.5, 39.3, (0.0, 13.5, 0.0, 0.0, 0.0, 0.0)),
    ("Qwen2.5-Omni-7B", False, 8.9, 33.8, 10.9, None, 100.0, (16.7, 16.7, 13.5, 0.0, 5.2, 1.0)),
    ("MiMo-Audio-7B", True, 7.3, 23.5, 3.4, None, None, (17.7, 18.8, 5.2, 1.0, 0.0, 1.0)),
    ("MiMo-Audio-7B", False, 8.9, 35.8, 3.9, None, None, (22.9, 22.9, 5.2, 0.0, 1.0, 1.0)),
    ("Phi-4-Multimodal", False, 6.4, 33.7, 0.3, None, 99.5, (1.0, 36.5, 1.0, 0.0, 0.0, 0.0)),
    ("Qwen2-Audio-7B", False, 0.5, 12.4, 0.0, None, 0.0, (0.0, 3.1, 0.0, 0.0, 0.0, 0.0)),
)


def exact_count(printed: float, total: int) -> int | None:
    """The one k with half_up(100·k/total) == printed, or None (see the module docstring)."""
    matches = [k for k in range(total + 1) if float(half_up(100 * k / total)) == printed]
    return matches[0] if len(matches) == 1 else None


def _printed(value: float | None) -> dict:
    return {"count": None, "total": None, "pct": value}


def _row(apr, half_width, ars, tool, bir, prr, patterns) -> dict:
    k = exact_count(apr, N_CASES)
    per_pattern = {}
    for code, value in zip(PATTERN_CODES, patterns, strict=True):
        count = exact_count(value, N_PER_PATTERN)
        per_pattern[code] = {
            "count": count,
            "total": N_PER_PATTERN if count is not None else None,
            "pct": value,
        }
    return {
        "n": N_CASES,
        "apr": {
            "count": k,
            "total": N_CASES if k is not None else None,
            "pct": apr,
            "half_width": half_width,
        },
        "ars": _printed(ars),
        "tool": _printed(tool),
        "bir": _printed(bir),
        "prr": _printed(prr),
        "per_pattern": per_pattern,
    }


def display_name(system: str, thinking: bool) -> str:
    return f"{system}†" if thinking else system


def reported_rows() -> list[dict]:
    """One entry per system and thinking mode: {"system", "thinking", "results": {"en", "zh"}}
    (both tables list the same 15 configurations in the same order)."""
    rows = []
    for english, mandarin in zip(TABLE_1, TABLE_4, strict=True):
        system, thinking = english[0], english[1]
        assert (mandarin[0], mandarin[1]) == (system, thinking)
        rows.append(
            {
                "system": display_name(system, thinking),
                "thinking": thinking,
                "results": {
                    "en": _row(*english[2:]),
                    "zh": _row(mandarin[2], None, *mandarin[3:]),
                },
            }
        )
    return rows


def pattern_column_means(language: str) -> dict[str, float]:
    """The paper's "averaged over the 15 configurations": the plain mean of the printed
    (rounded) per-pattern values, rounded half-up."""
    table = TABLE_1 if language == "en" else TABLE_4
    columns = zip(*(row[-1] for row in table), strict=True)
    return {
        code: float(half_up(sum(values) / len(values)))
        for code, values in zip(PATTERN_CODES, columns, strict=True)
    }
