"""Benchmarks, judges and systems. Submissions and what derives from them: views_submissions."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.decorators import api_view
from rest_framework.response import Response
from rest_framework.reverse import reverse

from leaderboard.api import selectors
from leaderboard.api.pagination import Pagination
from leaderboard.api.serializers import (
    BenchmarkDetailSerializer,
    BenchmarkSerializer,
    JudgeSerializer,
    SystemDetailSerializer,
    SystemSerializer,
)


@extend_schema(exclude=True)
@api_view(["GET"])
def api_root(request, format=None):
    """Floorboard's API. Authenticate with `Authorization: Bearer <token>` (tokens are made on
    the account's API tokens page) or a logged-in session."""

    def link(name: str) -> str:
        return reverse(name, request=request, format=format)

    return Response(
        {
            "benchmarks": link("api-benchmark-list"),
            "systems": link("api-system-list"),
            "submissions": link("api-submission-list"),
            "schema": link("api-schema"),
            "docs": link("api-docs"),
        }
    )


class BenchmarkList(generics.ListAPIView):
    """Every benchmark with its number of tasks."""

    serializer_class = BenchmarkSerializer
    pagination_class = Pagination

    def get_queryset(self):
        return selectors.benchmark_list()


class BenchmarkDetail(generics.RetrieveAPIView):
    """A benchmark: what its plug-in declares (metrics, splits, filters, upload format) and the
    judges that can score it."""

    serializer_class = BenchmarkDetailSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return selectors.benchmark_list()

    def retrieve(self, request, *args, **kwargs):
        benchmark = self.get_object()
        benchmark.declaration = selectors.benchmark_declaration(benchmark=benchmark)
        benchmark.judge_list = list(selectors.benchmark_judges(benchmark=benchmark))
        context = {
            **self.get_serializer_context(),
            "prompt_versions": selectors.prompt_versions(benchmark=benchmark),
        }
        return Response(self.get_serializer_class()(benchmark, context=context).data)


class JudgeList(generics.ListAPIView):
    """A benchmark's judges: provider, model per judge kind, sampling, prompt versions."""

    serializer_class = JudgeSerializer
    pagination_class = Pagination

    def _benchmark(self):
        if not hasattr(self, "_benchmark_cache"):
            self._benchmark_cache = get_object_or_404(
                selectors.benchmark_list(), slug=self.kwargs["slug"]
            )
        return self._benchmark_cache

    def get_queryset(self):
        return selectors.benchmark_judges(benchmark=self._benchmark())

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if "slug" in self.kwargs:
            context["prompt_versions"] = selectors.prompt_versions(benchmark=self._benchmark())
        return context


class SystemList(generics.ListAPIView):
    """Systems with at least one submission you may see."""

    serializer_class = SystemSerializer
    pagination_class = Pagination

    def get_queryset(self):
        return selectors.visible_systems(user=self.request.user)


class SystemDetail(generics.RetrieveAPIView):
    """A system and every submission of it you may see, across benchmarks."""

    serializer_class = SystemDetailSerializer

    def get_queryset(self):
        return selectors.visible_systems(user=self.request.user)

    def get_object(self):
        system = super().get_object()
        system.visible_submissions = list(
            selectors.system_submissions(user=self.request.user, system=system)
        )
        return system
