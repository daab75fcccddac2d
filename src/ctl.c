/*
 * ctl.c - the control plane: a Unix socket per mount, served by its own
 * thread, separate from the FUSE data path (decision 10).
 *
 * Protocol: the client connects, writes one request line (words separated
 * by tabs: "status" [-v] [-x], "status-json", "status-brief" [-x] (the
 * line of `raidfs status` with no mount point), "status-list" [-x]
 * (`raidfs list`), "pid", or a command) and reads the reply until EOF.  The reply's
 * first line is "rc N" (the exit status the CLI should return), the rest is
 * printed as is.
 *
 * Status: status_collect() gathers the facts once into a struct status
 * (under a->lock), status_text() and status_json() render them; the JSON
 * is written by jansson, on one line, keys in a fixed order (scripts grep
 * it).
 *
 * Socket path: /run/raidfs/<hash of the canonical mount point>.sock (or
 * $XDG_RUNTIME_DIR/raidfs/ for an unprivileged daemon).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "array.h"
#include "cache.h"
#include "cachelog.h"
#include "counters.h"
#include "ctl.h"
#include "event.h"
#include "rebuild.h"
#include "scrub.h"
#include "util.h"

static int listen_fd = -1;
static pthread_t thread;
static char sock_path[108];

void ctl_canonical(const char *mountpoint, char *buf, size_t len)
{
	char a[PATH_MAX], b[PATH_MAX];
	snprintf(a, sizeof(a), "%s", mountpoint);
	snprintf(b, sizeof(b), "%s", mountpoint);
	/* strip trailing slashes */
	size_t l = strlen(a);
	while (l > 1 && a[l - 1] == '/') {
		a[--l] = '\0';
		b[l] = '\0';
	}
	char *dir = dirname(a), *base = basename(b);
	char *rp = realpath(dir, NULL);
	if (!rp) {
		snprintf(buf, len, "%s", mountpoint);
		return;
	}
	if (strcmp(base, "/") == 0)
		snprintf(buf, len, "/");
	else
		snprintf(buf, len, "%s/%s", strcmp(rp, "/") ? rp : "", base);
	free(rp);
}

static const char *run_dir(void)
{
	static char dir[PATH_MAX];
	if (geteuid() == 0) {
		snprintf(dir, sizeof(dir), "/run/raidfs");
	} else {
		const char *x = getenv("XDG_RUNTIME_DIR");
		if (x && *x)
			snprintf(dir, sizeof(dir), "%s/raidfs", x);
		else
			snprintf(dir, sizeof(dir), "/tmp/raidfs-%d", (int)geteuid());
	}
	return dir;
}

int ctl_socket_path(const char *mountpoint, char *buf, size_t len)
{
	char canon[PATH_MAX];
	ctl_canonical(mountpoint, canon, sizeof(canon));
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */
	for (const char *p = canon; *p; p++) {
		h ^= (uint8_t)*p;
		h *= 0x100000001b3ULL;
	}
	snprintf(buf, len, "%s/%016" PRIx64 ".sock", run_dir(), h);
	return 0;
}

/* ---------------------------------------------------------------- status */

struct out {
	char *buf;
	size_t len, cap;
};

/* printf onto o (on running out of memory the reply is cut short) */
static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		size_t room = o->cap - o->len;
		int n = vsnprintf(o->buf ? o->buf + o->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			o->len += n;
			return;
		}
		if (util_grow(&o->buf, &o->cap, o->len + n + 1, 1) < 0)
			return;
	}
}

static const char *member_word(const struct array *a, uint32_t j)
{
	if (member_present(a, j))
		return member_state_name(__atomic_load_n(&a->m[j].state, __ATOMIC_ACQUIRE));
	if (a->m[j].stale)
		return "stale";
	if (a->m[j].state == MS_ONLINE)
		return "missing";
	return member_state_name(a->m[j].state);
}

/* The exit status of `raidfs status`: 0 optimal, 1 degraded or a problem
 * the last scrub left, 2 failed. */
static int status_rc(enum array_state st, bool scrub_errors)
{
	return st == ARRAY_FAILED ? 2 : st == ARRAY_DEGRADED || scrub_errors ? 1 : 0;
}

/* The state word users see: "rebuilding" while a degraded array is
 * being brought back (the exit status stays 1). */
static const char *state_word(struct array *a, enum array_state st)
{
	if (st == ARRAY_DEGRADED) {
		for (uint32_t j = 0; j < a->width; j++)
			if (member_rebuilding(a, j))
				return "rebuilding";
	}
	return array_state_name(st);
}

/*
 * What 'raidfs status' says, collected once by status_collect() (under
 * a->lock: the strings point into the array) and rendered by
 * status_text() or status_json().
 */
struct status_member {
	const char *word;		/* member_word() */
	const char *path;
	uint64_t reads, writes, errors, corrected;
	uint64_t read_bytes, written_bytes;
	/* its filesystem (fstatvfs of the member's directory; fs_known
	 * false when it is absent): size and room for an unprivileged
	 * writer, the members on the same one (st_dev) counted in `sharing`
	 * (itself included) and listed in shared_mask */
	bool fs_known, nearly_full;
	uint64_t fs_size, fs_free, fs_used;	/* used: as df counts it */
	dev_t dev;
	uint32_t sharing;
	uint64_t shared_mask;
	/* the error counters (counters.h): READ WRITE CKSUM, repaired */
	uint64_t read_errors, write_errors, cksum_errors, repaired_bytes;
	const char *fail_reason;	/* "" if none */
	char faults[256];		/* injected faults, "" if none */
	const char *replacement;	/* the directory it is copied onto, or NULL */
	char replacement_faults[256];
	bool online, rebuilding, partial;
	bool given;			/* its path came to this mount (struct
					 * member); else only recorded */
};

struct status {
	enum array_state st;
	const char *state;		/* state_word() */
	const char *name, *mountpoint;
	char uuid[37];
	enum raid_level level;
	uint32_t width, groups, chunk, parity;	/* parity: redundancy slots per group */
	unsigned csum;			/* the checksum algorithm (enum sb_csum) */
	uint64_t size, events;
	bool readonly, cache_offline;
	struct status_member m[LAYOUT_MAX_WIDTH];
	uint32_t nspares;
	const char *spares[SB_MAX_SPARES];
	/* queued replacements (array_queue_replacement()), in queue order */
	uint32_t nqueued;
	struct {
		uint32_t member;
		const char *path;
		bool given;		/* its directory is open (else only recorded:
					 * not given to this mount) */
	} queued[SB_MAX_SPARES];
	struct rebuild_info ri;
	struct scrub_info si;
	struct cache_stats cs;
	char log_faults[256];		/* injected on the cache log, "" if none (or no log) */
	/* what is left, and what to do */
	int redundancy_left;		/* members each group can still lose (the
					 * worst group's); -1 when failed */
	char state_text[96];		/* "degraded, no redundancy left" */
	uint32_t nout, order[LAYOUT_MAX_WIDTH];	/* members out of service, in
					 * the order to replace them */
	bool scrub_errors;		/* scrub_unresolved() */
	unsigned nbad;			/* the scrub's file list */
	struct scrub_bad_file bad[SCRUB_LIST_FILES];
	/* space (collect_space()) */
	uint64_t free;			/* what more the array can take */
	bool shared_fs, nearly_full;
	uint32_t warn_pct;
	uint64_t warn_free;
	int pid;
};

static void collect_member(struct array *a, uint32_t j, int shadow, struct status_member *m)
{
	m->word = member_word(a, j);
	m->path = a->m[j].path;
	m->reads = __atomic_load_n(&a->m[j].reads, __ATOMIC_RELAXED);
	m->writes = __atomic_load_n(&a->m[j].writes, __ATOMIC_RELAXED);
	m->errors = __atomic_load_n(&a->m[j].errors, __ATOMIC_RELAXED);
	m->corrected = __atomic_load_n(&a->m[j].corrected, __ATOMIC_RELAXED);
	m->read_bytes = __atomic_load_n(&a->m[j].read_bytes, __ATOMIC_RELAXED);
	m->written_bytes = __atomic_load_n(&a->m[j].written_bytes, __ATOMIC_RELAXED);
	m->read_errors = __atomic_load_n(&a->m[j].read_errors, __ATOMIC_RELAXED);
	m->write_errors = __atomic_load_n(&a->m[j].write_errors, __ATOMIC_RELAXED);
	m->cksum_errors = __atomic_load_n(&a->m[j].cksum_errors, __ATOMIC_RELAXED);
	m->repaired_bytes = __atomic_load_n(&a->m[j].repaired_bytes, __ATOMIC_RELAXED);
	m->fail_reason = a->m[j].fail_reason;
	member_inject_describe(a, j, m->faults, sizeof(m->faults));
	m->replacement = NULL;
	m->replacement_faults[0] = '\0';
	if ((int)j == shadow) {
		m->replacement = a->m[SHADOW].path;
		member_inject_describe(a, SHADOW, m->replacement_faults, sizeof(m->replacement_faults));
	}
	m->online = member_online(a, j);
	m->rebuilding = member_rebuilding(a, j);
	m->partial = a->m[j].partial;
	m->given = a->m[j].given;
}

/* A filesystem's use in percent, as df says it: used / (used + what an
 * unprivileged writer may still take). */
static double used_pct(const struct status_member *m)
{
	return m->fs_used + m->fs_free ? 100.0 * m->fs_used / (m->fs_used + m->fs_free) : 0.0;
}

/*
 * Space.  Shards are dense and every member of a file holds as many
 * chunks as the others, so the array can take what its fullest member
 * can: members that share one filesystem (same st_dev) share its room, a
 * 1/n part each.  `size` counts the filesystems' sizes that way, `free`
 * their room; both in data bytes (the smallest part times the data
 * chunks of a stripe).  A member is nearly full past -o space_warn (a
 * share of its filesystem used, or less room left than a size).
 */
static void collect_space(struct array *a, struct status *s)
{
	struct statvfs sv;
	struct stat st;
	for (uint32_t j = 0; j < s->width; j++) {
		struct status_member *m = &s->m[j];
		m->fs_known = member_present(a, j) && a->m[j].dirfd >= 0 && fstatvfs(a->m[j].dirfd, &sv) == 0 &&
			      fstat(a->m[j].dirfd, &st) == 0;
		if (!m->fs_known)
			continue;
		m->fs_size = (uint64_t)sv.f_blocks * sv.f_frsize;
		m->fs_free = (uint64_t)sv.f_bavail * sv.f_frsize;
		m->fs_used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
		m->dev = st.st_dev;
	}
	uint64_t min_size = UINT64_MAX, min_free = UINT64_MAX;
	s->shared_fs = s->nearly_full = false;
	for (uint32_t j = 0; j < s->width; j++) {
		struct status_member *m = &s->m[j];
		m->sharing = 0;
		m->shared_mask = 0;
		m->nearly_full = false;
		if (!m->fs_known)
			continue;
		for (uint32_t i = 0; i < s->width; i++)
			if (s->m[i].fs_known && s->m[i].dev == m->dev) {
				m->sharing++;
				m->shared_mask |= 1ull << i;
			}
		s->shared_fs |= m->sharing > 1;
		if (m->fs_size / m->sharing < min_size)
			min_size = m->fs_size / m->sharing;
		if (m->fs_free / m->sharing < min_free)
			min_free = m->fs_free / m->sharing;
		m->nearly_full = array_space_low(m->fs_used, m->fs_free);
		s->nearly_full |= m->nearly_full && (m->online || m->rebuilding);
	}
	uint32_t dc = layout_data_chunks(&a->lay);
	s->size = min_size == UINT64_MAX ? 0 : min_size * dc;
	s->free = min_free == UINT64_MAX ? 0 : min_free * dc;
}

/* How much redundancy is left, the state text, and the order in which
 * to replace the members out of service: the one being rebuilt first,
 * then those of the groups with the least redundancy left, by index. */
static void collect_redundancy(const struct array *a, struct status *s)
{
	const struct layout *l = &a->lay;
	int left[LAYOUT_MAX_WIDTH];
	s->redundancy_left = (int)l->m;
	for (uint32_t g = 0; g < l->groups; g++) {
		uint32_t lost = 0;
		for (uint32_t p = 0; p < l->gw; p++)
			lost += !s->m[g * l->gw + p].online;
		left[g] = (int)l->m - (int)lost;
		if (left[g] < s->redundancy_left)
			s->redundancy_left = left[g];
	}
	if (s->redundancy_left < 0)
		s->redundancy_left = -1;
	s->nout = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int want = -1; want <= (int)l->m; want++)
			for (uint32_t j = 0; j < s->width; j++) {
				const struct status_member *m = &s->m[j];
				if (m->online || (pass == 0) != (m->rebuilding && s->ri.active && s->ri.member == (int)j) ||
				    (left[j / l->gw] < -1 ? -1 : left[j / l->gw]) != want)
					continue;
				s->order[s->nout++] = j;
			}
	snprintf(s->state_text, sizeof(s->state_text), "%s%s", s->state,
		 s->st == ARRAY_DEGRADED && s->redundancy_left == 0 ? ", no redundancy left" : "");
}

/* a->lock held */
static void status_collect(struct array *a, struct status *s)
{
	s->st = array_state(a);
	s->state = state_word(a, s->st);
	s->name = a->sb.name;
	s->mountpoint = a->mountpoint;
	sb_uuid_str(a->sb.uuid, s->uuid);
	s->level = a->lay.level;
	s->width = a->width;
	s->groups = a->lay.groups;
	s->chunk = a->lay.chunk;
	s->csum = a->sb.csum;
	s->parity = a->lay.m;
	s->events = a->sb.events;
	s->readonly = a->readonly;
	s->cache_offline = cache_offline();
	int shadow = shadow_of(a);
	for (uint32_t j = 0; j < a->width; j++)
		collect_member(a, j, shadow, &s->m[j]);
	s->nspares = s->nqueued = 0;
	for (uint32_t i = 0; i < a->sb.nspares; i++) {
		uint32_t idx = a->width + i;
		if (!a->sb.members[idx].queued_for) {
			s->spares[s->nspares++] = a->m[idx].path;
			continue;
		}
		s->queued[s->nqueued].member = a->sb.members[idx].queued_for - 1u;
		s->queued[s->nqueued].path = a->m[idx].path;
		s->queued[s->nqueued++].given = a->m[idx].dirfd >= 0;
	}
	rebuild_get(&s->ri);
	scrub_get(&s->si);
	cache_get_stats(&s->cs);
	cachelog_inject_describe(s->log_faults, sizeof(s->log_faults));
	s->warn_pct = array_space_warn_pct;
	s->warn_free = array_space_warn_free;
	collect_space(a, s);
	collect_redundancy(a, s);
	s->scrub_errors = scrub_unresolved(&s->si);
	s->nbad = scrub_bad_list(s->bad, SCRUB_LIST_FILES);
	s->pid = (int)getpid();
}

/* -------------------------------------------------------- status as text */

/* "[=====>     ]  42.0%": 20 columns, pct cut to 0..100 */
static void progress_bar(struct out *o, double pct)
{
	if (pct > 100)
		pct = 100;
	int bars = (int)(pct / 5);
	outf(o, "[");
	for (int i = 0; i < 20; i++)
		outf(o, "%c", i < bars ? '=' : (i == bars ? '>' : ' '));
	outf(o, "] %5.1f%%", pct);
}

static void text_array(const struct status *s, struct out *o)
{
	char sz[32], ch[32];
	outf(o, "array:   %s (uuid %s)\n", s->name, s->uuid);
	outf(o, "mounted: %s\n", s->mountpoint);
	outf(o, "level:   %s, %u members", layout_level_name(s->level), s->width);
	if (s->level == LEVEL_RAID50 || s->level == LEVEL_RAID60)
		outf(o, " in %u groups", s->groups);
	outf(o, ", chunk %s, checksums %s\n", fmt_size(s->chunk, ch, sizeof(ch)), sb_csum_name(s->csum));
	char fr[32];
	outf(o, "size:    %s usable, %s free\n", fmt_size(s->size, sz, sizeof(sz)), fmt_size(s->free, fr, sizeof(fr)));
	outf(o, "state:   %s%s%s\n", s->state_text, s->readonly ? " (read-only)" : "",
	     s->cache_offline ? " (offline: preserved cache)" : "");
}

/* The space lines: each member's filesystem, and the members that share
 * one (their part of it is what the usable size counts). */
static void text_space(const struct status *s, struct out *o)
{
	const char *head = "space:   ";
	for (uint32_t j = 0; j < s->width; j++) {
		const struct status_member *m = &s->m[j];
		char fr[32], sz[32];
		if (!m->fs_known)
			continue;
		outf(o, "%smember %u: %s free of %s (%.0f%% used)%s\n", head, j, fmt_size(m->fs_free, fr, sizeof(fr)),
		     fmt_size(m->fs_size, sz, sizeof(sz)), used_pct(m),
		     m->nearly_full ? "  NEARLY FULL" : "");
		head = "         ";
	}
	uint64_t told = 0;
	for (uint32_t j = 0; j < s->width; j++) {
		const struct status_member *m = &s->m[j];
		if (m->sharing < 2 || (told & m->shared_mask))
			continue;
		told |= m->shared_mask;
		outf(o, "%smembers", head);
		for (uint32_t i = 0, k = 0; i < s->width; i++)
			if (m->shared_mask >> i & 1)
				outf(o, "%s %u", k++ ? "," : "", i);
		outf(o, " share one filesystem: the usable size counts a 1/%u part of it for each\n", m->sharing);
		head = "         ";
	}
}

/* The scrub's lasting result: an "errors:" line when the last scrub left
 * a problem; with -v its files, the stripes and what was repaired. */
static void text_errors(const struct status *s, bool verbose, struct out *o)
{
	const struct scrub_info *si = &s->si;
	if (!s->scrub_errors && !(verbose && s->nbad))
		return;
	if (s->scrub_errors)
		outf(o, "errors:  the last scrub left problems in %" PRIu64 " file%s: %" PRIu64 " stripe%s not matching "
			"their redundancy, %" PRIu64 " file%s not compared, %" PRIu64 " missing shard%s%s\n",
		     si->bad_files, si->bad_files == 1 ? "" : "s", si->mismatches - si->repaired,
		     si->mismatches - si->repaired == 1 ? "" : "s", si->errors, si->errors == 1 ? "" : "s",
		     si->missing - si->restored, si->missing - si->restored == 1 ? "" : "s",
		     verbose ? "" : " ('raidfs status -v' lists them)");
	else
		outf(o, "errors:  none left: the last scrub repaired what it found\n");
	if (!verbose)
		return;
	for (unsigned i = 0; i < s->nbad; i++) {
		const struct scrub_bad_file *b = &s->bad[i];
		outf(o, "         %s: %s", b->path, b->kind);
		if (b->nstripes) {
			outf(o, ", %" PRIu64 " stripe%s (", b->count, b->count == 1 ? "" : "s");
			for (unsigned k = 0; k < b->nstripes; k++)
				outf(o, "%s%" PRIu64, k ? " " : "", b->stripe[k]);
			outf(o, "%s)", b->count > b->nstripes ? " ..." : "");
		} else if (b->count > 1) {
			outf(o, " (%" PRIu64 ")", b->count);
		}
		if (b->fixed)
			outf(o, ", %" PRIu64 " repaired", b->fixed);
		outf(o, "\n");
	}
	if (si->bad_files > s->nbad)
		outf(o, "         ... and %" PRIu64 " more file%s (the log names them)\n", si->bad_files - s->nbad,
		     si->bad_files - s->nbad == 1 ? "" : "s");
}

/* One member's line: index, state, the error counters in zpool's
 * columns (READ WRITE CKSUM, and the bytes repaired on it), then its
 * directory (last, so the columns line up whatever its length). */
static void text_members(const struct status *s, struct out *o)
{
	char rep[16];
	outf(o, "members:%9s%5s %5s %5s %8s  %s\n", "", "READ", "WRITE", "CKSUM", "REPAIRED", "DIRECTORY");
	for (uint32_t j = 0; j < s->width; j++) {
		const struct status_member *m = &s->m[j];
		outf(o, "  %2u  %-10s %5" PRIu64 " %5" PRIu64 " %5" PRIu64 " %8s  %s  (reads %" PRIu64 ", writes %" PRIu64
			", errors %" PRIu64 ", corrected %" PRIu64 ")\n",
		     j, m->word, m->read_errors, m->write_errors, m->cksum_errors,
		     counters_nicenum(m->repaired_bytes, rep, sizeof(rep)), m->path, m->reads, m->writes, m->errors,
		     m->corrected);
		if (!m->given)
			outf(o, "      not given to this mount: the path is where the superblocks last saw it (never opened)\n");
		if (m->fail_reason[0])
			outf(o, "      failed: %s\n", m->fail_reason);
		if (m->faults[0])
			outf(o, "      injected faults: %s\n", m->faults);
		if (m->replacement) {
			outf(o, "      being replaced by %s (it serves until the copy is complete)\n", m->replacement);
			if (m->replacement_faults[0])
				outf(o, "      injected faults on the replacement: %s\n", m->replacement_faults);
		}
	}
	for (uint32_t i = 0; i < s->nspares; i++)
		outf(o, "  S%-2u spare      %5s %5s %5s %8s  %s\n", i, "-", "-", "-", "-", s->spares[i]);
}

/* the progress line of a running rebuild, replacement or re-add */
static void text_rebuild_progress(const struct rebuild_info *ri, struct out *o)
{
	char d[32], t[32], r[32];
	/* the copy, then the verify pass over the same bytes again;
	 * then what the namespace changed meanwhile (no size known) */
	uint64_t done = ri->done > ri->total || ri->phase != REBUILD_COPY ? ri->total : ri->done;
	double pct = ri->total ? 100.0 * done / ri->total : 0;
	uint64_t vdone = ri->files_done - ri->files_copied, vtotal = ri->files_copied;
	if (ri->phase == REBUILD_VERIFY)	/* (by files: an unchanged one is only looked at) */
		pct = vtotal ? 100.0 * (vdone < vtotal ? vdone : vtotal) / vtotal : 100;
	if (ri->replace)
		outf(o, "replace: member %d -> '%s'\n         ", ri->member, ri->target);
	else
		outf(o, "%s member %d ", ri->readd ? "re-add: " : "rebuild:", ri->member);
	progress_bar(o, pct);
	if (ri->phase == REBUILD_VERIFY)
		outf(o, "  verifying: %" PRIu64 " of %" PRIu64 " files (%s copied)", vdone < vtotal ? vdone : vtotal,
		     vtotal, fmt_size(ri->total, t, sizeof(t)));
	else
		outf(o, "  %s / %s", fmt_size(done, d, sizeof(d)), fmt_size(ri->total, t, sizeof(t)));
	if (ri->phase == REBUILD_CATCH_UP) {
		outf(o, "  catching up with paths renamed or removed meanwhile");
	} else if (ri->phase == REBUILD_VERIFY) {
		/* (no ETA: a file unchanged since its copy is only looked at) */
	} else if (ri->elapsed >= 2 && ri->rate > 0) {
		double eta = (ri->total - done) / ri->rate;
		outf(o, "  %s/s  ETA %dm%02ds", fmt_size((uint64_t)ri->rate, r, sizeof(r)), (int)eta / 60,
		     (int)eta % 60);
	} else {
		outf(o, "  (measuring speed)");
	}
	outf(o, "%s\n", ri->paused ? "  PAUSED" : "");
	if (ri->current[0])
		outf(o, "         now: %s\n", ri->current);
}

/* The queued replacements, in the order they start: "queued:" lines. */
static void text_queue(const struct status *s, struct out *o)
{
	for (uint32_t k = 0; k < s->nqueued; k++) {
		outf(o, "%s%u. member %u -> '%s'", k ? "         " : "queued:  ", k + 1, s->queued[k].member,
		     s->queued[k].path);
		if (!s->queued[k].given)
			outf(o, " (not given to this mount: give it among the members, or cancel it with 'raidfs remove %s %s')",
			     s->mountpoint, s->queued[k].path);
		else if (k == 0 && s->ri.active)
			outf(o, " (starts when the %s of member %d ends)", s->ri.replace ? "replacement" : s->ri.readd ? "re-add" : "rebuild",
			     s->ri.member);
		else if (k == 0)
			outf(o, " (starts next)");
		outf(o, "\n");
	}
}

/* The queued replacement of member j, or NULL. */
static const char *queued_for(const struct status *s, uint32_t j)
{
	for (uint32_t k = 0; k < s->nqueued; k++)
		if (s->queued[k].member == j && s->queued[k].given)
			return s->queued[k].path;
	return NULL;
}

static void text_scrub(const struct scrub_info *si, struct out *o)
{
	if (!si->active) {
		if (si->last_result[0])
			outf(o, "scrub:   %s\n", si->last_result);
		return;
	}
	char b[32], r[32];
	double pct = si->files_total ? 100.0 * si->files_done / si->files_total : 0;
	outf(o, "scrub:   ");
	progress_bar(o, pct);	/* (past 100% with files created meanwhile: cut) */
	outf(o, "  %" PRIu64 " of %" PRIu64 " files, %s compared", si->files_done, si->files_total,
	     fmt_size(si->bytes, b, sizeof(b)));
	if (si->elapsed >= 2 && si->rate > 0)
		outf(o, "  %s/s", fmt_size((uint64_t)si->rate, r, sizeof(r)));
	outf(o, ", %" PRIu64 " mismatch%s%s\n", si->mismatches, si->mismatches == 1 ? "" : "es",
	     si->repair ? " (repairing)" : "");
	if (si->current[0])
		outf(o, "         now: %s\n", si->current);
}

/* the cache and battery lines */
static void text_cache(const struct status *s, struct out *o)
{
	const struct cache_stats *cs = &s->cs;
	char csz[32], dz[32];
	uint64_t looks = cs->hits + cs->misses;
	outf(o, "cache:   %s, write policy %s (current: %s%s%s), read policy %s\n",
	     fmt_size(cs->size, csz, sizeof(csz)), cache_wpolicy_name(cs->configured),
	     cache_wpolicy_name(cs->effective), cs->why_wt ? ", " : "", cs->why_wt ? cs->why_wt : "",
	     cache_rpolicy_name(cs->rpolicy));
	outf(o, "         dirty %s, read hits %.0f%%, destage %.1f MB/s\n", fmt_size(cs->dirty_bytes, dz, sizeof(dz)),
	     looks ? 100.0 * cs->hits / looks : 0.0, cs->destage_mbps);
	outf(o, "battery: %s (bbu=%s%s%s)", bbu_state_name(cs->bbu_state), bbu_kind_name(cs->bbu),
	     cs->bbu == BBU_FILE ? ":" : "", cs->bbu == BBU_FILE ? cs->bbu_path : "");
	if (cs->bbu_state == BBU_LEARNING)
		outf(o, ", learn cycle %u s left", cs->learn_left);
	if (cs->log_error)
		outf(o, ", the cache log failed: %s%s", strerror(cs->log_error),
		     cs->log_retired ? " (retired: what it held is on the members)" : " (the cache is being written out)");
	outf(o, "\n");
	if (s->log_faults[0])
		outf(o, "         injected faults on the cache log: %s\n", s->log_faults);
	if (cs->preserved_bytes)
		outf(o, "preserved cache: %s of acknowledged writes from the last run are not on the members yet\n",
		     fmt_size(cs->preserved_bytes, dz, sizeof(dz)));
}

/* "action:" lines of the cache and the battery */
static void text_cache_actions(const struct status *s, struct out *o)
{
	const struct cache_stats *cs = &s->cs;
	if (cs->offline && s->st == ARRAY_FAILED)
		outf(o, "action:  OFFLINE: the cache of the last run is preserved and the array cannot take it; return the missing members (they are taken back when they reappear at the paths this mount was given, or with 'raidfs add') and the mount comes online by itself; 'raidfs cache %s discard --force' drops the preserved data for good\n",
		     s->mountpoint);
	else if (cs->offline)
		outf(o, "action:  OFFLINE: %s; the mount comes online by itself once it is written; 'raidfs cache %s discard --force' drops the preserved data for good\n",
		     cs->offline_why[0] ? cs->offline_why : "the cache of the last run is preserved and cannot be written yet",
		     s->mountpoint);
	if (cs->log_error && cs->log_retired)
		outf(o, "action:  the cache log '%s' failed and was retired (the members hold all it had): the cache runs write-through until the next mount; check the disk that holds it, or mount with another log (-o bbu=file:PATH)\n",
		     cs->bbu_path);
	else if (cs->log_error)
		outf(o, "action:  the cache log '%s' failed: the cache is being written out to the members and runs write-through until the next mount; after a crash now, mount once more with this log (it may hold writes the members do not have yet)\n",
		     cs->bbu_path);
	else if (cs->bbu_state == BBU_FAILED)
		outf(o, "action:  the battery has failed: the cache runs write-through; 'raidfs bbu %s restore' once it is replaced\n",
		     s->mountpoint);
}

/* "action:" lines of the last scrub */
static void text_scrub_actions(const struct status *s, struct out *o)
{
	const struct scrub_info *si = &s->si;
	if (si->active)
		return;
	if (!si->repair && si->mismatches)
		outf(o, "action:  the last scrub found %" PRIu64 " stripe%s whose redundancy does not match the data (see the log): "
			"'raidfs scrub %s --repair' recomputes it from the data\n",
		     si->mismatches, si->mismatches == 1 ? "" : "s", s->mountpoint);
	if (!si->repair && si->missing && s->parity > 0)
		outf(o, "action:  the last scrub found %" PRIu64 " shard%s missing on %s member%s (see the log): "
			"'raidfs scrub %s --repair' puts %s back from the other members\n",
		     si->missing, si->missing == 1 ? "" : "s", si->missing == 1 ? "its" : "their", si->missing == 1 ? "" : "s",
		     s->mountpoint, si->missing == 1 ? "it" : "them");
	else if (si->missing > si->restored && s->parity > 0)
		outf(o, "action:  the last scrub could not put back %" PRIu64 " missing shard%s: the log says why for each "
			"(a file in use: 'raidfs scrub %s --repair' again later; otherwise 'raidfs replace' of the member)\n",
		     si->missing - si->restored, si->missing - si->restored == 1 ? "" : "s", s->mountpoint);
}

/* the "action:" line of a failed array, or of its first member out of service */
static void text_member_actions(const struct status *s, struct out *o)
{
	const struct rebuild_info *ri = &s->ri;
	if (s->st == ARRAY_FAILED) {
		outf(o, "action:  too many members are lost for %s: the array refuses writes; bring the members back: a disk that returns to its path is taken back by itself, or use 'raidfs add %s DIR', or remount with all members\n",
		     layout_level_name(s->level), s->mountpoint);
		return;
	}
	if (s->st != ARRAY_DEGRADED)
		return;
	if (s->nout > 1) {
		outf(o, "action:  %u members are out of service (%s)%s: replace them one at a time, in this order:", s->nout,
		     s->redundancy_left == 0 ? "no redundancy is left: one more loss loses data"
					     : "the array has less redundancy",
		     s->ri.active ? ", the first is being rebuilt" : "");
		for (uint32_t k = 0; k < s->nout; k++)
			outf(o, "%s %u ('%s')", k ? "," : "", s->order[k], s->m[s->order[k]].path);
		outf(o, "\n");
	}
	for (uint32_t k = 0; k < s->nout; k++) {
		uint32_t j = s->order[k];
		const struct status_member *m = &s->m[j];
		if (m->rebuilding && !ri->active && ri->failed_files && ri->member == (int)j)
			outf(o, "action:  the rebuild of member %u onto '%s' could not rebuild %d file%s (see above and the log); "
				"an I/O error there means the members left do not hold all of its data: restore the file from a copy "
				"or delete it, then 'raidfs rebuild %s resume'\n",
			     j, m->path, ri->failed_files, ri->failed_files == 1 ? "" : "s", s->mountpoint);
		else if (m->rebuilding && !ri->active)
			outf(o, "action:  the rebuild of member %u onto '%s' stopped (see above); 'raidfs rebuild %s resume' starts it again\n",
			     j, m->path, s->mountpoint);
		else if (m->rebuilding)
			outf(o, "action:  member %u is being rebuilt onto '%s'; the array has less redundancy until it finishes\n",
			     j, m->path);
		else if (queued_for(s, j))
			outf(o, "action:  member %u ('%s') is %s: its replacement onto '%s' is queued and starts when no rebuild runs before it ('raidfs remove %s %s' cancels it)\n",
			     j, m->path, m->word, queued_for(s, j), s->mountpoint, queued_for(s, j));
		else if (!m->given)
			outf(o, "action:  member %u is missing: its directory is not among those this mount was given (the superblocks last saw it at '%s', which is not opened: it may belong to a copy of this array); give its own directory with 'raidfs add %s DIR', or replace it with 'raidfs replace %s %u NEWDIR' (an empty directory)\n",
			     j, m->path, s->mountpoint, s->mountpoint, j);
		else if (m->partial)
			outf(o, "action:  member %u ('%s') failed during its rebuild: replace it with 'raidfs replace %s %u NEWDIR' (an empty directory on another disk)\n",
			     j, m->path, s->mountpoint, j);
		else
			outf(o, "action:  member %u ('%s') is %s: replace it with 'raidfs replace %s %u NEWDIR' (an empty directory on a new disk), or if the disk is sound (pulled by mistake) put it back with 'raidfs add %s %s' (resyncs only what changed)\n",
			     j, m->path, m->word, s->mountpoint, j, s->mountpoint, m->path);
	}
}

/* "action:" lines of members whose filesystem is nearly full */
static void text_space_actions(const struct status *s, struct out *o)
{
	char fr[32], w[32];
	for (uint32_t j = 0; j < s->width; j++) {
		const struct status_member *m = &s->m[j];
		if (!m->nearly_full || !(m->online || m->rebuilding))
			continue;
		outf(o, "action:  member %u ('%s') is nearly full: %.0f%% used, %s free (the warning is at ", j, m->path,
		     used_pct(m), fmt_size(m->fs_free, fr, sizeof(fr)));
		if (s->warn_pct)
			outf(o, "%u%% used%s", s->warn_pct, s->warn_free ? " or " : "");
		if (s->warn_free)
			outf(o, "%s free", fmt_size(s->warn_free, w, sizeof(w)));
		outf(o, ", -o space_warn): free space on its filesystem or move it to a bigger disk with 'raidfs replace %s %u NEWDIR'; writes that do not fit fail with ENOSPC\n",
		     s->mountpoint, j);
	}
}

/* Every "action:" line, in the order status shows them. */
static void text_actions(const struct status *s, struct out *o)
{
	text_cache_actions(s, o);
	text_scrub_actions(s, o);
	text_member_actions(s, o);
	text_space_actions(s, o);
}

/* What needs attention, as short words (`raidfs list`, JSON
 * "conditions"); none: the array is healthy. */
static int conditions(const struct status *s, const char **c, int max)
{
	int n = 0;
#define COND(x) do { if (n < max) c[n++] = (x); } while (0)
	if (s->st == ARRAY_FAILED)
		COND("failed");
	if (s->st == ARRAY_DEGRADED)
		COND(s->ri.active ? "rebuilding" : "degraded");
	if (s->st == ARRAY_DEGRADED && s->redundancy_left == 0)
		COND("no-redundancy");
	if (s->scrub_errors)
		COND("scrub-errors");
	if (s->nearly_full)
		COND("nearly-full");
	if (s->cache_offline || s->cs.log_error || s->cs.bbu_state == BBU_FAILED)
		COND("cache");
#undef COND
	return n;
}

static void status_text(const struct status *s, bool verbose, struct out *o)
{
	outf(o, "rc %d\n", status_rc(s->st, s->scrub_errors));
	text_array(s, o);
	text_members(s, o);
	text_space(s, o);
	if (s->ri.active)
		text_rebuild_progress(&s->ri, o);
	else if (s->ri.last_result[0])
		outf(o, "rebuild: %s\n", s->ri.last_result);
	text_queue(s, o);
	text_scrub(&s->si, o);
	text_errors(s, verbose, o);
	text_cache(s, o);
	text_actions(s, o);
}

/* Indent every line of `from` (not "now:" lines) by `ind` onto o. */
static void indent_lines(const struct out *from, const char *ind, struct out *o)
{
	for (size_t off = 0; off < from->len;) {
		const char *l = from->buf + off, *nl = memchr(l, '\n', from->len - off);
		size_t n = nl ? (size_t)(nl - l) : from->len - off;
		if (strncmp(l, "         now: ", 14))
			outf(o, "%s%.*s\n", ind, (int)n, l);
		off += n + 1;
	}
}

/* One line, as /proc/mdstat has one per array: name, level, state,
 * members in service of all ([UU_U]: U in service, _ out), size, mount
 * point; under it the bar of a rebuild or scrub that runs.  With
 * `attention_only` nothing for a healthy array (status -x). */
static void status_brief(const struct status *s, bool attention_only, struct out *o)
{
	const char *c[8];
	int nc = conditions(s, c, 8);
	outf(o, "rc %d\n", status_rc(s->st, s->scrub_errors));
	if (attention_only && nc == 0)
		return;
	char sz[32];
	uint32_t up = 0;
	for (uint32_t j = 0; j < s->width; j++)
		up += s->m[j].online;
	outf(o, "%s : %s %s%s [%u/%u] [", s->name, layout_level_name(s->level), s->state_text,
	     s->readonly ? " (read-only)" : "", up, s->width);
	for (uint32_t j = 0; j < s->width; j++)
		outf(o, "%c", s->m[j].online ? 'U' : '_');
	outf(o, "] %s usable on %s", fmt_size(s->size, sz, sizeof(sz)), s->mountpoint);
	/* (the conditions the state does not already say) */
	int told = 0;
	for (int i = 0; i < nc; i++)
		if (strcmp(c[i], "failed") && strcmp(c[i], "degraded") && strcmp(c[i], "rebuilding") &&
		    strcmp(c[i], "no-redundancy"))
			outf(o, "%s%s", told++ ? ", " : "  (", c[i]);
	outf(o, "%s\n", told ? ")" : "");
	struct out bar = { NULL, 0, 0 };
	if (s->ri.active)
		text_rebuild_progress(&s->ri, &bar);
	text_queue(s, &bar);
	if (s->si.active)
		text_scrub(&s->si, &bar);
	indent_lines(&bar, "    ", o);
	free(bar.buf);
}

/* One line for scripts (raidfs list): NAME LEVEL STATE UP/TOTAL HEALTH
 * MOUNTPOINT, separated by tabs; HEALTH is "ok" or the conditions()
 * joined by commas. */
static void status_list(const struct status *s, struct out *o)
{
	const char *c[8];
	int nc = conditions(s, c, 8);
	uint32_t up = 0;
	for (uint32_t j = 0; j < s->width; j++)
		up += s->m[j].online;
	outf(o, "rc %d\n%s\t%s\t%s\t%u/%u\t", status_rc(s->st, s->scrub_errors), s->name, layout_level_name(s->level),
	     s->state, up, s->width);
	for (int i = 0; i < nc; i++)
		outf(o, "%s%s", i ? "," : "", c[i]);
	outf(o, "%s\t%s\n", nc ? "" : "ok", s->mountpoint);
}

/* -------------------------------------------------------- status as JSON */

/* s as a JSON string, NULL as null.  A string that is not UTF-8 (a path
 * may hold any bytes) has its bytes above 0x7f written as '?'. */
static json_t *jstr(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	char *c;
	if (j || !(c = strdup(s)))
		return j;
	for (char *p = c; *p; p++)
		if ((unsigned char)*p > 0x7f)
			*p = '?';
	j = json_string(c);
	free(c);
	return j;
}

/* x as printf("%.*f") writes it: the numbers read as they always did */
static double printf_round(double x, int digits)
{
	char b[64];
	snprintf(b, sizeof(b), "%.*f", digits, x);
	return strtod(b, NULL);
}

/* Unsigned counters and sizes as JSON integers (json_int_t is signed
 * 64 bits: a counter does not reach 2^63). */
#define JU(v) ((json_int_t)(v))

static json_t *json_members(const struct status *s)
{
	json_t *arr = json_array();
	for (uint32_t j = 0; arr && j < s->width; j++) {
		const struct status_member *m = &s->m[j];
		/* replacement: the directory it is being copied onto (replace in place) */
		json_t *e = json_pack("{s:I, s:o, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:b}",
				      "index", JU(j), "path", jstr(m->path), "state", m->word,
				      "reads", JU(m->reads), "writes", JU(m->writes), "errors", JU(m->errors),
				      "corrected", JU(m->corrected), "read_errors", JU(m->read_errors),
				      "write_errors", JU(m->write_errors), "cksum_errors", JU(m->cksum_errors),
				      "repaired_bytes", JU(m->repaired_bytes), "fail_reason", jstr(m->fail_reason),
				      "faults", jstr(m->faults), "replacement", jstr(m->replacement),
				      "replacement_faults", jstr(m->replacement ? m->replacement_faults : NULL),
				      "given", m->given);
		json_t *shared = json_array();
		for (uint32_t i = 0; shared && i < s->width; i++)
			if (i != j && (m->shared_mask >> i & 1))
				json_array_append_new(shared, json_integer(i));
		if (e)	/* (added after the keys above: scripts grep their order) */
			json_object_update_new(e, json_pack("{s:I, s:I, s:o, s:o, s:o, s:b}",
							"read_bytes", JU(m->read_bytes), "written_bytes", JU(m->written_bytes),
							"fs_size", m->fs_known ? json_integer(JU(m->fs_size)) : json_null(),
							"fs_free", m->fs_known ? json_integer(JU(m->fs_free)) : json_null(),
							"shares_filesystem_with", shared ? shared : json_null(),
							"nearly_full", m->nearly_full));
		if (json_array_append_new(arr, e) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *json_spares(const struct status *s)
{
	json_t *arr = json_array();
	for (uint32_t i = 0; arr && i < s->nspares; i++)
		if (json_array_append_new(arr, jstr(s->spares[i])) < 0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

/* the queued replacements, in queue order */
static json_t *json_queue(const struct status *s)
{
	json_t *arr = json_array();
	for (uint32_t k = 0; arr && k < s->nqueued; k++)
		if (json_array_append_new(arr, json_pack("{s:I, s:o, s:b}", "member", JU(s->queued[k].member), "path",
							 jstr(s->queued[k].path), "given", s->queued[k].given)) < 0) {
			json_decref(arr);
			return json_null();
		}
	return arr ? arr : json_null();
}

static json_t *json_rebuild(const struct rebuild_info *ri)
{
	const char *phase = !ri->active ? "" : ri->phase == REBUILD_VERIFY ? "verify"
					     : ri->phase == REBUILD_CATCH_UP ? "catch-up" : "copy";
	return json_pack("{s:b, s:b, s:b, s:b, s:i, s:I, s:I, s:s, s:I, s:I, s:f, s:I, s:I, s:o, s:o, s:i}",
			 "active", ri->active, "readd", ri->readd, "replace", ri->active && ri->replace,
			 "paused", ri->paused, "member", ri->member, "done", JU(ri->done), "total", JU(ri->total),
			 "phase", phase, "copied", JU(ri->copied), "rate", JU(printf_round(ri->rate, 0)),
			 "elapsed", printf_round(ri->elapsed, 1), "min_rate", JU(ri->min_rate),
			 "max_rate", JU(ri->max_rate), "target", jstr(ri->target), "last_result", jstr(ri->last_result),
			 "failed_files", ri->failed_files);
}

/* the last finished rebuild (null: none since the mount) */
static json_t *json_last_rebuild(const struct rebuild_info *ri)
{
	if (ri->last_member < 0)
		return json_null();
	return json_pack("{s:i, s:s, s:b, s:f, s:I, s:I, s:o}", "member", ri->last_member,
			 "kind", ri->last_replace ? "replace" : ri->last_readd ? "re-add" : "rebuild", "ok", ri->last_ok,
			 "elapsed", ri->last_elapsed, "bytes", JU(ri->last_bytes), "ended", (json_int_t)ri->last_end,
			 "result", jstr(ri->last_result));
}

/* the scrub's file list (scrub.h) */
static json_t *json_bad_files(const struct status *s)
{
	json_t *arr = json_array();
	for (unsigned i = 0; arr && i < s->nbad; i++) {
		const struct scrub_bad_file *b = &s->bad[i];
		json_t *st = json_array();
		for (unsigned k = 0; st && k < b->nstripes; k++)
			json_array_append_new(st, json_integer(JU(b->stripe[k])));
		json_array_append_new(arr, json_pack("{s:o, s:s, s:I, s:I, s:o}", "path", jstr(b->path), "kind", b->kind,
						     "count", JU(b->count), "fixed", JU(b->fixed),
						     "stripes", st ? st : json_null()));
	}
	return arr;
}

static json_t *json_scrub(const struct scrub_info *si)
{
	return json_pack("{s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
			 "active", si->active, "repair", si->repair, "files_done", JU(si->files_done),
			 "files_total", JU(si->files_total), "bytes", JU(si->bytes), "mismatches", JU(si->mismatches),
			 "repaired", JU(si->repaired), "errors", JU(si->errors), "missing", JU(si->missing),
			 "restored", JU(si->restored), "rate", JU(printf_round(si->rate, 0)),
			 "last_result", jstr(si->last_result));
}

static json_t *json_cache(const struct status *s)
{
	const struct cache_stats *cs = &s->cs;
	return json_pack("{s:I, s:I, s:s, s:s, s:o, s:s, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:s, s:s, s:I, s:b, "
			 "s:o, s:o, s:b, s:o}",
			 "size", JU(cs->size), "line_bytes", JU(cs->line_bytes),
			 "write_policy", cache_wpolicy_name(cs->configured),
			 "current_write_policy", cache_wpolicy_name(cs->effective), "current_reason", jstr(cs->why_wt),
			 "read_policy", cache_rpolicy_name(cs->rpolicy), "dirty_bytes", JU(cs->dirty_bytes),
			 "dirty_lines", JU(cs->dirty_lines), "hits", JU(cs->hits), "misses", JU(cs->misses),
			 "destage_mbps", printf_round(cs->destage_mbps, 1), "destaged_bytes", JU(cs->destaged_bytes),
			 "preserved_bytes", JU(cs->preserved_bytes), "bbu", bbu_kind_name(cs->bbu),
			 "bbu_state", bbu_state_name(cs->bbu_state), "learn_left", JU(cs->learn_left),
			 "offline", cs->offline,
			 "offline_reason", jstr(cs->offline && cs->offline_why[0] ? cs->offline_why : NULL),
			 "log_error", jstr(cs->log_error ? strerror(cs->log_error) : NULL),
			 "log_retired", cs->log_retired, "log_faults", jstr(s->log_faults));
}

/* One line of JSON, keys in this order (scripts grep it: see
 * tests/integration); reals with one decimal as "%.1f" wrote them.
 * docs/status-json.md documents every field; a change there that is not
 * only a new field raises STATUS_JSON_VERSION. */
#define STATUS_JSON_VERSION 2
static void status_json(const struct status *s, struct out *o)
{
	json_t *top = json_pack("{s:i}", "output_version", STATUS_JSON_VERSION);
	json_t *doc = json_pack("{s:o, s:s, s:o, s:s, s:I, s:I, s:I, s:s, s:I, s:s, s:b, s:I, s:o, s:o, s:o, s:o, s:o}",
				"name", jstr(s->name), "uuid", s->uuid, "mountpoint", jstr(s->mountpoint),
				"level", layout_level_name(s->level), "width", JU(s->width), "groups", JU(s->groups),
				"chunk", JU(s->chunk), "checksum", sb_csum_name(s->csum), "size", JU(s->size), "state", s->state, "readonly", s->readonly,
				"events", JU(s->events), "members", json_members(s), "spares", json_spares(s),
				"rebuild", json_rebuild(&s->ri), "scrub", json_scrub(&s->si), "cache", json_cache(s));
	json_t *r = doc ? json_object_get(doc, "rebuild") : NULL, *sc = doc ? json_object_get(doc, "scrub") : NULL;
	if (r) {
		json_object_set_new(r, "last", json_last_rebuild(&s->ri));
		json_object_set_new(r, "starting", json_integer(s->ri.starting));
	}
	if (sc)
		json_object_update_new(sc, json_pack("{s:I, s:b, s:o, s:I}", "bad_files", JU(s->si.bad_files), "unresolved",
						 s->scrub_errors, "files", json_bad_files(s), "ended",
						 (json_int_t)s->si.ended));
	/* the state in words, the actions, what is left, space, the daemon */
	struct out acts = { NULL, 0, 0 };
	text_actions(s, &acts);
	json_t *actions = json_array(), *order = json_array(), *conds = json_array();
	for (size_t off = 0; actions && off < acts.len;) {
		const char *l = acts.buf + off, *nl = memchr(l, '\n', acts.len - off);
		size_t n = nl ? (size_t)(nl - l) : acts.len - off;
		char *line = strndup(l, n);
		const char *t = line && !strncmp(line, "action:  ", 9) ? line + 9 : line;
		if (t)
			json_array_append_new(actions, jstr(t));
		free(line);
		off += n + 1;
	}
	free(acts.buf);
	for (uint32_t k = 0; order && k < s->nout; k++)
		json_array_append_new(order, json_integer(s->order[k]));
	const char *c[8];
	int nc = conditions(s, c, 8);
	for (int i = 0; conds && i < nc; i++)
		json_array_append_new(conds, json_string(c[i]));
	if (doc && top) {
		json_object_update(top, doc);
		json_object_update_new(top, json_pack("{s:s, s:i, s:b, s:o, s:o, s:o, s:I, s:b, s:b, s:{s:i, s:I}, s:i}",
						   "state_text", s->state_text, "redundancy_left", s->redundancy_left,
						   "needs_attention", nc > 0, "conditions", conds ? conds : json_null(),
						   "actions", actions ? actions : json_null(),
						   "replace_order", order ? order : json_null(), "free", JU(s->free),
						   "shared_filesystem", s->shared_fs, "nearly_full", s->nearly_full,
						   "space_warn", "used_pct", (int)s->warn_pct, "min_free", JU(s->warn_free),
						   "pid", s->pid));
		json_object_set_new(top, "queue", json_queue(s));
	} else {
		json_decref(conds);
		json_decref(actions);
		json_decref(order);
	}
	char *text = doc && top ? json_dumps(top, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
	if (text)
		outf(o, "rc %d\n%s\n", status_rc(s->st, s->scrub_errors), text);
	else
		outf(o, "rc 2\nraidfs: status: the daemon ran out of memory writing the status as JSON\n");
	free(text);
	json_decref(doc);
	json_decref(top);
}

/* status [-v] [-x], status-brief [-x], status-list [-x], status-json:
 * collected and rendered under a->lock (a member taking a slot changes
 * its path under that lock).  -x: an array that needs no attention says
 * so in one line (brief and list: nothing). */
static void cmd_status(struct array *a, const char *cmd, int argc, char **argv, struct out *o)
{
	bool json = !strcmp(cmd, "status-json"), brief = !strcmp(cmd, "status-brief"), list = !strcmp(cmd, "status-list");
	bool verbose = false, attention = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = true;
		else if (!strcmp(argv[i], "-x"))
			attention = true;
		else {
			outf(o, "rc 2\nraidfs: status: unknown option '%s' (is the daemon older than this raidfs?)\n", argv[i]);
			return;
		}
	}
	struct status *s = malloc(sizeof(*s));
	if (!s) {
		outf(o, "rc 2\nraidfs: status: the daemon ran out of memory\n");
		return;
	}
	pthread_mutex_lock(&a->lock);
	status_collect(a, s);
	const char *c[8];
	if (json)
		status_json(s, o);
	else if (list && attention && conditions(s, c, 8) == 0)
		outf(o, "rc %d\n", status_rc(s->st, s->scrub_errors));
	else if (list)
		status_list(s, o);
	else if (brief)
		status_brief(s, attention, o);
	else if (attention && conditions(s, c, 8) == 0)
		outf(o, "rc %d\narray '%s' is healthy\n", status_rc(s->st, s->scrub_errors), s->name);
	else
		status_text(s, verbose, o);
	pthread_mutex_unlock(&a->lock);
	free(s);
}

/* events [SINCE]: the daemon's pid and event numbers, then the events
 * numbered after SINCE still held (event_history()), one a line:
 *   "events LAST OLDEST PID" then "SEQ TIME MEMBER EVENT" ... (a detail,
 *   "key=value ...", may follow EVENT: the monitor passes it on)
 * for `raidfs monitor` (alert.c), which reads them as ZED reads zevents */
static void cmd_events(int argc, char **argv, struct out *o)
{
	static struct event_rec rec[EVENT_HISTORY];	/* (one control thread) */
	uint64_t last, oldest;
	char *end = NULL;
	uint64_t since = argc == 2 ? strtoull(argv[1], &end, 10) : 0;
	if (argc > 2 || (argc == 2 && (!*argv[1] || *end))) {
		outf(o, "rc 2\nraidfs: events: usage: events [SINCE]\n");
		return;
	}
	size_t n = event_history(since, rec, argc == 2 ? EVENT_HISTORY : 0, &last, &oldest);
	outf(o, "rc 0\nevents %" PRIu64 " %" PRIu64 " %d\n", last, oldest, (int)getpid());
	for (size_t i = 0; i < n; i++)
		outf(o, "%" PRIu64 " %" PRId64 " %d %s%s%s\n", rec[i].seq, rec[i].time, rec[i].member, rec[i].event,
		     rec[i].detail[0] ? " " : "", rec[i].detail);
}

/* ------------------------------------------------------------- commands */

/* MEMBER is an index or the member's path. -1 if unknown. */
static int find_member(struct array *a, const char *arg)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*arg && !*end)
		return (v >= 0 && v < (long)a->width) ? (int)v : -1;
	char *want = realpath(arg, NULL);
	int found = -1;
	for (uint32_t j = 0; j < a->width && found < 0; j++) {
		if (!strcmp(arg, a->m[j].path)) {
			found = j;
			break;
		}
		char *have = want ? realpath(a->m[j].path, NULL) : NULL;
		if (have && !strcmp(have, want))
			found = j;
		free(have);
	}
	free(want);
	return found;
}

/* arg names the replacement of the member being replaced in place: that
 * member's index, else -1 */
static int find_replacement(struct array *a, const char *arg)
{
	int sj = shadow_of(a);
	if (sj < 0)
		return -1;
	char *want = realpath(arg, NULL), *have = realpath(a->m[SHADOW].path, NULL);
	bool same = !strcmp(arg, a->m[SHADOW].path) || (want && have && !strcmp(want, have));
	free(want);
	free(have);
	return same ? sj : -1;
}

static void cmd_fail(struct array *a, int argc, char **argv, struct out *o)
{
	int j = argc == 2 ? find_member(a, argv[1]) : -1;
	int sj = argc == 2 && j < 0 ? find_replacement(a, argv[1]) : -1;
	if (sj >= 0) {
		/* like failing the new disk of mdadm --replace */
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s", a->m[SHADOW].path);
		rebuild_fail_replacement(a, "failed by the administrator ('raidfs fail')");
		outf(o, "rc 0\nthe replacement of member %d by '%s' is abandoned; member %d stays in service\n", sj,
		     path, sj);
		return;
	}
	if (j < 0) {
		outf(o, "rc 1\nraidfs: fail: no member '%s' in array '%s' (give its index or path; see 'raidfs status %s')\n",
		     argc == 2 ? argv[1] : "", a->sb.name, a->mountpoint);
		return;
	}
	bool rebuilding = member_rebuilding(a, j);
	if (!member_online(a, j) && !rebuilding) {
		outf(o, "rc 1\nraidfs: fail: member %d '%s' is not online (it is %s)\n", j, a->m[j].path,
		     member_word(a, j));
		return;
	}
	array_fail_member(a, j, "failed by the administrator ('raidfs fail')");
	outf(o, "rc 0\nmember %d '%s' marked faulty%s; array '%s' is %s\n", j, a->m[j].path,
	     rebuilding ? " (its rebuild stops)" : "", a->sb.name, array_state_name(array_state(a)));
}

/* clear MOUNTPOINT [MEMBER]: the error counters of one member or all,
 * as zpool clear (a failed member stays failed: 'raidfs add' or
 * 'replace' puts it back) */
static void cmd_clear(struct array *a, int argc, char **argv, struct out *o)
{
	if (argc > 2) {
		outf(o, "rc 1\nraidfs: clear: usage: raidfs clear MOUNTPOINT [MEMBER]\n");
		return;
	}
	int j = argc == 2 ? find_member(a, argv[1]) : -1;
	if (argc == 2 && j < 0) {
		outf(o, "rc 1\nraidfs: clear: no member '%s' in array '%s' (give its index or path; see 'raidfs status %s')\n",
		     argv[1], a->sb.name, a->mountpoint);
		return;
	}
	for (uint32_t i = 0; i < a->width; i++)
		if (argc == 1 || (int)i == j)
			array_counters_clear(a, i);
	if (argc == 1)
		outf(o, "rc 0\nerror counters of the %u members of array '%s' cleared\n", a->width, a->sb.name);
	else
		outf(o, "rc 0\nerror counters of member %d '%s' cleared%s\n", j, a->m[j].path,
		     member_online(a, j) || member_rebuilding(a, j) ? ""
		     : " (it stays out of service: 'raidfs add' or 'raidfs replace' puts it back)");
}

/* raidfs inject MNT log ...: the cache log of bbu=file */
static void inject_log(int argc, char **argv, struct out *o)
{
	struct cache_stats cs;
	cache_get_stats(&cs);
	char err[256];
	if (cs.bbu != BBU_FILE) {
		outf(o, "rc 1\nraidfs: inject: this mount has no cache log (it is mounted with bbu=%s, not bbu=file:PATH)\n",
		     bbu_kind_name(cs.bbu));
		return;
	}
	if (cachelog_inject(argc, argv, err, sizeof(err)) < 0) {
		outf(o, "rc 1\nraidfs: %s\n", err);
		return;
	}
	char desc[256];
	cachelog_inject_describe(desc, sizeof(desc));
	outf(o, "rc 0\nthe cache log '%s': %s\n", cs.bbu_path, desc[0] ? desc : "no faults injected");
}

static void cmd_inject(struct array *a, int argc, char **argv, struct out *o)
{
	if (argc >= 2 && !strcmp(argv[1], "log")) {
		inject_log(argc - 2, argv + 2, o);
		return;
	}
	int j = argc >= 2 ? find_member(a, argv[1]) : -1;
	/* (the replacement of an in-place replace, by its path: its slot) */
	int sj = argc >= 2 && j < 0 ? find_replacement(a, argv[1]) : -1;
	if (sj >= 0)
		j = SHADOW;
	char err[256];
	if (j < 0) {
		outf(o, "rc 1\nraidfs: inject: no member '%s' in array '%s' (give its index or path, or the path of a "
		     "replacement)\n", argc >= 2 ? argv[1] : "", a->sb.name);
		return;
	}
	if (member_inject(a, j, argc - 2, argv + 2, err, sizeof(err)) < 0) {
		outf(o, "rc 1\nraidfs: %s\n", err);
		return;
	}
	char desc[256];
	member_inject_describe(a, j, desc, sizeof(desc));
	if (sj >= 0)
		outf(o, "rc 0\nthe replacement of member %d '%s': %s\n", sj, a->m[j].path,
		     desc[0] ? desc : "no faults injected");
	else
		outf(o, "rc 0\nmember %d '%s': %s\n", j, a->m[j].path, desc[0] ? desc : "no faults injected");
}

static void cmd_replace(struct array *a, int argc, char **argv, struct out *o)
{
	char err[512];
	int j = argc == 3 ? find_member(a, argv[1]) : -1;
	if (j < 0) {
		outf(o, "rc 1\nraidfs: replace: no member '%s' in array '%s' (give its index or path)\n",
		     argc == 3 ? argv[1] : "", a->sb.name);
		return;
	}
	bool in_place = member_online(a, j);
	int r = rebuild_start(a, j, argv[2], err, sizeof(err));
	if (r < 0) {
		outf(o, "rc 1\nraidfs: replace: %s\n", err);
		return;
	}
	if (r == 1) {
		struct rebuild_info ri;
		rebuild_get(&ri);
		int q[SB_MAX_SPARES];
		int nq = array_queued(a, q, SB_MAX_SPARES), pos = 0;
		while (pos < nq && q[pos] != j)
			pos++;
		outf(o, "rc 0\nqueued: member %d will be %s onto '%s' when the %s before it end%s (position %d in the queue; the rebuild of member %d runs now); follow it with 'raidfs status %s', cancel it with 'raidfs remove %s %s'\n",
		     j, in_place ? "copied" : "rebuilt", argv[2], pos ? "rebuilds" : "rebuild", pos ? "" : "s", pos + 1,
		     ri.member, a->mountpoint, a->mountpoint, argv[2]);
		return;
	}
	if (in_place)
		outf(o, "rc 0\ncopying member %d onto '%s'; it keeps serving until the copy is complete; follow it with 'raidfs status %s'\n",
		     j, argv[2], a->mountpoint);
	else
		outf(o, "rc 0\nrebuilding member %d onto '%s'; follow it with 'raidfs status %s'\n", j, argv[2],
		     a->mountpoint);
}

static void cmd_remove(struct array *a, int argc, char **argv, struct out *o)
{
	char err[512];
	if (argc != 2) {
		outf(o, "rc 1\nraidfs: remove: give the member (index or path) or the spare's path\n");
		return;
	}
	int j = find_member(a, argv[1]);
	if (j < 0) {
		int q = -1;
		if (array_remove_spare(a, argv[1], &q, err, sizeof(err)) < 0) {
			outf(o, "rc 1\nraidfs: remove: %s\n", err);
			return;
		}
		if (q >= 0)
			outf(o, "rc 0\nthe queued replacement of member %d by '%s' is cancelled\n", q, argv[1]);
		else
			outf(o, "rc 0\nspare '%s' removed from array '%s'\n", argv[1], a->sb.name);
		return;
	}
	if (array_remove_member(a, j, err, sizeof(err)) < 0) {
		outf(o, "rc 1\nraidfs: remove: %s\n", err);
		return;
	}
	outf(o, "rc 0\nmember %d '%s' removed from array '%s'; put a new disk in its place with 'raidfs replace %s %d DIR'\n",
	     j, a->m[j].path, a->sb.name, a->mountpoint, j);
}

static void cmd_add(struct array *a, int argc, char **argv, struct out *o)
{
	char err[512];
	if (argc != 2) {
		outf(o, "rc 1\nraidfs: add: give the directory to add as a hot spare\n");
		return;
	}
	int j = rebuild_readd(a, argv[1], err, sizeof(err));
	if (j >= 0) {
		if (member_online(a, j))
			outf(o, "rc 0\nmember %d is back in service from '%s': nothing changed while it was away; array '%s' is %s\n",
			     j, argv[1], a->sb.name, array_state_name(array_state(a)));
		else
			outf(o, "rc 0\nmember %d re-added from '%s': only the files changed while it was away are resynced; follow it with 'raidfs status %s'\n",
			     j, argv[1], a->mountpoint);
		return;
	}
	if (j != -ENOENT) {
		outf(o, "rc 1\nraidfs: add: %s\n", err);
		return;
	}
	if (rebuild_add_spare(a, argv[1], err, sizeof(err)) < 0) {
		outf(o, "rc 1\nraidfs: add: %s\n", err);
		return;
	}
	struct rebuild_info ri;
	rebuild_get(&ri);
	if (!ri.active)
		rebuild_take_spare(a);
	/* (the monitor may have taken the spare first: what counts is whether
	 * the rebuild running now is onto it) */
	rebuild_get(&ri);
	char *rp = realpath(argv[1], NULL);
	bool started = false;
	for (uint32_t k = 0; rp && k < a->width; k++)
		started |= strcmp(a->m[k].path, rp) == 0;
	free(rp);
	/* (a member out of service other than the one being rebuilt takes it
	 * when that rebuild ends, as the queue of 'raidfs replace') */
	bool waits = false;
	for (uint32_t k = 0; ri.active && !started && k < a->width; k++)
		waits |= (int)k != ri.member && !member_online(a, k) && !member_rebuilding(a, k);
	outf(o, "rc 0\n'%s' added as a hot spare%s\n", argv[1],
	     started     ? "; the array is degraded, so it is being rebuilt onto now"
	     : waits     ? "; it takes the place of a member out of service when the running rebuild ends"
			 : "");
}

static void cmd_rebuild(struct array *a, int argc, char **argv, struct out *o)
{
	struct rebuild_info ri;
	rebuild_get(&ri);
	uint32_t minr = ri.min_rate, maxr = ri.max_rate;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "resume") && !ri.active && array_state(a) != ARRAY_FAILED &&
		    rebuild_resume(a) > 0) {
			/* a rebuild that stopped with the member still rebuilding
			 * (file errors, a lost source) starts again */
			outf(o, "rc 0\nthe stopped rebuild goes on from its saved position; follow it with 'raidfs status %s'\n",
			     a->mountpoint);
			return;
		}
		if ((!strcmp(argv[i], "pause") || !strcmp(argv[i], "resume")) && !ri.active) {
			outf(o, "rc 1\nraidfs: rebuild: no rebuild is running%s%s\n",
			     ri.last_result[0] ? "; the last one: " : "", ri.last_result);
			return;
		}
		if (!strcmp(argv[i], "pause") || !strcmp(argv[i], "resume")) {
			rebuild_pause(argv[i][0] == 'p');
			outf(o, "rc 0\nrebuild %s\n", argv[i][0] == 'p' ? "paused" : "resumed");
			return;
		}
		if ((!strcmp(argv[i], "--min-rate") || !strcmp(argv[i], "--max-rate")) && i + 1 < argc) {
			char *end;
			unsigned long v = strtoul(argv[i + 1], &end, 10);
			if (*end) {
				outf(o, "rc 1\nraidfs: rebuild: '%s' is not a rate in MB/s\n", argv[i + 1]);
				return;
			}
			if (argv[i][2] == 'm' && argv[i][3] == 'i')
				minr = v;
			else
				maxr = v;
			i++;
			continue;
		}
		outf(o, "rc 1\nraidfs: rebuild: use pause, resume, --min-rate MB/s, --max-rate MB/s (0: no limit)\n");
		return;
	}
	rebuild_set_rates(minr, maxr);
	outf(o, "rc 0\nrebuild rates: min %u MB/s, max %u MB/s%s\n", minr, maxr, maxr ? "" : " (no limit)");
}

/* scrub MOUNTPOINT [--repair | stop] */
static void cmd_scrub(struct array *a, int argc, char **argv, struct out *o)
{
	char err[256];
	if (argc == 2 && !strcmp(argv[1], "stop")) {
		struct scrub_info si;
		scrub_get(&si);
		scrub_request_stop();
		if (si.active)
			outf(o, "rc 0\nscrub of array '%s' stopping; 'raidfs status %s' shows where it stopped\n", a->sb.name,
			     a->mountpoint);
		else
			outf(o, "rc 1\nraidfs: scrub: no scrub is running\n");
		return;
	}
	bool fix = argc == 2 && !strcmp(argv[1], "--repair");
	if (argc > 2 || (argc == 2 && !fix)) {
		outf(o, "rc 2\nraidfs: scrub: usage: raidfs scrub MOUNTPOINT [--repair | stop]\n");
		return;
	}
	if (scrub_start(a, fix, err, sizeof(err)) < 0) {
		outf(o, "rc 1\nraidfs: scrub: %s\n", err);
		return;
	}
	outf(o, "rc 0\nscrub of array '%s' started%s; follow it with 'raidfs status %s'\n", a->sb.name,
	     fix ? " (mismatches are recomputed from the data)" : "", a->mountpoint);
}

static void dispatch(struct array *a, int argc, char **argv, struct out *o)
{
	const char *cmd = argv[0];
	if (!strcmp(cmd, "status") || !strcmp(cmd, "status-json") || !strcmp(cmd, "status-brief") ||
	    !strcmp(cmd, "status-list")) {
		cmd_status(a, cmd, argc, argv, o);
	} else if (!strcmp(cmd, "pid")) {
		outf(o, "rc 0\n%d\n", (int)getpid());
	} else if (!strcmp(cmd, "events")) {
		cmd_events(argc, argv, o);
	} else if (!strcmp(cmd, "fail")) {
		cmd_fail(a, argc, argv, o);
	} else if (!strcmp(cmd, "inject")) {
		cmd_inject(a, argc, argv, o);
	} else if (!strcmp(cmd, "clear")) {
		cmd_clear(a, argc, argv, o);
	} else if (!strcmp(cmd, "remove")) {
		cmd_remove(a, argc, argv, o);
	} else if (!strcmp(cmd, "add")) {
		cmd_add(a, argc, argv, o);
	} else if (!strcmp(cmd, "replace")) {
		cmd_replace(a, argc, argv, o);
	} else if (!strcmp(cmd, "rebuild")) {
		cmd_rebuild(a, argc, argv, o);
	} else if (!strcmp(cmd, "scrub")) {
		cmd_scrub(a, argc, argv, o);
	} else if (!strcmp(cmd, "cache") || !strcmp(cmd, "bbu")) {
		char reply[2048];
		int rc = !strcmp(cmd, "cache") ? cache_ctl(argc, argv, reply, sizeof(reply))
					       : cache_bbu_ctl(argc, argv, reply, sizeof(reply));
		outf(o, "rc %d\n%s", rc, reply);
	} else {
		outf(o, "rc 2\nraidfs: unknown control request '%s' (is the daemon older than this raidfs?)\n", cmd);
	}
}

/* ---------------------------------------------------------------- server */

static void answer(struct array *a, int fd, char *req);

struct slow_req {
	struct array *a;
	int fd;
	char req[256];
};

static void *slow_main(void *arg)
{
	struct slow_req *sr = arg;
	answer(sr->a, sr->fd, sr->req);
	close(sr->fd);
	free(sr);
	return NULL;
}

/* Read one request from fd and answer it; true when a thread took it
 * over (and closes fd). */
static bool serve(struct array *a, int fd)
{
	char req[256];
	size_t n = 0;
	/* one request line; the client may send it in pieces */
	while (n < sizeof(req) - 1 && !memchr(req, '\n', n)) {
		ssize_t r = read(fd, req + n, sizeof(req) - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += r;
	}
	if (n == 0) {
		log_warn("control socket: empty request");
		return false;
	}
	req[n] = '\0';
	req[strcspn(req, "\r\n")] = '\0';
	if (!strncmp(req, "cache\tflush", 11)) {
		/* writing the cache out can take long (slow members): on its
		 * own thread, so status and the other commands still answer */
		struct slow_req *sr = malloc(sizeof(*sr));
		pthread_t t;
		if (sr) {
			sr->a = a;
			sr->fd = fd;
			snprintf(sr->req, sizeof(sr->req), "%s", req);
			if (pthread_create(&t, NULL, slow_main, sr) == 0) {
				pthread_detach(t);
				return true;
			}
			free(sr);
		}
	}
	answer(a, fd, req);
	return false;
}

/* Dispatch one request line and write the reply to fd. */
static void answer(struct array *a, int fd, char *req)
{
	struct out o = { NULL, 0, 0 };
	/* words are separated by tabs (paths may hold spaces) */
	char *argv[32];
	int argc = 0;
	for (char *save = NULL, *w = strtok_r(req, "\t", &save); w && argc < 32;
	     w = strtok_r(NULL, "\t", &save))
		argv[argc++] = w;
	if (argc == 0)
		outf(&o, "rc 2\nraidfs: empty control request\n");
	else
		dispatch(a, argc, argv, &o);
	for (size_t off = 0; off < o.len;) {
		ssize_t w = write(fd, o.buf + off, o.len - off);
		if (w <= 0)
			break;
		off += w;
	}
	free(o.buf);
}

static void *ctl_thread(void *arg)
{
	struct array *a = arg;
	for (;;) {
		int c = accept(listen_fd, NULL, NULL);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		if (!serve(a, c))
			close(c);
	}
	return NULL;
}

int ctl_listen(struct array *a)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mkdir(run_dir(), 0700);
	ctl_socket_path(a->mountpoint, sock_path, sizeof(sock_path));
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	unlink(sock_path);
	if (bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(listen_fd, 8) < 0) {
		int e = errno;
		log_err("cannot create control socket '%s': %s", sock_path, strerror(e));
		close(listen_fd);
		listen_fd = -1;
		return -e;
	}
	return 0;
}

int ctl_start(struct array *a)
{
	if (listen_fd < 0)
		return -EBADF;
	if (pthread_create(&thread, NULL, ctl_thread, a) != 0) {
		close(listen_fd);
		listen_fd = -1;
		return -EAGAIN;
	}
	return 0;
}

void ctl_stop(void)
{
	if (listen_fd < 0)
		return;
	shutdown(listen_fd, SHUT_RDWR);
	close(listen_fd);
	pthread_join(thread, NULL);
	listen_fd = -1;
	unlink(sock_path);
}

int ctl_request(const char *mountpoint, const char *req, bool quiet, char *reply, size_t replylen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[108];
	ctl_socket_path(mountpoint, path, sizeof(path));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 2;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		if (!quiet)
			fprintf(stderr, "raidfs: '%s' is not a raidfs mount (no daemon answers on its control socket; is it mounted?)\n",
				mountpoint);
		return 2;
	}
	char line[256];
	snprintf(line, sizeof(line), "%s\n", req);
	if (write(fd, line, strlen(line)) < 0) {
		close(fd);
		return 2;
	}
	struct out o = { NULL, 0, 0 };
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		outf(&o, "%.*s", (int)n, buf);
	close(fd);
	int rc = 2;
	char *body = o.len ? o.buf : "";
	if (o.len && sscanf(o.buf, "rc %d", &rc) == 1) {
		body = strchr(o.buf, '\n');
		body = body ? body + 1 : o.buf + o.len;
	}
	if (o.len == 0 && !quiet)
		fprintf(stderr, "raidfs: the daemon serving '%s' did not answer (see its log)\n", mountpoint);
	/* status prints the status whatever the state (its exit status is
	 * the state); any other command that failed printed why: an error */
	bool error = rc != 0 && strncmp(req, "status", 6) != 0;
	if (reply)
		snprintf(reply, replylen, "%s", body);
	else if (!quiet)
		fputs(body, error ? stderr : stdout);
	free(o.buf);
	return rc;
}

/* ------------------------------------------------- client: every array */

/* A mount point as /proc/self/mountinfo writes it (space, tab, newline
 * and backslash as \ooo) decoded in place. */
static void unescape_octal(char *p)
{
	char *o = p;
	for (; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
		    p[3] <= '7') {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

int ctl_mounts(char ***mnts, char ***srcs)
{
	*mnts = NULL;
	if (srcs)
		*srcs = NULL;
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return -errno;
	char *line = NULL, **list = NULL, **from = NULL;
	size_t cap = 0, cap2 = 0, lcap = 0;
	int n = 0, r = 0;
	while (r == 0 && getline(&line, &lcap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
		char *sep = strstr(line, " - "), *save = NULL;
		if (!sep)
			continue;
		*sep = '\0';
		char *type = strtok_r(sep + 3, " \n", &save), *src = type ? strtok_r(NULL, " \n", &save) : NULL;
		if (!src || strcmp(type, "fuse.raidfs"))
			continue;
		char *w = strtok_r(line, " ", &save);
		for (int i = 0; w && i < 4; i++)
			w = strtok_r(NULL, " ", &save);
		if (!w)
			continue;
		unescape_octal(w);
		unescape_octal(src);
		char *copy = strdup(w), *copy2 = srcs ? strdup(src) : NULL;
		if (!copy || (srcs && !copy2) || util_grow(&list, &cap, (size_t)n + 1, sizeof(*list)) < 0 ||
		    (srcs && util_grow(&from, &cap2, (size_t)n + 1, sizeof(*from)) < 0)) {
			free(copy);
			free(copy2);
			r = -ENOMEM;
			break;
		}
		list[n] = copy;
		if (srcs)
			from[n] = copy2;
		n++;
	}
	free(line);
	fclose(f);
	if (r < 0) {
		ctl_mounts_free(list, n);
		ctl_mounts_free(from, srcs ? n : 0);
		return r;
	}
	*mnts = list;
	if (srcs)
		*srcs = from;
	return n;
}

void ctl_mounts_free(char **list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

const char *ctl_resolve(const char *arg, char *buf, size_t len)
{
	char **mnts, canon[PATH_MAX];
	int n = ctl_mounts(&mnts, NULL);
	if (n <= 0)
		return arg;
	/* the mount point itself: found without entering the mount */
	ctl_canonical(arg, canon, sizeof(canon));
	for (int i = 0; i < n; i++)
		if (!strcmp(canon, mnts[i])) {
			ctl_mounts_free(mnts, n);
			return arg;
		}
	/* a path inside one (".", a subdirectory): the longest mount point
	 * that holds it */
	const char *found = NULL;
	size_t best = 0;
	char *rp = realpath(arg, NULL);
	for (int i = 0; rp && i < n; i++) {
		size_t l = strlen(mnts[i]);
		if (l > best && !strncmp(rp, mnts[i], l) && (rp[l] == '/' || rp[l] == '\0' || l == 1)) {
			best = l;
			found = mnts[i];
		}
	}
	if (found)
		snprintf(buf, len, "%s", found);
	free(rp);
	ctl_mounts_free(mnts, n);
	return found ? buf : arg;
}

/* ctl_mounts(), or -1 with the reason printed */
static int mounts_or_say(char ***mnts)
{
	int n = ctl_mounts(mnts, NULL);
	if (n < 0)
		fprintf(stderr, "raidfs: status: cannot read /proc/self/mountinfo: %s\n", strerror(-n));
	return n < 0 ? -1 : n;
}

int ctl_status_all(bool list, bool attention)
{
	char **mnts;
	int n = mounts_or_say(&mnts), rc = 0, shown = 0;
	if (n < 0)
		return 2;
	for (int i = 0; i < n; i++) {
		char reply[8192] = "";
		char req[64];
		snprintf(req, sizeof(req), "%s%s", list ? "status-list" : "status-brief", attention ? "\t-x" : "");
		int r = ctl_request(mnts[i], req, true, reply, sizeof(reply));
		if (r == 2 && !strncmp(reply, "raidfs: unknown control request", 31)) {
			/* (a daemon started from an older raidfs) */
			if (list)
				printf("-\t-\tunknown\t-\tunknown\t%s\n", mnts[i]);
			else
				printf("%s : served by an older raidfs daemon: 'raidfs status %s' shows its state (remount it "
				       "to see it here)\n", mnts[i], mnts[i]);
			shown++;
			continue;
		}
		if (r == 2 && !reply[0]) {
			/* (a mount whose daemon is gone: ENOTCONN for users) */
			if (list)
				printf("-\t-\tnot-answering\t-\tnot-answering\t%s\n", mnts[i]);
			else
				printf("%s : not answering: no daemon on its control socket (gone? 'fusermount3 -u %s')\n",
				       mnts[i], mnts[i]);
			shown++;
		} else if (reply[0]) {
			fputs(reply, stdout);
			shown++;
		}
		if (r > rc)
			rc = r;
	}
	if (n == 0 && !list)
		printf("no raidfs arrays are mounted\n");
	else if (shown == 0 && attention && !list)
		printf("all arrays are healthy\n");
	ctl_mounts_free(mnts, n);
	return rc;
}

int ctl_status_all_json(void)
{
	char **mnts;
	int n = mounts_or_say(&mnts), rc = 0, shown = 0;
	if (n < 0)
		return 2;
	char *reply = malloc(1 << 20);
	printf("[");
	for (int i = 0; reply && i < n; i++) {
		reply[0] = '\0';
		int r = ctl_request(mnts[i], "status-json", true, reply, 1 << 20);
		if (reply[0] == '{') {
			reply[strcspn(reply, "\n")] = '\0';
			printf("%s%s", shown++ ? ", " : "", reply);
		} else {
			fprintf(stderr, "raidfs: status: '%s' is not answering (no daemon on its control socket)\n", mnts[i]);
			r = 2;
		}
		if (r > rc)
			rc = r;
	}
	printf("]\n");
	free(reply);
	ctl_mounts_free(mnts, n);
	return rc;
}

/* ------------------------------------------------ client: --wait */

/* The daemon's status as parsed JSON, or NULL when it does not answer. */
static json_t *status_doc(const char *mountpoint)
{
	char *reply = malloc(1 << 20);
	if (!reply)
		return NULL;
	reply[0] = '\0';
	ctl_request(mountpoint, "status-json", true, reply, 1 << 20);
	json_t *doc = reply[0] == '{' ? json_loads(reply, 0, NULL) : NULL;
	free(reply);
	return doc;
}

/* replace --wait of member: its work is still to come or under way -
 * queued, being taken from the queue, or the running rebuild is its */
static bool member_waits(json_t *doc, json_t *rebuild, int member)
{
	json_t *q, *e;
	size_t i;
	json_array_foreach((q = json_object_get(doc, "queue")), i, e)
		if (json_integer_value(json_object_get(e, "member")) == member &&
		    json_is_true(json_object_get(e, "given")))
			return true;
	if (json_integer_value(json_object_get(rebuild, "starting")) == member &&
	    json_object_get(rebuild, "starting"))
		return true;
	return json_is_true(json_object_get(rebuild, "active")) &&
	       json_integer_value(json_object_get(rebuild, "member")) == member;
}

int ctl_wait(const char *mountpoint, bool scrub, int member)
{
	for (unsigned n = 0;; n++) {
		json_t *doc = status_doc(mountpoint);
		if (!doc) {
			fprintf(stderr, "raidfs: the daemon serving '%s' stopped answering while waiting\n", mountpoint);
			return 2;
		}
		json_t *part = json_object_get(doc, scrub ? "scrub" : "rebuild");
		if (!scrub && member >= 0 && member_waits(doc, part, member)) {
			json_decref(doc);
			util_sleep_ms(200);
			continue;
		}
		if (!json_is_true(json_object_get(part, "active")) || (!scrub && member >= 0)) {
			int rc;
			const char *res = json_string_value(json_object_get(part, "last_result"));
			if (scrub) {
				/* 0 clean (or all repaired), 1 problems left, 3 stopped */
				bool unresolved = json_is_true(json_object_get(part, "unresolved"));
				rc = res && !strncmp(res, "finished", 8) ? (unresolved ? 1 : 0) : 3;
				printf("scrub %s\n", res ? res : "ended");
			} else {
				/* 0 the member in service, 1 not (a queued one's
				 * rebuild may have ended before the next began) */
				json_t *last = json_object_get(part, "last");
				bool ok = json_is_true(json_object_get(last, "ok")) &&
					  (member < 0 || json_integer_value(json_object_get(last, "member")) == member);
				rc = ok ? 0 : 1;
				if (member >= 0 && json_integer_value(json_object_get(last, "member")) != member) {
					/* (another member's rebuild ended or runs since:
					 * this one's result is its state) */
					json_t *m = json_array_get(json_object_get(doc, "members"), (size_t)member);
					const char *st = json_string_value(json_object_get(m, "state"));
					rc = st && !strcmp(st, "online") && json_is_null(json_object_get(m, "replacement")) ? 0 : 1;
					printf("member %d is %s\n", member, st ? st : "unknown");
				} else {
					printf("%s\n", res && res[0] ? res : "no rebuild ran");
				}
			}
			json_decref(doc);
			return rc;
		}
		json_decref(doc);
		(void)n;
		util_sleep_ms(200);
	}
}
