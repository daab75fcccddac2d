"""
release.py - waiting for what the last close() of a file changes in a
FUSE file system, for the test tools (posix_check.py, workload.py).

The kernel sends a file's release after close() has returned.  Until it
reaches the daemon, libfuse counts the file open: an unlink of it hides
it as ".fuse_hidden..." (a name, and a link, that go when the release is
handled).  A check made right after a close can meet that; these wait
for it, and still report a name or link that stays.  The release waits
in the kernel's queue of background requests behind writeback and
behind the releases of files closed before: in CI it took more than 2 s
once, and more than 10 s once right after posix_check's readdir_large
(3,000 files created and closed just before), hence 60 s - a healthy
run does not wait at all.
"""
import errno
import os
import time


def after_release(fn, want, timeout=60.0):
    """fn() once it returns want, or its last value after timeout seconds."""
    end = time.monotonic() + timeout
    got = fn()
    while got != want and time.monotonic() < end:
        time.sleep(0.01)
        got = fn()
    return got


def rmdir_after_release(path, timeout=60.0):
    """os.rmdir(path), retried while the directory holds nothing but hidden
    names; a directory holding any other name fails at once."""
    end = time.monotonic() + timeout
    while True:
        try:
            return os.rmdir(path)
        except OSError as e:
            if e.errno != errno.ENOTEMPTY or time.monotonic() >= end or \
               any(not n.startswith(".fuse_hidden") for n in os.listdir(path)):
                raise
            time.sleep(0.01)


def only_hidden(diffs):
    """True when the differences of two trees (compare_trees() lines,
    "path: ...") are all names libfuse hides until a release."""
    return bool(diffs) and all(
        os.path.basename(d.split(": ", 1)[0]).startswith(".fuse_hidden") for d in diffs)


def while_hidden(fn, timeout=60.0):
    """fn() (a list of differences) again while it holds only hidden names,
    for at most timeout seconds."""
    end = time.monotonic() + timeout
    got = fn()
    while only_hidden(got) and time.monotonic() < end:
        time.sleep(0.05)
        got = fn()
    return got

