#!/usr/bin/env bash
# tests/faults/tools/faults_table.sh: rewrites the results table of docs/FAULTS.md from
# the figures the fault cases recorded (ft.sh ft_record: one line per case in
# $SK_BUILD/faults-results/CASE.tsv, replaced on every run of that case).
#
# Usage: faults_table.sh [SRC_DIR] [BUILD_DIR]   (defaults: $SK_SRC, $SK_BUILD)
# CTest runs it as `faults_table` (label faults) after the fault cases, as the cleanup of
# their fixture, so a suite run (or one case) regenerates the table. Every case file
# tests/faults/NNNN_*.sh gets a row, its fault from the file's `# fault:` line; a case
# with no recorded run says "not run". Only the text between the two markers
# `<!-- faults-table:begin -->` and `<!-- faults-table:end -->` is replaced; the file
# is written atomically. Exit 0 (also when the source tree is read-only: it says so), or
# 1 when docs/FAULTS.md or its markers are missing.
#
# What it deliberately does not do: run cases, or judge their figures (the cases do).
set -u
SRC=${1:-${SK_SRC:?SK_SRC or an argument}}
BUILD=${2:-${SK_BUILD:?SK_BUILD or an argument}}
DOC=$SRC/docs/FAULTS.md
RES=$BUILD/faults-results
BEGIN='<!-- faults-table:begin -->'
END='<!-- faults-table:end -->'

[[ -f $DOC ]] || { echo "faults_table: missing $DOC" >&2; exit 1; }
grep -qxF "$BEGIN" "$DOC" && grep -qxF "$END" "$DOC" ||
        { echo "faults_table: $DOC lacks the markers" >&2; exit 1; }

# Markdown cell: pipes escaped.
cell() { printf '%s' "${1//|/\\|}"; }

table=$(mktemp)
trap 'rm -f "$table" "$DOC.tmp"' EXIT
{
        echo '| case | fault | result | requests | 202 | 503 | active orders | FAILED outcomes by reason | recovery (s) | notes | run (UTC) |'
        echo '|---|---|---|---:|---:|---:|---:|---|---:|---|---|'
        for f in "$SRC"/tests/faults/[0-9][0-9][0-9][0-9]_*.sh; do
                name=$(basename "$f" .sh)
                fault=$(sed -n 's/^# fault: //p' "$f" | head -n 1)
                line=
                [[ -f $RES/$name.tsv ]] && line=$(head -n 1 "$RES/$name.tsv")
                if [[ -z $line ]]; then
                        printf '| %s | %s | not run | | | | | | | | |\n' "$name" "$(cell "${fault:-?}")"
                        continue
                fi
                # Tabs to a non-blank separator: read would merge the empty fields of tabs.
                IFS=$'\x1f' read -r _ result req ok n503 orders failed recover note dur when \
                        <<<"${line//$'\t'/$'\x1f'}"
                printf '| %s | %s | %s (%ss) | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" \
                        "$(cell "${fault:-?}")" "$result" "$dur" "$req" "$ok" "$n503" "$orders" \
                        "$(cell "$failed")" "$recover" "$(cell "$note")" "$when"
        done
} >"$table"

if ! awk -v begin="$BEGIN" -v end="$END" -v table="$table" '
        $0 == begin { print; while ((getline l < table) > 0) print l; skip = 1; next }
        $0 == end { skip = 0 }
        !skip { print }
' "$DOC" 2>/dev/null >"$DOC.tmp" || ! mv -f "$DOC.tmp" "$DOC" 2>/dev/null; then
        # A read-only source tree (some CI checkouts): the figures stay in $RES.
        echo "faults_table: cannot write $DOC; the figures are in $RES" >&2
        exit 0
fi
echo "faults_table: $(grep -c '^| [0-9]' "$table") cases written to $DOC"
