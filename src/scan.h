/*
 * scan.h - arrays found by identity, not by path (layer 7, front).
 *
 * `raidfs scan [GLOB...]`, like `zpool import` without a pool: the
 * directories the globs match (also the `scan GLOB` lines of the config
 * file, /etc/raidfs.conf or $RAIDFS_CONF, and a mount's `-o scan=GLOB`)
 * are read for a member superblock, grouped by array uuid and judged
 * against each array's newest table (the highest event counter) the way
 * assembly judges them (array_claim()): which directory is each member,
 * which are stale or old, which members are missing.  A raidfs mount of
 * an array (/proc/self/mountinfo, fstype fuse.raidfs; its daemon asked
 * for the uuid) is noted.  `raidfs mount UUID=... MNT` and `raidfs mount
 * NAME MNT` take the directories of the array found (scan_find()) as the
 * member list and mount as an explicit list does: assembly decides, as
 * always, what each directory is.
 *
 * A scan only reads: it opens directories read-only, takes no lock,
 * writes nothing, and never enters a raidfs mount (a glob that matches a
 * mount point or a path inside one skips it: its daemon may be stuck).
 *
 * Functions return 0 or a negative errno; scan_find() an array index or
 * -1 with a message in err.  Not thread safe (the CLI only).
 */
#ifndef RAIDFS_SCAN_H
#define RAIDFS_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "array.h"
#include "superblock.h"

/* The config file: $RAIDFS_CONF when set, else this. */
#define SCAN_CONF_DEFAULT "/etc/raidfs.conf"
const char *scan_conf_path(void);

/* A directory that holds a raidfs superblock. */
struct scan_dir {
	char *path;		/* as the glob matched it */
	struct superblock sb;
	size_t array;		/* index in scan.arrays */
	enum array_claim claim;	/* what the array's newest table makes of it */
	uint32_t slot;
};

/* A directory matched that is not usable: a superblock that cannot be
 * read (corrupt, of an unknown format). */
struct scan_bad {
	char *path;
	char *why;
};

struct scan_array {
	struct superblock sb;	/* the newest table */
	size_t newest;		/* the directory it was read from */
	char *mounted;		/* its raidfs mount point, or NULL */
	bool mount_guessed;	/* mounted matched by name: its daemon did not answer */
	uint32_t absent;	/* members (not spares) without a directory in service */
	bool can_run;		/* no redundancy group misses more than it tolerates */
	bool name_unique;	/* no other array found has its name */
};

struct scan {
	char **globs;		/* every glob looked at, the config file's first */
	size_t nglobs, cap_globs;
	size_t nconf;		/* globs[0 .. nconf) came from the config file */
	struct scan_dir *dirs;
	size_t ndirs, cap_dirs;
	struct scan_bad *bad;
	size_t nbad, cap_bad;
	struct scan_array *arrays;
	size_t narrays, cap_arrays;
	char **mnts;		/* raidfs mount points (mountinfo) */
	char **mnt_src;		/* their sources (raidfs:NAME) */
	size_t nmnts;
};

/* The `scan GLOB...` lines of the config file at path (a file that does
 * not exist holds none) appended to s->globs; s->nconf counts them.
 * -errno with a message on stderr when it cannot be read. */
int scan_read_conf(struct scan *s, const char *path);
/* One more glob to look at. */
int scan_add_glob(struct scan *s, const char *glob);
/* Match every glob, read the superblocks, group them into arrays, find
 * their mounts.  0 or -ENOMEM. */
int scan_run(struct scan *s);
void scan_free(struct scan *s);
/* Only the raidfs mounts (s->mnts, s->mnt_src from /proc/self/mountinfo):
 * no glob, no superblock, no daemon asked.  For `raidfs monitor`, which
 * looks every few seconds.  0 or -ENOMEM. */
int scan_mounts(struct scan *s);

/* The array a mount names: "UUID=u" / "uuid=u" (the whole uuid) or a
 * name.  Its index, or -1 with err saying what was found instead. */
int scan_find(const struct scan *s, const char *spec, char *err, size_t errlen);
/* Does a mount's source name an array by identity (UUID=, or a name: no
 * '/' nor ':' and no such directory), rather than list its members? */
bool scan_is_identity(const char *source);

/* The directories of array k, as a mount takes them: every directory
 * found with its uuid (assembly decides which are used).  *paths is
 * allocated (the strings are s's); the count, or -ENOMEM. */
int scan_members(const struct scan *s, size_t k, char ***paths);

/* The report of `raidfs scan`: text (aligned) or JSON (documented in
 * docs/operations.md).  Each array's mount command carries -o scan= for
 * the globs that did not come from the config file. */
void scan_print(const struct scan *s, FILE *f);
int scan_print_json(const struct scan *s, FILE *f);

#endif
