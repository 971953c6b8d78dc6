// SIGHUP reloads of `gather serve` (docs/operations.md), on the real binary against loopback downstreams.
// Every wait is on something observable: gather_config_reloads_total in /metrics, a downstream's
// call count, a log line; never a sleep.
#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/test_helpers.hpp"
#include "support/child_process.hpp"
#include "support/slow_gate.hpp"
#include "support/test_server.hpp"

using namespace gather::test;
using nlohmann::json;

namespace {



/// Runs `what` however the test leaves the scope (a failed REQUIRE throws past joinable threads).
struct scope_exit {
  std::function<void()> what;
  ~scope_exit() { what(); }
};

/// Replaces `path` in one step (write beside it, rename over it), as an editor or a config
/// management tool does: the gateway never reads half a file.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string next = path + ".next";
  {
    std::ofstream out{next, std::ios::trunc};
    out << text;
  }
  REQUIRE(std::rename(next.c_str(), path.c_str()) == 0);
}

/// The value of one sample (`name{labels}`) in a scrape; -1 when absent.
long series_value(const std::string& scrape, const std::string& series) {
  const auto at = scrape.find("\n" + series + " ");
  if (at == std::string::npos)
    return -1;
  return std::stol(scrape.substr(at + series.size() + 2));
}

struct reload_counts {
  long ok = -1, invalid = -1;
};

reload_counts reloads(httplib::Client& client) {
  auto r = client.Get("/metrics");
  if (!r || r->status != 200)
    return {};
  return {series_value(r->body, R"(gather_config_reloads_total{result="ok"})"),
          series_value(r->body, R"(gather_config_reloads_total{result="invalid"})")};
}

/// Polls /metrics until the reload counters read `ok` and `invalid`.
bool reloads_reach(httplib::Client& client, long ok, long invalid) {
  return eventually([&] {
    const auto now = reloads(client);
    return now.ok == ok && now.invalid == invalid;
  }, std::chrono::seconds(10));
}

/// `version` ("A" or "B") decides every downstream URL: the data a response carries names the
/// configuration that served it. B also trades route /only-a for /only-b.
json versioned_config(const test_server& down, const std::string& version) {
  const auto base = down.base_url();
  json routes = json::array();
  routes.push_back({{"path", "/p"},
                    {"deadline_ms", 5000},
                    {"sections", {{{"name", "v"}, {"url", base + "/v/" + version}, {"timeout_ms", 4000},
                                   {"required", true}}}}});
  // `t` starts only once `s` has answered: in a request held in flight across a reload, it shows
  // which configuration the rest of the request ran on.
  routes.push_back({{"path", "/slow"},
                    {"deadline_ms", 30000},
                    {"sections", {{{"name", "s"}, {"url", base + "/slow/" + version},
                                   {"timeout_ms", 30000}, {"required", true}},
                                  {{"name", "t"}, {"url", base + "/v/" + version + "?after={s.v}"},
                                   {"timeout_ms", 30000}, {"required", true}}}}});
  routes.push_back({{"path", version == "A" ? "/only-a" : "/only-b"},
                    {"sections", {{{"name", "x"}, {"url", base + "/v/" + version}, {"timeout_ms", 2000},
                                   {"required", true}}}}});
  return {{"listen", "127.0.0.1:0"}, {"routes", routes}};
}

/// Problems `gather check` finds: an unknown key, a timeout out of range, a missing fallback.
json invalid_config(const test_server& down) {
  auto cfg = versioned_config(down, "B");
  cfg["bogus"] = true;
  cfg["routes"][0]["sections"][0]["timeout_ms"] = 0;
  cfg["routes"][0]["sections"][0]["required"] = false;
  return cfg;
}

/// The letter in a /v/ or /slow/ downstream's answer, as the response shows it under `section`.
std::string version_of(const httplib::Result& r, const std::string& section) {
  if (!r || r->status != 200)
    return "";
  auto body = json::parse(r->body, nullptr, false);
  if (body.is_discarded() || !body["data"][section].is_object())
    return "";
  return body["data"][section].value("v", "");
}

/// A downstream whose /v/<X> answers {"v": X} at once.
void serve_versions(test_server& down) {
  down.get(R"(/v/([AB]))", [](const httplib::Request& req, httplib::Response& res) {
    answer_json(res, {{"v", req.matches[1].str()}});
  });
}

} // namespace

TEST_CASE("reload: 20 SIGHUPs under steady keep-alive load, every request answered", "[reload]") {
  test_server down;
  serve_versions(down);
  down.start();
  const std::string file = temp_file(versioned_config(down, "A").dump());
  child_process gw{binary, {"serve", "--config", file}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  const int port = port_of(*line);

  // Load: client threads, each on one keep-alive connection, one request after another.
  constexpr int client_threads = 4;
  std::atomic<bool> stop{false};
  std::atomic<long> answered{0}, failed{0};
  std::mutex failure_mutex;
  std::string first_failure;
  std::vector<std::thread> clients;
  scope_exit stop_load{[&] {
    stop = true;
    for (auto& t : clients)
      if (t.joinable())
        t.join();
  }};
  for (int t = 0; t < client_threads; ++t) {
    clients.emplace_back([&] {
      httplib::Client c{"127.0.0.1", port};
      c.set_keep_alive(true);
      c.set_read_timeout(10, 0);
      while (!stop.load()) {
        auto r = c.Get("/p");
        std::string why;
        if (!r)
          why = "connection error: " + httplib::to_string(r.error());
        else if (r->status != 200)
          why = "status " + std::to_string(r->status) + ": " + r->body;
        else if (const auto v = version_of(r, "v"); v != "A" && v != "B")
          why = "unexpected body: " + r->body;
        if (why.empty()) {
          ++answered;
          continue;
        }
        ++failed;
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (first_failure.empty())
          first_failure = why;
      }
    });
  }

  httplib::Client probe{"127.0.0.1", port};
  probe.set_keep_alive(true); // a connection opened before the reloads: each request takes the newest
  probe.set_read_timeout(10, 0);
  long want_ok = 0, want_invalid = 0, probes_ok = 0;
  std::string current = "A";
  for (int i = 1; i <= 20; ++i) {
    // Each reload lands among running requests: wait for the load to move on since the last one.
    const long before = answered.load();
    REQUIRE(eventually([&] { return answered.load() >= before + 50 || failed.load() > 0; },
                       std::chrono::seconds(20)));
    const bool invalid = i == 10;
    const std::string next = invalid ? current : (current == "A" ? "B" : "A");
    write_atomically(file, (invalid ? invalid_config(down) : versioned_config(down, next)).dump());
    gw.signal(SIGHUP);
    ++(invalid ? want_invalid : want_ok);
    INFO("reload " << i);
    REQUIRE(reloads_reach(probe, want_ok, want_invalid));
    current = next;
    // The counter moves only once the new configuration is in force: the next request uses it
    // (and after the invalid file, still the one before).
    const auto r = probe.Get("/p");
    CHECK(version_of(r, "v") == current);
    if (version_of(r, "v") == current)
      ++probes_ok;
  }
  stop_load.what();

  INFO("first failure: " << first_failure);
  CHECK(failed.load() == 0);
  CHECK(answered.load() >= 20 * 50);
  WARN(answered.load() << " requests answered by " << client_threads
                       << " keep-alive clients across 20 reloads, " << failed.load() << " failed");
  const auto counts = reloads(probe);
  CHECK(counts.ok == 19);
  CHECK(counts.invalid == 1);
  // The route's series lived through every reload: nothing was reset, every answer is counted.
  const auto scrape = probe.Get("/metrics");
  REQUIRE(scrape);
  CHECK(series_value(scrape->body, R"(gather_requests_total{route="/p",code="200"})") ==
        answered.load() + probes_ok);
  CHECK(series_value(scrape->body, R"(gather_request_errors_total{route="/p"})") == 0);
  gw.signal(SIGTERM);
  CHECK(gw.wait_exit() == 0);
}

TEST_CASE("reload: a request in flight finishes on the configuration it began on", "[reload]") {
  test_server down;
  slow_gate gate; // destroyed before the server: a failed check never leaves a handler held
  serve_versions(down);
  down.get(R"(/slow/([AB]))", [&](const httplib::Request& req, httplib::Response& res) {
    gate.hold();
    answer_json(res, {{"v", req.matches[1].str()}});
  });
  down.start();
  const std::string file = temp_file(versioned_config(down, "A").dump());
  child_process gw{binary, {"serve", "--config", file}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  const int port = port_of(*line);
  httplib::Client c{"127.0.0.1", port};
  c.set_read_timeout(10, 0);
  REQUIRE(version_of(c.Get("/only-a"), "x") == "A");

  std::string slow_version, after_version;
  std::thread slow_client([&] {
    httplib::Client slow{"127.0.0.1", port};
    slow.set_read_timeout(40, 0);
    const auto r = slow.Get("/slow");
    slow_version = version_of(r, "s");
    after_version = version_of(r, "t");
  });
  scope_exit finish_slow{[&] {
    gate.release();
    if (slow_client.joinable())
      slow_client.join();
  }};
  // The slow request is in flight on A: its section's call has reached the downstream.
  REQUIRE(eventually([&] { return gate.entered() == 1; }, std::chrono::seconds(10)));

  write_atomically(file, versioned_config(down, "B").dump());
  gw.signal(SIGHUP);
  REQUIRE(reloads_reach(c, 1, 0));
  // Requests after the reload: B's URLs and B's routes.
  CHECK(version_of(c.Get("/p"), "v") == "B");
  CHECK(version_of(c.Get("/only-b"), "x") == "B");
  auto gone = c.Get("/only-a");
  REQUIRE(gone);
  CHECK(gone->status == 404);

  finish_slow.what();
  CHECK(slow_version == "A");  // it called A's URL,
  CHECK(after_version == "A"); // and after the reload it still started A's next section
  CHECK(version_of(c.Get("/slow"), "s") == "B");

  // A removed route keeps its series (with the counts it had); a kept route keeps counting.
  const auto scrape = c.Get("/metrics");
  REQUIRE(scrape);
  CHECK(series_value(scrape->body, R"(gather_section_total{route="/only-a",section="x",status="ok",source="live"})") == 1);
  CHECK(series_value(scrape->body, R"(gather_section_total{route="/slow",section="s",status="ok",source="live"})") == 2);
  CHECK(series_value(scrape->body, R"(gather_section_total{route="/slow",section="t",status="ok",source="live"})") == 2);
  CHECK(series_value(scrape->body, R"(gather_section_total{route="/only-b",section="x",status="ok",source="live"})") == 1);
  gw.signal(SIGTERM);
  CHECK(gw.wait_exit() == 0);
}

TEST_CASE("reload: an invalid file is logged problem by problem and changes nothing, "
          "restart-only keys keep their running values",
          "[reload]") {
  test_server down;
  serve_versions(down);
  down.start();
  const std::string file = temp_file(versioned_config(down, "A").dump());
  child_process gw{binary, {"serve", "--config", file}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  const int port = port_of(*line);
  httplib::Client c{"127.0.0.1", port};
  c.set_keep_alive(true); // its connection, opened before the reloads, takes each new configuration
  c.set_read_timeout(10, 0);

  // What `gather check` prints for the invalid file, one problem a line.
  const auto invalid = invalid_config(down).dump();
  const auto checked = run(binary, {"check", "--config", temp_file(invalid)});
  REQUIRE(checked.code == 2);
  std::vector<std::string> problems;
  std::istringstream lines{checked.err};
  for (std::string problem; std::getline(lines, problem);)
    if (!problem.empty())
      problems.push_back(problem);
  REQUIRE(problems.size() == 3);

  write_atomically(file, invalid);
  gw.signal(SIGHUP);
  REQUIRE(reloads_reach(c, 0, 1));
  for (const auto& problem : problems) {
    INFO(problem);
    CHECK(gw.wait_for_stderr(R"("problem":)" + json(problem).dump()));
  }
  CHECK(gw.wait_for_stderr(R"("result":"invalid")"));
  CHECK(version_of(c.Get("/p"), "v") == "A"); // still the configuration in force
  CHECK(version_of(c.Get("/only-a"), "x") == "A");
  const std::string long_target = "/p?pad=" + std::string(100, 'x');
  CHECK(version_of(c.Get(long_target), "v") == "A");

  // B asks for another listening address and more threads: both need a restart. Its shorter
  // request line limit applies at once.
  auto b = versioned_config(down, "B");
  b["listen"] = "127.0.0.1:1";
  b["io_threads"] = 3;
  b["max_request_line_bytes"] = 64;
  write_atomically(file, b.dump());
  gw.signal(SIGHUP);
  REQUIRE(reloads_reach(c, 1, 1));
  CHECK(version_of(c.Get("/p"), "v") == "B"); // the rest applied, on the port in use
  const auto too_long = c.Get(long_target);
  REQUIRE(too_long);
  CHECK(too_long->status == 414);
  const auto actors = c.Get("/debug/actors");
  REQUIRE(actors);
  CHECK(json::parse(actors->body)["io_threads"] == 1);

  gw.signal(SIGTERM);
  REQUIRE(gw.wait_exit() == 0);
  // One line per restart-only key the file changed, with the value kept and the one asked for.
  std::map<std::string, json> restart_only;
  std::istringstream log{gw.err()};
  for (std::string text; std::getline(log, text);) {
    auto record = json::parse(text, nullptr, false);
    if (!record.is_discarded() && record.is_object() && record.value("event", "") == "config_restart_only") {
      const std::string key = record.value("key", "");
      CHECK(restart_only.count(key) == 0);
      restart_only[key] = record;
    }
  }
  REQUIRE(restart_only.size() == 2);
  CHECK(restart_only["listen"]["running"] == "127.0.0.1:" + std::to_string(port));
  CHECK(restart_only["listen"]["requested"] == "127.0.0.1:1");
  CHECK(restart_only["io_threads"]["running"] == 1);
  CHECK(restart_only["io_threads"]["requested"] == 3);
}

TEST_CASE("reload: a cached section never gets another section's entry", "[reload]") {
  // A's route caches section `x` at position 0; B puts `y` there, with the same URL and cache.
  // Keyed by position, y would be shown x's entry; keyed by route path and section name, it calls.
  test_server down;
  std::atomic<int> calls{0};
  down.get("/data", [&](const httplib::Request&, httplib::Response& res) {
    answer_json(res, {{"n", ++calls}});
  });
  down.start();
  auto config_with = [&](const std::string& name) {
    return json{{"listen", "127.0.0.1:0"},
                {"routes",
                 {{{"path", "/c"},
                   {"sections",
                    {{{"name", name}, {"url", down.base_url() + "/data"}, {"timeout_ms", 2000},
                      {"required", true}, {"cache_ttl_ms", 600000}}}}}}}};
  };
  const std::string file = temp_file(config_with("x").dump());
  child_process gw{binary, {"serve", "--config", file}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  httplib::Client c{"127.0.0.1", port_of(*line)};
  c.set_read_timeout(10, 0);
  auto section_of = [&](const std::string& name) {
    auto r = c.Get("/c");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    return json::parse(r->body)["sections"][name]["source"].get<std::string>();
  };
  CHECK(section_of("x") == "live");
  CHECK(section_of("x") == "cache");
  write_atomically(file, config_with("y").dump());
  gw.signal(SIGHUP);
  REQUIRE(reloads_reach(c, 1, 0));
  CHECK(section_of("y") == "live");
  CHECK(calls.load() == 2);
  // A section a reload keeps keeps its entries.
  write_atomically(file, config_with("x").dump());
  gw.signal(SIGHUP);
  REQUIRE(reloads_reach(c, 2, 0));
  CHECK(section_of("x") == "cache");
  CHECK(calls.load() == 2);
  gw.signal(SIGTERM);
  CHECK(gw.wait_exit() == 0);
}
