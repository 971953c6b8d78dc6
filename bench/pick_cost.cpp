// CPU of an upstream's pick and its call's end (docs/upstreams.md, "Measured"): N picks, each
// reported ok at once, on 1 and on 2 threads sharing one table, for both balancers and for 3 and
// 100 endpoints, in this process alone (no sockets). Also how the calls spread.
//
//   pick_cost [PICKS]
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <thread>
#include <vector>

#include "gather/downstream/upstream/upstream_table.hpp"

namespace {

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

gather::upstream_config pool(int endpoints, gather::balance_kind balance) {
  gather::upstream_config cfg;
  cfg.name = "pool";
  cfg.balance = balance;
  for (int i = 0; i < endpoints; ++i)
    cfg.endpoints.push_back({"10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), 80, 1});
  return cfg;
}

/// ns of CPU per pick + report on this thread, and how many went to each endpoint.
double run(gather::upstream_table& table, long picks, std::map<std::string, long>* spread) {
  const auto t0 = thread_cpu_ns();
  for (long i = 0; i < picks; ++i) {
    auto p = table.pick();
    if (spread)
      ++(*spread)[p.endpoint->text];
    table.report(*p.endpoint, gather::endpoint_result::ok);
  }
  return (thread_cpu_ns() - t0) / picks;
}

} // namespace

int main(int argc, char** argv) {
  const long picks = argc > 1 ? std::atol(argv[1]) : 2000000;
  for (const auto balance : {gather::balance_kind::least_request, gather::balance_kind::round_robin}) {
    const char* name = balance == gather::balance_kind::round_robin ? "round_robin" : "least_request";
    for (const int endpoints : {3, 100}) {
      gather::upstream_table table(pool(endpoints, balance));
      run(table, picks / 10, nullptr); // warm
      const double one = run(table, picks, nullptr);
      double two[2] = {0, 0};
      std::thread a([&] { two[0] = run(table, picks, nullptr); });
      std::thread b([&] { two[1] = run(table, picks, nullptr); });
      a.join();
      b.join();
      std::printf("%-13s %3d endpoints: %.3f us per pick+report on 1 thread, %.3f / %.3f us on 2 threads sharing it\n",
                  name, endpoints, one / 1000, two[0] / 1000, two[1] / 1000);
      if (endpoints == 3) {
        std::map<std::string, long> spread;
        run(table, 300000, &spread);
        std::printf("  spread of 300000:");
        for (const auto& [address, n] : spread)
          std::printf(" %s %ld", address.c_str(), n);
        std::printf("\n");
      }
    }
  }
}
