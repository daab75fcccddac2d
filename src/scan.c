/*
 * scan.c - arrays found by identity: the directories some globs match,
 * their superblocks grouped by array uuid, judged as assembly would
 * judge them, and the mounts of those arrays (scan.h).
 *
 * Why globs and superblocks rather than recorded paths: a disk's mount
 * path changes (a replaced member, a re-cabled disk), and the paths a
 * superblock records are for messages only (docs/format.md, "Member
 * identity").  mdadm --assemble --scan and zpool import find members by
 * their labels the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "layout.h"
#include "scan.h"
#include "util.h"

const char *scan_conf_path(void)
{
	const char *p = getenv("RAIDFS_CONF");
	return p && *p ? p : SCAN_CONF_DEFAULT;
}

int scan_add_glob(struct scan *s, const char *glob)
{
	return util_names_add(&s->globs, &s->nglobs, &s->cap_globs, glob) ? 0 : -ENOMEM;
}

int scan_read_conf(struct scan *s, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		int e = errno;
		fprintf(stderr, "raidfs: cannot read the config file '%s': %s\n", path, strerror(e));
		return -e;
	}
	char line[4096];
	int no = 0, r = 0;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		no++;
		char *save = NULL, *w = strtok_r(line, " \t\r\n", &save);
		if (!w || w[0] == '#')
			continue;
		if (strcmp(w, "scan") != 0) {
			fprintf(stderr, "raidfs: warning: '%s' line %d: unknown keyword '%s' ignored (this raidfs knows 'scan GLOB...')\n",
				path, no, w);
			continue;
		}
		while (r == 0 && (w = strtok_r(NULL, " \t\r\n", &save)) && w[0] != '#')
			if ((r = scan_add_glob(s, w)) == 0)
				s->nconf++;
	}
	fclose(f);
	return r;
}

void scan_free(struct scan *s)
{
	for (size_t i = 0; i < s->nglobs; i++)
		free(s->globs[i]);
	for (size_t i = 0; i < s->ndirs; i++)
		free(s->dirs[i].path);
	for (size_t i = 0; i < s->nbad; i++) {
		free(s->bad[i].path);
		free(s->bad[i].why);
	}
	ctl_mounts_free(s->mnts, (int)s->nmnts);
	ctl_mounts_free(s->mnt_src, (int)s->nmnts);
	free(s->globs);
	free(s->dirs);
	free(s->bad);
	free(s->arrays);
	memset(s, 0, sizeof(*s));
}

/* ---------------------------------------------------------------- mounts */

/* The raidfs mounts of /proc/self/mountinfo (fstype fuse.raidfs). */
static int read_mounts(struct scan *s)
{
	int n = ctl_mounts(&s->mnts, &s->mnt_src);
	if (n == -ENOMEM)
		return n;
	s->nmnts = n > 0 ? (size_t)n : 0;	/* (no /proc: nothing is known to be mounted) */
	return 0;
}

int scan_mounts(struct scan *s)
{
	return read_mounts(s);
}

/* path (absolute) is a raidfs mount point or inside one: not entered */
static bool in_raidfs_mount(const struct scan *s, const char *path)
{
	for (size_t i = 0; i < s->nmnts; i++) {
		size_t l = strlen(s->mnts[i]);
		if (!strncmp(path, s->mnts[i], l) && (path[l] == '\0' || path[l] == '/' || l == 1))
			return true;
	}
	return false;
}

/* The array uuid the daemon serving mount point mnt reports, into
 * uuid[37]; false when it does not answer. */
static bool mount_uuid(const char *mnt, char uuid[37])
{
	static char reply[1 << 16];
	reply[0] = '\0';
	ctl_request(mnt, "status-json", true, reply, sizeof(reply));
	json_t *doc = json_loads(reply, 0, NULL);
	const char *u = doc ? json_string_value(json_object_get(doc, "uuid")) : NULL;
	bool ok = u && strlen(u) == 36;
	if (ok)
		memcpy(uuid, u, 37);
	json_decref(doc);
	return ok;
}

/* Which array each raidfs mount serves: the uuid its daemon reports;
 * a daemon that does not answer, by the name in its source (raidfs:NAME)
 * when only one array found has that name. */
static void match_mounts(struct scan *s)
{
	for (size_t i = 0; i < s->nmnts; i++) {
		char uuid[37], u2[37];
		bool known = mount_uuid(s->mnts[i], uuid);
		const char *name = !strncmp(s->mnt_src[i], "raidfs:", 7) ? s->mnt_src[i] + 7 : s->mnt_src[i];
		for (size_t k = 0; k < s->narrays; k++) {
			struct scan_array *a = &s->arrays[k];
			sb_uuid_str(a->sb.uuid, u2);
			if (known ? !strcasecmp(uuid, u2) : (a->name_unique && !strcmp(a->sb.name, name))) {
				if (!a->mounted) {
					a->mounted = s->mnts[i];
					a->mount_guessed = !known;
				}
				break;
			}
		}
	}
}

/* ------------------------------------------------------------------ scan */

/* Read the superblock of one matched directory (dups: already seen). */
static int look_at(struct scan *s, const char *path, dev_t *devs, ino_t *inos, size_t *nseen)
{
	char absbuf[2 * PATH_MAX + 2], cwd[PATH_MAX];
	const char *abs = path;
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd))) {
		snprintf(absbuf, sizeof(absbuf), "%s/%s", strcmp(cwd, "/") ? cwd : "", path);
		abs = absbuf;
	}
	if (in_raidfs_mount(s, abs))
		return 0;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;	/* (not a directory, or gone) */
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	for (size_t i = 0; i < *nseen; i++)
		if (devs[i] == st.st_dev && inos[i] == st.st_ino) {
			close(fd);
			return 0;	/* matched twice (two globs, a symlink) */
		}
	struct superblock sb;
	const char *why = NULL;
	int r = sb_read(fd, &sb, &why);
	close(fd);
	if (r == -ENOENT)
		return 0;	/* not a member */
	devs[*nseen] = st.st_dev;
	inos[(*nseen)++] = st.st_ino;
	if (r < 0) {
		if (UTIL_GROW(s->bad, s->cap_bad, s->nbad + 1) < 0)
			return -ENOMEM;
		struct scan_bad *b = &s->bad[s->nbad];
		b->path = strdup(path);
		b->why = strdup(why ? why : strerror(-r));
		if (!b->path || !b->why) {
			free(b->path);
			free(b->why);
			return -ENOMEM;
		}
		s->nbad++;
		return 0;
	}
	if (UTIL_GROW(s->dirs, s->cap_dirs, s->ndirs + 1) < 0)
		return -ENOMEM;
	struct scan_dir *d = &s->dirs[s->ndirs];
	memset(d, 0, sizeof(*d));
	d->path = strdup(path);
	if (!d->path)
		return -ENOMEM;
	d->sb = sb;
	s->ndirs++;
	return 0;
}

/* Group the directories by array uuid; judge each against its array's
 * newest table. */
static int group(struct scan *s)
{
	for (size_t i = 0; i < s->ndirs; i++) {
		struct scan_dir *d = &s->dirs[i];
		size_t k;
		for (k = 0; k < s->narrays; k++)
			if (!memcmp(s->arrays[k].sb.uuid, d->sb.uuid, 16))
				break;
		if (k == s->narrays) {
			if (UTIL_GROW(s->arrays, s->cap_arrays, s->narrays + 1) < 0)
				return -ENOMEM;
			memset(&s->arrays[k], 0, sizeof(s->arrays[k]));
			s->arrays[k].sb = d->sb;
			s->arrays[k].newest = i;
			s->narrays++;
		} else if (d->sb.events > s->arrays[k].sb.events) {
			s->arrays[k].sb = d->sb;
			s->arrays[k].newest = i;
		}
		d->array = k;
	}
	for (size_t i = 0; i < s->ndirs; i++) {
		struct scan_dir *d = &s->dirs[i];
		int taken;
		d->claim = array_claim(&s->arrays[d->array].sb, &d->sb, &d->slot, &taken);
	}
	for (size_t k = 0; k < s->narrays; k++) {
		struct scan_array *a = &s->arrays[k];
		struct layout l;
		bool online[LAYOUT_MAX_WIDTH] = { false };
		for (size_t i = 0; i < s->ndirs; i++)
			if (s->dirs[i].array == k && s->dirs[i].claim == CLAIM_ONLINE && s->dirs[i].slot < LAYOUT_MAX_WIDTH)
				online[s->dirs[i].slot] = true;
		a->can_run = layout_init(&l, a->sb.level, a->sb.chunk, a->sb.width, a->sb.groups, 0, NULL) == 0;
		for (uint32_t g = 0; a->can_run && g < l.groups; g++) {
			uint32_t lost = 0;
			for (uint32_t p = 0; p < l.gw; p++)
				lost += !online[g * l.gw + p];
			a->can_run = lost <= l.m;
			a->absent += lost;
		}
		a->name_unique = true;
		for (size_t o = 0; o < s->narrays; o++)
			if (o != k && !strcmp(s->arrays[o].sb.name, a->sb.name))
				a->name_unique = false;
	}
	return 0;
}

int scan_run(struct scan *s)
{
	int r = read_mounts(s);
	dev_t *devs = NULL;
	ino_t *inos = NULL;
	size_t nseen = 0, cap = 0, cap2 = 0;
	for (size_t gi = 0; r == 0 && gi < s->nglobs; gi++) {
		glob_t gl;
		if (glob(s->globs[gi], GLOB_BRACE | GLOB_TILDE | GLOB_ONLYDIR, NULL, &gl) != 0)
			continue;	/* (matches nothing) */
		for (size_t i = 0; r == 0 && i < gl.gl_pathc; i++) {
			if (UTIL_GROW(devs, cap, nseen + 1) < 0 || UTIL_GROW(inos, cap2, nseen + 1) < 0)
				r = -ENOMEM;
			else
				r = look_at(s, gl.gl_pathv[i], devs, inos, &nseen);
		}
		globfree(&gl);
	}
	free(devs);
	free(inos);
	if (r == 0)
		r = group(s);
	if (r == 0)
		match_mounts(s);
	return r;
}

/* ------------------------------------------------------------- find, use */

bool scan_is_identity(const char *source)
{
	struct stat st;
	if (!strncmp(source, "UUID=", 5) || !strncmp(source, "uuid=", 5))
		return true;
	return *source && !strchr(source, '/') && !strchr(source, ':') && stat(source, &st) < 0;
}

/* "'a' (uuid U), 'b' (uuid V)" of every array found, into buf */
static void list_arrays(const struct scan *s, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t k = 0; k < s->narrays && off < len; k++) {
		char u[37];
		sb_uuid_str(s->arrays[k].sb.uuid, u);
		off += snprintf(buf + off, len - off, "%s'%s' (uuid %s)", k ? ", " : "", s->arrays[k].sb.name, u);
	}
}

static void list_globs(const struct scan *s, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < s->nglobs && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s", i ? " " : "", s->globs[i]);
}

int scan_find(const struct scan *s, const char *spec, char *err, size_t errlen)
{
	bool by_uuid = !strncmp(spec, "UUID=", 5) || !strncmp(spec, "uuid=", 5);
	const char *want = by_uuid ? spec + 5 : spec;
	int found = -1, count = 0;
	char list[2048], globs[1024];
	for (size_t k = 0; k < s->narrays; k++) {
		char u[37];
		sb_uuid_str(s->arrays[k].sb.uuid, u);
		if (by_uuid ? !strcasecmp(u, want) : !strcmp(s->arrays[k].sb.name, want)) {
			if (found < 0)
				found = (int)k;
			count++;
		}
	}
	if (count == 1)
		return found;
	list_globs(s, globs, sizeof(globs));
	if (count > 1) {
		size_t off = 0;
		list[0] = '\0';
		for (size_t k = 0; k < s->narrays && off < sizeof(list); k++) {
			char u[37];
			if (strcmp(s->arrays[k].sb.name, want) != 0)
				continue;
			sb_uuid_str(s->arrays[k].sb.uuid, u);
			off += snprintf(list + off, sizeof(list) - off, "%suuid %s (%s, member '%s')", off ? "; " : "", u,
					layout_level_name(s->arrays[k].sb.level), s->dirs[s->arrays[k].newest].path);
		}
		snprintf(err, errlen, "%d arrays are named '%s': %s; mount one of them by its uuid (raidfs mount UUID=... MOUNTPOINT)",
			 count, want, list);
		return -1;
	}
	if (s->nglobs == 0) {
		snprintf(err, errlen, "no directories to look for array %s'%s' in: give them with -o scan=GLOB (for example -o 'scan=/srv/disk*'), or add a line 'scan GLOB' to %s",
			 by_uuid ? "uuid " : "", want, scan_conf_path());
		return -1;
	}
	list_arrays(s, list, sizeof(list));
	snprintf(err, errlen, "no array with %s '%s' found in %s (%zu member director%s found%s%s); is the disk mounted? give its directories with -o scan=GLOB or in a line 'scan GLOB' in %s; 'raidfs scan' lists what is found",
		 by_uuid ? "uuid" : "name", want, globs, s->ndirs, s->ndirs == 1 ? "y" : "ies",
		 s->narrays ? ", of " : "", list, scan_conf_path());
	return -1;
}

int scan_members(const struct scan *s, size_t k, char ***paths)
{
	size_t n = 0;
	*paths = calloc(s->ndirs ? s->ndirs : 1, sizeof(char *));
	if (!*paths)
		return -ENOMEM;
	for (size_t i = 0; i < s->ndirs; i++)
		if (s->dirs[i].array == k)
			(*paths)[n++] = s->dirs[i].path;
	return (int)n;
}

/* ---------------------------------------------------------------- report */

/*
 * One row of an array's member table.  A slot (member or spare) with no
 * directory in service gets a "missing" row; every directory found gets
 * a row, with what a mount would make of it:
 *   present     in service (a member, a spare)
 *   rebuilding  in service, its rebuild resumed at mount
 *   stale       missed changes while it was away (event counter behind):
 *               not used; 'raidfs add' once mounted resyncs it
 *   faulty, removed   recorded so by the others: not used
 *   old         a directory the slot had before it was rebuilt or
 *               replaced onto another one: not used
 *   replacement the replacement in place of a member, resumed at mount
 */
struct row {
	const char *slot;	/* "0", "spare", "repl", "?" */
	char slotbuf[16];
	const char *state;
	const struct scan_dir *dir;	/* NULL: missing */
	const char *last_seen;	/* missing: the path the table records */
	char note[160];
};

static const char *claim_state(const struct scan_array *a, const struct scan_dir *d)
{
	switch (d->claim) {
	case CLAIM_ONLINE:
	case CLAIM_SPARE: return "present";
	case CLAIM_REBUILDING: return "rebuilding";
	case CLAIM_REPLACEMENT: return "replacement";
	case CLAIM_STALE: return "stale";
	case CLAIM_OUT: return member_state_name(a->sb.members[d->slot].state);
	case CLAIM_REPLACED:
	case CLAIM_REBUILT_SINCE:
	case CLAIM_OTHER_UUID: return "old";
	case CLAIM_CORRUPT: return "corrupt";
	}
	return "unknown";
}

static bool in_service(enum array_claim c)
{
	return c == CLAIM_ONLINE || c == CLAIM_REBUILDING || c == CLAIM_SPARE;
}

static void row_note(const struct scan_array *a, const struct scan_dir *d, struct row *r)
{
	switch (d->claim) {
	case CLAIM_STALE:
		snprintf(r->note, sizeof(r->note), "missed changes: event count %" PRIu64 " < %" PRIu64, d->sb.events,
			 a->sb.events);
		break;
	case CLAIM_REPLACED:
	case CLAIM_REBUILT_SINCE:
	case CLAIM_OTHER_UUID:
		snprintf(r->note, sizeof(r->note), "the slot went to another directory since (last recorded at %.80s)",
			 a->sb.members[d->slot].path);
		break;
	case CLAIM_REPLACEMENT:
		snprintf(r->note, sizeof(r->note), "of member %u", d->sb.repl_of);
		break;
	case CLAIM_CORRUPT:
		snprintf(r->note, sizeof(r->note), "claims index %u of a %u-member array", d->sb.index, a->sb.width);
		break;
	default:
		break;
	}
}

/* The rows of array k, slot by slot; the count (rows has room for
 * width + spares + every directory). */
static size_t array_rows(const struct scan *s, size_t k, struct row *rows)
{
	const struct scan_array *a = &s->arrays[k];
	size_t n = 0;
	for (uint32_t j = 0; j < a->sb.width + a->sb.nspares; j++) {
		bool served = false;	/* a row says what the slot has */
		for (size_t i = 0; i < s->ndirs; i++) {
			const struct scan_dir *d = &s->dirs[i];
			if (d->array != k || d->claim == CLAIM_REPLACEMENT || d->claim == CLAIM_CORRUPT || d->slot != j)
				continue;
			struct row *r = &rows[n++];
			memset(r, 0, sizeof(*r));
			r->dir = d;
			r->state = claim_state(a, d);
			row_note(a, d, r);
			/* (a stale or out-of-service directory of the slot's
			 * own identity says by itself why the slot is empty) */
			served |= in_service(d->claim) || d->claim == CLAIM_STALE || d->claim == CLAIM_OUT;
		}
		if (!served) {
			struct row *r = &rows[n++];
			memset(r, 0, sizeof(*r));
			r->state = "missing";
			r->last_seen = a->sb.members[j].path;
			if (a->sb.members[j].state != MS_ONLINE && a->sb.members[j].state != MS_SPARE)
				snprintf(r->note, sizeof(r->note), "recorded %s", member_state_name(a->sb.members[j].state));
		}
		for (size_t x = n; x > 0 && !rows[x - 1].slot; x--) {
			struct row *r = &rows[x - 1];
			if (j < a->sb.width) {
				snprintf(r->slotbuf, sizeof(r->slotbuf), "%u", j);
				r->slot = r->slotbuf;
			} else {
				r->slot = "spare";
				if (a->sb.members[j].queued_for && !r->note[0])
					snprintf(r->note, sizeof(r->note), "the queued replacement of member %u",
						 a->sb.members[j].queued_for - 1u);
			}
		}
	}
	for (size_t i = 0; i < s->ndirs; i++) {
		const struct scan_dir *d = &s->dirs[i];
		if (d->array != k || (d->claim != CLAIM_REPLACEMENT && d->claim != CLAIM_CORRUPT))
			continue;
		struct row *r = &rows[n++];
		memset(r, 0, sizeof(*r));
		r->slot = d->claim == CLAIM_REPLACEMENT ? "repl" : "?";
		r->dir = d;
		r->state = claim_state(a, d);
		row_note(a, d, r);
	}
	return n;
}

/* A word for a shell: as it is when it holds nothing the shell reads,
 * else in single quotes. */
static void shell_word(char *buf, size_t len, const char *w)
{
	if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./:,@%") == strlen(w)) {
		snprintf(buf, len, "%s", w);
		return;
	}
	size_t o = 0;
	if (o < len)
		buf[o++] = '\'';
	for (; *w && o + 5 < len; w++) {
		if (*w == '\'') {
			memcpy(buf + o, "'\\''", 4);
			o += 4;
		} else {
			buf[o++] = *w;
		}
	}
	if (o + 1 < len)
		buf[o++] = '\'';
	buf[o < len ? o : len - 1] = '\0';
}

/* The command that mounts array k: by name when the name is unique and
 * reads as one, else by uuid; -o scan= for the globs not in the config
 * file. */
static void mount_command(const struct scan *s, size_t k, char *buf, size_t len)
{
	const struct scan_array *a = &s->arrays[k];
	char u[37], w[2 * PATH_MAX], opt[PATH_MAX + 8];
	size_t off = snprintf(buf, len, "raidfs mount");
	for (size_t i = s->nconf; i < s->nglobs && off < len; i++) {
		snprintf(opt, sizeof(opt), "scan=%s", s->globs[i]);
		shell_word(w, sizeof(w), opt);
		off += snprintf(buf + off, len - off, " -o %s", w);
	}
	sb_uuid_str(a->sb.uuid, u);
	if (a->name_unique && scan_is_identity(a->sb.name) && strncmp(a->sb.name, "UUID=", 5) &&
	    strncmp(a->sb.name, "uuid=", 5)) {
		shell_word(w, sizeof(w), a->sb.name);
		snprintf(buf + (off < len ? off : len), off < len ? len - off : 0, " %s MOUNTPOINT", w);
	} else {
		snprintf(buf + (off < len ? off : len), off < len ? len - off : 0, " UUID=%s MOUNTPOINT", u);
	}
}

/* "optimal", "degraded", "failed" as a mount would find it, and the
 * sentence that says so */
static const char *scan_state(const struct scan_array *a)
{
	return !a->can_run ? "failed" : a->absent ? "degraded" : "optimal";
}

void scan_print(const struct scan *s, FILE *f)
{
	if (s->nglobs == 0)
		fprintf(f, "nothing to scan: give directories (raidfs scan '/srv/disk*'), or add a line 'scan GLOB' to %s\n",
			scan_conf_path());
	else if (s->narrays == 0)
		fprintf(f, "no raidfs array found in the %zu pattern%s scanned\n", s->nglobs, s->nglobs == 1 ? "" : "s");
	for (size_t k = 0; k < s->narrays; k++) {
		const struct scan_array *a = &s->arrays[k];
		char u[37], cmd[16384];
		sb_uuid_str(a->sb.uuid, u);
		if (k)
			fputc('\n', f);
		fprintf(f, "   array: %s\n", a->sb.name);
		fprintf(f, "    uuid: %s\n", u);
		fprintf(f, "   level: %s, %u member%s", layout_level_name(a->sb.level), a->sb.width,
			a->sb.width == 1 ? "" : "s");
		if (a->sb.level == LEVEL_RAID50 || a->sb.level == LEVEL_RAID60)
			fprintf(f, " in %u groups", a->sb.groups);
		if (a->sb.nspares)
			fprintf(f, ", %u spare%s", a->sb.nspares, a->sb.nspares == 1 ? "" : "s");
		fprintf(f, ", chunk %uK\n", a->sb.chunk / 1024);
		if (a->mounted)
			fprintf(f, "   state: mounted on %s%s\n", a->mounted,
				a->mount_guessed ? " (by its name: its daemon does not answer)" : "");
		else if (!a->can_run)
			fprintf(f, "   state: cannot be mounted: %u member%s missing, more than %s survives\n", a->absent,
				a->absent == 1 ? "" : "s", layout_level_name(a->sb.level));
		else
			fprintf(f, "   state: not mounted, %s%s\n", scan_state(a),
				a->absent ? " (it mounts with members missing; find them, or replace them once mounted)" : "");
		if (!a->mounted) {
			mount_command(s, k, cmd, sizeof(cmd));
			fprintf(f, "   mount: %s\n", cmd);
		}
		struct row rows[LAYOUT_MAX_WIDTH + SB_MAX_SPARES + 64];
		size_t n = 0, cap = sizeof(rows) / sizeof(rows[0]);
		size_t want = a->sb.width + a->sb.nspares;
		for (size_t i = 0; i < s->ndirs; i++)
			want += s->dirs[i].array == k;
		if (want <= cap)
			n = array_rows(s, k, rows);
		int ws = 4, wst = 5;
		for (size_t i = 0; i < n; i++) {
			if ((int)strlen(rows[i].slot) > ws)
				ws = strlen(rows[i].slot);
			if ((int)strlen(rows[i].state) > wst)
				wst = strlen(rows[i].state);
		}
		fprintf(f, " %*s  %-*s  %6s  %s\n", ws, "SLOT", wst, "STATE", "EVENTS", "DIRECTORY");
		for (size_t i = 0; i < n; i++) {
			const struct row *r = &rows[i];
			char ev[24] = "-";
			if (r->dir)
				snprintf(ev, sizeof(ev), "%" PRIu64, r->dir->sb.events);
			fprintf(f, " %*s  %-*s  %6s  ", ws, r->slot, wst, r->state, ev);
			if (r->dir)
				fprintf(f, "%s", r->dir->path);
			else
				fprintf(f, "(not found; last seen at %s)", r->last_seen[0] ? r->last_seen : "?");
			if (r->note[0])
				fprintf(f, "  (%s)", r->note);
			fputc('\n', f);
		}
	}
	if (s->nbad) {
		fprintf(f, "\nnot usable (a superblock that cannot be read):\n");
		for (size_t i = 0; i < s->nbad; i++)
			fprintf(f, "  %s: %s\n", s->bad[i].path, s->bad[i].why);
	}
}

static json_t *jstr_or_null(const char *p)
{
	return p ? json_string(p) : json_null();
}

int scan_print_json(const struct scan *s, FILE *f)
{
	/* (the document owns each part as soon as it is made: one decref
	 * frees everything) */
	json_t *doc = json_object(), *globs = json_array(), *arrays = json_array(), *bad = json_array();
	if (!doc || !globs || !arrays || !bad) {
		json_decref(globs);
		json_decref(arrays);
		json_decref(bad);
		goto nomem;
	}
	json_object_set_new(doc, "output_version", json_integer(1));
	json_object_set_new(doc, "config", json_string(scan_conf_path()));
	json_object_set_new(doc, "scanned", globs);
	json_object_set_new(doc, "arrays", arrays);
	json_object_set_new(doc, "unusable", bad);
	for (size_t i = 0; i < s->nglobs; i++)
		json_array_append_new(globs, json_string(s->globs[i]));
	for (size_t k = 0; k < s->narrays; k++) {
		const struct scan_array *a = &s->arrays[k];
		char u[37], cmd[16384];
		struct row rows[LAYOUT_MAX_WIDTH + SB_MAX_SPARES + 64];
		size_t n = 0, want = a->sb.width + a->sb.nspares;
		for (size_t i = 0; i < s->ndirs; i++)
			want += s->dirs[i].array == k;
		if (want <= sizeof(rows) / sizeof(rows[0]))
			n = array_rows(s, k, rows);
		sb_uuid_str(a->sb.uuid, u);
		mount_command(s, k, cmd, sizeof(cmd));
		json_t *members = json_array();
		json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:b, s:o, s:o, s:o}",
				      "name", a->sb.name, "uuid", u, "level", layout_level_name(a->sb.level),
				      "width", (json_int_t)a->sb.width, "groups", (json_int_t)a->sb.groups,
				      "spares", (json_int_t)a->sb.nspares, "chunk", (json_int_t)a->sb.chunk,
				      "events", (json_int_t)a->sb.events, "state", scan_state(a),
				      "missing", (json_int_t)a->absent, "can_mount", a->can_run && !a->mounted,
				      "mounted", jstr_or_null(a->mounted),
				      "mount_command", a->mounted ? json_null() : json_string(cmd),
				      "members", members ? members : json_array());
		if (!o || json_array_append_new(arrays, o) < 0)
			goto nomem;
		for (size_t i = 0; members && i < n; i++) {
			const struct row *r = &rows[i];
			json_t *slot = r->slot[0] >= '0' && r->slot[0] <= '9' ? json_integer(atoi(r->slot)) : json_null();
			json_array_append_new(members,
				json_pack("{s:o, s:s, s:s, s:o, s:o, s:o, s:o}", "slot", slot,
					  "role", !strcmp(r->slot, "spare") ? "spare" : !strcmp(r->slot, "repl") ? "replacement" : "member",
					  "state", r->state, "path", jstr_or_null(r->dir ? r->dir->path : NULL),
					  "events", r->dir ? json_integer((json_int_t)r->dir->sb.events) : json_null(),
					  "last_seen", jstr_or_null(r->dir ? NULL : r->last_seen),
					  "note", jstr_or_null(r->note[0] ? r->note : NULL)));
		}
	}
	for (size_t i = 0; i < s->nbad; i++)
		json_array_append_new(bad, json_pack("{s:s, s:s}", "path", s->bad[i].path, "why", s->bad[i].why));
	char *text = json_dumps(doc, JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (!text)
		return -ENOMEM;
	fprintf(f, "%s\n", text);
	free(text);
	return 0;
nomem:
	json_decref(doc);
	return -ENOMEM;
}
