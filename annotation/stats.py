"""Agreement statistics for human rating studies (plain Python and numpy, no Django).

Input
    ``Rating(item, rater, label, seconds=None)``: one rater's answer on one item. ``label`` is a
    category of the label set, or ``None`` when the rater could not judge (e.g. an audio problem):
    that is a missing value, never a label. ``seconds`` is the time spent on the rating.
    ``ItemInfo(judge=None, stratum=None, batch=None, gold=None)`` per item (all optional): the
    judge's verdict, the item's stratum and batch, and the expected label of a gold item.
    Item and rater ids are any hashable values (ints or strings).

Entry point
    ``agreement_compute(ratings=..., items=..., labels=..., ties="drop", exclude_raters=(),
    include_gold=False, resamples=2000, seed=0, confidence=0.95, outlier_sd=2.0, gold_min=0.8)``
    returns an ``AgreementReport``: ``overall``, ``by_stratum[s]`` and ``by_batch[b]`` are
    ``Agreement`` objects (alpha, kappa, raw_agreement, ac1, the judge x majority confusion
    matrix, counts) and ``raters`` holds one ``RaterSummary`` per rater. Call it once with
    ``exclude_raters=()`` and once with the excluded set to show both. Every number is a
    ``Figure``: ``value`` (float) or ``None`` with ``reason``; ``low``/``high`` the bootstrap
    interval; ``str(figure)`` gives "0.745 [0.702, 0.786]" or "undefined: <reason>".
    Degenerate input never raises and never yields NaN; malformed input (a label outside the
    label set, a rater rating an item twice, a bad option) raises ValueError naming it.
    ``nominal_alpha`` and ``confusion_agreement`` are the vectorised kernels (NaN where undefined).

Definitions
    Scope: agreement figures use the items that are not gold items (``include_gold=True`` adds
    them) and the ratings of raters not in ``exclude_raters``.
    Krippendorff's alpha, nominal, over raters x items with missing values (krippendorff package
    for the point estimate): 1 - (n - 1) * sum_u d_u / (n^2 - sum_c n_c^2), where a unit u with
    m_u >= 2 labels has d_u = (m_u^2 - sum_c n_uc^2) / (m_u - 1) (its off-diagonal coincidences)
    and n_c counts label c in such units.
    Human majority of an item: the label given by strictly more raters than any other label (a
    single label is its own majority, so with no overlap the judge is compared with the one
    rater). A tie is two or more labels sharing the top count. "Can't judge" answers count in
    ``missing`` and in times, and in no figure.
    Ties rule ``"drop"``: tied items leave the judge comparison. ``"disagree"``: a tied item
    counts as a disagreement: its majority becomes the first tied label, in label-set order,
    that differs from the judge's verdict; the label set stays the same for kappa and AC1.
    Judge x majority over items with a verdict and a majority: raw agreement p_o = share of
    equal pairs; Cohen's kappa = (p_o - p_e) / (1 - p_e), p_e = sum_k p_judge(k) p_majority(k)
    (undefined when p_e = 1: both give one and the same label throughout);
    Gwet's AC1 (Gwet 2008, two raters) = (p_o - p_e) / (1 - p_e) with
    p_e = sum_k pi_k (1 - pi_k) / (q - 1), pi_k = (p_judge(k) + p_majority(k)) / 2, q = size of
    the label set (given, or else the labels seen).
    Intervals: item bootstrap. The U items with at least one human label in scope, sorted by
    id, are resampled with replacement: resample b takes the items at positions
    ``rng.integers(0, U, size=(resamples, U), dtype=np.int32)[b]``; every figure is recomputed on each resample
    (alpha, kappa, raw agreement and AC1 on the same resamples) and the interval is the
    (1 - confidence)/2 and (1 + confidence)/2 percentiles (``np.percentile``, linear) of the
    resamples where the figure is defined (``undefined_resamples`` counts the others). ``rng`` is
    ``np.random.default_rng([seed, zlib.crc32(repr(ids).encode())])`` where ``ids`` is the
    sorted list of the U item ids resampled, for the overall figures and every group alike: the
    same ratings in any order and the same seed give the same intervals, a group's interval
    does not depend on the other groups, and the same items give the same interval whatever
    the scope is called (a batch holding every rated item matches "all items").
    Per rater (against the included raters, the rater's own label left out): agreement = share
    of the rater's labelled in-scope items where it equals the majority of the other raters'
    labels; items where the others tie or gave no label are skipped. Gold accuracy = share of
    answered gold items labelled as expected ("can't judge" is not scored). Median seconds over
    the rater's ratings with a time (one rating per item). Outlier: agreement more than
    ``outlier_sd`` sample SDs (ddof=1) below the mean agreement of the included raters (needs
    three raters with a defined agreement; with n raters nobody can lie more than
    (n - 1) / sqrt(n) SDs below the mean, so 2 SDs needs six), or gold accuracy below
    ``gold_min``. Excluded raters are listed and judged by the same thresholds.
    Messages name raters by ``rater_names[rater]`` where given (else by their id).
    ``single_majority`` of an Agreement counts the compared items whose "majority" is one
    rater's label (no overlap there): the judge is then compared with a single person.
    ``dataclasses.asdict(report)`` gives a JSON-ready snapshot (floats, ints, strings, None).
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import krippendorff
import numpy as np

from evaluation.stats import confusion_agreement, last_sum

TieRule = Literal["drop", "disagree"]
TIE_RULES: tuple[str, ...] = ("drop", "disagree")
# Bootstrap draws are made in chunks of about this many item draws to bound memory.
_CHUNK_DRAWS = 2_000_000


@dataclass(frozen=True)
class Rating:
    item: Hashable
    rater: Hashable
    label: str | None
    seconds: float | None = None


@dataclass(frozen=True)
class ItemInfo:
    judge: str | None = None
    stratum: Hashable | None = None
    batch: Hashable | None = None
    gold: str | None = None


@dataclass(frozen=True)
class Figure:
    """A value or None with the reason; ``n``: items behind it; ``low``/``high``: the interval."""

    value: float | None
    reason: str = ""
    low: float | None = None
    high: float | None = None
    n: int = 0
    undefined_resamples: int = 0

    @property
    def defined(self) -> bool:
        return self.value is not None

    def __str__(self) -> str:
        if self.value is None:
            return f"undefined: {self.reason}"
        if self.low is None or self.high is None:
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class Agreement:
    items: int  # items with at least one human label in scope
    ratings: int  # in-scope ratings by included raters, "can't judge" included
    missing: int  # of which "can't judge"
    raters: int  # included raters with a rating here
    alpha: Figure
    kappa: Figure
    raw_agreement: Figure
    ac1: Figure
    judged: int  # items with a judge verdict and at least one human label
    ties: int  # of which the human labels tie
    confusion: tuple[tuple[int, ...], ...]  # judge (rows) x majority (columns), label-set order
    single_majority: int = 0  # compared items whose majority is a single rater's label


@dataclass(frozen=True)
class RaterSummary:
    rater: Hashable
    excluded: bool
    ratings: int
    missing: int
    label_counts: dict[str, int]
    agreement: Figure
    gold_accuracy: Figure
    median_seconds: Figure
    outlier: bool
    outlier_reasons: tuple[str, ...]


@dataclass(frozen=True)
class AgreementReport:
    labels: tuple[str, ...]
    ties: str
    excluded: tuple[Hashable, ...]
    include_gold: bool
    resamples: int
    seed: int
    confidence: float
    overall: Agreement
    by_stratum: dict[Hashable, Agreement]
    by_batch: dict[Hashable, Agreement]
    raters: tuple[RaterSummary, ...]


def _alpha_features(value_counts: np.ndarray) -> np.ndarray:
    """Per unit: [d_u, n_u1 .. n_uV], zero for units with fewer than two values."""
    counts = np.asarray(value_counts, dtype=np.float64)
    m = counts.sum(axis=1)
    pairable = m >= 2
    d = np.where(pairable, (m * m - (counts * counts).sum(axis=1)) / np.maximum(m - 1, 1), 0.0)
    return np.column_stack([d, counts * pairable[:, None]])


def _alpha_from_sums(sums: np.ndarray) -> np.ndarray:
    disagreement, n_c = sums[..., 0], sums[..., 1:]
    n = last_sum(n_c)
    expected = n * n - last_sum(n_c * n_c)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * disagreement / expected, np.nan)


def nominal_alpha(value_counts: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Nominal Krippendorff's alpha from a units x values count matrix, via the coincidence
    matrix. With ``weights`` (resamples x units: how often each unit is drawn) one alpha per
    resample. NaN where undefined (no pairable unit, or a single value among paired values)."""
    features = _alpha_features(value_counts)
    if weights is None:
        return _alpha_from_sums(features.sum(axis=0))
    return _alpha_from_sums(np.asarray(weights, dtype=np.float64) @ features)


@dataclass
class _Table:
    labels: tuple[str, ...]
    items: list
    raters: list
    item: np.ndarray  # per rating: item index
    rater: np.ndarray  # per rating: rater index
    code: np.ndarray  # per rating: label code, -1 for missing
    seconds: np.ndarray  # per rating: NaN when not recorded
    judge: np.ndarray  # per item: label code, -1 for none
    gold: np.ndarray  # per item: label code, -1 when not a gold item
    stratum: list  # per item: stratum or None
    batch: list  # per item: batch or None


def _sorted(keys: Iterable[Hashable]) -> list:
    keys = list(keys)
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=repr)


def _table_build(
    ratings: Iterable[Rating], items: Mapping[Hashable, ItemInfo], labels: Sequence[str] | None
) -> _Table:
    ratings = list(ratings)
    for r in ratings:
        if not isinstance(r, Rating):
            raise ValueError(f"ratings must be Rating objects, got {r!r}")
    for info in items.values():
        if not isinstance(info, ItemInfo):
            raise ValueError(f"items must map item ids to ItemInfo, got {info!r}")
    if labels is None:
        seen = {r.label for r in ratings} | {i.judge for i in items.values()}
        labels = tuple(_sorted((seen | {i.gold for i in items.values()}) - {None}))
    labels = tuple(labels)
    if len(set(labels)) != len(labels) or any(not isinstance(x, str) for x in labels):
        raise ValueError(f"the label set must be distinct strings, got {labels!r}")
    codes = {label: k for k, label in enumerate(labels)}

    def code_of(label: str | None, what: str) -> int:
        if label is None:
            return -1
        if label not in codes:
            raise ValueError(f"{what}: label {label!r} is not in the label set {labels!r}")
        return codes[label]

    item_keys = _sorted({r.item for r in ratings} | set(items))
    rater_keys = _sorted({r.rater for r in ratings})
    item_at = {key: i for i, key in enumerate(item_keys)}
    rater_at = {key: i for i, key in enumerate(rater_keys)}
    seen_pairs: set = set()
    code, seconds = np.empty(len(ratings), np.int64), np.full(len(ratings), np.nan)
    for n, r in enumerate(ratings):
        if (r.item, r.rater) in seen_pairs:
            raise ValueError(f"rater {r.rater!r} rated item {r.item!r} more than once")
        seen_pairs.add((r.item, r.rater))
        code[n] = code_of(r.label, f"rater {r.rater!r} on item {r.item!r}")
        if r.seconds is not None:
            if not r.seconds >= 0:
                raise ValueError(f"rater {r.rater!r} on item {r.item!r}: bad time {r.seconds!r}")
            seconds[n] = r.seconds
    infos = {key: items.get(key, ItemInfo()) for key in item_keys}
    return _Table(
        labels=labels,
        items=item_keys,
        raters=rater_keys,
        item=np.array([item_at[r.item] for r in ratings], dtype=np.int64),
        rater=np.array([rater_at[r.rater] for r in ratings], dtype=np.int64),
        code=code,
        seconds=seconds,
        judge=np.array(
            [code_of(i.judge, f"judge on item {k!r}") for k, i in infos.items()],
            dtype=np.int64,
        ),
        gold=np.array(
            [code_of(i.gold, f"gold of item {k!r}") for k, i in infos.items()],
            dtype=np.int64,
        ),
        stratum=[i.stratum for i in infos.values()],
        batch=[i.batch for i in infos.values()],
    )


def _bootstrap_sums(features: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Column sums of ``features`` (one row per item) over ``resamples`` item resamples."""
    units = features.shape[0]
    # Items with equal rows are interchangeable: count draws per kind of row, then weigh.
    kinds, kind_of = np.unique(features, axis=0, return_inverse=True)
    kind_of = kind_of.ravel().astype(np.int32)
    out = np.empty((resamples, features.shape[1]))
    chunk = max(1, _CHUNK_DRAWS // units)
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        drawn = kind_of[rng.integers(0, units, size=(size, units), dtype=np.int32)]
        drawn += (np.arange(size, dtype=np.int32) * len(kinds))[:, None]
        picked = np.bincount(drawn.ravel(), minlength=size * len(kinds))
        out[start : start + size] = picked.reshape(size, len(kinds)) @ kinds
    return out


def _intervals(boot: np.ndarray, confidence: float) -> list[tuple[float, float, int] | None]:
    """Per column of (resamples x figures): percentile interval over the defined resamples and
    how many were undefined; None when no resample is defined."""
    tail = 50 * (1 - confidence)
    defined = ~np.isnan(boot)
    if defined.all():
        bounds = np.percentile(boot, [tail, 100 - tail], axis=0)
        return [(float(low), float(high), 0) for low, high in bounds.T]
    result: list[tuple[float, float, int] | None] = []
    for column, ok in zip(boot.T, defined.T, strict=True):
        if not ok.any():
            result.append(None)
            continue
        low, high = np.percentile(column[ok], [tail, 100 - tail])
        result.append((float(low), float(high), int((~ok).sum())))
    return result


def _figure(value: float, reason: str, n: int, interval, resamples: int) -> Figure:
    if np.isnan(value):
        return Figure(None, reason, n=n)
    if interval is None:
        return Figure(float(value), n=n, undefined_resamples=resamples)
    low, high, undefined = interval
    return Figure(float(value), "", low, high, n, undefined)


def _agreement(
    t: _Table,
    counts: np.ndarray,
    item_mask: np.ndarray,
    included: np.ndarray,
    ties: str,
    resamples: int,
    seed: int,
    confidence: float,
    names: Mapping[Hashable, str],
) -> Agreement:
    q = len(t.labels)
    in_scope = item_mask[t.item] & included[t.rater]
    labelled = in_scope & (t.code >= 0)
    n_ratings, n_missing = int(in_scope.sum()), int((in_scope & (t.code < 0)).sum())
    n_raters = int(np.unique(t.rater[in_scope]).size)
    rows = np.flatnonzero(item_mask & (counts.sum(axis=1) > 0))
    if rows.size == 0:
        if n_ratings:
            reason = "every rating is missing (can't judge)"
        elif item_mask[t.item].any():
            reason = "every rater who rated these items is excluded"
        else:
            reason = "no ratings"
        none = Figure(None, reason)
        empty = tuple((0,) * q for _ in range(q))
        return Agreement(0, n_ratings, n_missing, n_raters, none, none, none, none, 0, 0, empty)

    c = counts[rows]
    alpha_features = _alpha_features(c)
    judge = t.judge[rows]
    has_judge = judge >= 0
    winners = c == c.max(axis=1)[:, None]
    tied = winners.sum(axis=1) > 1
    majority = winners.argmax(axis=1)
    if ties == "disagree":
        against = winners.copy()
        against[np.flatnonzero(has_judge), judge[has_judge]] = False
        majority = np.where(tied, against.argmax(axis=1), majority)
    compared = has_judge & (~tied | (ties == "disagree"))
    cells = np.zeros((rows.size, q * q))
    cells[np.flatnonzero(compared), (judge * q + majority)[compared]] = 1.0
    features = np.column_stack([alpha_features, cells])

    point = features.sum(axis=0)
    # Seeded by the items resampled: the same items give the same interval in any scope.
    rng = np.random.default_rng([seed, zlib.crc32(repr([t.items[i] for i in rows]).encode())])
    boot = _bootstrap_sums(features, resamples, rng) if resamples else None
    confusion = point[1 + q :].reshape(q, q)

    label_raters = np.unique(t.rater[labelled])
    pairable = int((c.sum(axis=1) >= 2).sum())
    alpha_value, alpha_reason = np.nan, ""
    if label_raters.size < 2:
        only_rater = t.raters[label_raters[0]]
        alpha_reason = (
            f"only one rater ({names.get(only_rater, only_rater)}) gave labels; alpha needs two "
            "or more"
        )
    elif pairable == 0:
        alpha_reason = "no item has labels from two or more raters (no overlap)"
    elif np.isnan(_alpha_from_sums(point[: 1 + q])):
        only = t.labels[int(point[1 : 1 + q].argmax())]
        alpha_reason = f"every paired label is {only!r}: with no variation alpha is undefined"
    else:
        # Reliability data: raters x items of this group, label codes, NaN where missing.
        column = np.full(len(t.items), -1)
        column[rows] = np.arange(rows.size)
        _, rater_row = np.unique(t.rater[labelled], return_inverse=True)
        data = np.full((label_raters.size, rows.size), np.nan)
        data[rater_row, column[t.item[labelled]]] = t.code[labelled]
        alpha_value = float(
            krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        )

    n_judged, n_ties = int(has_judge.sum()), int((has_judge & tied).sum())
    n_compared = int(compared.sum())
    if not (t.judge[item_mask] >= 0).any():
        pair_reason = "no item has a judge verdict"
    elif n_judged == 0:
        pair_reason = "no item with a judge verdict has a human label"
    elif n_compared == 0:
        pair_reason = f"all {n_ties} items with a judge verdict have tied human labels (ties: drop)"
    else:
        pair_reason = ""
    pair = confusion_agreement(confusion)
    intervals = [None] * 4
    if boot is not None:
        pair_boot = confusion_agreement(boot[:, 1 + q :].reshape(-1, q, q))
        alpha_boot = _alpha_from_sums(boot[:, : 1 + q])
        stacked = np.column_stack([alpha_boot, pair_boot.kappa, pair_boot.raw, pair_boot.ac1])
        intervals = _intervals(stacked, confidence)
    kappa_reason = pair_reason
    if not pair_reason and np.isnan(pair.kappa):
        only = t.labels[int(confusion.sum(axis=1).argmax())]
        kappa_reason = (
            f"the judge and the human majority give only {only!r}: with no variation kappa is "
            "undefined"
        )
    ac1_reason = pair_reason or ("" if q >= 2 else "the label set has one label; AC1 needs two")

    return Agreement(
        items=int(rows.size),
        ratings=n_ratings,
        missing=n_missing,
        raters=n_raters,
        alpha=_figure(alpha_value, alpha_reason, pairable, intervals[0], resamples),
        kappa=_figure(float(pair.kappa), kappa_reason, n_compared, intervals[1], resamples),
        raw_agreement=_figure(float(pair.raw), pair_reason, n_compared, intervals[2], resamples),
        ac1=_figure(float(pair.ac1), ac1_reason, n_compared, intervals[3], resamples),
        judged=n_judged,
        ties=n_ties,
        confusion=tuple(tuple(int(x) for x in row) for row in confusion),
        single_majority=int((compared & (c.sum(axis=1) == 1)).sum()),
    )


def _raters(
    t: _Table,
    counts: np.ndarray,
    scope: np.ndarray,
    included: np.ndarray,
    outlier_sd: float,
    gold_min: float,
) -> tuple[RaterSummary, ...]:
    q, n_raters = len(t.labels), len(t.raters)
    labelled = t.code >= 0
    own = np.zeros((t.code.size, q), dtype=np.int64)
    mine = np.flatnonzero(labelled & included[t.rater])
    own[mine, t.code[mine]] = 1
    others = counts[t.item] - own
    top = others.max(axis=1) if q else np.zeros(t.code.size, dtype=np.int64)
    clear = (top > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    eligible = labelled & scope[t.item]
    shared = eligible & (others.sum(axis=1) > 0)
    compared = eligible & clear
    agreed = compared & (others.argmax(axis=1) == t.code) if q else compared

    def per_rater(mask: np.ndarray) -> np.ndarray:
        return np.bincount(t.rater[mask], minlength=n_raters)

    n_eligible, n_shared = per_rater(eligible), per_rater(shared)
    n_compared, n_agreed = per_rater(compared), per_rater(agreed)
    gold = t.gold[t.item]
    answered = labelled & (gold >= 0)
    n_gold, n_gold_right = per_rater(answered), per_rater(answered & (t.code == gold))
    n_ratings, n_missing = per_rater(np.ones(t.code.size, bool)), per_rater(~labelled)
    label_counts = np.bincount(
        t.rater[labelled] * q + t.code[labelled], minlength=n_raters * q
    ).reshape(n_raters, q)
    order = np.argsort(t.rater, kind="stable")
    seconds_by_rater = np.split(t.seconds[order], np.cumsum(n_ratings)[:-1])

    agreement = []
    for r in range(n_raters):
        if n_compared[r]:
            agreement.append(Figure(float(n_agreed[r] / n_compared[r]), n=int(n_compared[r])))
        elif n_shared[r]:
            agreement.append(Figure(None, "the other raters tie on every shared item"))
        elif n_eligible[r]:
            agreement.append(Figure(None, "shares no labelled item with another rater"))
        else:
            agreement.append(Figure(None, "no labelled item in scope"))
    values = np.array([a.value for r, a in enumerate(agreement) if included[r] and a.defined])
    spread = None
    if values.size >= 3:
        spread = float(values.mean()), float(values.std(ddof=1))

    summaries = []
    for r in range(n_raters):
        times = seconds_by_rater[r][~np.isnan(seconds_by_rater[r])]
        gold_accuracy = (
            Figure(float(n_gold_right[r] / n_gold[r]), n=int(n_gold[r]))
            if n_gold[r]
            else Figure(None, "answered no gold item")
        )
        reasons = []
        value = agreement[r].value
        if spread and value is not None and value < spread[0] - outlier_sd * spread[1]:
            reasons.append(
                f"agreement {value:.3f} is more than {outlier_sd:g} SD below the raters' mean "
                f"{spread[0]:.3f} (SD {spread[1]:.3f})"
            )
        if gold_accuracy.value is not None and gold_accuracy.value < gold_min:
            reasons.append(f"gold accuracy {gold_accuracy.value:.3f} is below {gold_min:g}")
        summaries.append(
            RaterSummary(
                rater=t.raters[r],
                excluded=not included[r],
                ratings=int(n_ratings[r]),
                missing=int(n_missing[r]),
                label_counts={label: int(label_counts[r, k]) for k, label in enumerate(t.labels)},
                agreement=agreement[r],
                gold_accuracy=gold_accuracy,
                median_seconds=(
                    Figure(float(np.median(times)), n=int(times.size))
                    if times.size
                    else Figure(None, "no time recorded")
                ),
                outlier=bool(reasons),
                outlier_reasons=tuple(reasons),
            )
        )
    return tuple(summaries)


def agreement_compute(
    *,
    ratings: Iterable[Rating],
    items: Mapping[Hashable, ItemInfo] | None = None,
    labels: Sequence[str] | None = None,
    ties: TieRule = "drop",
    exclude_raters: Collection[Hashable] = (),
    include_gold: bool = False,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    outlier_sd: float = 2.0,
    gold_min: float = 0.8,
    rater_names: Mapping[Hashable, str] | None = None,
) -> AgreementReport:
    """All agreement figures of a study; see the module docstring for every definition."""
    if ties not in TIE_RULES:
        raise ValueError(f"ties must be one of {TIE_RULES}, got {ties!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise ValueError(f"resamples must be a non-negative integer, got {resamples!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    t = _table_build(ratings, items or {}, labels)
    q = len(t.labels)
    excluded = set(exclude_raters)
    included = np.array([rater not in excluded for rater in t.raters], dtype=bool)
    scope = np.ones(len(t.items), bool) if include_gold else t.gold < 0

    use = (t.code >= 0) & included[t.rater]
    counts = np.bincount(t.item[use] * q + t.code[use], minlength=len(t.items) * q).reshape(
        len(t.items), q
    )

    names = dict(rater_names or {})

    def group(mask: np.ndarray) -> Agreement:
        return _agreement(t, counts, mask, included, ties, resamples, seed, confidence, names)

    def breakdown(kind: str, keys: list) -> dict[Hashable, Agreement]:
        groups: dict[Hashable, list[int]] = {}
        for i, key in enumerate(keys):
            if key is not None:
                groups.setdefault(key, []).append(i)
        result = {}
        for key in _sorted(groups):
            mask = np.zeros(len(t.items), bool)
            mask[groups[key]] = True
            result[key] = group(scope & mask)
        return result

    return AgreementReport(
        labels=t.labels,
        ties=ties,
        excluded=tuple(_sorted(excluded)),
        include_gold=include_gold,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        overall=group(scope),
        by_stratum=breakdown("stratum", t.stratum),
        by_batch=breakdown("batch", t.batch),
        raters=_raters(t, counts, scope, included, outlier_sd, gold_min),
    )
