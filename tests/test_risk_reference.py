"""The risk module against figures computed by ARX 3.9.2 and sdcMicro 5.8.1 themselves.

Every expected value below was printed by the reference tool, not by anonlab;
docs/risk.md lists the calls that produced them. ARX: its ``RiskEstimateBuilder``
(``getSampleBasedRiskSummary``, ``getSampleBasedUniquenessRisk``,
``getPopulationBasedUniquenessRisk``) with ``ARXPopulationModel.create(rows, f)``,
and ``RiskModelPopulationUniqueness`` on a hand-made class-size table.
sdcMicro: ``freqCalc``, ``measure_risk``, ``suda2`` and ``ldiversity``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

from anonlab.risk import equivalence_classes, measure_risk
from anonlab.risk.individual import global_risk, record_frequencies, sampling_weights
from anonlab.risk.population import population_uniques
from anonlab.risk.sensitive import class_values, distinct_l, entropy_l
from anonlab.risk.suda import suda2_scores

ADULT_QI = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]
#: the 5-anonymous release of examples/adult.toml (anonlab generalize, suppression 0.01)
K5_LEVELS = {
    "sex": 0,
    "age": 4,
    "race": 0,
    "marital-status": 1,
    "education": 3,
    "native-country": 2,
    "workclass": 0,
    "occupation": 1,
}
TESTDATA_KEYS = ["urbrur", "water", "sex", "age"]
REL = 1e-12


@pytest.fixture(scope="module")
def adult(data_dir: Path) -> pd.DataFrame:
    return pd.read_csv(data_dir / "adult" / "adult.csv", sep=";", dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def adult_k5(adult: pd.DataFrame, data_dir: Path) -> pd.DataFrame:
    """Adult generalized at K5_LEVELS, classes under 5 records suppressed (all QIs ``*``)."""
    out = adult.copy()
    for column, level in K5_LEVELS.items():
        h = pd.read_csv(
            data_dir / "adult" / f"hierarchy_{column}.csv",
            sep=";",
            header=None,
            dtype=str,
            keep_default_na=False,
        )
        out[column] = out[column].map(dict(zip(h[0], h[level], strict=True)))
    size = out.groupby(ADULT_QI)[ADULT_QI[0]].transform("size")
    out.loc[size < 5, ADULT_QI] = "*"
    return out


@pytest.fixture(scope="module")
def testdata(data_dir: Path) -> pd.DataFrame:
    return pd.read_csv(data_dir / "sdc" / "testdata.csv", dtype=str)


# ---------------------------------------------------------------------------
# ARX 3.9.2


# (sampling fraction, Pitman, Zayatz, Dankar, Dankar's model) as shares of the population;
# ARX's SNB failed on these tables (its getter returned 0)
ARX_ADULT_RAW = [
    (0.01, 0.11987862841397122, 0.22354756454070113, 0.11987862841397122, "pitman"),
    (0.1, 0.23917192054773700, 0.27397769267084393, 0.23917192054773700, "pitman"),
    (0.5, 0.38759585379484880, 0.38457330021498850, 0.38457330021498850, "zayatz"),
]


@pytest.mark.parametrize(("fraction", "pitman", "zayatz", "dankar", "model"), ARX_ADULT_RAW)
def test_adult_raw_matches_arx(
    adult: pd.DataFrame, fraction: float, pitman: float, zayatz: float, dankar: float, model: str
) -> None:
    risk = measure_risk(adult, ADULT_QI, sampling_fraction=fraction)
    assert risk["records"] == 30162 and risk["classes"]["count"] == 18109
    assert risk["prosecutor"]["highest"] == 1.0
    assert risk["prosecutor"]["average"] == pytest.approx(0.60039122074133010, rel=REL)
    assert risk["prosecutor"]["records_at_risk"] == pytest.approx(
        {"0.2": 0.72863205357734900, "0.1": 0.85435315960480070, "0.05": 0.95524169484782170},
        rel=REL,
    )
    assert risk["sample_uniques"] == pytest.approx(0.46485644188051190, rel=REL)
    pop = risk["population_uniques"]
    assert pop["population_size"] == round(30162 / fraction)
    assert pop["pitman"] == pytest.approx(pitman, rel=1e-6)
    assert pop["zayatz"] == pytest.approx(zayatz, rel=1e-9)
    assert pop["snb"] is None
    assert pop["dankar"] == pytest.approx(dankar, rel=1e-6)
    assert pop["dankar_model"] == model


def test_adult_raw_class_sizes_match_arx(adult: pd.DataFrame) -> None:
    # ARX RiskModelHistogram.getHistogram(): size, classes, size, classes, ...
    arx = [
        1,
        14021,
        2,
        2026,
        3,
        796,
        4,
        379,
        5,
        209,
        6,
        153,
        7,
        114,
        8,
        67,
        9,
        55,
        10,
        54,
        11,
        47,
        12,
        32,
        13,
        28,
        14,
        13,
        15,
        16,
        16,
        16,
        17,
        10,
        18,
        9,
        19,
        12,
        20,
        9,
        21,
        4,
        22,
        4,
        23,
        5,
        24,
        2,
        25,
        3,
        26,
        4,
        27,
        7,
        29,
        2,
        30,
        3,
        32,
        2,
        34,
        3,
        35,
        1,
        36,
        1,
        37,
        1,
        45,
        1,
    ]
    risk = measure_risk(adult, ADULT_QI)
    assert risk["classes"]["sizes"] == {str(s): c for s, c in zip(arx[::2], arx[1::2], strict=True)}


def test_adult_k5_release_matches_arx(adult_k5: pd.DataFrame) -> None:
    """ARX read the release as input: rows whose QIs are all ``*`` are its outliers."""
    risk = measure_risk(adult_k5, ADULT_QI, sampling_fraction=0.01)
    assert risk["suppressed"] == 207
    assert risk["records"] == 29955 and risk["classes"]["count"] == 182
    assert risk["classes"]["smallest"] == 5
    assert risk["prosecutor"]["highest"] == pytest.approx(0.2, rel=REL)
    assert risk["prosecutor"]["average"] == pytest.approx(0.0060757803371724260, rel=REL)
    assert risk["prosecutor"]["records_at_risk"] == pytest.approx(
        {"0.2": 0.0, "0.1": 0.0094141211817726590, "0.05": 0.023435152729093640}, rel=REL
    )
    assert risk["sample_uniques"] == 0.0
    assert risk["population_uniques"]["dankar"] == 0.0
    assert risk["individual_risk"]["highest"] == pytest.approx(0.2, rel=REL)


# (QIs, table, delimiter, fraction, sample uniques, Pitman, Zayatz, Dankar, model)
ARX_MORE = [
    (
        ["sex", "age", "race"],
        "adult",
        0.1,
        0.0020555666069889266,
        0.00030720513392297775,
        0.00012737682522643868,
        0.00030720513392297775,
        "pitman",
    ),
    (
        ["age", "education", "marital-status", "native-country"],
        "adult",
        0.05,
        0.096313241827465020,
        0.025537818549457116,
        0.027489691160648776,
        0.025537818549457116,
        "pitman",
    ),
    (
        ["age", "education", "marital-status", "native-country"],
        "adult",
        0.3,
        0.096313241827465020,
        0.055996898373471535,
        0.058952122306265016,
        0.058952122306265016,
        "zayatz",
    ),
    (
        TESTDATA_KEYS,
        "testdata",
        0.01,
        0.072052401746724890,
        0.00045340154125452105,
        0.0057174016379880020,
        0.00045340154125452105,
        "pitman",
    ),
    (
        TESTDATA_KEYS,
        "testdata",
        0.2,
        0.072052401746724890,
        0.013208280614404893,
        0.017085381005185016,
        0.017085381005185016,
        "zayatz",
    ),
    (
        ["roof", "walls", "water", "electcon", "relat", "sex"],
        "testdata",
        0.05,
        0.024235807860262010,
        0.0027962702487823400,
        0.0030267878962261500,
        0.0027962702487823400,
        "pitman",
    ),
]


@pytest.mark.parametrize(
    ("qi", "name", "fraction", "uniques", "pitman", "zayatz", "dankar", "model"), ARX_MORE
)
def test_population_models_match_arx(
    request: pytest.FixtureRequest,
    qi: list[str],
    name: str,
    fraction: float,
    uniques: float,
    pitman: float,
    zayatz: float,
    dankar: float,
    model: str,
) -> None:
    frame = request.getfixturevalue(name)
    risk = measure_risk(frame, qi, sampling_fraction=fraction)
    assert risk["sample_uniques"] == pytest.approx(uniques, rel=REL)
    pop = risk["population_uniques"]
    assert pop["pitman"] == pytest.approx(pitman, rel=1e-6)
    assert pop["zayatz"] == pytest.approx(zayatz, rel=1e-9)
    assert pop["snb"] is None
    assert pop["dankar"] == pytest.approx(dankar, rel=1e-6)
    assert pop["dankar_model"] == model


# ARX RiskModelPopulationUniqueness(ARXPopulationModel.create(N), RiskModelHistogram(table),
# ARXSolverConfiguration.create()): numbers of population uniques (0 = ARX found no estimate)
ARX_HISTOGRAMS = [
    ({1: 10, 2: 5, 3: 2}, 500, 0.0, 77.193927577532020, 0.0, "zayatz"),
    ({1: 50, 2: 20, 3: 10, 4: 5, 5: 2}, 500, 142.89148885399987, 81.624154652928910, 0.0, "zayatz"),
    (
        {1: 50, 2: 20, 3: 10, 4: 5, 5: 2},
        5000,
        1.2912580943405878,
        578.02272503361940,
        0.0,
        "pitman",
    ),
    (
        {1: 100, 2: 40, 3: 20, 5: 10, 10: 3},
        100000,
        80.500751327173200,
        9830.8403485769000,
        0.0,
        "pitman",
    ),
    ({1: 3, 2: 4, 4: 2}, 100000, 3.1573008119919814, 2493.8307278865127, 0.0, "pitman"),
    ({1: 200, 2: 30, 3: 10}, 5000, 428.39796524215350, 2435.5451322095650, 0.0, "pitman"),
    ({1: 29, 2: 30, 3: 31, 4: 55, 5: 1}, 449, 0.0, 26.065284034168037, 23.221543746169660, "snb"),
    ({1: 15, 2: 6}, 29, 0.0, 15.240240240240240, 14.977855974806547, "snb"),
    ({1: 38, 2: 3, 3: 19}, 133, 0.0, 44.506198773078750, 44.761919393997290, "zayatz"),
    ({1: 18, 2: 6, 3: 17, 4: 21, 5: 38}, 417, 0.0, 17.902697344897092, 16.590977648549394, "snb"),
    (
        {1: 59, 2: 10, 3: 13, 4: 2, 5: 7},
        180,
        86.275167354932980,
        63.226780997454505,
        62.436379666164290,
        "snb",
    ),
]


@pytest.mark.parametrize(
    ("table", "population", "pitman", "zayatz", "snb", "model"), ARX_HISTOGRAMS
)
def test_population_uniques_match_arx_on_small_tables(
    table: dict[int, int], population: int, pitman: float, zayatz: float, snb: float, model: str
) -> None:
    got = population_uniques(table, population)
    for name, expected in (("pitman", pitman), ("zayatz", zayatz), ("snb", snb)):
        if expected == 0.0:
            assert got[name] is None, name
        else:
            assert got[name] == pytest.approx(expected, rel=1e-5), name
    assert got["dankar_model"] == model


# ---------------------------------------------------------------------------
# sdcMicro 5.8.1


def test_freqcalc_and_measure_risk_match_sdcmicro_on_testdata(testdata: pd.DataFrame) -> None:
    classes = equivalence_classes(testdata, TESTDATA_KEYS)
    weights = sampling_weights(testdata, "sampling_weight")
    fk, big_fk = record_frequencies(classes, weights)
    # freqCalc(testdata, keyVars=c("urbrur","water","sex","age"), w="sampling_weight")
    assert fk[:12].tolist() == [7, 7, 19, 23, 5, 4, 24, 7, 19, 9, 5, 5]
    assert big_fk[:12].tolist() == [700, 700, 1900, 2300, 500, 400, 2400, 700, 1900, 900, 500, 500]
    assert big_fk.sum() == 5011600 and big_fk.min() == 100
    # measure_risk(testdata, keyVars=..., w="sampling_weight")
    risk = global_risk(classes, weights)
    assert risk["fk_1"] == 330 and risk["fk_2"] == 344
    assert risk["global_risk"] == pytest.approx(0.0054113258111402641, rel=REL)
    assert risk["expected_reidentifications"] == pytest.approx(24.783872215022409, rel=REL)
    assert risk["highest"] == pytest.approx(0.046516870565536286, rel=REL)
    # measure_risk(testdata, keyVars=...) without weights
    unweighted = global_risk(classes, None)
    assert unweighted["global_risk"] == pytest.approx(0.21681222707423581, rel=REL)
    assert unweighted["expected_reidentifications"] == 993


def test_individual_risk_per_record_matches_sdcmicro(testdata: pd.DataFrame) -> None:
    from anonlab.risk.individual import frequencies, individual_risk

    classes = equivalence_classes(testdata, TESTDATA_KEYS)
    weights = sampling_weights(testdata, "sampling_weight")
    fk, big_fk = frequencies(classes, weights)
    per_class = individual_risk(fk, big_fk, weighted=True)
    per_record = per_class[classes.row_class]
    # measure_risk(...)$Res[1:12, "risk"]
    expected = [
        0.0016638935108153079,
        0.0016638935108153079,
        0.00055524708495280394,
        0.00045433893684688776,
        0.0024937655860349131,
        0.0033222591362126251,
        0.00043459365493263795,
        0.0016638935108153079,
        0.00055524708495280394,
        0.0012484394506866417,
        0.0024937655860349131,
        0.0024937655860349131,
    ]
    assert per_record[:12] == pytest.approx(expected, rel=REL)


def test_measure_risk_section_carries_sdcmicro_figures(testdata: pd.DataFrame) -> None:
    risk = measure_risk(testdata, TESTDATA_KEYS, weights="sampling_weight")
    assert risk["individual_risk"]["global_risk"] == pytest.approx(0.0054113258111402641, rel=REL)
    assert risk["journalist"]["population"] == "weights"
    # without a population size, the weights' sum stands for it
    total = pd.to_numeric(testdata["sampling_weight"]).sum()
    assert risk["population_uniques"]["population_size"] == total == 458000


def test_adult_measure_risk_matches_sdcmicro(adult: pd.DataFrame, adult_k5: pd.DataFrame) -> None:
    risk = measure_risk(adult, ADULT_QI)["individual_risk"]
    # freqCalc(adult, keyVars=akv): n1, n2; measure_risk(adult, keyVars=akv)
    assert (risk["fk_1"], risk["fk_2"]) == (14021, 4052)
    assert risk["global_risk"] == pytest.approx(0.60039122074133011, rel=REL)
    assert risk["expected_reidentifications"] == 18109
    # the release without its 207 suppressed rows
    k5 = measure_risk(adult_k5, ADULT_QI)["individual_risk"]
    assert k5["global_risk"] == pytest.approx(0.0060757803371724256, rel=REL)
    assert k5["expected_reidentifications"] == pytest.approx(182, rel=REL)


def _record_scores(frame: pd.DataFrame, keys: list[str]) -> tuple[NDArray[Any], NDArray[Any]]:
    classes = equivalence_classes(frame, keys)
    result = suda2_scores(classes)
    return result.scores[classes.row_class], result.dis_scores[classes.row_class]


def test_suda2_matches_sdcmicro_on_testdata(testdata: pd.DataFrame) -> None:
    score, dis = _record_scores(testdata, TESTDATA_KEYS)
    # suda2(testdata, variables=c("urbrur","water","sex","age"))
    assert (score > 0).sum() == 330 and score.max() == 6 and score.sum() == 497
    assert dis.max() == pytest.approx(0.060516216013417758, rel=1e-9)
    assert dis.sum() == pytest.approx(4.0961409304984695, rel=1e-9)
    idx = np.array([50, 52, 68, 126, 201, 210, 211, 212, 213, 425]) - 1
    assert score[idx].tolist() == [2, 2, 1, 1, 6, 2, 2, 2, 1, 2]
    assert dis[idx] == pytest.approx(
        [
            0.016943971738229018,
            0.016943971738229018,
            0.0074465454365556273,
            0.0074465454365556273,
            0.060516216013417758,
            0.016943971738229018,
            0.016943971738229018,
            0.016943971738229018,
            0.0074465454365556273,
            0.016943971738229018,
        ],
        rel=1e-9,
    )
    # suda2(testdata, variables=c("urbrur","roof","walls","water","electcon","relat","sex"))
    score7, dis7 = _record_scores(
        testdata, ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    )
    assert (score7 > 0).sum() == 157 and score7.max() == 720 and score7.sum() == 4890
    assert dis7.max() == pytest.approx(0.67814255374299959, rel=1e-9)
    assert dis7.sum() == pytest.approx(9.8310909212751056, rel=1e-9)


def test_suda2_matches_sdcmicro_on_adult(adult: pd.DataFrame) -> None:
    score, dis = _record_scores(adult, ADULT_QI)
    # suda2(adc, variables=akv), adc = Adult's key variables as factor level numbers
    assert (score > 0).sum() == 14021 and score.max() == 5042 and score.sum() == 3087614
    assert dis.max() == pytest.approx(0.89171988740734121, rel=1e-9)
    assert dis.sum() == pytest.approx(2633.0532401922337, rel=1e-9)
    idx = np.array([1, 3, 4, 5, 6, 7, 8, 11]) - 1
    assert score[idx].tolist() == [72, 48, 240, 864, 12, 1446, 24, 6]
    assert dis[idx] == pytest.approx(
        [
            0.10522593566978973,
            0.072700620726430895,
            0.28161016766397379,
            0.58526991238570192,
            0.019223315403286912,
            0.70254131011308218,
            0.037721498542604703,
            0.0097049382460803694,
        ],
        rel=1e-9,
    )


# ldiversity(data, keyVars=..., ldiv_index=...): per record; summed over the records
LDIVERSITY = [
    ("testdata", TESTDATA_KEYS, "roof", 8045, 1554, 6923.1057514383401),
    ("testdata", TESTDATA_KEYS, "walls", 8580, 1155, 7195.246248070398),
    ("adult", ADULT_QI, "salary-class", 36894, 23430, 35667.377101081074),
    ("adult_k5", ADULT_QI, "salary-class", 59517, 393, 46985.829586940054),
]


@pytest.mark.parametrize(
    ("name", "keys", "attribute", "sum_distinct", "single", "sum_entropy"), LDIVERSITY
)
def test_ldiversity_matches_sdcmicro(
    request: pytest.FixtureRequest,
    name: str,
    keys: list[str],
    attribute: str,
    sum_distinct: int,
    single: int,
    sum_entropy: float,
) -> None:
    frame = request.getfixturevalue(name)
    classes = equivalence_classes(frame, keys, [attribute])
    values = class_values(classes, attribute)
    distinct = distinct_l(values)[classes.row_class[classes.kept]]
    entropy = entropy_l(values)[classes.row_class[classes.kept]]
    assert distinct.sum() == sum_distinct
    assert (distinct == 1).sum() == single
    assert entropy.sum() == pytest.approx(sum_entropy, rel=1e-12)
    figures = measure_risk(frame, keys, sensitive=[attribute])["sensitive"][attribute]
    assert figures["distinct_l"] == 1 and figures["entropy_l"] == pytest.approx(1.0)
    assert figures["single_value_records"] == single
