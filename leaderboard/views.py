from django.http import Http404
from django.shortcuts import get_object_or_404, render
from rest_framework.decorators import api_view
from rest_framework.response import Response

from evaluation.benchmarks import get_plugin
from evaluation.models import Benchmark
from leaderboard.selectors import default_judge, leaderboard_entries, leaderboard_judges


def _board(request, slug: str):
    benchmark = get_object_or_404(Benchmark, slug=slug)
    judges = leaderboard_judges(benchmark=benchmark)
    wanted = request.GET.get("judge")
    if wanted:
        judge = next((j for j in judges if j.slug == wanted), None)
        if judge is None:
            raise Http404(f"no judge {wanted!r} has scored {benchmark.slug}")
    else:
        judge = default_judge(benchmark=benchmark)
    return (
        benchmark,
        judges,
        judge,
        leaderboard_entries(benchmark=benchmark, judge=judge, user=request.user),
    )


def benchmark_list(request):
    return render(
        request,
        "leaderboard/benchmark_list.html",
        {"benchmarks": Benchmark.objects.order_by("name")},
    )


def leaderboard_page(request, slug: str):
    benchmark, judges, judge, entries = _board(request, slug)
    chance = get_plugin(benchmark.plugin).CHANCE_PCT
    return render(
        request,
        "leaderboard/leaderboard.html",
        {
            "benchmark": benchmark,
            "judges": judges,
            "judge": judge,
            "entries": entries,
            "chance_spk": chance["spk_name_acc"],
            "chance_tt": chance["turnbased.tt_acc"],
        },
    )


def _judge_json(judge):
    if judge is None:
        return None
    return {
        "slug": judge.slug,
        "name": judge.name,
        "provider": judge.provider,
        "models": judge.models_by_kind,
        "sampling": judge.sampling_params(),
        "official": judge.is_official,
        "offline": judge.is_offline,
    }


@api_view(["GET"])
def leaderboard_api(request, slug: str):
    benchmark, judges, judge, entries = _board(request, slug)
    return Response(
        {
            "benchmark": {"slug": benchmark.slug, "name": benchmark.name},
            "judge": _judge_json(judge),
            "judges": [j.slug for j in judges],
            "chance_pct": get_plugin(benchmark.plugin).CHANCE_PCT,
            "entries": [
                {
                    "rank": e.rank,
                    "system": e.system,
                    "system_type": e.system_type,
                    "submission": e.submission_id,
                    "judge": e.judge,
                    "flags": {
                        "verified": e.verified,
                        "reported_in_paper": e.reported_in_paper,
                        "incomplete": e.incomplete,
                        "offline_judge": e.offline_judge,
                        "private": e.private,
                        "flagged": e.flagged,
                    },
                    "flag_reason": e.flag_reason,
                    "reported_source": e.reported_source,
                    "results": e.results,
                }
                for e in entries
            ],
        }
    )
