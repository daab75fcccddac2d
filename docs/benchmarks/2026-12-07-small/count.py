import sys, re
# per-file member-side system calls from strace -c summaries (100 files)
skip = {'read','writev','futex','clock_nanosleep','restart_syscall','mmap','mprotect','munmap','clone3','rseq',
        'set_robust_list','rt_sigprocmask','madvise','getrandom','geteuid','fstatfs','utimensat','pipe2','fcntl','brk','exit','sched_yield','total','nanosleep'}
def load(p):
    d = {}
    for line in open(p):
        f = line.split()
        if len(f) >= 5 and f[0][0].isdigit() and not f[0].startswith('-'):
            name = f[-1]; calls = int(f[3]); 
            d[name] = calls
    return d
files = sys.argv[1:]
ds = [load(p) for p in files]
names = sorted(set().union(*ds) - skip, key=lambda n: -max(d.get(n,0) for d in ds))
print('| syscall | ' + ' | '.join(files) + ' |')
print('|---|' + '---|'*len(files))
for n in names:
    print('| %s | ' % n + ' | '.join('%.1f' % (d.get(n,0)/100) for d in ds) + ' |')
print('| **member total** | ' + ' | '.join('%.1f' % (sum(v for k,v in d.items() if k not in skip)/100) for d in ds) + ' |')
print('| FUSE read+writev | ' + ' | '.join('%.1f' % ((d.get('read',0)+d.get('writev',0))/100) for d in ds) + ' |')
