import sys, re, collections
pend = {}
out = []
for line in open(sys.argv[1]):
    m = re.match(r'(\d+) (\S+) (.*)', line.rstrip('\n'))
    if not m: continue
    pid, ts, rest = m.groups()
    if rest.endswith('<unfinished ...>'):
        pend[pid] = (ts, rest[:-len('<unfinished ...>')].rstrip())
        continue
    r = re.match(r'<\.\.\. (\w+) resumed>(.*)', rest)
    if r:
        if pid in pend:
            ts0, head = pend.pop(pid)
            out.append((ts0, pid, head + r.group(2)))
        continue
    out.append((ts, pid, rest))
out.sort()
for ts, pid, c in out:
    print(pid, ts, c[:230])
