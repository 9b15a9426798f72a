#!/usr/bin/env python3
"""cputime.py OUT CMD [ARGS...]: runs CMD and writes the CPU seconds it
used (user + system, from wait4, microsecond resolution; GNU time's
%U/%S round to 10 ms, a seventh of a 10 s capture run) to OUT. Like GNU
time it ignores SIGINT itself, so the caller signals CMD, its child."""
import os
import signal
import sys

out, cmd = sys.argv[1], sys.argv[2:]
signal.signal(signal.SIGINT, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execvp(cmd[0], cmd)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(f"{usage.ru_utime + usage.ru_stime:.6f}\n")
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
