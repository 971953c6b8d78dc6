// SIGTERM behind a load balancer (docs/operations.md, "Rolling updates"), on the real binary under
// load: /readyz says 503 at once, the gateway keeps accepting and answering for drain_delay_ms,
// then stops accepting, lets what is in flight finish and exits 0.
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/raw_client.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

using drain_clock = std::chrono::steady_clock;

/// One request of the load: when it began (ms after SIGTERM; negative: before) and what came.
struct drain_try {
  long long began_ms = 0;
  int status = 0; ///< 0: refused, reset or no answer
  bool fresh_connection = false;
};

} // namespace

TEST_CASE("serve: SIGTERM with drain_delay_ms 2000 under load: /readyz 503 at once, nothing refused during the "
          "delay, in-flight answers finished, exit 0",
          "[system][cli][balancer]") {
  test_server down;
  down.get(R"(/fast)", [&](const httplib::Request&, httplib::Response& res) {
    down.delay(20ms);
    res.set_content(R"({"ok":true})", "application/json");
  });
  down.get(R"(/slow)", [&](const httplib::Request&, httplib::Response& res) {
    down.delay(1000ms);
    res.set_content(R"({"ok":true})", "application/json");
  });
  down.start();
  const auto route = [&](const std::string& path, const std::string& what) {
    return json{{"path", path},
                {"deadline_ms", 3000},
                {"sections", {{{"name", "s"}, {"url", down.base_url() + what}, {"timeout_ms", 2500}, {"required", true}}}}};
  };
  const json cfg{{"listen", "127.0.0.1:0"}, {"drain_delay_ms", 2000},
                 {"routes", {route("/p", "/fast"), route("/slow", "/slow")}}};
  child_process gw{binary, {"serve", "--config", temp_file(cfg.dump())}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  const int port = port_of(*line);

  std::atomic<bool> stop{false};
  std::atomic<long long> sigterm_at{0}; // drain_clock ticks; 0 until sent
  std::mutex tries_mutex;
  std::vector<drain_try> tries;
  const auto since_sigterm = [&](drain_clock::time_point t) {
    const auto sent = sigterm_at.load();
    const auto at = drain_clock::time_point{drain_clock::duration{sent}};
    return sent == 0 ? -1000000LL : std::chrono::duration_cast<std::chrono::milliseconds>(t - at).count();
  };
  const auto keep_alive_load = [&] {
    httplib::Client c{"127.0.0.1", port};
    c.set_keep_alive(true);
    c.set_read_timeout(5, 0);
    while (!stop) {
      const auto began = drain_clock::now();
      const auto r = c.Get("/p");
      std::lock_guard<std::mutex> lock(tries_mutex);
      tries.push_back({since_sigterm(began), r ? r->status : 0, false});
    }
  };
  const auto fresh_load = [&] {
    while (!stop) {
      const auto began = drain_clock::now();
      int status = 0;
      try {
        raw_connection conn{port};
        conn.send(get_head("/p", "Connection: close\r\n"));
        if (auto answer = conn.read_response(5s))
          status = answer->status;
      } catch (const std::exception&) { // refused: the listener is gone
      }
      std::lock_guard<std::mutex> lock(tries_mutex);
      tries.push_back({since_sigterm(began), status, true});
      if (status == 0)
        std::this_thread::sleep_for(10ms); // not a spin on a closed port
    }
  };
  std::vector<std::thread> load;
  for (int i = 0; i < 2; ++i) {
    load.emplace_back(keep_alive_load);
    load.emplace_back(fresh_load);
  }
  httplib::Client probe{"127.0.0.1", port};
  REQUIRE(eventually([&] { // the load is running
    std::lock_guard<std::mutex> lock(tries_mutex);
    return tries.size() >= 20;
  }, 5s));
  REQUIRE(probe.Get("/readyz")->status == 200);

  sigterm_at = drain_clock::now().time_since_epoch().count();
  gw.signal(SIGTERM);
  const auto sent = drain_clock::now();
  // /readyz says 503 at once (on a fresh connection: the load's keep-alive ones are busy).
  CHECK(eventually([&] {
    httplib::Client c{"127.0.0.1", port};
    const auto r = c.Get("/readyz");
    return r && r->status == 503 && json::parse(r->body) == json{{"status", "draining"}};
  }, 500ms));
  CHECK(ms_since(sent) < 500);
  CHECK(probe.Get("/healthz")->status == 200);

  // A request still running when the delay ends is answered, and the gateway waits for it.
  std::this_thread::sleep_until(sent + 1500ms);
  int slow_status = 0;
  std::thread slow([&] {
    httplib::Client c{"127.0.0.1", port};
    c.set_read_timeout(5, 0);
    if (const auto r = c.Get("/slow"))
      slow_status = r->status;
  });
  // After the delay the listener closes: a new connection is refused.
  CHECK(eventually([&] {
    try {
      raw_connection conn{port};
      return false;
    } catch (const std::exception&) {
      return true;
    }
  }, 4s));
  CHECK(ms_since(sent) >= 2000);
  stop = true;
  for (auto& t : load)
    t.join();
  slow.join();
  CHECK(slow_status == 200);
  REQUIRE(gw.wait_exit(10s) == 0);

  int in_delay = 0, fresh_in_delay = 0;
  for (const auto& t : tries) {
    if (t.began_ms >= 1800) // the listener may close under a request begun this late
      continue;
    INFO("a request begun " << t.began_ms << " ms after SIGTERM (fresh connection: " << t.fresh_connection << ")");
    CHECK(t.status == 200);
    if (t.began_ms >= 0) {
      ++in_delay;
      fresh_in_delay += t.fresh_connection ? 1 : 0;
    }
  }
  CHECK(in_delay >= 40);       // the load went on through the delay...
  CHECK(fresh_in_delay >= 10); // ...new connections included: the gateway kept accepting
  // The log: the delay announced, and every request line names its client.
  CHECK(gw.err().find(R"("event":"drain_delay","ms":2000)") != std::string::npos);
  std::istringstream lines{gw.err()};
  int request_lines = 0;
  for (std::string text; std::getline(lines, text);) {
    const auto record = json::parse(text, nullptr, false);
    if (record.is_discarded() || !record.contains("request_id"))
      continue;
    ++request_lines;
    CHECK(record["client"] == "127.0.0.1");
  }
  CHECK(request_lines >= in_delay);
}
