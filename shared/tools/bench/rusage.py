"""Run a command and write down its peak memory: ``python -S rusage.py OUT CORE CMD ...``.

Why a launcher at all: on Linux a child's ``ru_maxrss`` starts from its parent's size.
``fork`` copies the parent's memory map with its high-water mark, and ``exec`` keeps
that mark in the process's accounting.  A child started straight from compare.py (which
has imported aiohttp and built an oracle) would report at least compare.py's size.
This script is started with ``-S`` and imports only what it must, so the mark its child
inherits is small (about 9 MB), below any crawler's own peak.

It pins itself to CORE ("-" for any core) and lifts its soft file-descriptor limit to
the hard one, and the command inherits both; then it forks, waits with ``os.wait4``, and
writes "EXIT_STATUS PEAK_RSS_KIB CPU_SECONDS" (user plus system time) to the file OUT.
Ctrl-C (SIGINT) is passed on to the command, which writes its partial result.  The exit
status is the command's.
"""

import os
import resource
import signal
import sys


def main() -> int:
    """Run the command line in ``sys.argv`` and return the command's exit status."""
    out, core, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if core != "-" and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(core)})  # what `taskset -c CORE` does
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)  # exec failed: never run the launcher's code twice

    def forward(signum: int, frame: object) -> None:
        os.kill(pid, signum)

    signal.signal(signal.SIGINT, forward)
    _, status, usage = os.wait4(pid, 0)  # retried by Python if a signal interrupts it
    code = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    peak = usage.ru_maxrss // 1024 if sys.platform == "darwin" else usage.ru_maxrss
    with open(out, "w", encoding="ascii") as result:
        result.write(f"{code} {peak} {usage.ru_utime + usage.ru_stime:.4f}\n")
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
