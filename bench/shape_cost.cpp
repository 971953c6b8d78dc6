// CPU of building one aggregate answer, S1's four sections with the envelope against the same four
// rebuilt into two objects by a `shape` (docs/config.md#shape), in this process alone: no sockets,
// no actors, so the machine's load moves it little.
//
//   shape_cost [ROUNDS]
//
// Each round builds N answers of each kind, interleaved by round, and prints the CPU (this
// thread's CLOCK_THREAD_CPUTIME_ID) per answer; then the medians and their ratio.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "gather/answer/aggregate_response.hpp"

namespace {

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/// bench/run.sh's S1 route (four sections of nginx's /d20), with `shape` when given.
gather::route_config s1_route(const std::string& shape) {
  std::string text = R"({"routes": [{"path": "/p/{id}", "sections": [
      {"name": "s0", "url": "http://127.0.0.1:1/d20", "timeout_ms": 500, "required": true},
      {"name": "s1", "url": "http://127.0.0.1:1/d20", "timeout_ms": 500, "fallback": {"v": null}},
      {"name": "s2", "url": "http://127.0.0.1:1/d20", "timeout_ms": 500, "fallback": {"v": null}},
      {"name": "s3", "url": "http://127.0.0.1:1/d20", "timeout_ms": 500, "fallback": {"v": null}}])";
  if (!shape.empty())
    text += R"(, "shape": )" + shape;
  text += "}]}";
  auto loaded = gather::load_config(text);
  if (!loaded.value) {
    std::fprintf(stderr, "%s\n", loaded.problems.front().c_str());
    std::exit(1);
  }
  return loaded.value->routes[0];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  constexpr int per_round = 200000;
  const auto plain = s1_route("");
  const auto shaped = s1_route(R"({"item": {"base": "{s0}", "title": "{s1.title}", "price": "{s1.price}"},
                                   "offer": {"id": "{s2.id}", "extra": "{s3}", "currency": "CNY"}})");
  std::vector<gather::section_outcome> outcomes(4);
  for (auto& o : outcomes) {
    o.status = gather::section_status::ok;
    o.attempts = 1;
    o.ms = 21;
    o.data = "{\"id\":1,\"title\":\"twenty\",\"price\":9.5}\n"; // nginx's /d20, as the bench serves it
  }
  std::vector<double> plain_ns, shaped_ns;
  std::size_t bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    for (const auto* route : {&plain, &shaped}) {
      const double t0 = thread_cpu_ns();
      for (int i = 0; i < per_round; ++i) {
        auto reply = gather::build_aggregate_reply(*route, outcomes, "0123456789abcdef0123456789abcdef");
        bytes += reply.body.size();
      }
      const double ns = (thread_cpu_ns() - t0) / per_round;
      (route == &plain ? plain_ns : shaped_ns).push_back(ns);
      std::printf("round %d %-9s %7.0f ns/answer\n", r + 1, route == &plain ? "envelope" : "shaped", ns);
    }
  }
  std::printf("medians: envelope %.0f ns, shaped %.0f ns per answer (x%.2f); %zu bytes built\n",
              median(plain_ns), median(shaped_ns), median(shaped_ns) / median(plain_ns), bytes);
}
