/*
 * test_inode.c - unit test of src/inode.c, the FUSE layer's node table.
 *
 *   - lookups: one node per (inode number, epoch), so two names of one
 *     file are one node; a new epoch gives a new node;
 *   - paths: built from the names, through renames of a directory, an
 *     exchange, an unlink that leaves another link, a name looked up
 *     again after a new primary (the old node's children stay reachable
 *     through its past name);
 *   - orphans: an open file's last name becomes its orphan name until its
 *     last close, which returns its id; a closed file is not orphaned;
 *   - forget: a node goes at 0 lookups when not open; an unknown node's
 *     path is ESTALE.
 *
 * Exit status 0 when everything passed, 1 otherwise.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "inode.h"

static int failures;

static void path_is(uint64_t id, const char *name, const char *want)
{
	char buf[PATH_MAX];
	int r = inode_path(id, name, buf, sizeof(buf));
	if (r < 0 ? strcmp(want, strerror(-r)) != 0 : strcmp(buf, want) != 0) {
		fprintf(stderr, "FAIL: path of %llu/%s: '%s', expected '%s'\n", (unsigned long long)id,
			name ? name : "", r < 0 ? strerror(-r) : buf, want);
		failures++;
	}
}

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "FAIL: %s\n", what);
		failures++;
	}
}

int main(void)
{
	inode_init();
	path_is(INODE_ROOT, NULL, "/");
	path_is(INODE_ROOT, "a", "/a");
	uint64_t d = inode_found(INODE_ROOT, "d", 100, 1);
	uint64_t f = inode_found(d, "f", 200, 1);
	uint64_t g = inode_found(d, "g", 200, 1);
	check(d && f && f == g, "two names of one file are one node");
	path_is(f, NULL, "/d/g");
	inode_unlinked(d, "g");
	path_is(f, NULL, "/d/f");	/* (the other link keeps it reachable) */
	inode_renamed(INODE_ROOT, "d", INODE_ROOT, "e", 0);
	path_is(f, NULL, "/e/f");
	path_is(d, "x", "/e/x");
	uint64_t h = inode_found(INODE_ROOT, "h", 300, 1);
	inode_renamed(d, "f", INODE_ROOT, "h", 2 /* RENAME_EXCHANGE */);
	path_is(f, NULL, "/h");
	path_is(h, NULL, "/e/f");

	/* a new primary: the directory's name goes to a new node */
	uint64_t d2 = inode_found(INODE_ROOT, "e", 900, 2);
	check(d2 && d2 != d, "a new epoch gives a new node");
	path_is(d2, NULL, "/e");
	path_is(h, NULL, "/e/f");	/* (through the old node's past name) */
	path_is(d, "new", "/e/new");

	/* orphans */
	inode_opened(h, NULL);
	check(inode_orphan(d, "f", 0xab) == h, "an open file's last name becomes its orphan name");
	path_is(h, NULL, "/" INODE_ORPHAN_DIR "/00000000000000ab");
	check(inode_closed(h) == 0xab, "the last close returns the orphan's id");
	path_is(h, NULL, strerror(ESTALE));
	uint64_t k = inode_found(d2, "k", 400, 2);
	check(inode_orphan(d2, "k", 0xcd) == 0, "a closed file is not orphaned");
	inode_opened(k, NULL);
	check(inode_orphan(d2, "k", 0xcd) == k, "orphaned when open");
	inode_unorphan(k, d2, "k");
	path_is(k, NULL, "/e/k");
	check(inode_closed(k) == 0, "an orphaning undone leaves no orphan");

	/* forget */
	uint64_t before = inode_count();
	inode_forget(k, 1);
	check(inode_count() == before - 1, "a node goes at 0 lookups");
	path_is(k, NULL, strerror(ESTALE));
	inode_forget(INODE_ROOT, 5);
	path_is(INODE_ROOT, NULL, "/");
	if (!failures)
		printf("test_inode: all passed\n");
	return failures ? 1 : 0;
}
