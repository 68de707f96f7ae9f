#!/usr/bin/env bash
# tests/unit/ops_options_doc.sh: the option tables of docs/OPERATIONS.md ("Configuration")
# are what the binaries declare. Each binary prints them with --help-markdown, rendered
# from its option table (common/base/conf_table.c for the common options, the table of
# its main.c for its own): the common table (the same in every binary, checked), then
# the rows of each binary's own options, front, consumer, reconciler, admin. They go
# between the markers <!-- options-common:begin/end --> and
# <!-- options-binary:begin/end -->; nothing else of the file is read or written.
#   ops_options_doc.sh           check: exit 1 with the diff if the document drifted
#   ops_options_doc.sh --write   rewrite the two tables in place (after a build)
# No services. Env: SK_BIN (the binaries; default build/bin under the source root).
set -uo pipefail
SRC=${SK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${SK_BIN:-$SRC/build/bin}
DOC=$SRC/docs/OPERATIONS.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for b in seckill-front seckill-consumer seckill-reconciler seckill-admin; do
        if ! env -i PATH="$PATH" "$BIN/$b" --help-markdown >"$tmp/$b"; then
                echo "FAIL: $b --help-markdown"
                exit 1
        fi
        sed -n '/^<!-- common -->$/,/^<!-- seckill-/p' "$tmp/$b" | sed '1d;$d' >"$tmp/$b.common"
        sed -n '/^<!-- seckill-/,$p' "$tmp/$b" | sed '1d' >"$tmp/$b.own"
        if ! cmp -s "$tmp/seckill-front.common" "$tmp/$b.common" || [[ ! -s $tmp/$b.own ]]; then
                echo "FAIL: $b --help-markdown: no own table, or a common table unlike seckill-front's"
                exit 1
        fi
done
cp "$tmp/seckill-front.common" "$tmp/common"
{
        cat "$tmp/seckill-front.own"
        for b in seckill-consumer seckill-reconciler seckill-admin; do
                tail -n +3 "$tmp/$b.own"        # without the header
        done
} >"$tmp/binary"

for m in common binary; do
        for e in begin end; do
                n=$(grep -c "^<!-- options-$m:$e -->\$" "$DOC")
                [[ $n -eq 1 ]] || { echo "FAIL: $DOC has $n '<!-- options-$m:$e -->' lines (want 1)"; exit 1; }
        done
done
awk -v c="$tmp/common" -v b="$tmp/binary" '
        /^<!-- options-(common|binary):end -->$/ { skip = 0 }
        !skip { print }
        /^<!-- options-common:begin -->$/ { while ((getline l < c) > 0) print l; skip = 1 }
        /^<!-- options-binary:begin -->$/ { while ((getline l < b) > 0) print l; skip = 1 }
' "$DOC" >"$tmp/doc"

if [[ ${1:-} == --write ]]; then
        cp "$tmp/doc" "$DOC"
        echo "ops_options_doc: wrote the option tables of $DOC"
        exit 0
fi
if ! diff -u "$DOC" "$tmp/doc"; then
        echo "ops_options_doc: FAIL: docs/OPERATIONS.md's option tables differ from what the binaries"
        echo "declare (above); after a build run: tests/unit/ops_options_doc.sh --write"
        exit 1
fi
echo "ops_options_doc: PASS"
