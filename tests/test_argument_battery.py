"""One battery of bad arguments over every public function (scikit-learn's shared checks).

Every public callable (``irmodels.__all__`` and the public functions of ``irm.studies``,
``irm.replicates``, ``irm.variability``, ``irm.power``, ``irm.pooling``, ``irm.design``,
``irm.datasets``, and the result methods below) is either in ``REGISTRY`` (one small valid call)
or in ``SKIP`` with the reason; a new public function in neither fails
:func:`test_every_public_function_is_covered`. For each registered function, every parameter of
its signature named in ``PROBABILITIES``, ``COUNTS``, ``SEEDS``, ``POSITIVE`` or ``CHOICES`` is
given each bad value of its kind, and the call must raise :class:`irmodels.ArgumentError` (a
``ValueError``) with a message that names the parameter; a misspelt choice (``"tukeyy"``,
``"Holm"``) must also get a "did you mean".
"""

from __future__ import annotations

import inspect
import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.models._lmm import SlopeMixedResult
from irmodels.models.anova import AnovaResult
from irmodels.models.mixed import MixedResult

#: Parameters that are probabilities in (0, 1).
PROBABILITIES = ("alpha", "level", "power", "confidence", "target")
#: Parameters that are counts (whole numbers >= 1).
COUNTS = ("n_resamples", "n_samples", "n_trials", "n_boot", "n_perm", "n_sim", "n_halvings",
          "n_splits", "digits")
#: Parameters that are seeds (None, a whole number >= 0, a SeedSequence or a Generator).
SEEDS = ("seed", "rng")
#: Parameters that are positive finite numbers.
POSITIVE = ("epsilon",)
#: Parameters that take one of a few strings.
CHOICES = ("test", "adjust", "method", "alternative", "ties", "spread", "means", "zeros",
           "copula", "missing", "aliased")
#: How a message names a parameter when it does not use the parameter's own name.
SPOKEN = {"adjust": ("adjust", "adjustment"), "p_adjust.method": ("method", "adjustment")}
#: (function, parameter) whose name is a battery name but not its kind: the data, not an option.
NOT_AN_OPTION = {("dunnett", "means"), ("tukey_hsd", "means")}
#: Choices compared case-insensitively on purpose (R's p.adjust names: "BH", "BY").
ANY_CASE = {("p_adjust", "method")}

BAD = {
    "probability": (-1, 0, 1.5, float("nan"), float("inf"), True, "x"),
    "count": (-1, 0, 1.5, float("nan"), float("inf"), True, "x"),
    "seed": (-1, 1.5, float("nan"), float("inf"), True, "x"),
    "positive": (-1, 0, float("nan"), float("inf"), True, "x"),
    "choice": ("x", 1.5),
}


def _kind(name: str) -> str | None:
    for kind, names in (("probability", PROBABILITIES), ("count", COUNTS), ("seed", SEEDS),
                        ("positive", POSITIVE), ("choice", CHOICES)):
        if name in names:
            return kind
    return None


# ------------------------------------------------------------------------------- inputs

def _frame(topics: int = 8, systems: int = 3, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.beta(2, 5, size=(topics, 1))
    wide = pd.DataFrame(np.clip(base + np.linspace(0, 0.15, systems)
                                + rng.normal(0, 0.05, (topics, systems)), 0.01, 0.99),
                        columns=[f"s{i}" for i in range(systems)])
    return irm.from_wide(wide)


F = _frame()


def _fit():
    return irm.anova("MD1", F)


def _mixed():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return irm.mixed("score ~ system + (1|topic)", F)


def _slopes():
    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(8), 6)
    x = np.tile(np.arange(6.0), 8)
    y = 2 + 0.5 * x + rng.normal(0, 1, 8)[g] + rng.normal(0, 0.3, 8)[g] * x + rng.normal(0, 0.5, 48)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return irm.mixed("score ~ x + (1 + x | topic)",
                         pd.DataFrame({"topic": [f"t{k}" for k in g], "x": x, "score": y}))


_COLLECTION: list[Any] = []


def _col():
    if not _COLLECTION:
        _COLLECTION.append(irm.collection.generate(preset="tiny", seed=0))
    return _COLLECTION[0]


# One valid call per function: name -> (function whose signature is read, call(**overrides),
# valid values of choice parameters without a string default).
Entry = tuple[Callable[..., Any], Callable[..., Any], dict[str, str]]
REGISTRY: dict[str, Entry] = {
    "aggregate": (irm.aggregate, lambda **k: irm.aggregate(F, "gmean", **k), {}),
    "anova": (irm.anova, lambda **k: irm.anova("MD1", F, **k), {}),
    "average_overlap": (irm.average_overlap, lambda **k: irm.average_overlap(
        ["a", "b", "c"], ["b", "a", "c"], **k), {}),
    "build_report": (irm.build_report, lambda **k: irm.build_report(F, **k), {}),
    "comparability": (irm.comparability, lambda **k: irm.comparability(
        F, _frame(seed=1), **{"n_resamples": 5, "n_halvings": 2, **k}), {}),
    "compare": (irm.compare, lambda **k: irm.compare(F, **{"test": "t", **k}), {}),
    "dunnett": (irm.dunnett, lambda **k: irm.dunnett(
        pd.Series({"a": 0.1, "b": 0.2, "c": 0.3}), np.eye(3) * 0.01, control="a", df=10, **k),
        {}),
    "effect_size": (irm.effect_size, lambda **k: irm.effect_size(
        [0.1, 0.3, 0.2, 0.5], [0.2, 0.1, 0.3, 0.2], **k), {}),
    "meta_analysis": (irm.meta_analysis, lambda **k: irm.meta_analysis(
        [0.1, 0.2, 0.15], [0.01, 0.02, 0.01], **k), {}),
    "mixed": (irm.mixed, lambda **k: irm.mixed("score ~ system + (1|topic)", F, **k), {}),
    "p_adjust": (irm.p_adjust, lambda **k: irm.p_adjust([0.01, 0.2, 0.04],
                                                        **{"method": "holm", **k}),
                 {"method": "holm"}),
    "pairwise": (irm.pairwise, lambda **k: irm.pairwise(
        F, **{"test": "t", "n_resamples": 20, **k}), {"test": "t"}),
    "rbo": (irm.rbo, lambda **k: irm.rbo(["a", "b", "c"], ["b", "a", "c"], **k), {}),
    "report": (irm.report, lambda **k: irm.report(_fit(), **k), {}),
    "tau_ap": (irm.tau_ap, lambda **k: irm.tau_ap([0.3, 0.2, 0.1], [0.2, 0.3, 0.1], **k), {}),
    "tukey_hsd": (irm.tukey_hsd, lambda **k: irm.tukey_hsd(
        {"a": 0.1, "b": 0.2, "c": 0.3}, df_error=10, ms_error=0.01, n=5, **k), {}),
    "studies.bootstrap_anova": (irm.studies.bootstrap_anova, lambda **k:
                                irm.studies.bootstrap_anova(F, **{"n_resamples": 5, **k}), {}),
    "studies.bootstrap_effects": (irm.studies.bootstrap_effects, lambda **k:
                                  irm.studies.bootstrap_effects(_fit(), **{"n_resamples": 5, **k}),
                                  {}),
    "studies.shards": (irm.studies.shards, lambda **k: irm.studies.shards(
        _col(), **{"n_shards": [2], "n_splits": 1, **k}), {}),
    "studies.test_errors": (irm.studies.test_errors, lambda **k: irm.studies.test_errors(
        F, **{"tests": "t", "sizes": 4, "n_trials": 2, "n_resamples": 5, **k}), {}),
    "studies.topic_sets": (irm.studies.topic_sets, lambda **k: irm.studies.topic_sets(
        F, **{"sizes": [4], "n_samples": 2, **k}), {}),
    "studies.pooling_bias": (irm.studies.pooling_bias, lambda **k: irm.studies.pooling_bias(
        _col().runs, _col().qrels, **{"widths": [2], "common_topics": [2], "n_resamples": 1,
                                      **k}), {}),
    "studies.document_samples.validate": (
        irm.studies.document_samples.validate, lambda **k: irm.studies.document_samples.validate(
            _col().runs, _col().qrels, **{"n_samples": 2, **k}), {}),
    "studies.document_samples.compare_tests": (
        irm.studies.document_samples.compare_tests,
        lambda **k: irm.studies.document_samples.compare_tests(
            _col().runs, _col().qrels, **{"n_samples": 2, **k}), {}),
    "replicates.assign_shards": (irm.replicates.assign_shards, lambda **k:
                                 irm.replicates.assign_shards(_col().docids, 2, **k), {}),
    "replicates.shard_splits": (irm.replicates.shard_splits, lambda **k:
                                irm.replicates.shard_splits(_col().docids, 2,
                                                            **{"n_splits": 1, "seed": 0, **k}),
                                {}),
    "replicates.document_samples": (irm.replicates.document_samples, lambda **k:
                                    irm.replicates.document_samples(
                                        _col().runs, _col().qrels, **{"n_samples": 2, **k}), {}),
    "replicates.simulate_topics": (irm.replicates.simulate_topics, lambda **k:
                                   irm.replicates.simulate_topics(F, 5, **k), {}),
    "replicates.fit_simulator": (irm.replicates.fit_simulator, lambda **k:
                                 irm.replicates.fit_simulator(F, **k), {}),
    "variability.compare": (irm.variability.compare, lambda **k: irm.variability.compare(
        F, "s0", "s1", **k), {}),
    "variability.error_rate": (irm.variability.error_rate, lambda **k:
                               irm.variability.error_rate(F, **{"sizes": [4], "n_trials": 2,
                                                                **k}), {}),
    "variability.tie_breaking": (irm.variability.tie_breaking, lambda **k:
                                 irm.variability.tie_breaking(F, **k), {}),
    "power.paired_t": (irm.power.paired_t, lambda **k: irm.power.paired_t(
        delta=0.05, sigma=0.1, **{"power": 0.8, **k}), {}),
    "power.paired_t_power": (irm.power.paired_t_power, lambda **k: irm.power.paired_t_power(
        20, 0.05, 0.1, **k), {}),
    "power.topics_table": (irm.power.topics_table, lambda **k: irm.power.topics_table(F, **k),
                           {}),
    "power.oneway_power": (irm.power.oneway_power, lambda **k: irm.power.oneway_power(
        3, 20, 0.1, 0.1, **k), {}),
    "power.oneway_topics": (irm.power.oneway_topics, lambda **k: irm.power.oneway_topics(
        3, 0.1, 0.1, **k), {}),
    "power.ci_half_width": (irm.power.ci_half_width, lambda **k: irm.power.ci_half_width(
        20, 0.1, **k), {}),
    "power.ci_width_topics": (irm.power.ci_width_topics, lambda **k: irm.power.ci_width_topics(
        0.02, 0.1, **k), {}),
    "power.simulate_paired_t": (irm.power.simulate_paired_t, lambda **k:
                                irm.power.simulate_paired_t(F, "s0", "s1", 5,
                                                            **{"n_trials": 5, **k}), {}),
    "design.sigma_upper": (irm.design.sigma_upper, lambda **k: irm.design.sigma_upper(
        0.1, 20, **k), {}),
    "design.size_from_trial": (irm.design.size_from_trial, lambda **k:
                               irm.design.size_from_trial(F, delta=0.05, **k), {}),
    "design.common_sigma_test": (irm.design.common_sigma_test, lambda **k:
                                 irm.design.common_sigma_test(F, **{"n_resamples": 5, **k}), {}),
    "design.sequential": (irm.design.sequential, lambda **k: irm.design.sequential(
        start=4, step=2, max_topics=8, **{"n_sim": 5, **k}), {}),
    "design.baseline_pairs": (irm.design.baseline_pairs, lambda **k:
                              irm.design.baseline_pairs(F, delta=0.05, **k), {}),
    "AnovaResult.tukey": (AnovaResult.tukey, lambda **k: _fit().tukey(**k), {}),
    "AnovaResult.dunnett": (AnovaResult.dunnett, lambda **k: _fit().dunnett("s0", **k),
                            {}),
    "MixedResult.confint": (MixedResult.confint, lambda **k: _mixed().confint(
        **{"method": "bootstrap", "n_resamples": 5, **k}), {"method": "bootstrap"}),
    "AnovaResult.to_latex": (AnovaResult.to_latex, lambda **k: _fit().to_latex(**k), {}),
    "SlopeMixedResult.confint": (SlopeMixedResult.confint, lambda **k: _slopes().confint(
        **{"method": "bootstrap", "n_resamples": 5, **k}), {"method": "bootstrap"}),
}

#: Public functions with no parameter of the battery's kinds, or whose checks are elsewhere.
SKIP = {
    # readers, writers and data shaping: their arguments are paths and frames (DataFormatError
    # and MissingFileError, tested in tests/data and tests/badinput)
    **dict.fromkeys(["read_frame", "read_matrix", "read_qrels", "read_run", "read_runs",
                     "read_trec_eval", "read_zscores", "write_frame", "write_matrix",
                     "write_qrels", "write_run", "write_zscores", "frame", "from_wide",
                     "to_wide", "filter_systems", "balance", "replicates.read_docids",
                     "replicates.docids_from", "replicates.sample_record"], "data in/out"),
    # no parameter of the battery's kinds (a choice, a probability, a count or a seed)
    **dict.fromkeys(["compare_models", "gstudy", "kendall_tau", "ptukey", "qtukey",
                     "rbo_p_for_depth", "power.pair_sd", "pooling.adjust",
                     "pooling.rank_weights", "studies.document_samples.plot_power_curve",
                     "studies.document_samples.plot_validation",
                     "studies.document_samples.sd_correlation",
                     "variability.variability", "variability.transform_scores",
                     "variability.plot_mean_sd", "parse_formula"], "no battery parameter"),
    # `evaluate`'s only battery parameter is n_workers (irm.parallel's own check, ParallelError)
    "evaluate": "n_workers only",
    # the package options: threads is "auto", a positive integer or None (its own refusals,
    # ArgumentError, tested in tests/models/test_threads.py)
    **dict.fromkeys(["get_options", "set_options"], "options, tests/models/test_threads.py"),
    # the datasets' arguments are names (DatasetError with a "did you mean", tests/data)
    **dict.fromkeys(["datasets.cache_dir", "datasets.canonical_measure", "datasets.info",
                     "datasets.list", "datasets.load", "datasets.path"], "names, DatasetError"),
    # the same function as studies.pooling_bias
    "pooling.pooling_bias": "alias of studies.pooling_bias",
    # plot helpers of a study's frame: alpha only draws a line (covered by agreement's checks)
    "studies.document_samples.plot_pvalues": "draws a reference line",
    "studies.document_samples.agreement": "alpha of a validate() frame; see validate",
}

def _public() -> set[str]:
    names: set[str] = set()
    for n in irm.__all__:
        o = getattr(irm, n)
        if inspect.isfunction(o) or (callable(o) and not inspect.isclass(o)
                                     and not inspect.ismodule(o)):
            names.add(n)
    for m in ("studies", "replicates", "variability", "power", "pooling", "design", "datasets"):
        mod = getattr(irm, m)
        for n in getattr(mod, "__all__", [x for x in dir(mod) if not x.startswith("_")]):
            o = getattr(mod, n)
            if inspect.isfunction(o) or (callable(o) and not inspect.isclass(o)
                                         and not inspect.ismodule(o)):
                names.add(f"{m}.{n}")
            elif inspect.ismodule(o):
                names.update(f"{m}.{n}.{k}" for k in getattr(o, "__all__", [])
                             if inspect.isfunction(getattr(o, k)))
    return names


def test_every_public_function_is_covered() -> None:
    public = _public()
    missing = sorted(public - set(REGISTRY) - set(SKIP))
    assert not missing, f"public functions in neither REGISTRY nor SKIP: {missing}"
    stale = sorted(n for n in SKIP if n not in public)
    assert not stale, f"SKIP names no public function: {stale}"
    both = sorted(set(REGISTRY) & set(SKIP))
    assert not both, both


def _cases() -> list[Any]:
    out = []
    for name, (fn, _, _valid) in sorted(REGISTRY.items()):
        for param in inspect.signature(fn).parameters:
            kind = _kind(param)
            if kind is None or (name, param) in NOT_AN_OPTION:
                continue
            for bad in BAD[kind]:
                out.append(pytest.param(name, param, bad, id=f"{name}-{param}-{bad!r}"))
    return out


def _names_param(message: str, name: str, param: str) -> bool:
    spoken = SPOKEN.get(f"{name}.{param}", SPOKEN.get(param, (param,)))
    return any(re.search(rf"(?<![A-Za-z_]){re.escape(s)}(?![A-Za-z_])", message) for s in spoken)


@pytest.mark.parametrize("name, param, bad", _cases())
def test_bad_value_is_an_argument_error(name: str, param: str, bad: Any) -> None:
    _, call, _ = REGISTRY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(irm.ArgumentError) as info:
            call(**{param: bad})
    assert isinstance(info.value, ValueError)
    assert _names_param(str(info.value), name, param), str(info.value)


def _choice_cases() -> list[Any]:
    out = []
    for name, (fn, _, valid) in sorted(REGISTRY.items()):
        for param, p in inspect.signature(fn).parameters.items():
            if param not in CHOICES or (name, param) in NOT_AN_OPTION:
                continue
            good = valid.get(param, p.default)
            if not isinstance(good, str) or len(good) < 3:
                continue
            typos = [good + good[-1]]
            if (name, param) not in ANY_CASE:
                typos.append(good.upper() if good != good.upper() else good.lower())
            for typo in typos:
                out.append(pytest.param(name, param, good, typo, id=f"{name}-{param}-{typo}"))
    return out


@pytest.mark.parametrize("name, param, good, typo", _choice_cases())
def test_misspelt_choice_says_did_you_mean(name: str, param: str, good: str, typo: str) -> None:
    _, call, _ = REGISTRY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(irm.ArgumentError, match="did you mean") as info:
            call(**{param: typo})
    assert repr(good) in str(info.value)
    assert _names_param(str(info.value), name, param), str(info.value)


def test_the_battery_is_not_vacuous() -> None:
    """Every probability, count and seed parameter of the registry is exercised, and a bad value
    of each kind is something the checks refuse."""
    cases = _cases()
    assert len(cases) > 200
    assert {c.values[1] for c in cases} >= {"alpha", "level", "seed", "test", "adjust"}
    assert math.isnan(BAD["probability"][3])
