// The batch window against its ideal: 500 items of 50 ms each, 2% of them hanging, concurrency 64.
//
// Ideal wall time: ceil(500 / 64) rounds of 50 ms, plus one item timeout (a hanging item holds its
// slot until its timeout, so at least one timeout is always on the critical path). A sliding window
// stays close to it; fixed chunks would pay a timeout in every chunk that holds a hanging item.
//
// Usage: batch_bench [runs]   (default 5; prints every run, then the median against the ideal)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

constexpr int items = 500;
constexpr int concurrency = 64;
constexpr int item_ms = 50;
constexpr int hang_every = 50; // 2%
constexpr int timeout_ms = 200;
constexpr int pad_bytes = 4096;

bool hangs(int item) { return item % hang_every == hang_every - 1; }

} // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;

  test_server down{256}; // every call in flight (and every hung one) holds a handler thread
  const std::string pad(pad_bytes, 'x');
  down.get(R"(/o/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
    const int item = std::stoi(req.matches[1].str());
    down.delay(milliseconds{hangs(item) ? 10 * timeout_ms : item_ms});
    res.set_content(json{{"id", item}, {"pad", pad}}.dump(), "application/json");
  });
  down.start();

  running_gateway gw{batch_route_config_json(
    "/b", {{"url", down.base_url() + "/o/{item}"}, {"concurrency", concurrency},
           {"timeout_ms", timeout_ms}, {"deadline_ms", 10000}, {"max_items", items}})};
  json body_items = json::array();
  for (int i = 0; i < items; ++i)
    body_items.push_back(i);
  const auto body = json{{"items", body_items}}.dump();

  const long long ideal = (items + concurrency - 1) / concurrency * item_ms + timeout_ms;
  std::printf("batch_bench: %d items x %d ms, %d%% hanging (timeout %d ms), concurrency %d\n", items,
              item_ms, 100 / hang_every, timeout_ms, concurrency);
  std::printf("ideal: ceil(%d/%d) x %d ms + %d ms = %lld ms\n", items, concurrency, item_ms,
              timeout_ms, ideal);

  gw.post("/b", R"({"items": [0, 1, 2, 3]})"); // warm up connections and the scheduler
  std::vector<long long> walls;
  for (int run = 1; run <= runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    auto r = gw.post("/b", body);
    const auto wall = ms_since(start);
    if (!r || r->status != 200) {
      std::printf("run %d: failed (%s)\n", run, r ? std::to_string(r->status).c_str() : "no answer");
      return 1;
    }
    const auto counts = json::parse(r->body)["counts"];
    std::printf("run %d: %lld ms  ratio %.2f  ok %d timeout %d error %d\n", run, wall,
                static_cast<double>(wall) / ideal, counts["ok"].get<int>(),
                counts["timeout"].get<int>(), counts["error"].get<int>());
    walls.push_back(wall);
  }
  std::sort(walls.begin(), walls.end());
  const auto median = walls[walls.size() / 2];
  std::printf("median: %lld ms vs ideal %lld ms: ratio %.2f (goal <= 1.50)\n", median, ideal,
              static_cast<double>(median) / ideal);
  return 0;
}
