/*
 * main.c - the raidfs command line: one binary, git-style subcommands.
 *
 *   raidfs create --level LEVEL [--chunk SIZE] [--groups G] [--name NAME] [--checksum ALG] [--force] DIR...
 *   raidfs mount [-f] [-o OPTIONS] DIR[:DIR...]|UUID=UUID|NAME MOUNTPOINT
 *   raidfs DIR[:DIR...]|UUID=UUID|NAME MOUNTPOINT [-o OPTIONS]   (mount(8) / fstab form)
 *   raidfs scan [--json] [GLOB...]
 *   raidfs status [--json] [-v] [-x] [--brief] [MOUNTPOINT]
 *   raidfs list [-x] [MOUNTPOINT]
 *   raidfs monitor [--program PATH] [--syslog] [--interval S] [--oneshot|--test] [MOUNTPOINT...]
 *   raidfs clear MOUNTPOINT [MEMBER]
 *   raidfs unmount MOUNTPOINT
 *   raidfs check DIR[:DIR...]
 *
 * Only main() exits; everything below returns 0 or a negative errno.
 */
#include <errno.h>
#include <fuse_opt.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alert.h"
#include "array.h"
#include "cache.h"
#include "rebuild.h"
#include "check.h"
#include "ctl.h"
#include "fsops.h"
#include "mount.h"
#include "scan.h"
#include "layout.h"
#include "util.h"

/*
 * The subcommands are one table (commands[], at the end of this file):
 * name, usage, a one-line summary, the longer help, the handler, and the
 * words bash completion offers.  'raidfs --help', 'raidfs CMD --help'
 * (-h, 'raidfs help CMD'), the usage lines of the refusals, 'raidfs help
 * --list' and contrib/completion/raidfs all come from it, so a new
 * subcommand is one row there and tests/integration/t_cli.sh covers it.
 * main() answers --help/-h anywhere among a subcommand's arguments
 * before its handler runs (a handler never sees them).
 */
struct command {
	const char *name;
	const char *args;	/* the usage after the name */
	const char *summary;	/* one line */
	const char *help;	/* more lines ("\n" after each), or NULL */
	int (*run)(int argc, char **argv);	/* argv[0]: the command's name */
	const char *words;	/* options and keywords for completion */
	/* requests to the daemon (cmd_control()): arguments needed after
	 * MOUNTPOINT; bit k of dirs / members: the k-th of them names a
	 * directory / a member (its index or directory) */
	int min_args;
	unsigned dirs, members;
};

static const struct command *find_command(const char *name);
static void command_usage(FILE *f, const struct command *c);

/* ----------------------------------------------------------------- create */

static int cmd_create(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "groups", required_argument, NULL, 'g' },
		{ "name", required_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'F' },
		{ "spare", required_argument, NULL, 's' },
		{ "checksum", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct create_opts o = { .level = LEVEL_COUNT, .chunk = LAYOUT_DEFAULT_CHUNK, .csum = SB_CSUM_CRC32C };
	int c;
	optind = 1;
	opterr = 0;	/* our own messages, with what to do */
	while ((c = getopt_long(argc, argv, ":l:c:g:n:Fs:k:h", lo, NULL)) != -1) {
		switch (c) {
		case 'l': {
			int l = layout_level_parse(optarg);
			if (l < 0) {
				fprintf(stderr, "raidfs: unknown level '%s': use one of single raid0 raid1 raid5 raid6 raid10 raid50 raid60\n", optarg);
				return 1;
			}
			o.level = l;
			break;
		}
		case 'c': {
			uint64_t v;
			if (parse_size(optarg, &v) < 0 || v < LAYOUT_MIN_CHUNK || v > LAYOUT_MAX_CHUNK ||
			    (v & (v - 1))) {
				fprintf(stderr, "raidfs: bad chunk size '%s': use a power of two from 4K to 1M (for example 64K)\n", optarg);
				return 1;
			}
			o.chunk = v;
			break;
		}
		case 'g': {
			char *end;
			long g = strtol(optarg, &end, 10);
			if (*end || g < 1 || g > LAYOUT_MAX_WIDTH) {
				fprintf(stderr, "raidfs: bad group count '%s': give a number of groups (for example 2)\n", optarg);
				return 1;
			}
			o.groups = g;
			break;
		}
		case 'n':
			o.name = optarg;	/* (checked by array_create()) */
			break;
		case 'F': o.force = true; break;
		case 'k': {
			int k = sb_csum_parse(optarg);
			if (k < 0) {
				fprintf(stderr, "raidfs: unknown checksum algorithm '%s': use crc32c or none\n", optarg);
				return 1;
			}
			o.csum = k;
			break;
		}
		case 's':
			if (o.nspares == SB_MAX_SPARES) {
				fprintf(stderr, "raidfs: create: at most %d spares\n", SB_MAX_SPARES);
				return 1;
			}
			o.spares[o.nspares++] = optarg;
			break;
		case 'h': command_usage(stdout, find_command("create")); return 0;
		case ':':
			fprintf(stderr, "raidfs: create: option '%s' needs a value (see 'raidfs create --help')\n", argv[optind - 1]);
			return 1;
		default:
			fprintf(stderr, "raidfs: create: unknown option '%s' (see 'raidfs create --help')\n", argv[optind - 1]);
			return 1;
		}
	}
	if (o.level == LEVEL_COUNT) {
		fprintf(stderr, "raidfs: create: --level is required (single raid0 raid1 raid5 raid6 raid10 raid50 raid60)\n");
		return 1;
	}
	int n = argc - optind;
	if (n < 1) {
		fprintf(stderr, "raidfs: create: give the member directories\n");
		return 1;
	}
	if (array_create(&o, argv + optind, n) < 0)
		return 1;
	printf("created %s array '%s' with %d member%s, chunk %u KiB",
	       layout_level_name(o.level), o.name ? o.name : "raidfs", n, n == 1 ? "" : "s",
	       o.chunk / 1024);
	if (o.csum != SB_CSUM_NONE)
		printf(", checksums %s", sb_csum_name(o.csum));
	if (o.nspares)
		printf(", %d hot spare%s (give them to 'raidfs mount' with the members)", o.nspares,
		       o.nspares == 1 ? "" : "s");
	printf("\n");
	return 0;
}

/* ------------------------------------------------------------------ mount */

/*
 * The mount command line goes through libfuse's fuse_opt_parse() twice:
 * first main's table (below: the mount's own options, the flags mount(8)
 * passes, the positional DIR[:DIR...] MOUNTPOINT), then the cache's
 * (cache_opt_parse()); the -o options neither takes go to FUSE.
 */
enum {
	KEY_FOREGROUND, KEY_HELP, KEY_LOG, KEY_NODEGRADED, KEY_FORCE, KEY_RO, KEY_EVENT_PROGRAM,
	KEY_READ_ERRORS, KEY_CKSUM_ERRORS, KEY_REBUILD_MIN, KEY_REBUILD_MAX, KEY_SCAN,
	KEY_SPACE_WARN,		/* (status: docs/operations.md part 2) */
	KEY_ATTR_TIMEOUT,	/* (fsops.h) */
	KEY_ENTRY_TIMEOUT,
	KEY_WRITEBACK_CACHE,
};
static const struct fuse_opt mount_opt_table[] = {
	FUSE_OPT_KEY("-f", KEY_FOREGROUND),
	FUSE_OPT_KEY("foreground", KEY_FOREGROUND),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("log=", KEY_LOG),
	FUSE_OPT_KEY("nodegraded", KEY_NODEGRADED),
	FUSE_OPT_KEY("force", KEY_FORCE),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("event_program=", KEY_EVENT_PROGRAM),
	FUSE_OPT_KEY("read_error_threshold=", KEY_READ_ERRORS),
	FUSE_OPT_KEY("cksum_error_threshold=", KEY_CKSUM_ERRORS),
	FUSE_OPT_KEY("space_warn=", KEY_SPACE_WARN),
	FUSE_OPT_KEY("attr_timeout=", KEY_ATTR_TIMEOUT),
	FUSE_OPT_KEY("entry_timeout=", KEY_ENTRY_TIMEOUT),
	FUSE_OPT_KEY("writeback_cache", KEY_WRITEBACK_CACHE),
	FUSE_OPT_KEY("rebuild_min_rate=", KEY_REBUILD_MIN),
	FUSE_OPT_KEY("rebuild_max_rate=", KEY_REBUILD_MAX),
	FUSE_OPT_KEY("scan=", KEY_SCAN),
	/* mount(8) helper flags: no mtab, sloppy, verbose */
	FUSE_OPT_KEY("-n", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("-s", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("-v", FUSE_OPT_KEY_DISCARD),
	/* generic options fstab and mount(8) pass that mean nothing to raidfs
	 * (and "x-*", below) */
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("rw", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("owner", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("group", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("comment=", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

struct mount_cmdline {
	struct mount_opts *o;
	char *pos[2];		/* DIR[:DIR...] MOUNTPOINT */
	int npos;
	struct scan *scan;	/* -o scan=GLOB */
	bool help;		/* -h: usage printed, stop */
};

/* -o rebuild_min_rate= / rebuild_max_rate=: as 'raidfs rebuild
 * --min-rate/--max-rate', from the start (a rebuild or replacement
 * resumed at mount) */
static void set_rebuild_rate(bool min, uint32_t v)
{
	struct rebuild_info ri;
	rebuild_get(&ri);
	if (min)
		rebuild_set_rates(v, ri.max_rate);
	else
		rebuild_set_rates(ri.min_rate, v);
}

/* A count option's value: a whole number 0 .. UINT32_MAX (no sign, no
 * suffix); 0 or -1 with the message printed. */
static int parse_count(const char *opt, const char *v, const char *what, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (!*v || *v < '0' || *v > '9' || *end || errno || x > UINT32_MAX) {
		fprintf(stderr, "raidfs: mount: bad %s '%s': give a whole number of %s\n", opt, v, what);
		return -1;
	}
	*out = (uint32_t)x;
	return 0;
}

/* -o space_warn=PCT% (or a bare number: a percentage used) or =SIZE
 * (less free than that); 0 turns the warning off. */
static int parse_space_warn(const char *v)
{
	char *end;
	errno = 0;
	unsigned long p = strtoul(v, &end, 10);
	uint64_t sz;
	if (*v >= '0' && *v <= '9' && !errno && (!strcmp(end, "%") || !*end) && p <= 100) {
		array_space_warn_pct = (uint32_t)p;
		array_space_warn_free = 0;
		return 0;
	}
	if (parse_size(v, &sz) == 0) {
		array_space_warn_pct = 0;
		array_space_warn_free = sz;
		return 0;
	}
	fprintf(stderr, "raidfs: mount: bad space_warn '%s': give a percentage used (90%%) or a size left free (10G)\n", v);
	return -1;
}

/* -o attr_timeout=SECS, entry_timeout=SECS: how long the kernel keeps
 * what it was told (0 to 3600 seconds, fractions allowed). */
static int parse_timeout(const char *what, const char *v, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (!*v || *end || errno || !(d >= 0 && d <= 3600)) {
		fprintf(stderr, "raidfs: mount: bad %s '%s': give seconds from 0 to 3600 (for example 1 or 0.5)\n",
			what, v);
		return -1;
	}
	*out = d;
	return 0;
}

/* fuse_opt_parse() callback for mount_opt_table: 0 taken, 1 kept (for
 * the cache's table, then FUSE), -1 refused (message printed). */
static int mount_opt(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct mount_cmdline *c = data;
	const char *v = strchr(arg, '=');
	v = v ? v + 1 : "";
	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (c->npos == 2) {
			fprintf(stderr, "raidfs: mount: unexpected argument '%s' (give DIR[:DIR...] MOUNTPOINT)\n", arg);
			return -1;
		}
		c->pos[c->npos++] = (char *)arg;
		return 0;
	case FUSE_OPT_KEY_OPT:
		if (arg[0] == '-') {
			fprintf(stderr, "raidfs: mount: unknown option '%s' (see 'raidfs mount --help')\n", arg);
			return -1;
		}
		return *arg && strncmp(arg, "x-", 2) ? 1 : 0;	/* x-systemd.* and the like: not ours */
	case KEY_FOREGROUND: c->o->foreground = true; return 0;
	case KEY_HELP: c->help = true; return -1;
	case KEY_NODEGRADED: c->o->allow_degraded = false; return 0;
	case KEY_FORCE: c->o->force = true; return 0;
	case KEY_RO: c->o->readonly = true; return 0;
	case KEY_READ_ERRORS:
		return parse_count("read_error_threshold", v, "read errors after which a member is failed",
				   &array_read_error_threshold);
	case KEY_CKSUM_ERRORS:
		return parse_count("cksum_error_threshold", v,
				   "checksum errors after which a member is failed (0: never fail a member for them)",
				   &array_cksum_error_threshold);
	case KEY_SCAN:
		if (!*v) {
			fprintf(stderr, "raidfs: mount: -o scan= needs a glob of member directories (for example scan=/srv/disk*)\n");
			return -1;
		}
		if (scan_add_glob(c->scan, v) < 0) {
			fprintf(stderr, "raidfs: mount: out of memory for '%s'\n", arg);
			return -1;
		}
		return 0;
	case KEY_SPACE_WARN: return parse_space_warn(v);
	case KEY_ATTR_TIMEOUT: return parse_timeout("attr_timeout", v, &fsops_attr_timeout);
	case KEY_ENTRY_TIMEOUT: return parse_timeout("entry_timeout", v, &fsops_entry_timeout);
	case KEY_WRITEBACK_CACHE: fsops_writeback_cache = true; return 0;
	case KEY_REBUILD_MIN: set_rebuild_rate(true, strtoul(v, NULL, 10)); return 0;
	case KEY_REBUILD_MAX: set_rebuild_rate(false, strtoul(v, NULL, 10)); return 0;
	case KEY_LOG:
	case KEY_EVENT_PROGRAM: {
		char *copy = strdup(v);
		if (!copy) {
			fprintf(stderr, "raidfs: mount: out of memory for '%s'\n", arg);
			return -1;
		}
		const char **to = key == KEY_LOG ? &c->o->log : &event_program;
		free((char *)*to);	/* (given twice: the last one counts) */
		*to = copy;
		return 0;
	}
	}
	return 1;
}

/* The mount command line (argv[0] is the command) into *o and the two
 * positional arguments; 0, 1 when -h printed the usage, -1 refused. */
static int parse_mount_cmdline(int argc, char **argv, struct mount_opts *o, char *pos[2], struct scan *scan)
{
	struct mount_cmdline c = { .o = o, .scan = scan };
	if (argc > 1 && !strcmp(argv[argc - 1], "-o")) {
		fprintf(stderr, "raidfs: -o needs a list of options (for example -o ro,log=FILE)\n");
		return -1;
	}
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	int ret = fuse_opt_parse(&args, &c, mount_opt_table, mount_opt);
	if (ret == 0)
		ret = cache_opt_parse(&args);
	if (c.help) {
		command_usage(stdout, find_command("mount"));
		ret = 1;
	} else if (ret == 0 && c.npos != 2) {
		fprintf(stderr, "raidfs: mount: give DIR[:DIR...] MOUNTPOINT (or UUID=UUID or NAME for the members, found as 'raidfs scan' finds them)\n");
		ret = -1;
	} else if (ret == 0 && args.argc > 1 &&
		   snprintf(o->fuse_opts, sizeof(o->fuse_opts), "%s", args.argv[args.argc - 1]) >=
			   (int)sizeof(o->fuse_opts)) {
		/* (what is left: argv[0], "-o", the options for FUSE) */
		fprintf(stderr, "raidfs: mount: the options for FUSE are too long (at most %zu characters)\n",
			sizeof(o->fuse_opts) - 1);
		ret = -1;
	}
	pos[0] = c.pos[0];
	pos[1] = c.pos[1];
	fuse_opt_free_args(&args);
	return ret;
}

/*
 * The members of the array a mount names by identity (UUID=, or NAME):
 * the directories of the config file's globs, then of -o scan=, as
 * 'raidfs scan' finds them; then mounted as an explicit list is
 * (assembly decides what each directory is).  The exit status.
 */
static int mount_by_identity(const char *spec, const char *mnt, struct scan *sc, struct mount_opts *o)
{
	char err[4096];
	char **paths = NULL;
	struct scan conf = { 0 };
	/* the config file's globs first (scan_print()'s mount command
	 * leaves them out) */
	if (scan_read_conf(&conf, scan_conf_path()) < 0)
		return 1;
	for (size_t i = 0; i < sc->nglobs; i++)
		if (scan_add_glob(&conf, sc->globs[i]) < 0) {
			scan_free(&conf);
			fprintf(stderr, "raidfs: cannot mount: out of memory\n");
			return 1;
		}
	scan_free(sc);
	*sc = conf;
	if (scan_run(sc) < 0) {
		fprintf(stderr, "raidfs: cannot mount: out of memory scanning for '%s'\n", spec);
		return 1;
	}
	int k = scan_find(sc, spec, err, sizeof(err));
	if (k < 0) {
		fprintf(stderr, "raidfs: cannot mount '%s': %s\n", spec, err);
		return 1;
	}
	if (sc->arrays[k].mounted) {
		fprintf(stderr, "raidfs: cannot mount '%s': array '%s' is already mounted on '%s' (see 'raidfs status %s')\n",
			spec, sc->arrays[k].sb.name, sc->arrays[k].mounted, sc->arrays[k].mounted);
		return 1;
	}
	int n = scan_members(sc, k, &paths);
	if (n < 0) {
		fprintf(stderr, "raidfs: cannot mount: out of memory\n");
		return 1;
	}
	int r = mount_paths(paths, n, mnt, o);
	free(paths);
	return r;
}

static int cmd_mount(int argc, char **argv)
{
	struct mount_opts o = { .allow_degraded = true };
	struct scan sc = { 0 };
	char *pos[2];
	int r = parse_mount_cmdline(argc, argv, &o, pos, &sc);
	if (r) {
		scan_free(&sc);
		return r < 0;
	}
	if (o.foreground && !o.log)
		log_open(NULL);
	if (scan_is_identity(pos[0]))
		r = mount_by_identity(pos[0], pos[1], &sc, &o);
	else
		r = mount_main(pos[0], pos[1], &o);
	scan_free(&sc);
	return r;
}

/* raidfs scan [--json] [GLOB...]: exit 0 when an array is found, 1 when
 * none is, 2 on an error. */
static int cmd_scan(int argc, char **argv)
{
	struct scan sc = { 0 };
	bool json = false;
	int r = scan_read_conf(&sc, scan_conf_path());
	for (int i = 1; r == 0 && i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "raidfs: scan: unknown option '%s' (usage: raidfs scan [--json] [GLOB...])\n", argv[i]);
			scan_free(&sc);
			return 2;
		} else {
			r = scan_add_glob(&sc, argv[i]);
		}
	}
	if (r == 0)
		r = scan_run(&sc);
	if (r == 0)
		r = json ? scan_print_json(&sc, stdout) : (scan_print(&sc, stdout), 0);
	if (r < 0)
		fprintf(stderr, "raidfs: scan: %s\n", strerror(-r));
	int rc = r < 0 ? 2 : sc.narrays ? 0 : 1;
	scan_free(&sc);
	return rc;
}

/* ---------------------------------------------------------- status, unmount */

/* status [--json] [-v] [-x] [--brief] [MOUNTPOINT | PATH]: one array
 * (a path inside the mount finds it), or every mounted array; list. */
static int cmd_status(int argc, char **argv, bool list)
{
	bool json = false, verbose = false, attention = false, brief = list;
	const char *mnt = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && !list)
			json = true;
		else if (!strcmp(argv[i], "-v") && !list)
			verbose = true;
		else if (!strcmp(argv[i], "-x"))
			attention = true;
		else if (!strcmp(argv[i], "--brief"))
			brief = true;
		else if (argv[i][0] == '-' || mnt) {
			fprintf(stderr, "raidfs: %s: unknown option '%s' (usage: raidfs %s %s)\n", argv[0], argv[i],
				argv[0], find_command(argv[0])->args);
			return 2;
		} else
			mnt = argv[i];
	}
	if (!mnt)
		return json ? ctl_status_all_json() : ctl_status_all(brief, attention);
	char buf[PATH_MAX];
	mnt = ctl_resolve(mnt, buf, sizeof(buf));
	char req[64];
	snprintf(req, sizeof(req), "%s%s%s", json ? "status-json" : brief ? "status-list" : "status",
		 verbose && !brief ? "\t-v" : "", attention && !json ? "\t-x" : "");
	return ctl_request(mnt, req, false, NULL, 0);
}

/* running, and not a zombie waiting for its parent (init) to reap it */
static bool process_alive(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* A directory argument as the daemon needs it: the daemon's working
 * directory is not the caller's, so a relative one is made absolute here.
 * A member given by its index (`member`, digits only) stays as it is. */
static const char *dir_arg(const char *arg, bool member, char *buf, size_t len)
{
	char cwd[PATH_MAX];
	if (arg[0] == '/' || arg[0] == '\0' || (member && arg[strspn(arg, "0123456789")] == '\0') ||
	    (member && !strcmp(arg, "log")) ||
	    !getcwd(cwd, sizeof(cwd)))
		return arg;
	snprintf(buf, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", arg);
	return buf;
}

/* raidfs CMD MOUNTPOINT ARGS...: a control request to the daemon, as the
 * command's row in commands[] describes its arguments (min_args, dirs,
 * members). */
static int cmd_control(int argc, char **argv)
{
	const struct command *c = find_command(argv[0]);
	const char *cmd = c->name;
	if (argc < 2 + c->min_args) {
		fprintf(stderr, "raidfs: %s: usage: raidfs %s %s\n", cmd, cmd, c->args);
		return 1;
	}
	char req[4096], abs[PATH_MAX + 2];
	size_t off = snprintf(req, sizeof(req), "%s", cmd);
	for (int i = 2; i < argc && off < sizeof(req); i++)
		off += snprintf(req + off, sizeof(req) - off, "\t%s",
				i - 2 < 32 && ((c->dirs | c->members) >> (i - 2) & 1)
					? dir_arg(argv[i], c->members >> (i - 2) & 1, abs, sizeof(abs))
					: argv[i]);
	if (off >= sizeof(req)) {
		fprintf(stderr, "raidfs: %s: arguments too long\n", cmd);
		return 1;
	}
	char mnt[PATH_MAX];
	return ctl_request(ctl_resolve(argv[1], mnt, sizeof(mnt)), req, false, NULL, 0);
}

/* replace and scrub with --wait (anywhere after the command): the
 * request without it, then ctl_wait() until it ended (like btrfs replace
 * start -B). */
static int cmd_waitable(int argc, char **argv)
{
	char *args[64];
	int n = 0;
	bool wait = false;
	for (int i = 0; i < argc && n < 63; i++) {
		if (i > 0 && !strcmp(argv[i], "--wait"))
			wait = true;
		else
			args[n++] = argv[i];
	}
	args[n] = NULL;
	int rc = cmd_control(n, args);
	if (rc != 0 || !wait)
		return rc;
	bool scrub = !strcmp(argv[0], "scrub");
	if (scrub && n > 2 && !strcmp(args[2], "stop"))
		return rc;
	int member = -1;
	if (!scrub && args[2][strspn(args[2], "0123456789")] == '\0')
		member = atoi(args[2]);
	char mnt[PATH_MAX];
	fflush(stdout);
	return ctl_wait(ctl_resolve(args[1], mnt, sizeof(mnt)), scrub, member);
}

static int cmd_status_one(int argc, char **argv) { return cmd_status(argc, argv, false); }
static int cmd_list(int argc, char **argv) { return cmd_status(argc, argv, true); }

static int cmd_check(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "raidfs: check: give DIR[:DIR...] (usage: raidfs check %s)\n", find_command("check")->args);
		return 2;
	}
	return check_main(argv[1]);
}

/* Is `mnt` the mount point of a raidfs mount (fstype fuse.raidfs in
 * /proc/self/mountinfo)?  Checked without entering the mount, so a mount
 * whose daemon is stuck or gone is one too. */
static bool is_raidfs_mount(const char *mnt)
{
	char **mnts, canon[PATH_MAX];
	int n = ctl_mounts(&mnts, NULL);
	bool found = false;
	ctl_canonical(mnt, canon, sizeof(canon));
	for (int i = 0; i < n && !found; i++)
		found = !strcmp(canon, mnts[i]);
	if (n > 0)
		ctl_mounts_free(mnts, n);
	return found;
}

/* fusermount3 -u MNT with its messages kept in buf (they are said in
 * raidfs's words); its exit status, 127 when it cannot be run. */
static int run_fusermount(const char *mnt, char *buf, size_t len)
{
	int p[2];
	buf[0] = '\0';
	if (pipe(p) < 0)
		return 127;
	pid_t child = fork();
	if (child < 0) {
		close(p[0]);
		close(p[1]);
		return 127;
	}
	if (child == 0) {
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execlp("fusermount3", "fusermount3", "-u", mnt, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t off = 0;
	ssize_t r;
	while ((r = read(p[0], buf + off, len - 1 - off)) > 0 && off + r < len - 1)
		off += r;
	if (r > 0)
		off += r;
	buf[off] = '\0';
	close(p[0]);
	int st = 0;
	waitpid(child, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int cmd_unmount(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "raidfs: unmount: give the mount point (usage: raidfs unmount %s)\n",
			find_command("unmount")->args);
		return 1;
	}
	const char *mnt = argv[1];
	if (!is_raidfs_mount(mnt)) {
		fprintf(stderr, "raidfs: cannot unmount '%s': no raidfs array is mounted there (see 'raidfs status' for the mounted arrays)\n",
			mnt);
		return 1;
	}
	char reply[64] = "", why[1024];
	pid_t pid = 0;
	if (ctl_request(mnt, "pid", true, reply, sizeof(reply)) == 0)
		pid = atoi(reply);
	int rc = run_fusermount(mnt, why, sizeof(why));
	if (rc != 0) {
		why[strcspn(why, "\n")] = '\0';
		if (rc == 127)
			fprintf(stderr, "raidfs: cannot unmount '%s': fusermount3 cannot be run (apt-get install fuse3)\n", mnt);
		else if (strstr(why, "busy"))
			fprintf(stderr, "raidfs: cannot unmount '%s': it is busy (a process has a file or its working directory there: see 'fuser -vm %s')\n",
				mnt, mnt);
		else if (strstr(why, "ermi"))	/* Permission denied, not permitted */
			fprintf(stderr, "raidfs: cannot unmount '%s': permission denied (run it as root or as the user who mounted it)\n", mnt);
		else
			fprintf(stderr, "raidfs: cannot unmount '%s': %s\n", mnt, *why ? why : "fusermount3 failed");
		return 1;
	}
	/* wait for the daemon to finish writing metadata and exit */
	for (int i = 0; pid > 0 && i < 600; i++) {
		if (!process_alive(pid))
			break;
		util_sleep_ms(50);
	}
	return 0;
}

/* ------------------------------------------------------ the command table */

static int cmd_help(int argc, char **argv);

static const struct command commands[] = {
	{ "create", "--level LEVEL [--chunk SIZE] [--groups G] [--name NAME] [--checksum ALG] [--force] [--spare DIR]... DIR...",
	  "make a new array of the member directories",
	  "LEVEL: single raid0 raid1 raid5 raid6 raid10 raid50 raid60; --groups G: the\n"
	  "number of raid50/raid60 groups (only for those levels); chunk 4K..1M, default 64K;\n"
	  "NAME: up to 63 characters, no '/', ':', ',', '\\', spaces or control characters;\n"
	  "ALG, the checksum algorithm of the array's chunks: crc32c (the default: every\n"
	  "4 KiB of every chunk verified on read) or none; --spare: a hot spare\n",
	  cmd_create, "--level --chunk --groups --name --checksum --force --spare", 0, 0, 0 },
	{ "mount", "[-f] [-o OPTIONS] DIR[:DIR...]|UUID=UUID|NAME MOUNTPOINT",
	  "assemble the array from its members and mount it",
	  "-f: foreground; UUID= or NAME: the members are found as 'raidfs scan' finds them\n"
	  "options: scan=GLOB (more directories to look in, with UUID= or NAME),\n"
	  "nodegraded, force, ro, log=FILE, event_program=PATH,\n"
	  "read_error_threshold=N (20), cksum_error_threshold=N (50, 0: never fail),\n"
	  "space_warn=PCT%|SIZE (90%: a member's filesystem that full, or with less free, is\n"
	  "nearly full; 0: never),\n"
	  "rebuild_min_rate=MB/s, rebuild_max_rate=MB/s,\n"
	  "allow_other and other FUSE options; the cache:\n"
	  "cache_size=SIZE (256M), write_policy=writeback|writethrough|always-writeback,\n"
	  "read_policy=ra|nora|adaptive, cache_age=MS (100), bbu=none|shm|file:PATH (the\n"
	  "battery that keeps the cache: none loses it in a crash, shm survives kill -9, a\n"
	  "file survives power loss), bbu_learn_time=SECONDS, member_sync=always|flush|never,\n"
	  "destage_threads=N (4 a member, at most 32: member I/Os the destage keeps in flight)\n"
	  "(the same as 'raidfs DIR[:DIR...] MOUNTPOINT -o OPTIONS', mount(8)'s form; man mount.raidfs)\n",
	  cmd_mount, "-f -o", 0, 0, 0 },
	{ "scan", "[--json] [GLOB...]",
	  "list the arrays whose members are in the directories the globs match",
	  "and those of the 'scan GLOB' lines of /etc/raidfs.conf, or of $RAIDFS_CONF: each\n"
	  "member's state (present, stale, missing...), where it is mounted, the command\n"
	  "that mounts it (exit 0 arrays found, 1 none, 2 error)\n",
	  cmd_scan, "--json", 0, 0, 0 },
	{ "status", "[--json] [-v] [-x] [--brief] [MOUNTPOINT]",
	  "show the array's state, members, rebuild, scrub and cache",
	  "exit 0 optimal, 1 degraded or errors left by the last scrub, 2 failed or not\n"
	  "mounted; each member's error counters (READ WRITE CKSUM, bytes REPAIRED) and free\n"
	  "space; MOUNTPOINT may be any path inside the mount; -v lists the files the last\n"
	  "scrub found problems in; -x only if the array needs attention; without\n"
	  "MOUNTPOINT one line per mounted array (-x: only those that need attention;\n"
	  "--json: an array of documents; --brief: as 'raidfs list');\n"
	  "(the JSON's fields: docs/status-json.md)\n",
	  cmd_status_one, "--json -v -x --brief", 0, 0, 0 },
	{ "list", "[-x] [MOUNTPOINT]",
	  "one line per array for scripts",
	  "NAME LEVEL STATE UP/TOTAL HEALTH MOUNTPOINT, separated by tabs\n",
	  cmd_list, "-x", 0, 0, 0 },
	{ "monitor", "[--program PATH] [--syslog] [--interval SECONDS] [--timeout SECONDS] [--oneshot | --test] [MOUNTPOINT...]",
	  "watch every mounted array and tell each event",
	  "Fail, DegradedArray, NoRedundancy, RebuildStarted/Finished, ScrubFinished,\n"
	  "NearlyFull, ErrorsRising, BbuFailed... as a line on stdout or to syslog, and to\n"
	  "PATH (called as 'PATH EVENT MOUNTPOINT MEMBER', details in its environment);\n"
	  "--oneshot: tell the problems present once (exit 0 none, 1 some);\n"
	  "--test: a TestMessage for every array (docs/operations.md, part 3)\n",
	  alert_main, "--program --syslog --interval --timeout --oneshot --test", 0, 0, 0 },
	{ "clear", "MOUNTPOINT [MEMBER]",
	  "reset the error counters of every member, or of one (index or path)", NULL,
	  cmd_control, "", 0, 0, 0x1 },
	{ "unmount", "MOUNTPOINT",
	  "flush, unmount and wait for the daemon to end (also: umount)", NULL,
	  cmd_unmount, "", 0, 0, 0 },
	{ "check", "DIR[:DIR...]",
	  "verify metadata and parity of an unmounted array",
	  "exit 0 clean, 1 problems, 2 error\n",
	  cmd_check, "", 0, 0, 0 },
	{ "fail", "MOUNTPOINT MEMBER",
	  "mark a member (index or path) faulty; the array goes on degraded", NULL,
	  cmd_control, "", 1, 0, 0x1 },
	{ "remove", "MOUNTPOINT MEMBER|SPARE",
	  "take a faulty or missing member (or a spare) out of the array",
	  "its directory is let go\n",
	  cmd_control, "", 1, 0, 0x1 },
	{ "add", "MOUNTPOINT DIR",
	  "add an empty directory as a hot spare, or a member's old directory back",
	  "a spare is taken at once if the array is degraded; a member's old directory\n"
	  "is resynced with what changed while it was away\n",
	  cmd_control, "", 1, 0x1, 0 },
	{ "replace", "MOUNTPOINT MEMBER NEWDIR [--wait]",
	  "rebuild a member onto an empty directory, online",
	  "a faulty or missing member is rebuilt; a healthy member is copied and keeps\n"
	  "serving until the copy is complete; given while another member's rebuild runs,\n"
	  "it is queued (kept across remounts; 'raidfs remove MOUNTPOINT NEWDIR' cancels it)\n"
	  "and starts when that one ends; --wait: until it ends (exit 0 the member is in\n"
	  "service, 1 not, 2 the daemon went away)\n",
	  cmd_waitable, "--wait", 2, 0x2, 0x1 },
	{ "rebuild", "MOUNTPOINT pause|resume|--min-rate MB/s|--max-rate MB/s",
	  "control a running rebuild",
	  "the minimum rate applies while users do I/O, the maximum always (0: no limit)\n",
	  cmd_control, "pause resume --min-rate --max-rate", 1, 0, 0 },
	{ "scrub", "MOUNTPOINT [--repair | stop] [--wait]",
	  "compare every file's data with its redundancy while mounted",
	  "progress in status; --repair recomputes the redundancy where it does not match;\n"
	  "--wait: until it ends (exit 0 nothing left to repair, 1 problems left, 3 stopped)\n",
	  cmd_waitable, "--repair stop --wait", 0, 0, 0 },
	{ "cache", "MOUNTPOINT [write_policy=POLICY [--force] | read_policy=POLICY | flush | discard --force]",
	  "show or change the cache",
	  "write_policy=writeback|writethrough|always-writeback (always-writeback needs\n"
	  "--force: it risks data), read_policy=ra|nora|adaptive; flush writes everything\n"
	  "out now; discard --force drops a preserved cache for good\n",
	  cmd_control, "write_policy=writeback write_policy=writethrough write_policy=always-writeback "
	  "read_policy=ra read_policy=nora read_policy=adaptive flush discard --force", 0, 0, 0 },
	{ "bbu", "MOUNTPOINT [show|learn|fail|restore]",
	  "the emulated battery",
	  "a learn cycle or a failed battery turn write-back off\n",
	  cmd_control, "show learn fail restore", 0, 0, 0 },
	{ "inject", "MOUNTPOINT MEMBER|log FAULT...",
	  "fault injection on a member, a running replacement's directory, or the cache log",
	  "FAULT: read-error|write-error|fsync-error|open-error|truncate-error|meta-error\n"
	  "[every|after N|count N|prob P] [ERRNO], latency MS [read|write|fsync|open|truncate|meta]...,\n"
	  "drop-write|misdirect-write [every|after N|count N|prob P] (shard data writes succeed\n"
	  "silently: nothing written / written one chunk away), corrupt P, vanish, clear;\n"
	  "MEMBER 'log': the cache log of bbu=file (write-error|fsync-error, latency MS, clear)\n",
	  cmd_control, "read-error write-error fsync-error open-error truncate-error meta-error "
	  "drop-write misdirect-write latency corrupt vanish clear every after count prob", 2, 0, 0x1 },
	{ "help", "[--list | COMMAND]",
	  "this help, or a command's (the same as 'raidfs COMMAND --help')",
	  "--list: the commands' names, one per line\n",
	  cmd_help, "--list", 0, 0, 0 },
	{ NULL }
};

static const struct command *find_command(const char *name)
{
	if (!strcmp(name, "umount"))
		name = "unmount";
	for (const struct command *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* text's lines, each indented */
static void print_lines(FILE *f, const char *text, int indent)
{
	while (text && *text) {
		size_t l = strcspn(text, "\n");
		fprintf(f, "%*s%.*s\n", indent, "", (int)l, text);
		text += l + (text[l] == '\n');
	}
}

/* 'raidfs CMD --help': usage line, summary, the rest */
static void command_usage(FILE *f, const struct command *c)
{
	fprintf(f, "usage: raidfs %s %s\n\n", c->name, c->args);
	print_lines(f, c->summary, 2);
	print_lines(f, c->help, 2);
}

/* 'raidfs --help' (full: every command's help) or the short list */
static void usage(FILE *f, bool full)
{
	fprintf(f, "usage: raidfs <command> [options]   (raidfs <command> --help: the command's own)\n\n");
	for (const struct command *c = commands; c->name; c++) {
		if (full) {
			fprintf(f, "  %s %s\n", c->name, c->args);
			print_lines(f, c->summary, 8);
			print_lines(f, c->help, 8);
		} else {
			fprintf(f, "  %-8s %s\n", c->name, c->summary);
		}
	}
	if (full)
		fprintf(f, "\n"
			"  --version, -V\n"
			"        the version\n"
			"\n"
			"fstab:  /srv/disk1:/srv/disk2:/srv/disk3  /srv/pool  fuse.raidfs  defaults,allow_other,nofail  0 0\n"
			"        uuid=UUID  /srv/pool  fuse.raidfs  defaults,scan=/srv/disk*,nofail  0 0\n"
			"        (lower-case uuid=: mount(8) looks UUID= up among block devices itself)\n");
}

/* raidfs help [--list | --words COMMAND | COMMAND] */
static int cmd_help(int argc, char **argv)
{
	if (argc == 1) {
		usage(stdout, true);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (const struct command *c = commands; c->name; c++)
			printf("%s\n", c->name);
		return 0;
	}
	/* (for contrib/completion/raidfs: a command's options and keywords) */
	const struct command *c = argc == 3 && !strcmp(argv[1], "--words") ? find_command(argv[2]) : NULL;
	if (c) {
		printf("%s\n", c->words);
		return 0;
	}
	c = argc == 2 ? find_command(argv[1]) : NULL;
	if (!c) {
		fprintf(stderr, "raidfs: help: unknown command '%s' (the commands: 'raidfs help --list')\n",
			argv[argc - 1]);
		return 1;
	}
	command_usage(stdout, c);
	return 0;
}

/* --help or -h among a command's arguments (up to a "--") */
static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

/* ------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	const char *prog = strrchr(argv[0], '/');
	prog = prog ? prog + 1 : argv[0];
	signal(SIGPIPE, SIG_IGN);

	if (!strcmp(prog, "mount.raidfs") || !strcmp(prog, "mount.fuse.raidfs")) {
		if (wants_help(argc, argv)) {
			command_usage(stdout, find_command("mount"));
			return 0;
		}
		return cmd_mount(argc, argv);
	}
	if (argc < 2) {
		usage(stderr, false);
		return 1;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help"))
		return cmd_help(1, argv + 1);
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("raidfs " PACKAGE_VERSION "\n");
		return 0;
	}
	const struct command *c = find_command(cmd);
	if (c) {
		if (wants_help(argc - 1, argv + 1)) {
			command_usage(stdout, c);
			return 0;
		}
		argv[1] = (char *)c->name;	/* (umount) */
		return c->run(argc - 1, argv + 1);
	}
	if (cmd[0] != '-' && argc >= 3)	/* raidfs DIR[:DIR...] MOUNTPOINT -o ... */
		return cmd_mount(argc, argv);
	fprintf(stderr, "raidfs: unknown command '%s' (the commands: 'raidfs --help')\n", cmd);
	return 1;
}
