/*
 * alert.h - `raidfs monitor`: watch every mounted array and tell, as
 * `mdadm --monitor` and ZED do (layer 7, front: a client of the daemons'
 * control sockets, ctl.c; the mounts come from /proc/self/mountinfo
 * through scan_mounts()).  Not the daemon's member monitor (monitor.c),
 * which runs inside each mount.
 *
 * How it learns what happened (docs/operations.md, "Monitor and alerts"):
 * each look asks every daemon for its status (status-json) and for the
 * events it posted since the last one it saw (the "events SINCE" request:
 * event_history(), numbered, so none is missed between two looks and none
 * is told twice).  The daemon's events are told as they are (Fail,
 * DegradedArray, RebuildStarted, RebuildFinished, BbuFailed, ...), in the
 * daemon's order; then what only the status shows, on a change since the
 * last look: NoRedundancy, NearlyFull, ErrorsRising (a member's READ,
 * WRITE or CKSUM counter went up), ScrubFinished (from a daemon that does
 * not post it).  A new look at an array (the monitor started, the array
 * mounted, its daemon restarted) tells no old event: it tells the
 * problems present once (DegradedArray or ArrayFailed, NoRedundancy,
 * NearlyFull, ErrorsRising, BbuFailed, a scrub's unrepaired mismatches),
 * as mdadm --monitor does at start.
 *
 * Each event is told as one line (stdout with a timestamp, or syslog
 * with --syslog) and to --program PATH, run as the mount's event_program
 * is (event.c): `PATH EVENT MOUNTPOINT MEMBER` (MEMBER "" for the array),
 * one at a time, in order; details in the environment (RAIDFS_ARRAY,
 * RAIDFS_UUID, RAIDFS_EVENT_DETAIL "k=v ...", RAIDFS_<K> for each pair).
 *
 * Single threaded; only main() calls it.
 */
#ifndef RAIDFS_ALERT_H
#define RAIDFS_ALERT_H

/* raidfs monitor [--program PATH] [--syslog] [--interval SECONDS] [--timeout SECONDS]
 *                [--oneshot | --test] [MOUNTPOINT...]
 * argv[0] is "monitor".  Returns the exit status: watching, 0 once
 * stopped by SIGTERM or SIGINT; --oneshot 0 when nothing was told, 1 when
 * something was; --test 0, or 1 when no array is mounted; 2 on bad
 * usage. */
int alert_main(int argc, char **argv);

#endif
