#!/usr/bin/env python3
# The paired ratios of docs/benchmarks.md, "Checksums on vs off", from the reports in
# this directory: run it here.  Each round: checksums on / off, same round.
import re, statistics
rounds = {}
for f in ("quick-1.md", "quick-2.md"):
    for line in open(f):
        m = re.match(r"- (\S+): (.*)", line)
        if not m or m.group(1) not in ("passthrough", "raid5", "raid6", "raid5+sums", "raid6+sums"):
            continue
        for part in m.group(2).split("; "):
            k, v = part.rsplit(" ", 1)
            rounds.setdefault((m.group(1), k), []).extend(float(x) for x in v.split("/"))
keys = ["write", "read", "4K read", "4K write", "create", "unlink", "degraded read"]
for lv in ("raid5", "raid6"):
    for k in keys:
        a, b = rounds[(lv + "+sums", k)], rounds[(lv, k)]
        r = [x / y for x, y in zip(a, b)]
        print(lv, k, "median %.2f" % statistics.median(r), "range %.2f-%.2f" % (min(r), max(r)), "n=%d" % len(r))
for lv in ("raid5", "raid6"):
    a = [c + u for c, u in zip(rounds[(lv + "+sums", "create")], rounds[(lv + "+sums", "unlink")])]
    b = [c + u for c, u in zip(rounds[(lv, "create")], rounds[(lv, "unlink")])]
    r = [x / y for x, y in zip(a, b)]
    print(lv, "create+unlink time", "median %.2f" % statistics.median(r), "range %.2f-%.2f" % (min(r), max(r)))

def runs(f):
    out = []
    for sec in open(f).read().split("### Rebuild and re-add")[1:]:
        rb = re.search(r"rebuild of member 1 .*?\| ([0-9.]+) s .*?\| (\d+) MiB/s", sec).groups()
        ce = re.search(r"ceiling: .*?\| ([0-9.]+) s \| (\d+) MiB/s", sec).groups()
        out.append((float(rb[1]), float(rb[1]) / float(ce[1])))
    return out
for lv in ("raid5", "raid6"):
    on, off = runs("rebuild-%s-crc32c.md" % lv), runs("rebuild-%s-none.md" % lv)
    r = [a[0] / b[0] for a, b in zip(on, off)]
    n = [a[1] / b[1] for a, b in zip(on, off)]
    print(lv, "on MiB/s", "/".join("%.0f" % a[0] for a in on), "off", "/".join("%.0f" % b[0] for b in off))
    print(lv, "rate ratio per round", "/".join("%.2f" % x for x in r), "median %.2f" % statistics.median(r))
    print(lv, "(rebuild/ceiling) ratio per round", "/".join("%.2f" % x for x in n), "median %.2f" % statistics.median(n))
    print(lv, "rebuild/ceiling on", "/".join("%.2f" % a[1] for a in on), "off", "/".join("%.2f" % b[1] for b in off))

# small.sh: A = --checksum crc32c, B = --checksum none, raid5/4
small = {}
for line in open("small.tsv"):
    r, b, mode, k, v = line.split()
    small[(r, b, mode, k)] = float(v)
for mode in ("file", "shm", "wt"):
    for k in ("unaligned_iops", "trunc_ops"):
        r = [small[(n, "A", mode, k)] / small[(n, "B", mode, k)] for n in ("1", "2")]
        print("small.sh raid5", mode, k, "on/off per round", "/".join("%.2f" % x for x in r))
