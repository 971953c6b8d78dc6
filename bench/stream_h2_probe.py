#!/usr/bin/python3
# Progressive answers over h2c (docs/performance.md): N requests one after the other on one
# connection, whole vs NDJSON: time to the first DATA frame, to the `base` line (the whole body for
# the whole answer) and to the end, p50/p99 in ms. Usage: bench/stream_h2_probe.py PORT PATH N
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "front"))
import h2_client as h
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def pct(v, q):
    v = sorted(v); return v[min(len(v) - 1, int(q * len(v)))]
for label, extra in (("whole", []), ("ndjson", [("accept", "application/x-ndjson")])):
    c = h.client(port)
    first, base, end = [], [], []
    for i in range(n + 5):
        start = h.now_ms()
        sid = c.get(path, extra=extra)
        c.pump(lambda: c.finished(sid))
        a = c.answers[sid]
        fr = a.get("frames", [])
        got_base = next((t for t, d in fr if b'"base"' in d or b'"section":"base"' in d), fr[-1][0] if fr else None)
        if i >= 5 and fr:
            first.append(fr[0][0] - start); base.append(got_base - start); end.append(h.now_ms() - start)
        del c.answers[sid]
    print(f"{label:7s} n={len(first)} first DATA p50 {pct(first,.5):.1f} p99 {pct(first,.99):.1f} | base p50 {pct(base,.5):.1f} p99 {pct(base,.99):.1f} | end p50 {pct(end,.5):.1f} p99 {pct(end,.99):.1f} ms")
