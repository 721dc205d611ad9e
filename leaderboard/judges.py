"""Staff management of a benchmark's judges: add one, re-score every submission with one."""

from __future__ import annotations

from decimal import Decimal

from django.db import IntegrityError, transaction

from evaluation.benchmarks import get_plugin
from evaluation.judge_endpoints import endpoint_refusal
from evaluation.models import Benchmark, Judge, Submission
from evaluation.services import submission_rescore
from evaluation.services.judging import judge_endpoint
from evaluation.services.spending import judge_priced, spend_limits_apply


class JudgeInvalid(ValueError):
    """A judge that cannot be created as asked; the message names the problem."""


def judge_create(
    *,
    benchmark: Benchmark,
    slug: str,
    name: str,
    provider: str,
    models_by_kind: dict[str, str],
    base_url: str = "",
    send_sampling_params: bool = True,
    concurrency: int | None = None,
    price_input_per_mtok: Decimal | None = None,
    price_output_per_mtok: Decimal | None = None,
) -> Judge:
    """A new judge for one benchmark. LLM providers need a model for every judge kind of the
    benchmark, and an endpoint (``base_url``, or the provider's default) on a host the site
    allows judges to call; the offline judge takes none. Prices are USD per million tokens, both
    or neither (0 is a price): while a spending limit applies, a judge without them judges
    nothing."""
    if provider not in Judge.Provider.values:
        raise JudgeInvalid(f"unknown provider {provider!r}; known: {', '.join(Judge.Provider)}")
    kinds = [kind.key for kind in get_plugin(benchmark.plugin).judge_kinds]
    if provider == Judge.Provider.OFFLINE:
        models: dict[str, str] = {}
    else:
        unknown = sorted(set(models_by_kind) - set(kinds))
        if unknown:
            raise JudgeInvalid(f"{benchmark.name} has no judge kind {', '.join(unknown)}")
        missing = [kind for kind in kinds if not (models_by_kind.get(kind) or "").strip()]
        if missing:
            raise JudgeInvalid(
                f"a model is needed for every judge kind; missing: {', '.join(missing)}"
            )
        models = {kind: models_by_kind[kind].strip() for kind in kinds}
    if provider != Judge.Provider.OFFLINE:
        # Where its calls would go: its own base URL, or its provider's from the settings.
        endpoint = judge_endpoint(Judge(provider=provider, base_url=base_url.strip()))
        refusal = endpoint_refusal(endpoint)
        if refusal is not None:
            raise JudgeInvalid(refusal)
    if concurrency is not None and concurrency < 1:
        raise JudgeInvalid("concurrency must be at least 1 (or empty for the site default)")
    prices = (price_input_per_mtok, price_output_per_mtok)
    if (prices[0] is None) != (prices[1] is None):
        raise JudgeInvalid("give both prices (input and output, USD per million tokens) or neither")
    if any(price is not None and price < 0 for price in prices):
        raise JudgeInvalid("a price cannot be below 0 (0 is a price: calls that cost nothing)")
    try:
        with transaction.atomic():
            return Judge.objects.create(
                benchmark=benchmark,
                slug=slug,
                name=name,
                provider=provider,
                models_by_kind=models,
                base_url=base_url.strip(),
                send_sampling_params=send_sampling_params,
                concurrency=concurrency,
                price_input_per_mtok=price_input_per_mtok,
                price_output_per_mtok=price_output_per_mtok,
            )
    except IntegrityError:
        raise JudgeInvalid(f"{benchmark.name} already has a judge named {slug!r}") from None


def benchmark_rescore(*, benchmark: Benchmark, judge: Judge) -> int:
    """Queue every scored submission of the benchmark for judging and aggregation under this
    judge, in the background (after commit). Cached judgments make no call. Returns how many.
    A judge without a price is refused while a spending limit applies to any of them."""
    if judge.benchmark_id != benchmark.pk:
        raise JudgeInvalid(f"judge {judge.slug} belongs to another benchmark")
    submissions = Submission.objects.filter(
        benchmark=benchmark, is_reported=False, status=Submission.Status.SCORED
    ).only("pk", "judge_id", "team_id")
    if not judge_priced(judge):
        teams = {s.team for s in submissions.select_related("team").only("team")}
        if any(spend_limits_apply(team=team) for team in teams):
            raise JudgeInvalid(
                f"judge {judge.slug} has no price, and judge spending is limited on this site: "
                "what its calls cost could not be counted against the limit, so nothing was "
                "queued. Set its prices in USD per million input and output tokens (in the "
                "admin; 0 is a price), then re-score."
            )
    count = 0
    with transaction.atomic():
        for submission in submissions.iterator():
            submission_rescore(submission=submission, judge=judge)
            count += 1
    return count
