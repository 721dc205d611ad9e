"""MSI-Bench (1,152 multi-speaker cases, English and Mandarin): the harness's scoring rules as
pure modules. release.py reads a release; predictions.py validates an upload; validator.py and
tool_match.py are the deterministic tool-call checks; judge.py renders judge requests and parses
answers; metrics.py aggregates per language; paper.py holds the paper's Tables 1 and 4;
offline.py is the demo's heuristic judge; synthetic.py invents releases and uploads; bench.py is
a plain-Python scoring pass over files."""
