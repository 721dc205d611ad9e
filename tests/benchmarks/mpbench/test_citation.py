"""MP-Bench's citation, as its plug-in declares it (the About page shows it), is the one the
benchmark's own README gives (../shared/benchmarks/mpbench/README.upstream.md)."""

from __future__ import annotations

import re

from evaluation.benchmarks import get_plugin


def test_the_citation_is_the_one_the_benchmark_readme_gives(mpbench_dir):
    readme = (mpbench_dir / "README.upstream.md").read_text()
    given = readme.split("```bibtex", 1)[1].split("```", 1)[0].strip()

    def squeeze(text: str) -> str:
        return re.sub(r"\s+", "", text)

    assert squeeze(get_plugin("mp-bench").citation) == squeeze(given)
