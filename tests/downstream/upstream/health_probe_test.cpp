// Active health checks (health_probe.hpp, docs/upstreams.md "Health checks"): probes through the
// real downstream client against real servers on 127.0.0.1: cpp-httplib endpoints that answer
// 200, 503 or hang, a raw socket that answers garbage, and a grpcio grpc.health.v1 server
// (tests/support/grpc_health_server.py); the streak's thresholds; the schedule on a loop's timers.
#include <catch2/catch.hpp>

#include <csignal>
#include <future>
#include <mutex>

#include <boost/asio/post.hpp>

#include "gather/downstream/upstream/health_probe.hpp"
#include "gather/runtime/io_loops.hpp"
#include "support/child_process.hpp"
#include "support/ports.hpp"
#include "support/test_server.hpp"

using namespace std::chrono_literals;
using gather::health_probe_spec;
using gather::health_streak;
using gather::probe_outcome;
using gather::probe_result;
using gather::test::eventually;

namespace {

/// One probe on a client of its own loop; waits for its outcome.
probe_outcome probe_once(const std::string& origin, const health_probe_spec& spec) {
  gather::downstream_client client;
  std::promise<probe_outcome> outcome;
  gather::probe_endpoint(client, origin, spec, [&](probe_outcome o) { outcome.set_value(std::move(o)); });
  auto future = outcome.get_future();
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  return future.get();
}

health_probe_spec path_probe(const std::string& path, std::chrono::milliseconds timeout = 1000ms) {
  health_probe_spec spec;
  spec.path = path;
  spec.timeout = timeout;
  return spec;
}

health_probe_spec grpc_probe(const std::string& service, std::chrono::milliseconds timeout = 2000ms) {
  health_probe_spec spec;
  spec.what = health_probe_spec::kind::grpc_service;
  spec.grpc_service = service;
  spec.timeout = timeout;
  return spec;
}

/// The grpc.health.v1 server in its own process, serving `statuses` (the script's top says how).
class health_server {
public:
  explicit health_server(const std::string& statuses)
      : process_("/usr/bin/python3", {std::string(GATHER_SOURCE_DIR) + "/tests/support/grpc_health_server.py",
                                      statuses}) {
    auto line = process_.wait_for_line("port ");
    REQUIRE(line);
    port_ = std::stoi(line->substr(line->find(' ') + 1));
  }
  std::string origin() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void flip() {
    process_.signal(SIGUSR1);
    REQUIRE(process_.wait_for_line("flipped"));
  }

private:
  gather::test::child_process process_;
  int port_ = 0;
};

/// An HTTP health endpoint whose status the test sets while it runs.
struct switchable_endpoint {
  std::atomic<int> status{200};
  gather::test::test_server server;
  switchable_endpoint() {
    server.get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      res.status = status.load();
      res.set_content("{}", "application/json");
    });
    server.start();
  }
};

/// A schedule on one gateway-like loop (the client on the same loops), its callbacks recorded.
class probed_upstream {
public:
  probed_upstream(gather::health_schedule_options options, std::vector<std::string> origins)
      : loops_(1), client_(loops_) {
    loops_.start();
    on_loop([&] {
      gather::health_schedule::callbacks on;
      on.changed = [this](const std::string& origin, bool healthy) {
        std::lock_guard<std::mutex> lock(mutex_);
        changes_.push_back(origin + (healthy ? " healthy" : " unhealthy"));
      };
      on.probed = [this](const std::string& origin, const probe_outcome& o) {
        std::lock_guard<std::mutex> lock(mutex_);
        probes_.push_back(origin + " " + gather::probe_result_name(o.result));
      };
      schedule_ = std::make_unique<gather::health_schedule>(loops_.loop(0), client_, std::move(options),
                                                            std::move(origins), std::move(on));
    });
  }
  ~probed_upstream() {
    stop();
    loops_.stop();
  }
  void stop() {
    on_loop([&] { schedule_.reset(); });
  }
  void set_origins(std::vector<std::string> origins) {
    on_loop([&] { schedule_->set_origins(std::move(origins)); });
  }
  std::vector<std::string> changes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return changes_;
  }
  std::size_t probes_of(const std::string& origin) {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::count_if(probes_.begin(), probes_.end(),
                         [&](const std::string& p) { return p.rfind(origin + " ", 0) == 0; });
  }
  std::size_t probes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return probes_.size();
  }

private:
  void on_loop(const std::function<void()>& what) {
    std::promise<void> ran;
    boost::asio::post(loops_.loop(0), [&] {
      what();
      ran.set_value();
    });
    ran.get_future().wait();
  }

  gather::io_loops loops_;
  gather::downstream_client client_;
  std::unique_ptr<gather::health_schedule> schedule_;
  std::mutex mutex_;
  std::vector<std::string> changes_, probes_;
};

gather::health_schedule_options every(std::chrono::milliseconds interval, health_probe_spec spec) {
  gather::health_schedule_options o;
  o.interval = interval;
  o.probe = std::move(spec);
  return o;
}

} // namespace

TEST_CASE("health probe: an HTTP path's 2xx is healthy, 503 unhealthy, a hang a timeout", "[upstream][health]") {
  gather::test::test_server server;
  server.get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  server.get("/down", [](const httplib::Request&, httplib::Response& res) { res.status = 503; });
  server.get("/hang", [&](const httplib::Request&, httplib::Response&) { server.hang(); });
  server.start();
  auto ok = probe_once(server.base_url(), path_probe("/healthz"));
  CHECK(ok.result == probe_result::healthy);
  CHECK(ok.detail == "HTTP 204");
  auto down = probe_once(server.base_url(), path_probe("/down"));
  CHECK(down.result == probe_result::unhealthy);
  CHECK(down.detail == "HTTP 503");
  auto start = std::chrono::steady_clock::now();
  auto hung = probe_once(server.base_url(), path_probe("/hang", 200ms));
  CHECK(hung.result == probe_result::timeout);
  CHECK(std::chrono::steady_clock::now() - start < 5s); // the probe's 200 ms, not the server's hang
}

TEST_CASE("health probe: garbage, or nobody listening, is unhealthy", "[upstream][health]") {
  gather::test::silent_server garbage(0, "SSH-2.0-OpenSSH_9.2\r\n\r\n\r\n");
  auto g = probe_once(garbage.base_url(), path_probe("/healthz", 500ms));
  CHECK(g.result == probe_result::unhealthy);
  auto refused = probe_once("http://127.0.0.1:" + std::to_string(gather::test::unused_port()), path_probe("/"));
  CHECK(refused.result == probe_result::unhealthy);
  CHECK_FALSE(refused.detail.empty());
}

TEST_CASE("health probe: grpc.health.v1 SERVING, NOT_SERVING, an unknown service, a hang", "[upstream][health][grpc]") {
  health_server server(R"({"": "SERVING", "linkd.v3.Library": "SERVING", "down": "NOT_SERVING", "slow": "hang"})");
  auto whole = probe_once(server.origin(), grpc_probe(""));
  CHECK(whole.result == probe_result::healthy);
  CHECK(whole.detail == "SERVING");
  CHECK(probe_once(server.origin(), grpc_probe("linkd.v3.Library")).result == probe_result::healthy);
  auto down = probe_once(server.origin(), grpc_probe("down"));
  CHECK(down.result == probe_result::unhealthy);
  CHECK(down.detail == "NOT_SERVING");
  auto unknown = probe_once(server.origin(), grpc_probe("no.such.Service"));
  CHECK(unknown.result == probe_result::unhealthy);
  CHECK(unknown.detail.rfind("NOT_FOUND", 0) == 0);
  auto slow = probe_once(server.origin(), grpc_probe("slow", 300ms));
  CHECK(slow.result == probe_result::timeout);
}

TEST_CASE("health probe: a gRPC probe of an HTTP/1.1-only server is unhealthy", "[upstream][health][grpc]") {
  gather::test::test_server server;
  server.get("/.*", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  server.start();
  CHECK(probe_once(server.base_url(), grpc_probe("", 1000ms)).result != probe_result::healthy);
}

TEST_CASE("health probe: HealthCheckRequest and HealthCheckResponse on the wire", "[unit][upstream][health]") {
  CHECK(gather::health_check_request("").empty());
  CHECK(gather::health_check_request("a.B") == std::string("\x0a\x03" "a.B"));
  CHECK(gather::health_check_status(std::string("\x08\x01", 2)) == 1);
  CHECK(gather::health_check_status(std::string("\x08\x02", 2)) == 2);
  CHECK(gather::health_check_status("") == 0); // proto3: UNKNOWN is not written
  // An unknown field before the status is skipped; a cut varint is no message.
  CHECK(gather::health_check_status(std::string("\x12\x02xy\x08\x01", 6)) == 1);
  CHECK(gather::health_check_status(std::string("\x08", 1)) == -1);
  CHECK(gather::health_check_status(std::string("\x12\x09xy", 4)) == -1);
  CHECK(gather::health_check_status(std::string("\x0f", 1)) == -1);
  // The last status wins (protobuf's rule for a repeated scalar); a status that is not a varint
  // is no HealthCheckResponse; a group's end with no start, a field number 0: no message.
  CHECK(gather::health_check_status(std::string("\x08\x02\x08\x01", 4)) == 1);
  CHECK(gather::health_check_status(std::string("\x0a\x01x", 3)) == -1);
  CHECK(gather::health_check_status(std::string("\x0c", 1)) == -1);
  CHECK(gather::health_check_status(std::string("\x00\x01", 2)) == -1);
  // A long service name's length takes two varint bytes.
  const std::string name(200, 'a');
  CHECK(gather::health_check_request(name) == std::string("\x0a\xc8\x01", 3) + name);
}

TEST_CASE("health streak: 3 failed in a row take an endpoint out, 2 good bring it back", "[unit][upstream][health]") {
  health_streak streak; // the defaults: unhealthy 3, healthy 2
  using change = health_streak::change;
  CHECK(streak.in_rotation());
  CHECK(streak.record(probe_result::unhealthy) == change::none);
  CHECK(streak.record(probe_result::timeout) == change::none);
  CHECK(streak.record(probe_result::healthy) == change::none); // the run is broken
  CHECK(streak.record(probe_result::unhealthy) == change::none);
  CHECK(streak.record(probe_result::unhealthy) == change::none);
  CHECK(streak.record(probe_result::timeout) == change::out_of_rotation);
  CHECK_FALSE(streak.in_rotation());
  CHECK(streak.record(probe_result::unhealthy) == change::none);
  CHECK(streak.record(probe_result::healthy) == change::none);
  CHECK(streak.record(probe_result::unhealthy) == change::none);
  CHECK(streak.record(probe_result::healthy) == change::none);
  CHECK(streak.record(probe_result::healthy) == change::into_rotation);
  CHECK(streak.in_rotation());

  health_streak one(1, 1);
  CHECK(one.record(probe_result::unhealthy) == change::out_of_rotation);
  CHECK(one.record(probe_result::healthy) == change::into_rotation);
}

TEST_CASE("health schedule: an endpoint goes out of rotation and comes back, the other stays", "[upstream][health]") {
  switchable_endpoint a, b;
  const std::string ao = a.server.base_url(), bo = b.server.base_url();
  probed_upstream upstream(every(50ms, path_probe("/healthz")), {ao, bo});
  REQUIRE(eventually([&] { return upstream.probes_of(ao) >= 2 && upstream.probes_of(bo) >= 2; }));
  CHECK(upstream.changes().empty());
  a.status = 503;
  REQUIRE(eventually([&] { return upstream.changes().size() == 1; }));
  CHECK(upstream.changes() == std::vector<std::string>{ao + " unhealthy"});
  const auto probed = upstream.probes_of(ao);
  a.status = 200;
  REQUIRE(eventually([&] { return upstream.changes().size() == 2; }));
  CHECK(upstream.changes().back() == ao + " healthy");
  CHECK(upstream.probes_of(ao) >= probed + 2); // two good probes in a row, not one
}

TEST_CASE("health schedule: a gRPC endpoint turning NOT_SERVING leaves rotation", "[upstream][health][grpc]") {
  health_server server(R"({"": "SERVING"})");
  gather::health_schedule_options options = every(50ms, grpc_probe(""));
  options.unhealthy = 2;
  probed_upstream upstream(options, {server.origin()});
  REQUIRE(eventually([&] { return upstream.probes() >= 2; }));
  server.flip();
  REQUIRE(eventually([&] { return !upstream.changes().empty(); }));
  CHECK(upstream.changes() == std::vector<std::string>{server.origin() + " unhealthy"});
  server.flip();
  REQUIRE(eventually([&] { return upstream.changes().size() == 2; }));
  CHECK(upstream.changes().back() == server.origin() + " healthy");
}

TEST_CASE("health schedule: endpoints that join are probed, those that leave are not", "[upstream][health]") {
  switchable_endpoint a, b;
  const std::string ao = a.server.base_url(), bo = b.server.base_url();
  probed_upstream upstream(every(50ms, path_probe("/healthz")), {ao});
  REQUIRE(eventually([&] { return upstream.probes_of(ao) >= 1; }));
  upstream.set_origins({bo});
  REQUIRE(eventually([&] { return upstream.probes_of(bo) >= 3; }));
  const auto a_then = upstream.probes_of(ao);
  REQUIRE(eventually([&] { return upstream.probes_of(bo) >= 6; }));
  CHECK(upstream.probes_of(ao) == a_then);
}

TEST_CASE("health schedule: destroyed with a probe in flight, it is cancelled and nothing runs after", "[upstream][health]") {
  gather::test::silent_server server; // accepts, reads, never answers
  probed_upstream upstream(every(50ms, path_probe("/healthz", 5000ms)), {server.base_url()});
  REQUIRE(eventually([&] { return server.accepted() == 1; }));
  upstream.stop();
  // The probe's connection closed by the client (cancelled), long before its 5 s timeout.
  CHECK(eventually([&] { return server.closed_by_peer() == 1; }, 2s));
  CHECK(upstream.probes() == 0);
  CHECK(upstream.changes().empty());
}
