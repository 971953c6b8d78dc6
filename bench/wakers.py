#!/usr/bin/env python3
"""Who woke a thread, and why: reads `perf script` of `sched:sched_wakeup` events recorded with
call graphs (`perf record -e sched:sched_wakeup --filter 'pid == TID' -a -g`) and prints, per
request, the wake-ups by the waking task and by what the kernel was doing for it.

    perf script -i wake.data | bench/wakers.py REQUESTS

bench/run.sh runs it for each row when WAKERS is set (docs/performance.md).
"""
import collections
import sys

# The kernel frame that says why the thread was woken, first match wins.
REASONS = [
    ("timerfd_tmrproc", "timer"),          # an Asio timer (timerfd)
    ("hrtimer_wakeup", "timeout"),         # the epoll_wait timeout itself (nginx's timers)
    ("sk_stream_write_space", "writable"),
    ("tcp_check_space", "writable"),
    ("sock_def_readable", "data"),         # bytes arrived on a socket
    ("tcp_data_queue", "data"),
    ("tcp_fin", "peer closed"),
    ("tcp_reset", "reset"),
    ("sock_def_wakeup", "connection state"),
    ("eventfd", "eventfd"),                # another thread posted to the loop
    ("futex_wake", "futex"),
]


def main():
    requests = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    counts = collections.Counter()
    total = 0
    for block in sys.stdin.read().split("\n\n"):
        lines = [l.strip() for l in block.strip().splitlines() if l.strip()]
        if not lines:
            continue
        total += 1
        frames = " ".join(lines[1:])
        reason = next((name for frame, name in REASONS if frame in frames), "other")
        counts[(lines[0].split()[0], reason)] += 1
    print("    wake-ups/req %.2f:" % (total / requests) +
          "".join(" %s %s %.2f," % (who, why, n / requests) for (who, why), n in counts.most_common()
                  if n / requests >= 0.01).rstrip(","))


if __name__ == "__main__":
    main()
