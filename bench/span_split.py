#!/usr/bin/env python3
"""Where a request's time goes inside Gather, from its own spans: a request's span and its
sections' spans (one per call attempt) give, per traced request, the time from its arrival to its
first call, the spread of its calls' starts and ends, and the time from its last answer to its end.

    bench/span_split.py sink FILE        an OTLP/HTTP JSON collector on 127.0.0.1, any free port:
                                         prints the port, then appends every POSTed body to FILE
    bench/span_split.py report FILE [T0] the split, over the requests that began at or after T0
                                         (nanoseconds since the epoch)

bench/run.sh runs both for each row when SPANS (a sample ratio, e.g. 0.05) is set
(docs/performance.md). Only Gather exports spans; a peer's rows print nothing.
"""
import collections
import http.server
import json
import statistics
import sys


def sink(path):
    out = open(path, "ab")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            out.write(body + b"\n")
            out.flush()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def report(path, t0):
    traces = collections.defaultdict(list)
    for line in open(path, "rb"):
        try:
            doc = json.loads(line)
        except ValueError:
            continue  # a body cut by the sink's truncation between rows
        for rs in doc.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    traces[span["traceId"]].append(span)
    rows = []
    for spans in traces.values():
        roots = [s for s in spans if not s.get("parentSpanId")]
        calls = [s for s in spans if s.get("parentSpanId")]
        if len(roots) != 1 or not calls:
            continue
        begin, end = int(roots[0]["startTimeUnixNano"]), int(roots[0]["endTimeUnixNano"])
        if begin < t0:
            continue
        starts = [int(s["startTimeUnixNano"]) - begin for s in calls]
        ends = [int(s["endTimeUnixNano"]) - begin for s in calls]
        rows.append((min(starts), max(starts) - min(starts), max(ends) - min(ends),
                     end - begin - max(ends), statistics.mean(e - s for s, e in zip(starts, ends)),
                     end - begin))
    if not rows:
        return
    names = ["arrival -> first call", "first -> last call start", "first -> last answer",
             "last answer -> answer sent", "a call (mean of the request's)", "the request"]
    print("    spans of %d requests, us: mean/p50/p90/p99" % len(rows))
    for i, name in enumerate(names):
        v = sorted(r[i] / 1000 for r in rows)
        n = len(v)
        print("      %-31s %7.0f %7.0f %7.0f %7.0f" % (name, statistics.mean(v), v[n // 2],
                                                     v[int(n * 0.9)], v[int(n * 0.99)]))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "sink":
        sink(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        report(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    else:
        sys.exit(__doc__)
