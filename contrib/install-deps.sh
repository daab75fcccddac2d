#!/bin/sh
# Install what raidfs needs to build and test on Debian 12 (bookworm).
# Uses sudo when not run as root.  Safe to run again.
#
# A freshly booted Debian runs apt-daily and unattended-upgrades, which
# hold the package manager's locks for minutes: this waits for them (up to
# 10 minutes, saying so and who holds them) instead of failing with
# "Could not get lock".
set -e
PKGS="build-essential autoconf automake pkg-config libfuse3-dev fuse3 libjansson-dev libisal-dev zlib1g-dev python3 attr psmisc procps fio strace man-db groff-base"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
LOCK_WAIT=${LOCK_WAIT:-600}	# seconds
LOCKS="/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock"

# wait_for_apt: until no process holds a lock of dpkg or apt (fuser, from
# psmisc; without it apt's own DPkg::Lock::Timeout below waits)
wait_for_apt() {
	command -v fuser >/dev/null 2>&1 || return 0
	waited=0
	while pids=$($SUDO fuser $LOCKS 2>/dev/null) && pids=$(echo $pids) && [ -n "$pids" ]; do
		if [ "$waited" -eq 0 ]; then
			names=$(for p in $pids; do ps -o comm= -p "$p" 2>/dev/null; done | sort -u | tr '\n' ' ' | sed 's/ $//')
			echo "waiting for the package manager to finish (held by pid $pids${names:+: $names}; after a boot, usually unattended-upgrades), up to $((LOCK_WAIT / 60)) minutes..."
		fi
		if [ "$waited" -ge "$LOCK_WAIT" ]; then
			echo "install-deps.sh: the package manager is still busy after $((LOCK_WAIT / 60)) minutes (pid $pids): let it finish (or 'systemctl stop unattended-upgrades'), then run this again" >&2
			exit 1
		fi
		sleep 5
		waited=$((waited + 5))
	done
	[ "$waited" -eq 0 ] || echo "the package manager is free (waited ${waited} s)"
}

missing=""
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing:$missing"
	wait_for_apt
	$SUDO apt-get -o DPkg::Lock::Timeout="$LOCK_WAIT" update -qq
	wait_for_apt
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout="$LOCK_WAIT" install -y -qq $missing >/dev/null
fi
