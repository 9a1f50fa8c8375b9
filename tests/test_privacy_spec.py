"""The two spellings of a privacy model (TOML table, flag text) and the criterion objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anonlab.errors import AnonlabError
from anonlab.privacy import KAnonymity
from anonlab.privacy.spec import (
    MODELS,
    build_criterion,
    criteria_with_k,
    criterion_class,
    describe,
    normalize_criteria,
    normalize_criterion,
    parse_criterion_flag,
    resolve_criteria_paths,
)
from anonlab.runs.generalize_settings import GeneralizeSettings

# ----------------------------------------------------------------------- the flag spelling


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "distinct-l-diversity:occupation:l=3",
            {"model": "distinct-l-diversity", "attribute": "occupation", "l": 3},
        ),
        (
            "recursive-cl-diversity:occupation:c=4,l=5",
            {"model": "recursive-cl-diversity", "attribute": "occupation", "c": 4.0, "l": 5},
        ),
        ("k-anonymity:k=5", {"model": "k-anonymity", "k": 5}),
        ("K-Anonymity:k = 5", {"model": "k-anonymity", "k": 5}),
        (
            "entropy-l-diversity:occupation:l=2.5,estimator=Grassberger",
            {
                "model": "entropy-l-diversity",
                "attribute": "occupation",
                "l": 2.5,
                "estimator": "grassberger",
            },
        ),
        (
            "ordered-distance-t-closeness:grade:t=0.2,order=A,B,C,D",
            {
                "model": "ordered-distance-t-closeness",
                "attribute": "grade",
                "t": 0.2,
                "order": ["A", "B", "C", "D"],
            },
        ),
        (
            "k-map:k=5,estimator=poisson,significance=0.01,population-size=1000000",
            {
                "model": "k-map",
                "k": 5,
                "estimator": "poisson",
                "significance": 0.01,
                "population_size": 1000000,
            },
        ),
        (
            "delta-presence:dmin=0,dmax=0.5,subset=sub, set.csv",
            {"model": "delta-presence", "dmin": 0.0, "dmax": 0.5, "subset": "sub, set.csv"},
        ),
        (
            "population-uniqueness:threshold=0.01,estimator=pitman,sampling_fraction=0.1",
            {
                "model": "population-uniqueness",
                "threshold": 0.01,
                "estimator": "pitman",
                "sampling_fraction": 0.1,
            },
        ),
    ],
)
def test_flag_spelling(text: str, expected: dict[str, Any]) -> None:
    assert normalize_criterion(text) == expected


def test_flag_and_toml_spellings_agree() -> None:
    toml = {
        "model": "hierarchical-distance-t-closeness",
        "attribute": "occupation",
        "t": 0.2,
        "hierarchy": "h.csv",
    }
    flag = "hierarchical-distance-t-closeness:occupation:t=0.2,hierarchy=h.csv"
    assert normalize_criterion(flag) == normalize_criterion(toml) == toml


def test_flag_keeps_values_as_text_until_normalized() -> None:
    assert parse_criterion_flag("distinct-l-diversity:occupation:l=3") == {
        "model": "distinct-l-diversity",
        "attribute": "occupation",
        "l": "3",
    }
    assert parse_criterion_flag("equal-distance-t-closeness:salary class") == {
        "model": "equal-distance-t-closeness",
        "attribute": "salary class",
    }


# ----------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"model": "recursive-cl-diversity", "attribute": "occupation", "l": 5},
            "criteria: model 'recursive-cl-diversity' on 'occupation' needs c: add c = 4.0",
        ),
        (
            "no-such-model:x",
            "criteria: model 'no-such-model' is unknown: choose one of "
            "k-anonymity, distinct-l-diversity",
        ),
        ({"attribute": "occupation", "l": 3}, "criteria: a criterion names no model"),
        (
            {"model": "distinct-l-diversity", "l": 3},
            "criteria: model 'distinct-l-diversity' needs attribute",
        ),
        (
            {"model": "k-anonymity", "k": 3, "attribute": "x"},
            "criteria: model 'k-anonymity' protects no single attribute",
        ),
        (
            "distinct-l-diversity:occupation:l=3.5",
            "criteria: model 'distinct-l-diversity' on 'occupation': l must be a whole number",
        ),
        (
            {"model": "distinct-l-diversity", "attribute": "o", "l": True},
            "l must be a number (got True)",
        ),
        (
            {"model": "equal-distance-t-closeness", "attribute": "o", "t": "high"},
            "t must be a number (got 'high')",
        ),
        (
            {"model": "equal-distance-t-closeness", "attribute": "o", "t": 0.2, "l": 3},
            "model 'equal-distance-t-closeness' on 'o' takes no parameter l: its parameters are "
            "attribute, t",
        ),
        (
            "entropy-l-diversity:o:l=3,estimator=miller",
            "estimator 'miller' is unknown: choose one of shannon, grassberger",
        ),
        ("k-map:k=5", "model 'k-map' needs one of population, estimator"),
        ("k-map:k=5,population=p.csv,estimator=poisson", "takes only one of population, estimator"),
        (
            "k-map:k=5,estimator=poisson,significance=0.01",
            "with estimator needs population_size: add population_size = 1000000",
        ),
        ("k-map:k=5,population=p.csv,significance=0.01", "with population takes no significance"),
        ("population-uniqueness:threshold=0.1", "needs one of sampling_fraction, population_size"),
        ("distinct-l-diversity:occupation:l", "is not MODEL[:ATTRIBUTE][:KEY=VALUE,...]"),
        ("distinct-l-diversity:occupation:l=3,l=4", "gives l twice"),
        (
            {"model": "ordered-distance-t-closeness", "attribute": "o", "t": 0.1, "order": 3},
            "order must be a list of values",
        ),
        (
            {"model": "equal-distance-t-closeness", "attribute": "o", "t": float("nan")},
            "t must be a finite number",
        ),
    ],
)
def test_one_line_error_naming_model_and_parameter(spec: Any, message: str) -> None:
    with pytest.raises(AnonlabError) as caught:
        normalize_criterion(spec)
    assert message in str(caught.value)
    assert caught.value.parameter == "criteria"
    assert "\n" not in str(caught.value)
    assert caught.value.for_flags({"criteria": "--criterion"}).startswith("--criterion")


def test_a_model_given_twice_is_refused() -> None:
    with pytest.raises(AnonlabError, match="model 'k-anonymity' is given twice"):
        normalize_criteria(["k-anonymity:k=2", "k-anonymity:k=3"])
    with pytest.raises(AnonlabError, match="model 'distinct-l-diversity' on 'a' is given twice"):
        normalize_criteria(["distinct-l-diversity:a:l=2", "distinct-l-diversity:a:l=3"])
    # the same model on two attributes is two criteria
    assert (
        len(normalize_criteria(["distinct-l-diversity:a:l=2", "distinct-l-diversity:b:l=3"])) == 2
    )


def test_k_is_a_shorthand_and_not_both() -> None:
    assert criteria_with_k([], None) == [{"model": "k-anonymity", "k": 2}]
    assert criteria_with_k([], 5) == [{"model": "k-anonymity", "k": 5}]
    assert criteria_with_k(["distinct-l-diversity:o:l=3"], 4) == [
        {"model": "k-anonymity", "k": 4},
        {"model": "distinct-l-diversity", "attribute": "o", "l": 3},
    ]
    assert criteria_with_k(["distinct-l-diversity:o:l=3"], None) == [
        {"model": "distinct-l-diversity", "attribute": "o", "l": 3}
    ]
    with pytest.raises(AnonlabError) as caught:
        criteria_with_k(["k-anonymity:k=3"], 5)
    assert caught.value.parameter == "k"
    assert str(caught.value) == (
        "k = 5 and a k-anonymity criterion with k = 3 are both given: "
        "give k or the criterion, not both"
    )


def test_paths_resolve_against_the_toml_folder(tmp_path: Path) -> None:
    specs = [
        {
            "model": "hierarchical-distance-t-closeness",
            "attribute": "occupation",
            "t": 0.2,
            "hierarchy": "h.csv",
        },
        {"model": "delta-presence", "dmin": 0, "dmax": 0.5, "subset": "s.csv"},
        {"model": "distinct-l-diversity", "attribute": "occupation", "l": 2},
    ]
    out = resolve_criteria_paths(specs, tmp_path)
    assert out[0]["hierarchy"] == str(tmp_path / "h.csv")
    assert out[1]["subset"] == str(tmp_path / "s.csv")
    assert out[2] == specs[2]
    assert out[0]["attribute"] == "occupation"  # only file parameters are touched


def test_settings_read_criteria_from_toml(tmp_path: Path) -> None:
    config = tmp_path / "sub" / "g.toml"
    config.parent.mkdir()
    config.write_text(
        'input = "t.csv"\nsuppression = 0.04\nmetric = "precision"\n'
        'gs_factor = 0.3\naggregate = "rank"\n[qi]\na = "ha.csv"\n'
        "[weights]\na = 2.0\n"
        '[[criteria]]\nmodel = "k-anonymity"\nk = 5\n'
        '[[criteria]]\nmodel = "hierarchical-distance-t-closeness"\n'
        'attribute = "occupation"\nt = 0.2\nhierarchy = "h_occ.csv"\n'
    )
    settings = GeneralizeSettings.load(config)
    assert settings.criteria == [
        {"model": "k-anonymity", "k": 5},
        {
            "model": "hierarchical-distance-t-closeness",
            "attribute": "occupation",
            "t": 0.2,
            "hierarchy": str(config.parent / "h_occ.csv"),
        },
    ]
    assert settings.attribute_weights == {"a": 2.0}
    assert settings.weights is None  # the risk section's weights column stays unset
    assert (settings.gs_factor, settings.aggregate) == (0.3, "rank")
    # flags replace the config's criteria
    flagged = GeneralizeSettings.load(config, criteria=["distinct-l-diversity:occupation:l=3"])
    assert flagged.model_criteria() == [
        {"model": "distinct-l-diversity", "attribute": "occupation", "l": 3}
    ]
    with pytest.raises(AnonlabError) as caught:
        GeneralizeSettings.load(config, k=3)
    assert caught.value.parameter == "k"


@pytest.mark.parametrize(
    ("given", "parameter"),
    [
        ({"gs_factor": 1.5}, "gs_factor"),
        ({"aggregate": "median"}, "aggregate"),
        ({"metric": "loss_of_life"}, "metric"),
        ({"attribute_weights": {"a": -1}}, "attribute_weights"),
        ({"criteria": [{"model": "t-closeness"}]}, "criteria"),
        ({"criteria": 5}, "criteria"),
    ],
)
def test_settings_errors_name_the_parameter(given: dict[str, Any], parameter: str) -> None:
    with pytest.raises(AnonlabError) as caught:
        GeneralizeSettings(input="t.csv", qi={"a": "h.csv"}, **given)
    assert caught.value.parameter == parameter


@pytest.mark.parametrize(("given", "fraction"), [("100%", 1.0), (1.0, 1.0), ("99.5%", 0.995)])
def test_suppression_up_to_every_record(given: Any, fraction: float) -> None:
    assert (
        GeneralizeSettings(input="t.csv", qi={"a": "h.csv"}, suppression=given).suppression
        == fraction
    )


@pytest.mark.parametrize("given", [1, "1", "1.0"])
def test_suppression_of_a_bare_one_is_ambiguous(given: Any) -> None:
    with pytest.raises(AnonlabError, match=r"is ambiguous \(1% or 100%\?\): write 0\.01 or 1%"):
        GeneralizeSettings(input="t.csv", qi={"a": "h.csv"}, suppression=given)


# ----------------------------------------------------------------------- objects


def test_k_anonymity_object() -> None:
    criterion = build_criterion("k-anonymity:k=4")
    assert criterion == KAnonymity(4)
    assert describe(criterion) == {"model": "k-anonymity", "k": 4}


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_has_a_class(name: str) -> None:
    """Each model's class is found by its name in its module (lazy import)."""
    cls = criterion_class(name)
    assert cls.name == name


@pytest.mark.parametrize(
    "text",
    [
        "distinct-l-diversity:occupation:l=3",
        "entropy-l-diversity:occupation:l=2.5,estimator=grassberger",
        "recursive-cl-diversity:occupation:c=4,l=5",
        "equal-distance-t-closeness:occupation:t=0.2",
        "ordered-distance-t-closeness:occupation:t=0.2,order=a,b",
        "basic-beta-likeness:occupation:beta=1.5",
        "enhanced-beta-likeness:occupation:beta=1.5",
        "delta-disclosure:occupation:delta=1.2",
        "k-map:k=5,estimator=poisson,significance=0.01,population_size=100000",
        "average-risk:threshold=0.05",
        "sample-uniqueness:threshold=0.01",
        "population-uniqueness:threshold=0.01,estimator=zayatz,sampling_fraction=0.1",
    ],
)
def test_objects_report_their_settings(text: str) -> None:
    """``describe`` of the built object gives back what was written (the report's form)."""
    spec = normalize_criterion(text)
    described = describe(build_criterion(spec))
    assert {k: described[k] for k in spec} == spec


def test_weights_table_and_weights_column_together(tmp_path: Path) -> None:
    """A config's ``[weights]`` table (metric) survives a ``weights`` column flag (risk)."""
    config = tmp_path / "g.toml"
    config.write_text('input = "t.csv"\n[qi]\na = "ha.csv"\n[weights]\na = 3.0\n')
    settings = GeneralizeSettings.load(config, weights="w", practical_monotonicity=True)
    assert settings.attribute_weights == {"a": 3.0}
    assert settings.weights == "w"
    assert settings.practical_monotonicity is True
    config.write_text(
        'input = "t.csv"\n[qi]\na = "ha.csv"\n[weights]\na = 3.0\n[attribute_weights]\na = 2.0\n'
    )
    with pytest.raises(AnonlabError, match=r"weights .a table. and attribute_weights are both"):
        GeneralizeSettings.load(config)
