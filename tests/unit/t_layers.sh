#!/bin/bash
# Calls go one way: no file calls a file of a higher layer beyond the
# calls contrib/layers.allow still lists (contrib/layers.sh).
command -v nm >/dev/null || { echo "SKIP: nm is missing (apt-get install binutils)"; exit 77; }
exec bash "$(dirname "$0")/../../contrib/layers.sh" "${top_builddir:-.}"
