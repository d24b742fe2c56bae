#!/usr/bin/env bash
# The duplicate count of the README's layout notes (`make duplicates`): the `duplicates` tool
# (from this project's development machines' tool library; not needed to build or test) over the
# hand-written, non-test Go code (no *_test.go, no zz_generated*), each pair it lists sorted
# into one kind:
#   api       a pair with a side in internal/api/: API types that keep upstream Liqo's shapes
#   shell     a provider/-only pair the tool marks boilerplate: plugin-framework shells
#             (Metadata, Schema, model structs), which the issue that set the goal lets stay
#   imports   both sides inside import blocks
#   code      the rest: what the goal counts (code pairs, at most 100); the tool lists 200 pairs at
#             most, so the pairs it leaves out (the least shared) count as code pairs too
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v duplicates >/dev/null; then
	echo "duplicates: the tool is not on PATH (it comes with the development machines' tool library)" >&2
	exit 1
fi
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
git ls-files -co --exclude-standard '*.go' | grep -v -e '_test\.go$' -e 'zz_generated' | while read -r f; do
	mkdir -p "$tree/$(dirname "$f")"
	cp "$f" "$tree/$f"
done
rows=$(cd "$tree" && duplicates --seconds 120 --most 200)
echo "$rows" | sed -n 1p

# importRange prints the first and last line of a file's import block (0 0 without one).
importRange() {
	awk '/^import \($/ { s = NR } s && /^\)$/ { print s, NR; found = 1; exit } END { if (!found) print 0, 0 }' "$tree/$1"
}

declare -A count=([api]=0 [shell]=0 [imports]=0 [code]=0)
code=()
while read -r row; do
	[[ $row =~ ^D[0-9]+ ]] || continue
	read -r _ a _ b _ <<<"$row"
	fa=${a%%:*} fb=${b%%:*}
	kind=code
	if [[ $fa == internal/api/* || $fb == internal/api/* ]]; then
		kind=api
	elif [[ $fa == provider/* && $fb == provider/* && $row == *boilerplate* ]]; then
		kind=shell
	else
		inside=1
		for side in "$a" "$b"; do
			f=${side%%:*} range=${side#*:}
			read -r s e < <(importRange "$f")
			((s <= ${range%-*} && ${range#*-} <= e + 1)) || inside=0
		done
		((inside)) && kind=imports
	fi
	count[$kind]=$((count[$kind] + 1))
	[[ $kind == code ]] && code+=("$row")
done <<<"$rows"
# The tool lists 200 pairs at most, the most shared first: the rest may all be code pairs.
total=$(echo "$rows" | sed -n 1p | awk '{print $1}')
listed=$((count[api] + count[shell] + count[imports] + count[code]))
unlisted=$((total - listed))
echo "of the $listed listed: api types: ${count[api]}, plugin-framework shells: ${count[shell]}, import blocks: ${count[imports]}, code pairs: ${count[code]}"
echo "code pairs: at most $((count[code] + unlisted)) (the $unlisted pairs past the tool's 200 rows counted as code; goal: at most 100)"
printf '%s\n' "${code[@]}"
