#!/usr/bin/env python3
"""bench.py - the Python half of contrib/bench/run.sh.

Subcommands (run.sh calls them; each prints one line or writes files):

  fio-sum JSON          totals of one fio run: "read_bytes read_iops
                        read_MiBps write_bytes write_iops write_MiBps";
                        exits 1 when fio reports an error or moved no data
  files DIR N           create N files of 4 KiB (open, write, close), check
                        them, unlink them: "create_seconds unlink_seconds"
  copy SRC DST          copy the tree SRC to DST (1 MiB reads and writes,
                        one file after another), then syncfs DST: "bytes"
  report RES META OUT   the markdown report OUT/report.md and, when gnuplot
                        is there, the graphs OUT/*.png, from the results
                        (RES: "config<TAB>metric<TAB>value" lines; a value
                        recorded more than once counts as its median) and
                        the run's description (META: "key<TAB>value" lines)

No third-party modules: it has to run wherever fio does.
"""

import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

# ----------------------------------------------------------- measurements


def fio_sum(path):
    d = json.load(open(path))
    tot = {"read": [0, 0.0, 0.0], "write": [0, 0.0, 0.0]}
    err = 0
    for job in d["jobs"]:
        err = err or job.get("error", 0)
        for rw in tot:
            r = job[rw]
            tot[rw][0] += r["io_bytes"]
            tot[rw][1] += r["iops"]
            tot[rw][2] += r["bw_bytes"] / 1048576.0
    if err:
        sys.exit("%s: fio reports error %d" % (path, err))
    if tot["read"][0] + tot["write"][0] == 0:
        sys.exit("%s: fio moved no data" % path)
    print("%d %.0f %.1f %d %.0f %.1f" % tuple(tot["read"] + tot["write"]))


def files(d, n):
    os.mkdir(d)
    buf = b"\xa5" * 4096
    t0 = time.monotonic()
    for i in range(n):
        fd = os.open("%s/f%06d" % (d, i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        if os.write(fd, buf) != len(buf):
            sys.exit("short write")
        os.close(fd)
    t1 = time.monotonic()
    names = os.listdir(d)
    if len(names) != n:
        sys.exit("readdir shows %d files, expected %d" % (len(names), n))
    with open("%s/f%06d" % (d, n // 2), "rb") as f:
        if f.read() != buf:
            sys.exit("a small file reads back wrong")
    t2 = time.monotonic()
    for i in range(n):
        os.unlink("%s/f%06d" % (d, i))
    t3 = time.monotonic()
    if os.listdir(d):
        sys.exit("files left after unlink")
    os.rmdir(d)
    print("%.3f %.3f" % (t1 - t0, t3 - t2))


def copy(src, dst):
    total = 0
    for root, dirs, names in os.walk(src):
        rel = os.path.relpath(root, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in sorted(names):
            with open(os.path.join(root, name), "rb", buffering=0) as fi, \
                    open(os.path.join(dst, rel, name), "wb", buffering=0) as fo:
                while True:
                    b = fi.read(1 << 20)
                    if not b:
                        break
                    fo.write(b)
                    total += len(b)
    fd = os.open(dst, os.O_RDONLY)
    try:
        os.syncfs(fd) if hasattr(os, "syncfs") else os.sync()
    finally:
        os.close(fd)
    print(total)


# ---------------------------------------------------------------- report

BS_ORDER = ["512", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k", "256k", "512k", "1m", "2m"]


def bs_bytes(s):
    s = s.lower()
    mult = {"k": 1 << 10, "m": 1 << 20}.get(s[-1], 1)
    return int(s.rstrip("km")) * mult


class Results:
    def __init__(self, path):
        self.v = collections.defaultdict(lambda: collections.defaultdict(list))
        self.order = []
        for line in open(path):
            line = line.rstrip("\n")
            if not line:
                continue
            c, k, val = line.split("\t", 2)
            if c not in self.v:
                self.order.append(c)
            self.v[c][k].append(val)

    def num(self, c, k):
        try:
            xs = [float(x) for x in self.v[c].get(k, [])]
        except ValueError:
            return None
        return statistics.median(xs) if xs else None

    def all(self, c, k):
        try:
            return [float(x) for x in self.v[c].get(k, [])]
        except ValueError:
            return []

    def text(self, c, k):
        xs = self.v[c].get(k)
        return xs[-1] if xs else None

    def keys(self, c, prefix):
        return [k for k in self.v[c] if k.startswith(prefix)]


def fmt(v, digits=None):
    if v is None:
        return "n/a"
    if digits is not None:
        return "%.*f" % (digits, v)
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.2f" % v


class Report:
    PT = "passthrough"

    def __init__(self, res, meta, out):
        self.r = res
        self.meta = meta
        self.out = out
        self.lines = []
        self.graphs = []
        self.gnuplot = shutil.which("gnuplot") and meta.get("gnuplot", "yes") == "yes"

    def p(self, s=""):
        self.lines.append(s)

    def desc(self, c):
        return self.r.text(c, "desc") or c

    def measured(self, c):
        return any(self.r.num(c, k) is not None for k in self.r.v[c])

    def configs(self, family):
        """the configurations of a family that have numbers"""
        return [c for c in self.meta.get("set." + family, "").split() if c in self.r.v and self.measured(c)]

    def cell(self, c, k, digits=None, ratio=True):
        v = self.r.num(c, k)
        if v is None:
            e = self.r.text(c, "err." + k)
            return "error" if e else "n/a"
        s = fmt(v, digits)
        b = self.r.num(self.PT, k)
        if ratio and c != self.PT and b:
            s += " (%.2f×)" % (v / b)
        return s

    def table(self, header, rows):
        self.p("| " + " | ".join(header) + " |")
        self.p("|" + "---|" * len(header))
        for row in rows:
            self.p("| " + " | ".join(row) + " |")
        self.p()

    # --------------------------------------------------------- sections
    def head(self):
        m = self.meta
        self.p("# raidfs benchmark (%s mode), %s" % (m.get("mode", "?"), m.get("date", "?")))
        self.p()
        self.p("Produced by `contrib/bench/run.sh`; see docs/benchmarks/README.md for how to read it.")
        self.p()
        self.p("## Machine and run")
        self.p()
        for key, label in (("machine", "machine"), ("cpu", "CPU"), ("kernel", "kernel"),
                           ("versions", "software"), ("raidfs", "raidfs"), ("storage", "member storage"),
                           ("load", "load average (1 min)"), ("wall", "wall time of the run"),
                           ("shared", "note")):
            if key in m:
                self.p("- %s: %s" % (label, m[key]))
        self.p()
        if m.get("mode_note"):
            self.p(m["mode_note"])
            self.p()
        self.p("Numbers are medians where a pattern ran more than once. In parentheses: the value "
               "as a ratio of `passthrough_ll` in the same run (for times, above 1 means slower).")
        self.p()

    def availability(self):
        self.p("## What ran")
        self.p()
        rows = []
        for c in self.r.order:
            st = self.r.text(c, "status") or "measured"
            rows.append([c, self.desc(c), st])
        self.table(["configuration", "what it is", "status"], rows)
        errs = [(c, k[4:], v[-1]) for c in self.r.order for k, v in self.r.v[c].items() if k.startswith("err.")]
        if errs:
            self.p("Measurements that failed (the run went on without them):")
            self.p()
            for c, k, why in errs:
                self.p("- %s %s: %s" % (c, k, why))
            self.p()

    def targets(self):
        r, pt = self.r, self.PT
        self.p("## Issue-5 speed targets")
        self.p()
        self.p("raidfs with 4 members against `passthrough_ll` over one directory of the same "
               "storage, same run. A benchmark, not a test: nothing fails when a target is missed.")
        self.p()
        rows = []
        lv = [("raid0", "raid0-4"), ("raid5", "raid5-4"), ("raid6", "raid6-4")]

        def ratio_row(label, key, goal):
            row = [label]
            for lname, c in lv:
                g = goal.get(lname)
                v, b = r.num(c, key), r.num(pt, key)
                if g is None:
                    row.append("—")
                elif v is None or not b:
                    row.append("not measured (≥ %.2f×)" % g)
                else:
                    q = v / b
                    row.append("%.2f× (≥ %.2f×) %s" % (q, g, "met" if q >= g else "**not met**"))
            rows.append(row)

        ratio_row("sequential write 1 MiB", "seqwrite.mibs", {"raid0": .9, "raid5": .9, "raid6": .85})
        ratio_row("sequential read 1 MiB", "seqread.mibs", {"raid0": .9, "raid5": .9, "raid6": .9})
        row = ["sequential read, 1 (raid5) / 2 (raid6) members failed, vs healthy"]
        for lname, c in lv:
            if lname == "raid0":
                row.append("—")
                continue
            st = "failed1" if lname == "raid5" else "failed2"
            v, h = r.num(c, "state.%s.seqread.mibs" % st), r.num(c, "state.healthy.seqread.mibs")
            if v is None or not h:
                row.append("not measured (≥ 0.70×)")
            else:
                q = v / h
                row.append("%.2f× (≥ 0.70×) %s" % (q, "met" if q >= .7 else "**not met**"))
        rows.append(row)
        ratio_row("4 KiB random read, 4 jobs", "randread.iops", {"raid0": .8, "raid5": .8, "raid6": .8})
        row = ["create + write 4 KiB + unlink %s files, time" % self.meta.get("nfiles", "?")]
        for lname, c in lv:
            v = self.files_time(c)
            b = self.files_time(pt)
            if v is None or not b:
                row.append("not measured (≤ 2×)")
            else:
                q = v / b
                row.append("%.2f× (≤ 2×) %s" % (q, "met" if q <= 2 else "**not met**"))
        rows.append(row)
        self.table(["pattern", "raid0", "raid5", "raid6"], rows)

    def files_time(self, c):
        a, b = self.r.num(c, "files.create.s"), self.r.num(c, "files.unlink.s")
        return None if a is None or b is None else a + b

    def vs_btrfs(self):
        r = self.r
        pairs = [("raid5-4", "btrfs-raid5"), ("raid6-4", "btrfs-raid6")]
        pairs = [(a, b) for a, b in pairs if a in r.v and b in r.v]
        if not pairs:
            return
        self.p("## raidfs against btrfs (the kernel's RAID)")
        self.p()
        self.p("Every metric both measured, raidfs / btrfs (for times and CPU cost the inverse, "
               "so above 1 always means raidfs is ahead).")
        self.p()
        def lower_better(k):
            return k.endswith((".s", ".s_per_gib", ".pct_per_100mbs"))
        for a, b in pairs:
            ahead, behind = [], []
            for k in sorted(set(r.v[a]) & set(r.v[b])):
                if k.startswith(("err.", "status", "desc")):
                    continue
                x, y = r.num(a, k), r.num(b, k)
                if x is None or y is None or x <= 0 or y <= 0:
                    continue
                q = y / x if lower_better(k) else x / y
                (ahead if q >= 1 else behind).append((q, k))
            n = len(ahead) + len(behind)
            self.p("- **%s vs %s**: ahead on %d of %d metrics." % (a, b, len(ahead), n))
            if behind:
                behind.sort()
                self.p("  Behind on: " + ", ".join("%s %.2f×" % (k, q) for q, k in behind[:40]) +
                       (" …" if len(behind) > 40 else ""))
            if ahead:
                ahead.sort()
                self.p("  Closest leads: " + ", ".join("%s %.2f×" % (k, q) for q, k in ahead[:8]))
        self.p()

    def core(self):
        cs = self.configs("targets")
        if not cs:
            return
        self.p("## Core patterns and CPU cost, every configuration")
        self.p()
        self.p("seq write: 1 MiB writes of a new %s file (libaio, QD 8); seq read: 1 MiB, QD 8; "
               "4K random read: 4 psync jobs; files: %s files of 4 KiB created, then unlinked. "
               "CPU: whole-system CPU seconds per GiB moved, and CPU load (%% of all %s CPUs) "
               "per 100 MB/s (10^6 B/s) of throughput." % (
                   self.meta.get("size", "?"), self.meta.get("nfiles", "?"), self.meta.get("ncpu", "?")))
        self.p()
        rows = []
        for c in cs:
            rows.append([c, self.cell(c, "seqwrite.mibs", 0), self.cell(c, "seqread.mibs", 0),
                         self.cell(c, "randread.iops", 0), self.cell(c, "files.create.s", 2),
                         self.cell(c, "files.unlink.s", 2),
                         self.cell(c, "cpu.write.s_per_gib", 2, False), self.cell(c, "cpu.read.s_per_gib", 2, False),
                         self.cell(c, "cpu.write.pct_per_100mbs", 2, False),
                         self.cell(c, "cpu.read.pct_per_100mbs", 2, False)])
        self.table(["configuration", "seq write MiB/s", "seq read MiB/s", "4K rand read IOPS",
                    "create s", "unlink s", "CPU s/GiB write", "CPU s/GiB read",
                    "CPU % per 100 MB/s write", "CPU % per 100 MB/s read"], rows)
        multi = []
        for c in cs:
            parts = []
            for k, lab in (("seqwrite.mibs", "write"), ("seqread.mibs", "read"), ("randread.iops", "4K")):
                xs = self.r.all(c, k)
                if len(xs) > 1:
                    parts.append("%s %s" % (lab, "/".join("%.0f" % x for x in xs)))
            if parts:
                multi.append("- %s: %s" % (c, "; ".join(parts)))
        if multi:
            self.p("Every round:")
            self.p()
            for m in multi:
                self.p(m)
            self.p()

    def grid(self, title, family, rowkeys, colkeys, keyfn, digits=0, note=None):
        """one table: rows configs, columns colkeys"""
        cs = self.configs(family)
        if not cs:
            return False
        self.p("### " + title)
        self.p()
        if note:
            self.p(note)
            self.p()
        rows = []
        for c in cs:
            rows.append([c] + [self.cell(c, keyfn(x), digits) for x in colkeys])
        self.table([rowkeys] + [str(x) for x in colkeys], rows)
        return True

    def present(self, family, prefix):
        return any(k.startswith(prefix) for c in self.configs(family) for k in self.r.v[c])

    def plot_lines(self, name, title, xlabel, ylabel, family, xs, keyfn, logx=False, xtics=None):
        cs = [c for c in self.configs(family) if any(self.r.num(c, keyfn(x)) is not None for x in xs)]
        if not cs:
            return
        dat = os.path.join(self.out, name + ".dat")
        with open(dat, "w") as f:
            f.write("x " + " ".join(cs) + "\n")
            for x in xs:
                vals = [self.r.num(c, keyfn(x)) for c in cs]
                f.write("%s %s\n" % (bs_bytes(x) if logx else x,
                                     " ".join("?" if v is None else "%.1f" % v for v in vals)))
        gp = ["set terminal pngcairo size 900,560 noenhanced",
              "set output '%s.png'" % name,
              "set title '%s'" % title, "set xlabel '%s'" % xlabel, "set ylabel '%s'" % ylabel,
              "set key outside right", "set grid", "set datafile missing '?'", "set yrange [0:*]"]
        if logx:
            gp.append("set logscale x 2")
            gp.append("set xtics (%s)" % ", ".join("'%s' %d" % (x, bs_bytes(x)) for x in xs))
        gp.append("plot for [i=2:%d] '%s.dat' using 1:i with linespoints lw 2 title columnheader(i)" % (len(cs) + 1, name))
        self.gp(name, gp)

    def plot_hist(self, name, title, ylabel, rows, cols, data):
        """clustered bars: one cluster per row, one bar per column"""
        dat = os.path.join(self.out, name + ".dat")
        with open(dat, "w") as f:
            f.write("x " + " ".join(cols) + "\n")
            for rname, vals in zip(rows, data):
                f.write("%s %s\n" % (rname, " ".join("?" if v is None else "%.1f" % v for v in vals)))
        gp = ["set terminal pngcairo size 900,560 noenhanced",
              "set output '%s.png'" % name, "set title '%s'" % title, "set ylabel '%s'" % ylabel,
              "set style data histograms", "set style histogram clustered gap 1",
              "set style fill solid 0.8 border -1", "set key outside right", "set grid ytics",
              "set datafile missing '?'", "set yrange [0:*]", "set xtics rotate by -30",
              "plot for [i=2:%d] '%s.dat' using i:xtic(1) title columnheader(i)" % (len(cols) + 1, name)]
        self.gp(name, gp)

    def gp(self, name, lines):
        path = os.path.join(self.out, name + ".gp")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        if not self.gnuplot:
            return
        p = subprocess.run(["gnuplot", name + ".gp"], cwd=self.out, capture_output=True, text=True)
        if p.returncode == 0 and os.path.exists(os.path.join(self.out, name + ".png")):
            self.graphs.append(name)
        else:
            sys.stderr.write("gnuplot %s: %s\n" % (name, p.stderr.strip()))

    def img(self, name, alt):
        if name in self.graphs:
            self.p("![%s](%s.png)" % (alt, name))
            self.p()

    def sweeps(self):
        m = self.meta
        if not any(self.present(f, p) for f, p in (("db", "db."), ("seq", "seq."), ("rand", "rand."),
                                                   ("mt", "mt."), ("mix", "mix."), ("fc", "fc."))):
            return
        self.p("## Review patterns")
        self.p()
        rt = m.get("runtime", "?")
        self.p("One run each (fio `runtime=%s`, `direct=1`, over a %s file written first), configurations "
               "interleaved point by point." % (rt + " s" if rt.isdigit() else rt, m.get("sweep_size", "?")))
        self.p()
        # (family, graph, title, x label, unit, x values, metric key, log x)
        curves = []
        for q in m.get("db_qd", "").split():
            curves.append(("db", "database-qd%s" % q, "Database 8 KiB random, QD %s: IOPS against write share %%" % q,
                           "writes, %", "IOPS", m.get("db_wmix", "").split(),
                           lambda w, q=q: "db.q%s.w%s.iops" % (q, w), False))
        for fam, name, unit in (("seq", "Sequential", "mibs"), ("rand", "Random", "iops"), ("rand", "Random", "mibs")):
            for rw in ("read", "write"):
                label = "MiB/s" if unit == "mibs" else "IOPS"
                graph = "%s-%s" % (fam, rw) if fam == "seq" or unit == "iops" else None
                curves.append((fam, graph, "%s %s, QD %s: %s against block size" % (
                    name, rw, m.get(fam + "_qd", "?"), label), "block size", label,
                    m.get(fam + "_bs", "").split(),
                    lambda b, fam=fam, rw=rw, unit=unit: "%s.%s.%s.%s" % (fam, rw, b, unit), True))
        for fam, graph, title, xlabel, ylabel, xs, keyfn, logx in curves:
            if not self.present(fam, fam + "."):
                continue
            self.grid(title, fam, "configuration", xs, keyfn)
            if graph:
                self.plot_lines(graph, title, xlabel, ylabel, fam, xs, keyfn, logx=logx)
                self.img(graph, title)
        if self.present("mt", "mt."):
            pts = m.get("mt_points", "").split()
            for rw in ("read", "write"):
                self.grid("Multithreaded sequential %s, 64 KiB: MiB/s (workers x QD)" % rw, "mt", "configuration",
                          pts, lambda x, rw=rw: "mt.%s.%s.mibs" % (rw, x))
        if self.present("mix", "mix."):
            qds = m.get("mix_qd", "").split()
            cols = ["%s QD%s" % (w, q) for w in ("fileserver", "webserver", "workstation") for q in qds]
            self.grid("IOMeter mixes: IOPS", "mix", "configuration", cols,
                      lambda x: "mix.%s.q%s.iops" % (x.split()[0], x.split()[1][2:]))
        if self.present("fc", "fc."):
            cols = ["%s %s" % (s, ph) for s in ("iso", "mp3", "prog") for ph in ("create", "read", "copynear", "copyfar")]
            self.grid("File copy (FC-Test style): MiB/s", "fc", "configuration", cols,
                      lambda x: "fc.%s.%s.mibs" % tuple(x.split()),
                      note="Sets: %s. create = write the set; read = read it back after dropping the "
                           "page cache; copynear = copy within the same file system; copyfar = copy to a "
                           "directory of the member storage outside it." % m.get("fc_sets", "?"))

    def states(self):
        cs = [c for c in self.configs("states") if self.r.num(c, "state.healthy.seqread.mibs") is not None]
        if not cs:
            return
        self.p("## Healthy, degraded and rebuilding")
        self.p()
        self.p(self.meta.get("states_note", ""))
        self.p()
        st = [("healthy", "healthy"), ("failed1", "1 failed"), ("failed2", "2 failed"), ("rebuilding", "rebuilding")]
        rows = []
        for c in cs:
            h = self.r.num(c, "state.healthy.seqread.mibs")
            hr = self.r.num(c, "state.healthy.randread.iops")
            row = [c]
            for s, _ in st:
                v = self.r.num(c, "state.%s.seqread.mibs" % s)
                w = self.r.num(c, "state.%s.randread.iops" % s)
                if v is None and w is None:
                    why = self.r.text(c, "state.%s.note" % s)
                    row.append(why or "—")
                    continue
                cell = "%s MiB/s" % fmt(v, 0)
                if h and v is not None and s != "healthy":
                    cell += " (%.2f×)" % (v / h)
                cell += ", %s IOPS" % fmt(w, 0)
                if hr and w is not None and s != "healthy":
                    cell += " (%.2f×)" % (w / hr)
                d = self.r.text(c, "state.%s.data" % s)
                if d and d != "same":
                    cell += " **data %s**" % d
                note = self.r.text(c, "state.%s.note" % s)
                if note:
                    cell += " (%s)" % note
                row.append(cell)
            rows.append(row)
        self.table(["configuration"] + [lab for _, lab in st], rows)
        self.p("Sequential read 1 MiB QD 8 and 4 KiB random read (4 jobs); in parentheses the ratio "
               "to the same configuration healthy. Data: the test file's md5 in every state is "
               "compared with the healthy one.")
        self.p()
        self.plot_hist("states", "Sequential read 1 MiB: healthy vs degraded vs rebuilding", "MiB/s",
                       cs, [lab.replace(" ", "-") for _, lab in st],
                       [[self.r.num(c, "state.%s.seqread.mibs" % s) for s, _ in st] for c in cs])
        self.img("states", "healthy vs degraded vs rebuilding")

    def commands(self):
        self.p("## Exact commands")
        self.p()
        self.p("```")
        self.p(self.meta.get("cmdline", "?"))
        self.p("```")
        self.p()
        cmds = self.meta.get("commands_file")
        if cmds and os.path.exists(cmds):
            self.p("Set-up of each configuration and one example of each pattern, with `$WORK` "
                   "standing for the run's scratch directory (every command of the run is in "
                   "`commands.txt` next to this report):")
            self.p()
            self.p("```")
            seen = set()
            work = self.meta.get("workdir")
            for line in open(cmds):
                line = line.rstrip("\n")
                if work:
                    line = line.replace(work, "$WORK")
                kind = line.split(" ", 1)[0]
                if kind.startswith("#setup") or kind not in seen:
                    seen.add(kind)
                    self.p(line.split(" ", 1)[1] if " " in line else line)
            self.p("```")
            self.p()

    def write(self):
        self.head()
        self.targets()
        self.vs_btrfs()
        self.availability()
        self.core()
        self.sweeps()
        self.states()
        self.commands()
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write("\n".join(self.lines) + "\n")


def report(res, meta, out):
    m = {}
    for line in open(meta):
        line = line.rstrip("\n")
        if "\t" in line:
            k, v = line.split("\t", 1)
            m[k] = v
    Report(Results(res), m, out).write()


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "fio-sum" and len(args) == 1:
        fio_sum(args[0])
    elif cmd == "files" and len(args) == 2:
        files(args[0], int(args[1]))
    elif cmd == "copy" and len(args) == 2:
        copy(args[0], args[1])
    elif cmd == "report" and len(args) == 3:
        report(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
