/*
 * hidden.h - hidden names of open files that outlive a crash.
 *
 * When an open file is unlinked, libfuse renames it to ".fuse_hidden"
 * and 16 hex digits and removes that name at its last close.  A daemon
 * killed meanwhile never gets that close: the name and the file's bytes
 * would stay on every member for good, and a user's own file of that form
 * (closed long ago) looks the same.  So raidfs writes each such name down,
 * with the raidfs id of the file under it, on every member in service
 * before the rename (.raidfs/hidden/, one small file per name;
 * docs/format.md) and drops the note when the name goes.  The next mount
 * hands the names still noted to the monitor's sweep (fuse.c), which
 * removes them - only when the file there is still the one noted (same
 * id): a note left stale (the name went while a member was out of
 * service, its directory renamed, an exchange) never removes another file.
 *
 * The notes are written, not synced: they cover a crash of the daemon (a
 * power loss of the machine may lose a note and leave its name).
 */
#ifndef RAIDFS_HIDDEN_H
#define RAIDFS_HIDDEN_H

#include <stdint.h>

struct array;

/* Before the rename to the hidden name relpath (relative to the array's
 * root): 0 when at least one member holds the note, else -errno (logged;
 * the rename goes ahead all the same: the note only serves a cleanup). */
int hidden_mark(struct array *a, const char *relpath, uint64_t id);
/* The name is gone (or never came): its note goes from every member in
 * service. */
void hidden_unmark(struct array *a, const char *relpath);
/* Every name noted on a member in service, once each: fn(relpath, id,
 * arg). */
void hidden_each(struct array *a, void (*fn)(const char *relpath, uint64_t id, void *arg), void *arg);

#endif
