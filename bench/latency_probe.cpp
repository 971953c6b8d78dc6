// Closed-loop HTTP load with exact per-request latencies: CONNS callers, each sending its next GET
// when its last answer arrived, for SECONDS, over Gather's own downstream client (keep-alive, one
// event loop). Prints one line: requests, req/s, p50/p90/p99/p99.9 in ms, non-200 answers.
//
//   latency_probe URL CONNS SECONDS
//
// Why not wrk: on a bimodal load (95% at 10 ms, 5% at 250 ms) Debian's wrk 4.1 reported p75 90 ms
// and p90 185 ms for nginx alone, where nginx's own $request_time and a plain client both read
// p90 11-13 ms (docs/performance.md). The tail drill is exactly that shape.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "gather/downstream/call/downstream_client.hpp"

using clock_type = std::chrono::steady_clock;

namespace {

struct probe {
  gather::downstream_client client;
  std::string url;
  clock_type::time_point stop;
  std::mutex mutex;
  std::condition_variable idle;
  std::vector<double> latencies_ms;
  long non200 = 0;
  int running = 0;

  void send() {
    const auto start = clock_type::now();
    client.submit(gather::transfer_request{url, {}, std::chrono::seconds{10}},
                  [this, start](gather::transfer_result&& r) {
                    const auto now = clock_type::now();
                    std::lock_guard<std::mutex> lock{mutex};
                    latencies_ms.push_back(std::chrono::duration<double, std::milli>(now - start).count());
                    non200 += r.http_status != 200;
                    if (now < stop)
                      return send(); // posted to the loop: never recursive on this stack
                    if (--running == 0)
                      idle.notify_all();
                  });
  }
};

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: latency_probe URL CONNS SECONDS\n");
    return 2;
  }
  probe p;
  p.url = argv[1];
  const int conns = std::atoi(argv[2]);
  const double seconds = std::atof(argv[3]);
  p.stop = clock_type::now() + std::chrono::milliseconds{static_cast<long>(seconds * 1000)};
  {
    std::lock_guard<std::mutex> lock{p.mutex};
    p.running = conns;
  }
  for (int i = 0; i < conns; ++i)
    p.send();
  std::unique_lock<std::mutex> lock{p.mutex};
  p.idle.wait(lock, [&] { return p.running == 0; });
  auto& v = p.latencies_ms;
  std::sort(v.begin(), v.end());
  const auto q = [&](double f) { return v.empty() ? 0.0 : v[std::min(v.size() - 1, static_cast<std::size_t>(v.size() * f))]; };
  std::printf("requests %zu req/s %.0f p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f non200 %ld\n", v.size(),
              v.size() / seconds, q(0.5), q(0.9), q(0.99), q(0.999), p.non200);
  return 0;
}
