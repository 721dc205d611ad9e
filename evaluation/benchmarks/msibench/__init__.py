"""MSI-Bench (1,152 multi-speaker cases, English and Mandarin) as a Floorboard plug-in.

The harness's scoring rules are pure modules: release.py reads a release; predictions.py
validates an upload; validator.py and tool_match.py are the deterministic tool-call checks;
judge.py renders judge requests and parses answers; metrics.py aggregates per language;
paper.py holds the paper's Tables 1 and 4. In demo/: the demo's release and runs, offline.py (the
demo's heuristic judge), synthetic.py (invented releases and uploads) and bench.py (a plain-Python
scoring pass over files).

plugin.py declares the benchmark to the engine, through importer.py (release -> tasks, prompt,
audio), upload.py (files -> predictions), outcomes.py (stored outcomes -> results),
judgments.py (judge requests and answers) and drilldown.py (the task page and rating units).
"""

from .plugin import plugin

__all__ = ["plugin"]
