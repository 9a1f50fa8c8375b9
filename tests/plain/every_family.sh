#!/usr/bin/env bash
# Run after the README's first line alone (`python -m pip install .`), before any test
# dependency is installed: one command per method family, the generalization with every
# privacy model, each with its default independent verification. A run that imports a
# package the first line did not install ends in a traceback, and this script fails.
# Usage: bash tests/plain/every_family.sh  (from the repository root; writes under a
# temporary folder only)
set -euo pipefail
here="$(pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
a="$here/data/adult"
# a 3,000-record slice of Adult keeps the runs short; the research subset of
# delta-presence is its first 600 records
head -n 3001 "$a/adult.csv" > "$work/adult.csv"
head -n 601 "$a/adult.csv" > "$work/subset.csv"
qis=(--qi "sex=$a/hierarchy_sex.csv" --qi "age=$a/hierarchy_age.csv"
     --qi "race=$a/hierarchy_race.csv" --qi "education=$a/hierarchy_education.csv")
other=(--insensitive marital-status,native-country,workclass,salary-class)
occupation="$a/hierarchy_occupation.csv"
models=(
  "distinct-l-diversity:occupation:l=2"
  "entropy-l-diversity:occupation:l=2"
  "entropy-l-diversity:occupation:l=2,estimator=grassberger"
  "recursive-cl-diversity:occupation:c=4,l=2"
  "equal-distance-t-closeness:occupation:t=0.4"
  "ordered-distance-t-closeness:occupation:t=0.4"
  "hierarchical-distance-t-closeness:occupation:t=0.4,hierarchy=$occupation"
  "basic-beta-likeness:occupation:beta=5"
  "enhanced-beta-likeness:occupation:beta=5"
  "delta-disclosure:occupation:delta=3"
  "delta-presence:dmin=0,dmax=0.9,subset=$work/subset.csv"
  "k-map:k=3,estimator=poisson,significance=0.1,population-size=100000"
  "k-map:k=2,population=$work/adult.csv"
  "average-risk:threshold=0.2"
  "sample-uniqueness:threshold=0.05"
  "population-uniqueness:threshold=0.05,sampling-fraction=0.1"
)
n=0
for model in "${models[@]}"; do
  n=$((n + 1))
  anonlab generalize "$work/adult.csv" --delimiter ';' "${qis[@]}" "${other[@]}" \
    --sensitive occupation --k 2 --suppression 10% --criterion "$model" \
    --output "$work/g$n.csv" --report "$work/g$n.json" --quiet
  anonlab verify "$work/g$n.json" --quiet
done
t="$here/data/sdc/Tarragona.csv"
anonlab microaggregate "$t" --columns all-numeric --k 3 --output "$work/m.csv" \
  --report "$work/m.json" --quiet
anonlab evaluate "$t" "$work/m.csv" --columns all-numeric --report "$work/e.json" --quiet
anonlab perturb "$t" --method obt --seed 1 --output "$work/p.csv" --key "$work/p_key.json" \
  --report "$work/p.json" --quiet
anonlab risk "$work/adult.csv" --delimiter ';' --qi sex,age,race,education \
  --sensitive occupation --insensitive marital-status,native-country,workclass,salary-class \
  --report "$work/r.json" --quiet
anonlab fuse "$here/examples/fusion/fusion.toml" --output "$work/f.csv" \
  --report "$work/f.json" --verify --quiet
for recoding in mondrian local; do
  anonlab generalize "$work/adult.csv" --delimiter ';' "${qis[@]}" "${other[@]}" \
    --sensitive occupation --k 5 --recoding "$recoding" \
    --output "$work/$recoding.csv" --report "$work/$recoding.json" --quiet
  anonlab verify "$work/$recoding.json" --quiet
done
d="$here/data/sdc/testdata.csv"
anonlab suppress "$d" --qi urbrur,roof,walls,water,sex --k 3 --other insensitive \
  --output "$work/s.csv" --report "$work/s.json" --quiet
anonlab verify "$work/s.json" --quiet
anonlab mask "$d" --method pram --columns roof,walls --seed 1 --other insensitive \
  --max-risk 1 --output "$work/k_pram.csv" --report "$work/k_pram.json" --quiet
anonlab mask "$d" --method recode --columns age --breaks 6 --other insensitive \
  --max-risk 1 --output "$work/k_recode.csv" --report "$work/k_recode.json" --quiet
anonlab verify "$work/k_recode.json" --quiet
for method in noise rankswap "shuffle --predictors FIXED.ASSETS"; do
  name="${method%% *}"
  # shellcheck disable=SC2086  # the shuffle's flag is meant to split
  anonlab mask "$t" --method $method --columns SALES,LABOR.COSTS --seed 1 \
    --other insensitive --max-risk 1 --output "$work/n_$name.csv" \
    --report "$work/n_$name.json" --quiet
  anonlab verify "$work/n_$name.json" --quiet
done
anonlab compare --config "$here/examples/compare_tarragona.toml" --report "$work/c.json" --quiet
anonlab report "$work/g1.json" --html "$work/g1.html" --quiet
# the web app needs its extra, which the first line does not install: one line, exit 2
set +e
ui_error="$(anonlab ui --port 0 2>&1)"
ui_code=$?
set -e
if [ "$ui_code" -ne 2 ] || [[ "$ui_error" != "Error: the web app needs the 'ui' extra"* ]]; then
  echo "anonlab ui without the ui extra: exit $ui_code, said: $ui_error" >&2
  exit 1
fi
echo "every family ran on the first line's packages: ${#models[@]} privacy models, mondrian, local recoding, suppress, mask, compare, microaggregate, evaluate, perturb, risk, fuse, report; ui asks for its extra"
