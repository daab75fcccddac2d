#!/bin/bash
# layers.sh - the file-level call graph of raidfs, and the check that
# calls go one way (docs/architecture.md, "Layers").
#
#   contrib/layers.sh [BUILDDIR]          check; exit 1 on a new upward call
#   contrib/layers.sh --graph [BUILDDIR]  print "caller -> callee (n): symbols"
#   contrib/layers.sh --prune [BUILDDIR]  drop allowed calls that are gone
#
# It reads the object files of a built tree (nm), so it sees real calls,
# not includes.  A call from a file to a file of a higher layer fails the
# check unless contrib/layers.allow lists it ("caller -> callee symbol");
# that list holds the calls not yet turned around and only shrinks.  An
# allowed call that no longer exists is reported too, so the list stays
# true.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mode=check
case "${1:-}" in --graph|--prune) mode=${1#--}; shift;; esac
build=${1:-${top_builddir:-$here/..}}

# layer of each source file, lowest first (keep in step with the docs)
declare -A layer=(
	[util]=0 [pair]=0 [parity]=0
	[member]=1 [superblock]=1 [meta]=1 [csum]=1 [nslock]=1 [layout]=1 [recon]=1
	[counters]=1
	[array]=2 [event]=2
	[stripe]=3 [guard]=3 [nsintent]=3
	[file]=4
	[cache]=5 [cachelog]=5 [cachepolicy]=5
	[resync]=6 [rebuild]=6 [scrub]=6 [monitor]=6 [check]=6
	[inode]=7 [fuse]=7 [ctl]=7 [scan]=7 [alert]=7
	[mount]=8 [main]=8
)

objs=$(ls "$build"/src/*.o "$build"/isal-glue/*.o 2>/dev/null)
[ -n "$objs" ] || { echo "layers.sh: no object files under '$build' (build first: sh contrib/build.sh)" >&2; exit 2; }

declare -A def
for o in $objs; do
	f=$(basename "$o" .o)
	for s in $(nm --defined-only -g "$o" | awk '$2 ~ /[TDBRCV]/ {print $3}'); do def[$s]=$f; done
done
edges=$(for o in $objs; do
	f=$(basename "$o" .o)
	for s in $(nm -u "$o" | awk '{print $2}'); do
		t=${def[$s]:-}
		[ -n "$t" ] && [ "$t" != "$f" ] && echo "$f $t $s"
	done
done | sort -u)

if [ $mode = graph ]; then
	echo "$edges" | awk '{k=$1" -> "$2; a[k]=a[k]" "$3; n[k]++} END {for (k in a) print k" ("n[k]"):"a[k]}' | sort
	exit 0
fi

rc=0
for f in $(echo "$edges" | awk '{print $1; print $2}' | sort -u); do
	[ -n "${layer[$f]:-}" ] || { echo "layers.sh: file '$f' has no layer: add it to contrib/layers.sh and docs/architecture.md" >&2; rc=1; }
done
allow=$(grep -v '^#' "$here/layers.allow" 2>/dev/null | awk 'NF == 4 {print $1, $3, $4}' | sort -u)
up=$(echo "$edges" | while read -r f t s; do
	[ -n "${layer[$f]:-}" ] && [ -n "${layer[$t]:-}" ] && [ "${layer[$f]}" -lt "${layer[$t]}" ] && echo "$f $t $s"
done)
new=$(comm -23 <(echo "$up" | grep . | sort) <(echo "$allow" | grep . | sort))
gone=$(comm -13 <(echo "$up" | grep . | sort) <(echo "$allow" | grep . | sort))
if [ -n "$new" ]; then
	echo "layers.sh: calls from a lower layer to a higher one (turn them into a registered callback, or move the code):" >&2
	echo "$new" | awk '{print "  " $1 " -> " $2 " " $3}' >&2
	rc=1
fi
if [ -n "$gone" ] && [ $mode = prune ]; then
	echo "$gone" | while read -r f t s; do
		sed -i "/^$f -> $t $s\$/d" "$here/layers.allow"
	done
	gone=
fi
if [ -n "$gone" ]; then
	echo "layers.sh: contrib/layers.allow lists calls that no longer exist; remove them:" >&2
	echo "$gone" | awk '{print "  " $1 " -> " $2 " " $3}' >&2
	rc=1
fi
# same-layer files must not call each other in a loop
cyc=$(echo "$edges" | awk '{print $1, $2}' | sort -u | while read -r f t; do
	[ "${layer[$f]:-x}" = "${layer[$t]:-y}" ] && [[ "$f" < "$t" ]] && echo "$edges" | grep -q "^$t $f " && echo "$f <-> $t"
done)
cyc_allowed=$(grep '^#cycle ' "$here/layers.allow" 2>/dev/null | awk '{print $2, $3, $4}')
cyc_gone=$(comm -13 <(echo "$cyc" | grep . | sort) <(echo "$cyc_allowed" | grep . | sort))
if [ -n "$cyc_gone" ]; then
	if [ $mode = prune ]; then
		echo "$cyc_gone" | while read -r f x t; do sed -i "/^#cycle $f <-> $t\$/d" "$here/layers.allow"; done
	else
		echo "layers.sh: contrib/layers.allow allows loops that are gone; remove them:" >&2
		echo "$cyc_gone" | sed 's/^/  /' >&2
		rc=1
	fi
fi
cyc=$(comm -23 <(echo "$cyc" | grep . | sort) <(echo "$cyc_allowed" | grep . | sort))
if [ -n "$cyc" ]; then
	echo "layers.sh: files of one layer that call each other:" >&2
	echo "$cyc" | sed 's/^/  /' >&2
	rc=1
fi
n=$(echo "$up" | grep -c .)
[ $rc = 0 ] && echo "layers.sh: calls go one way ($n upward calls still allowed in contrib/layers.allow)"
exit $rc
