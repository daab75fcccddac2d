/*
 * alert.c - `raidfs monitor`: every mounted array watched, every event
 * told to a line and to a program.  See alert.h for the contract.
 *
 * A look at one array (look()):
 *   1. status-json: the state as it is now (S);
 *   2. events SINCE: the events the daemon posted after the last one seen
 *      (E), told first, in order: they happened before or while S was
 *      taken, and what S shows follows from them;
 *   3. what S shows that no event says, compared with the last look.
 * The first look at a daemon takes the event number first (nothing older
 * is told), then S, and tells the problems present.
 *
 * Conditions (NoRedundancy, NearlyFull, BbuFailed) are told once when
 * they start, whoever notices first (the daemon's event or the status),
 * and again only after they ended: a struct cond per array and member.
 * S is older than E: a condition E told is not taken as ended because S
 * does not show it yet (`fresh`).
 */
#include "alert.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "layout.h"
#include "scan.h"
#include "util.h"

/* A daemon too old to judge its members' space (no nearly_full in its
 * status): a member is nearly full at this share of its filesystem used. */
#define FALLBACK_FULL_PCT 90

struct opts {
	const char *program;
	bool syslog, oneshot, test;
	uint32_t interval_ms;
	unsigned timeout_s;	/* a daemon's answer waited for at most */
	char **only;		/* canonical mount points to watch (none: all) */
	int nonly;
};

/* A condition told: on while it lasts; fresh when a daemon's event of
 * this look set it (the status of this look, older, may not show it). */
struct cond {
	bool on, fresh;
};

/* The daemon posted the condition's event: tell it unless it is on. */
static bool cond_event(struct cond *c)
{
	if (c->on)
		return false;
	c->on = c->fresh = true;
	return true;
}

/* The status shows the condition (now) or not: tell it when it starts
 * (and `may`: the status is the one to tell it). */
static bool cond_status(struct cond *c, bool now, bool may)
{
	bool tell = now && !c->on && may;
	if (tell)
		c->on = true;
	else if (!now && !c->fresh)
		c->on = false;
	c->fresh = false;
	return tell;
}

struct watched {
	char *mnt;
	bool mounted;		/* in mountinfo at the last discovery */
	bool looked;		/* the first look at this daemon is done */
	bool silent_told;	/* "does not answer" said */
	int pid;		/* its daemon */
	uint64_t seq;		/* the last event number seen */
	char name[256], uuid[37];
	/* what the last look saw, and the conditions told */
	struct cond noredund, bbu_failed, full[LAYOUT_MAX_WIDTH];
	uint64_t errs[LAYOUT_MAX_WIDTH][3];	/* READ WRITE CKSUM */
	char scrub_last[512];
	bool scrub_told;	/* the daemon posted ScrubFinished in this look */
};

static struct watched *ws;
static size_t nws, cap_ws;
static int told;		/* events told (--oneshot's exit status) */
static volatile sig_atomic_t stop;
static char reply[1 << 20];

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* SIGALRM cuts a request short (installed without SA_RESTART: the
 * client's connect() or read() returns EINTR), so a daemon whose control
 * thread is stuck is said not to answer instead of stopping the monitor. */
static void on_alarm(int sig)
{
	(void)sig;
}

static int request(const struct opts *o, const char *mnt, const char *req)
{
	reply[0] = '\0';
	alarm(o->timeout_s);
	int rc = ctl_request(mnt, req, true, reply, sizeof(reply));
	alarm(0);
	return rc;
}

/* ------------------------------------------------------------- telling */

/* A note of the monitor itself (not an event): a line, no program. */
static void note(const struct opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const struct opts *o, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (o->syslog) {
		syslog(LOG_NOTICE, "%s", msg);
		return;
	}
	char ts[64];
	time_t now = time(NULL);
	struct tm tm;
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S%z", localtime_r(&now, &tm));
	printf("%s %s\n", ts, msg);
	fflush(stdout);
}

static int priority(const char *event)
{
	static const char *const warn[] = { "Fail", "DegradedArray", "NoRedundancy", "BbuFailed", "NearlyFull",
					    "ErrorsRising", "ChecksumErrors", "Remove", "ScrubFinished", NULL };
	if (!strcmp(event, "ArrayFailed"))
		return LOG_CRIT;
	for (int i = 0; warn[i]; i++)
		if (!strcmp(event, warn[i]))
			return LOG_WARNING;
	return LOG_INFO;
}

/* Run the program as the mount's event_program runs (event.c): PROGRAM
 * EVENT MOUNTPOINT MEMBER, the details in the environment; wait for it. */
static void run_program(const struct opts *o, const struct watched *w, const char *event, const char *mem,
			const char *detail)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("RAIDFS_ARRAY", w->name, 1);
		setenv("RAIDFS_UUID", w->uuid, 1);
		setenv("RAIDFS_EVENT_DETAIL", detail, 1);
		char copy[512], *save = NULL;
		snprintf(copy, sizeof(copy), "%s", detail);
		for (char *kv = strtok_r(copy, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
			char *eq = strchr(kv, '='), var[64];
			if (!eq || eq == kv || eq - kv > 40)
				continue;
			int n = snprintf(var, sizeof(var), "RAIDFS_");
			for (char *c = kv; c < eq; c++)
				var[n++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
			var[n] = '\0';
			setenv(var, eq + 1, 1);
		}
		execl(o->program, o->program, event, w->mnt, mem, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		fprintf(stderr, "raidfs: monitor: cannot run '%s': %s\n", o->program, strerror(errno));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		fprintf(stderr, "raidfs: monitor: cannot run '%s' (is it an executable file?)\n", o->program);
	else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "raidfs: monitor: '%s %s %s %s' failed (exit status %d)\n", o->program, event, w->mnt,
			mem, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* Tell one event: a line (stdout with a timestamp, or syslog) and the
 * program.  member -1: the array; when: the time it happened; detail:
 * "key=value ..." or "". */
static void tell(const struct opts *o, const struct watched *w, const char *event, int member, time_t when,
		 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void tell(const struct opts *o, const struct watched *w, const char *event, int member, time_t when,
		 const char *fmt, ...)
{
	char detail[512], mem[16] = "", line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (member >= 0)
		snprintf(mem, sizeof(mem), "%d", member);
	told++;
	snprintf(line, sizeof(line), "%s %s%s%s array=%s%s%s", event, w->mnt, member >= 0 ? " member=" : "", mem,
		 w->name[0] ? w->name : "?", detail[0] ? " " : "", detail);
	if (o->syslog) {
		syslog(priority(event), "%s", line);
	} else {
		char ts[64];
		struct tm tm;
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S%z", localtime_r(&when, &tm));
		printf("%s %s\n", ts, line);
		fflush(stdout);
	}
	if (o->program)
		run_program(o, w, event, mem, detail);
}

/* ------------------------------------------------------------- looking */

static json_t *jget(json_t *o, const char *k)
{
	return json_object_get(o, k);
}

static const char *jstring(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static uint64_t juint(json_t *o, const char *k)
{
	json_int_t v = json_integer_value(json_object_get(o, k));
	return v > 0 ? (uint64_t)v : 0;
}

/* Members (not online) each redundancy group lost, the fewest left of
 * any group into *left (the level's m when none is lost); false when the
 * level has no redundancy or the status cannot be read. */
static bool redundancy_left(json_t *doc, int *left, int *lost_total)
{
	json_t *v = jget(doc, "redundancy_left");	/* (a daemon that says it) */
	json_t *mem = jget(doc, "members");
	*lost_total = 0;
	for (size_t j = 0; j < json_array_size(mem); j++)
		*lost_total += strcmp(jstring(json_array_get(mem, j), "state"), "online") != 0;
	if (json_is_integer(v)) {
		*left = (int)json_integer_value(v);
		return true;
	}
	struct layout l;
	int level = layout_level_parse(jstring(doc, "level"));
	uint32_t width = (uint32_t)json_array_size(mem);
	if (level < 0 || layout_init(&l, (enum raid_level)level, (uint32_t)juint(doc, "chunk"), width,
				     (uint32_t)juint(doc, "groups"), 0, NULL) < 0 || l.m == 0)
		return false;
	uint32_t gw = width / l.groups;
	*left = (int)l.m;
	for (uint32_t g = 0; g < l.groups; g++) {
		int lost = 0;
		for (uint32_t j = g * gw; j < (g + 1) * gw; j++)
			lost += strcmp(jstring(json_array_get(mem, j), "state"), "online") != 0;
		if ((int)l.m - lost < *left)
			*left = (int)l.m - lost;
	}
	return true;
}

/* Is member m (a status "members" entry) nearly full?  The daemon's
 * judgement (-o space_warn) when it gives one, else FALLBACK_FULL_PCT of
 * its filesystem used. */
static bool nearly_full(json_t *m)
{
	json_t *v = jget(m, "nearly_full");
	if (json_is_boolean(v))
		return json_is_true(v);
	struct statvfs sv;
	if (strcmp(jstring(m, "state"), "online") || statvfs(jstring(m, "path"), &sv) < 0 || sv.f_blocks == 0)
		return false;
	uint64_t used = sv.f_blocks - sv.f_bfree, total = used + sv.f_bavail;
	return total && used * 100 >= (uint64_t)FALLBACK_FULL_PCT * total;
}

/* One event the daemon posted ("SEQ TIME MEMBER EVENT [DETAIL]", the
 * detail "key=value ..." as event_program gets it). */
static void daemon_event(const struct opts *o, struct watched *w, const char *line)
{
	uint64_t seq;
	int64_t when;
	int member, end = 0;
	char event[64];
	if (sscanf(line, "%" SCNu64 " %" SCNd64 " %d %63s%n", &seq, &when, &member, event, &end) != 4)
		return;
	const char *detail = line + end + strspn(line + end, " ");
	struct cond *c = !strcmp(event, "NoRedundancy") ? &w->noredund
		       : !strcmp(event, "BbuFailed") ? &w->bbu_failed
		       : !strcmp(event, "NearlyFull") && member >= 0 && member < LAYOUT_MAX_WIDTH ? &w->full[member]
		       : NULL;
	if (c && !cond_event(c))
		return;	/* told already, from the status */
	if (!strcmp(event, "ScrubFinished"))
		w->scrub_told = true;
	tell(o, w, event, member, (time_t)when, "%s", detail);
}

/* What the status shows that no event said (first: the first look, tell
 * every problem present). */
static void derive(const struct opts *o, struct watched *w, json_t *doc, bool first)
{
	time_t now = time(NULL);
	/* a daemon that has output_version posts NearlyFull and
	 * ScrubFinished itself: after the first look, only its events */
	bool posts_more = jget(doc, "output_version") != NULL;
	const char *state = jstring(doc, "state");
	if (first && !strcmp(state, "failed"))
		tell(o, w, "ArrayFailed", -1, now, "state=failed");
	else if (first && strcmp(state, "optimal"))
		tell(o, w, "DegradedArray", -1, now, "state=%s", state);
	int left, lost;
	bool has = redundancy_left(doc, &left, &lost);
	bool nored = has && left == 0 && strcmp(state, "failed") && lost > 0;
	if (cond_status(&w->noredund, nored, true))
		tell(o, w, "NoRedundancy", -1, now, "level=%s lost=%d", jstring(doc, "level"), lost);

	json_t *mem = jget(doc, "members");
	for (size_t j = 0; j < json_array_size(mem) && j < LAYOUT_MAX_WIDTH; j++) {
		json_t *m = json_array_get(mem, j);
		if (cond_status(&w->full[j], nearly_full(m), first || !posts_more))
			tell(o, w, "NearlyFull", (int)j, now, "path=%s", jstring(m, "path"));
		uint64_t e[3] = { juint(m, "read_errors"), juint(m, "write_errors"), juint(m, "cksum_errors") };
		if (e[0] > w->errs[j][0] || e[1] > w->errs[j][1] || e[2] > w->errs[j][2])
			tell(o, w, "ErrorsRising", (int)j, now, "read=%" PRIu64 " write=%" PRIu64 " cksum=%" PRIu64, e[0],
			     e[1], e[2]);
		memcpy(w->errs[j], e, sizeof(e));	/* (cleared counters: from there) */
	}

	json_t *cache = jget(doc, "cache");
	if (cond_status(&w->bbu_failed, !strcmp(jstring(cache, "bbu_state"), "failed"), true))
		tell(o, w, "BbuFailed", -1, now, "%s", "");

	json_t *scrub = jget(doc, "scrub");
	const char *last = jstring(scrub, "last_result");
	uint64_t mism = juint(scrub, "mismatches");
	bool fixed = json_is_true(jget(scrub, "repair"));
	bool ended = strcmp(last, w->scrub_last) != 0 && last[0] && !json_is_true(jget(scrub, "active"));
	if ((first && ended && mism && !fixed) || (!first && ended && !posts_more && !w->scrub_told))
		tell(o, w, "ScrubFinished", -1, now, "mismatches=%" PRIu64 " repaired=%" PRIu64 " errors=%" PRIu64, mism,
		     juint(scrub, "repaired"), juint(scrub, "errors"));
	snprintf(w->scrub_last, sizeof(w->scrub_last), "%s", last);
	w->scrub_told = false;
}

/* The daemon's event numbers: "events LAST OLDEST PID"; false when it
 * does not answer. */
static bool ask_events(const struct opts *o, struct watched *w, uint64_t since, bool with_events, uint64_t *last,
		       uint64_t *oldest, int *pid)
{
	char req[64];
	if (with_events)
		snprintf(req, sizeof(req), "events\t%" PRIu64, since);
	else
		snprintf(req, sizeof(req), "events");
	return request(o, w->mnt, req) == 0 &&
	       sscanf(reply, "events %" SCNu64 " %" SCNu64 " %d", last, oldest, pid) == 3;
}

/* status-json into a new document, or NULL */
static json_t *ask_status(const struct opts *o, struct watched *w)
{
	request(o, w->mnt, "status-json");
	json_t *doc = json_loads(reply, 0, NULL);
	if (doc && !json_is_object(doc)) {
		json_decref(doc);
		doc = NULL;
	}
	return doc;
}

static void silent(const struct opts *o, struct watched *w)
{
	if (!w->silent_told)
		note(o, "%s: its daemon does not answer on the control socket (stuck, or gone: see 'raidfs status %s')",
		     w->mnt, w->mnt);
	w->silent_told = true;
	told += o->oneshot;	/* (a problem to a cron job) */
}

/* Forget what was seen of w's last daemon (a new one serves the mount). */
static void forget(struct watched *w)
{
	w->looked = false;
	w->scrub_told = false;
	memset(&w->noredund, 0, sizeof(w->noredund));
	memset(&w->bbu_failed, 0, sizeof(w->bbu_failed));
	memset(w->full, 0, sizeof(w->full));
	memset(w->errs, 0, sizeof(w->errs));
	w->scrub_last[0] = '\0';
}

static void look(const struct opts *o, struct watched *w)
{
	uint64_t last, oldest;
	int pid;
	if (!w->looked) {
		if (!ask_events(o, w, 0, false, &last, &oldest, &pid)) {
			silent(o, w);
			return;
		}
		json_t *doc = ask_status(o, w);
		if (!doc) {
			silent(o, w);
			return;
		}
		snprintf(w->name, sizeof(w->name), "%s", jstring(doc, "name"));
		snprintf(w->uuid, sizeof(w->uuid), "%s", jstring(doc, "uuid"));
		if (!o->oneshot && !o->test)
			note(o, "watching array '%s' at %s (%s, %zu members, %s)", w->name, w->mnt, jstring(doc, "level"),
			     json_array_size(jget(doc, "members")), jstring(doc, "state"));
		w->silent_told = false;
		w->seq = last;
		w->pid = pid;
		w->looked = true;
		if (!o->test)
			derive(o, w, doc, true);
		json_decref(doc);
		return;
	}
	json_t *doc = ask_status(o, w);
	if (!doc || !ask_events(o, w, w->seq, true, &last, &oldest, &pid)) {
		json_decref(doc);
		silent(o, w);
		return;
	}
	w->silent_told = false;
	if (pid != w->pid) {
		/* another daemon serves the mount: start afresh */
		json_decref(doc);
		note(o, "%s: mounted again (daemon %d): looking at it afresh", w->mnt, pid);
		forget(w);
		look(o, w);
		return;
	}
	if (oldest > w->seq + 1)
		note(o, "%s: %" PRIu64 " events were posted faster than they were looked at and are not told (the daemon keeps the last 256): the states they left are told from its status", w->mnt,
		     oldest - w->seq - 1);
	char *save = NULL, *line = strtok_r(reply, "\n", &save);	/* (the header) */
	while ((line = strtok_r(NULL, "\n", &save)))
		daemon_event(o, w, line);
	w->seq = last;
	derive(o, w, doc, false);
	json_decref(doc);
}

/* ------------------------------------------------------------ the arrays */

static bool wanted(const struct opts *o, const char *mnt)
{
	if (o->nonly == 0)
		return true;
	for (int i = 0; i < o->nonly; i++)
		if (!strcmp(o->only[i], mnt))
			return true;
	return false;
}

/* The raidfs mounts now: new ones added, those gone dropped (said once). */
static int discover(const struct opts *o)
{
	struct scan sc = { 0 };
	int r = scan_mounts(&sc);
	if (r < 0) {
		scan_free(&sc);
		return r;
	}
	for (size_t i = 0; i < nws; i++)
		ws[i].mounted = false;
	for (size_t k = 0; k < sc.nmnts; k++) {
		if (!wanted(o, sc.mnts[k]))
			continue;
		size_t i;
		for (i = 0; i < nws && strcmp(ws[i].mnt, sc.mnts[k]); i++)
			;
		if (i == nws) {
			char *m = strdup(sc.mnts[k]);
			if (!m || UTIL_GROW(ws, cap_ws, nws + 1) < 0) {
				free(m);
				scan_free(&sc);
				return -ENOMEM;
			}
			memset(&ws[nws], 0, sizeof(ws[nws]));
			ws[nws++].mnt = m;
		}
		ws[i].mounted = true;
	}
	scan_free(&sc);
	for (size_t i = 0; i < nws;) {
		if (ws[i].mounted) {
			i++;
			continue;
		}
		if (ws[i].looked)
			note(o, "%s: array '%s' is no longer mounted: not watched any more", ws[i].mnt, ws[i].name);
		free(ws[i].mnt);
		ws[i] = ws[--nws];
	}
	return 0;
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *f)
{
	fprintf(f,
"usage: raidfs monitor [--program PATH] [--syslog] [--interval SECONDS] [--timeout SECONDS] [MOUNTPOINT...]\n"
"       raidfs monitor --oneshot [--program PATH] [--syslog] [MOUNTPOINT...]\n"
"       raidfs monitor --test [--program PATH] [--syslog] [MOUNTPOINT...]\n"
"  watch every mounted raidfs array (or those given; arrays mounted later are\n"
"  picked up) and tell each event: Fail, DegradedArray, ArrayFailed, NoRedundancy,\n"
"  RebuildStarted, RebuildFinished, ScrubFinished, BbuFailed, NearlyFull,\n"
"  ErrorsRising, ... as a line (stdout, or syslog with --syslog) and to PATH, run as\n"
"  'PATH EVENT MOUNTPOINT MEMBER' (MEMBER empty for the array; details in\n"
"  RAIDFS_EVENT_DETAIL). It looks every SECONDS (5); at start it tells the\n"
"  problems present once. SIGTERM or SIGINT stop it (exit 0).\n"
"  --timeout  how long a daemon's answer is waited for (10 s): one that does not\n"
"             answer is said so (a problem to --oneshot)\n"
"  --oneshot  one look: tell the problems present, exit 1 if any, 0 if none\n"
"  --test     tell a TestMessage event for every mounted array and exit\n");
}

/* argv[i] as a number of seconds > 0 into *ms */
static bool parse_interval(const char *s, uint32_t *ms)
{
	char *end;
	double v = strtod(s, &end);
	if (!*s || *end || !(v >= 0.01 && v <= 86400))
		return false;
	*ms = (uint32_t)(v * 1000 + 0.5);
	return true;
}

/* The command line into *o (o->only allocated for the mount points).
 * 0, 1 for --help (said), 2 on a bad option (said). */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(a, "--program") && i + 1 < argc) {
			o->program = argv[++i];
		} else if (!strncmp(a, "--program=", 10)) {
			o->program = a + 10;
		} else if (!strcmp(a, "--syslog")) {
			o->syslog = true;
		} else if (!strcmp(a, "--oneshot") || !strcmp(a, "-1")) {
			o->oneshot = true;
		} else if (!strcmp(a, "--test") || !strcmp(a, "-t")) {
			o->test = true;
		} else if ((!strcmp(a, "--interval") && i + 1 < argc) || !strncmp(a, "--interval=", 11)) {
			const char *v = a[10] == '=' ? a + 11 : argv[++i];
			if (!parse_interval(v, &o->interval_ms)) {
				fprintf(stderr, "raidfs: monitor: --interval '%s' is not a number of seconds (0.01 to 86400)\n", v);
				return 2;
			}
		} else if ((!strcmp(a, "--timeout") && i + 1 < argc) || !strncmp(a, "--timeout=", 10)) {
			const char *v = a[9] == '=' ? a + 10 : argv[++i];
			char *end;
			unsigned long t = strtoul(v, &end, 10);
			if (!*v || *end || t < 1 || t > 3600) {
				fprintf(stderr, "raidfs: monitor: --timeout '%s' is not a whole number of seconds (1 to 3600)\n", v);
				return 2;
			}
			o->timeout_s = (unsigned)t;
		} else if (a[0] == '-') {
			fprintf(stderr, "raidfs: monitor: unknown option '%s' (see 'raidfs monitor --help')\n", a);
			return 2;
		} else {
			char canon[PATH_MAX];
			ctl_canonical(a, canon, sizeof(canon));	/* (not entering the mount) */
			if (!(o->only[o->nonly++] = strdup(canon)))
				return 2;
		}
	}
	if (o->program && access(o->program, X_OK) < 0) {
		fprintf(stderr, "raidfs: monitor: cannot run the program '%s': %s (give an executable file)\n", o->program,
			strerror(errno));
		return 2;
	}
	if (o->oneshot && o->test) {
		fprintf(stderr, "raidfs: monitor: give --oneshot or --test, not both\n");
		return 2;
	}
	return 0;
}

int alert_main(int argc, char **argv)
{
	struct opts o = { .interval_ms = 5000, .timeout_s = 10 };
	char **only = calloc(argc > 0 ? argc : 1, sizeof(*only));
	if (!only)
		return 2;
	o.only = only;
	int p = parse_opts(argc, argv, &o);
	if (p)
		return p == 1 ? 0 : 2;
	if (o.syslog)
		openlog("raidfs-monitor", LOG_PID, LOG_DAEMON);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	struct sigaction al = { .sa_handler = on_alarm };	/* (no SA_RESTART) */
	sigaction(SIGALRM, &al, NULL);
	if (!o.oneshot && !o.test)
		note(&o, "raidfs monitor started: looking every %.2g s%s%s", o.interval_ms / 1000.0,
		     o.program ? ", events to " : "", o.program ? o.program : "");
	int r = 0;
	while (!stop) {
		if ((r = discover(&o)) < 0) {
			fprintf(stderr, "raidfs: monitor: cannot list the mounts: %s\n", strerror(-r));
			break;
		}
		for (size_t i = 0; i < nws && !stop; i++) {
			look(&o, &ws[i]);
			if (o.test && ws[i].looked)
				tell(&o, &ws[i], "TestMessage", -1, time(NULL), "%s", "");
		}
		if (o.oneshot || o.test)
			break;
		for (uint32_t t = 0; t < o.interval_ms && !stop; t += 50)
			util_sleep_ms(o.interval_ms - t < 50 ? o.interval_ms - t : 50);
	}
	int rc = r < 0 ? 2 : 0;
	if (o.test && rc == 0 && told == 0) {
		fprintf(stderr, "raidfs: monitor: --test: no raidfs array is mounted%s\n",
			o.nonly ? " at the mount points given" : "");
		rc = 1;
	}
	if (o.oneshot && rc == 0)
		rc = told ? 1 : 0;
	if (!o.oneshot && !o.test && r == 0)
		note(&o, "raidfs monitor stopped");
	for (size_t i = 0; i < nws; i++)
		free(ws[i].mnt);
	free(ws);
	for (int i = 0; i < o.nonly; i++)
		free(only[i]);
	free(only);
	if (o.syslog)
		closelog();
	return rc;
}
