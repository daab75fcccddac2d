#!/bin/sh
# Install what raidfs needs to build and test on Debian 12 (bookworm).
# Uses sudo when not run as root.  Safe to run again.
set -e
PKGS="build-essential autoconf automake pkg-config libfuse3-dev fuse3 libjansson-dev libisal-dev zlib1g-dev python3 attr psmisc procps fio strace"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=""
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing:$missing"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
