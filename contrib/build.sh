#!/bin/sh
# Build raidfs in the source tree (autoreconf, configure, make).
set -e
cd "$(dirname "$0")/.."
[ -x configure ] && [ configure -nt configure.ac ] && [ -f Makefile ] || {
	autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
	./configure -q
}
make -s -j"$(nproc)"
