// The downstream client over HTTP/2 (stream_call.hpp, transfer_request::http2), against a real
// HTTP/2 server in another process: h2_server.py (python3-h2), well-behaved and hostile, over
// h2c by prior knowledge or TLS with ALPN; and cpp-httplib's TLS server, which speaks no h2, for
// the fall back to HTTP/1.1. Every call ends as stream_call.hpp says by its timeout, and the
// client holds nothing afterwards (inflight() back to 0).
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "gather/downstream/call/downstream_client.hpp"
#include "gather/runtime/io_loops.hpp"

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/h2_downstream_server.hpp"
#include "support/ports.hpp"
#include "support/test_server.hpp"
#include "support/tls_files.hpp"

using namespace std::chrono_literals;
using namespace gather;
using gather::test::child_process;
using gather::test::h2_downstream_server;
using json = nlohmann::json;

namespace {

/// Everything a call's events saw, in order; on_data stops after `stop_after` chunks if set.
struct recorded_call final : stream_events {
  std::mutex mutex;
  std::condition_variable ended;
  std::vector<std::string> order;
  std::optional<stream_head> head;
  std::string data;
  int chunks = 0;
  int stop_after = -1;
  std::optional<header_list> trailers;
  std::optional<stream_end> end;

  bool on_head(stream_head&& h) override {
    std::lock_guard lock(mutex);
    order.push_back("head");
    head = std::move(h);
    return true;
  }
  bool on_data(std::string_view chunk) override {
    std::lock_guard lock(mutex);
    order.push_back("data");
    data += chunk;
    return stop_after < 0 || ++chunks < stop_after;
  }
  void on_trailers(header_list&& t) override {
    std::lock_guard lock(mutex);
    order.push_back("trailers");
    trailers = std::move(t);
  }
  void on_end(stream_end&& e) override {
    std::lock_guard lock(mutex);
    order.push_back("end");
    end = std::move(e);
    ended.notify_all();
  }
  /// The end, waited for at most `limit`.
  stream_end wait(std::chrono::milliseconds limit = 5s) {
    std::unique_lock lock(mutex);
    REQUIRE(ended.wait_for(lock, limit, [&] { return end.has_value(); }));
    return *end;
  }
  bool has_ended() {
    std::lock_guard lock(mutex);
    return end.has_value();
  }
};

std::string header_of(const header_list& headers, const std::string& name) {
  for (const auto& [n, v] : headers)
    if (n == name)
      return v;
  return {};
}

stream_request stream_get(const std::string& url, std::chrono::milliseconds timeout = 3s) {
  stream_request r;
  r.url = url;
  r.timeout = timeout;
  return r;
}

std::shared_ptr<recorded_call> start_call(downstream_client& client, stream_request request, int stop_after = -1) {
  auto events = std::make_shared<recorded_call>();
  events->stop_after = stop_after;
  client.call(std::move(request), events);
  return events;
}

transfer_result h2_fetch(downstream_client& client, const std::string& url, std::chrono::milliseconds timeout = 3s,
                         std::size_t max_bytes = 8 * 1024 * 1024, std::string header_lines = {}) {
  transfer_request request{url, std::move(header_lines), timeout, max_bytes};
  request.http2 = true;
  std::promise<transfer_result> promise;
  auto future = promise.get_future();
  client.submit(std::move(request), [&promise](transfer_result&& r) { promise.set_value(std::move(r)); });
  REQUIRE(future.wait_for(timeout + 5s) == std::future_status::ready);
  return future.get();
}

/// The client's calls all ended and were let go (waits for the loop to take the last ones).
void client_is_empty(downstream_client& client) {
  for (int i = 0; i < 500 && client.inflight() != 0; ++i)
    std::this_thread::sleep_for(2ms);
  CHECK(client.inflight() == 0);
}

json stats_of(downstream_client& client, const h2_downstream_server& server) {
  const auto r = h2_fetch(client, server.url("/stats"));
  REQUIRE(r.http_status == 200);
  return json::parse(r.body);
}

} // namespace

TEST_CASE("an http2 transfer over h2c: many calls on one connection, headers lower case", "[h2-downstream]") {
  h2_downstream_server server;
  downstream_client client;
  std::vector<std::future<transfer_result>> answers;
  std::vector<std::unique_ptr<std::promise<transfer_result>>> promises;
  for (int i = 0; i < 20; ++i) {
    transfer_request request{server.url("/echo?i=" + std::to_string(i)), "X-Request-Id: r" + std::to_string(i) + "\r\nConnection: close\r\n", 3s};
    request.http2 = true;
    promises.push_back(std::make_unique<std::promise<transfer_result>>());
    answers.push_back(promises.back()->get_future());
    client.submit(std::move(request), [p = promises.back().get()](transfer_result&& r) { p->set_value(std::move(r)); });
  }
  for (int i = 0; i < 20; ++i) {
    REQUIRE(answers[i].wait_for(5s) == std::future_status::ready);
    auto r = answers[i].get();
    REQUIRE(r.error == transfer_error::none);
    CHECK(r.http_status == 200);
    const auto echo = json::parse(r.body);
    CHECK(echo["method"] == "GET");
    CHECK(echo["path"] == "/echo?i=" + std::to_string(i));
    bool id_seen = false;
    for (const auto& h : echo["headers"]) {
      CHECK(h[0].get<std::string>() != "connection"); // connection-specific: never on HTTP/2
      if (h[0] == "x-request-id")
        id_seen = h[1] == "r" + std::to_string(i);
    }
    CHECK(id_seen);
  }
  CHECK(stats_of(client, server)["connections"] == 1);
  client_is_empty(client);
}

TEST_CASE("a call's events: head, DATA as it comes, trailers, end, and Trailers-Only, a POST body", "[h2-downstream]") {
  h2_downstream_server server;
  downstream_client client;
  SECTION("head, data, trailers") {
    auto call = start_call(client, stream_get(server.url("/trailers")));
    const auto end = call->wait();
    CHECK(end.how == stream_ending::complete);
    REQUIRE(call->head);
    CHECK(call->head->status == 200);
    CHECK_FALSE(call->head->ends_stream);
    CHECK(header_of(call->head->headers, "content-type") == "application/grpc");
    CHECK(call->data == "abcdef");
    REQUIRE(call->trailers);
    CHECK(header_of(*call->trailers, "grpc-status") == "0");
    CHECK(header_of(*call->trailers, "grpc-message") == "ok");
    CHECK(call->order.front() == "head");
    CHECK(call->order[call->order.size() - 2] == "trailers");
    CHECK(call->order.back() == "end");
  }
  SECTION("Trailers-Only") {
    auto call = start_call(client, stream_get(server.url("/trailers-only")));
    CHECK(call->wait().how == stream_ending::complete);
    REQUIRE(call->head);
    CHECK(call->head->ends_stream);
    CHECK(header_of(call->head->headers, "grpc-status") == "5");
    CHECK_FALSE(call->trailers);
    CHECK(call->order == std::vector<std::string>{"head", "end"});
  }
  SECTION("a POST with any headers and a body") {
    auto request = stream_get(server.url("/echo"));
    request.method = "POST";
    request.headers = {{"te", "trailers"}, {"content-type", "application/grpc"}, {"grpc-timeout", "300m"}};
    request.body = std::string(100000, 'b'); // over one window's first frames
    auto call = start_call(client, std::move(request));
    CHECK(call->wait().how == stream_ending::complete);
    const auto echo = json::parse(call->data);
    CHECK(echo["method"] == "POST");
    CHECK(echo["body"].get<std::string>().size() == 100000);
    CHECK(echo["headers"][4] == json::array({"te", "trailers"})); // after the 4 pseudo-headers, in order
    CHECK(echo["headers"][6] == json::array({"grpc-timeout", "300m"}));
  }
  SECTION("a header name HTTP/2 does not allow") {
    auto request = stream_get(server.url("/item"));
    request.headers = {{"Upper", "x"}};
    CHECK(start_call(client, std::move(request))->wait().how == stream_ending::protocol);
  }
  client_is_empty(client);
}

TEST_CASE("ending a call: the consumer stops, the timeout, a cancel, max_response_bytes, the server sees RST_STREAM CANCEL", "[h2-downstream]") {
  h2_downstream_server server;
  downstream_client client;
  SECTION("the consumer stops after 2 of 10 chunks") {
    auto call = start_call(client, stream_get(server.url("/stream/10/30")), 2);
    CHECK(call->wait().how == stream_ending::stopped);
    CHECK(call->data == "chunk-0;chunk-1;");
    CHECK(server.line_with("RESET").find(" 8 /stream/10/30") != std::string::npos);
  }
  SECTION("the timeout of a stream that never ends") {
    auto call = start_call(client, stream_get(server.url("/never-ends"), 300ms));
    const auto started = std::chrono::steady_clock::now();
    CHECK(call->wait().how == stream_ending::timeout);
    CHECK(std::chrono::steady_clock::now() - started < 2s);
    CHECK(call->head);
    CHECK(server.line_with("RESET").find(" 8 /never-ends") != std::string::npos);
  }
  SECTION("a cancel: the server sees it, no event runs") {
    auto call = stream_get(server.url("/hang"), 10s);
    auto events = std::make_shared<recorded_call>();
    const auto id = client.call(std::move(call), events);
    server.line_with("REQUEST");
    client.cancel(id);
    CHECK(server.line_with("RESET").find(" 8 /hang") != std::string::npos);
    CHECK_FALSE(events->has_ended());
  }
  SECTION("a body over max_response_bytes") {
    auto request = stream_get(server.url("/big/300000"));
    request.max_response_bytes = 1000;
    auto call = start_call(client, std::move(request));
    CHECK(call->wait().how == stream_ending::too_large);
    CHECK(call->data.size() <= 1000);
    CHECK(h2_fetch(client, server.url("/big/300000"), 3s, 1000).error == transfer_error::too_large);
    CHECK(h2_fetch(client, server.url("/big/300000")).body.size() == 300000);
  }
  client_is_empty(client);
}

TEST_CASE("MAX_CONCURRENT_STREAMS: further connections, never more streams than the server allows", "[h2-downstream]") {
  h2_downstream_server server({"--max-streams", "2"});
  downstream_client client;
  std::vector<std::shared_ptr<recorded_call>> calls;
  for (int i = 0; i < 6; ++i)
    calls.push_back(start_call(client, stream_get(server.url("/delay/300"))));
  for (auto& call : calls) {
    CHECK(call->wait().how == stream_ending::complete);
    CHECK(call->head->status == 200);
  }
  const auto stats = stats_of(client, server);
  CHECK(stats["max_open"] == 2);
  CHECK(stats["connections"] == 3);
  client_is_empty(client);
}

TEST_CASE("refused streams and GOAWAY: sent again on another connection, not the caller's business", "[h2-downstream]") {
  h2_downstream_server server;
  downstream_client client;
  SECTION("REFUSED_STREAM once: answered") {
    const auto r = h2_fetch(client, server.url("/refuse-once?k=a"));
    CHECK(r.error == transfer_error::none);
    CHECK(r.http_status == 200);
  }
  SECTION("REFUSED_STREAM always: refused after max_resends") {
    auto call = start_call(client, stream_get(server.url("/refuse")));
    const auto end = call->wait();
    CHECK(end.how == stream_ending::refused);
    CHECK(end.reset_code == h2_code::refused_stream);
    CHECK_FALSE(call->head);
    CHECK(h2_fetch(client, server.url("/refuse")).error == transfer_error::connect);
  }
  SECTION("GOAWAY with a stream in flight below its last id and one above") {
    auto below = start_call(client, stream_get(server.url("/delay/300")));
    auto above = start_call(client, stream_get(server.url("/goaway-once?k=b")));
    CHECK(above->wait().how == stream_ending::complete);
    CHECK(above->head->status == 200);
    CHECK(below->wait().how == stream_ending::complete);
    CHECK(below->head->status == 200);
    CHECK(stats_of(client, server)["connections"] == 2);
  }
  SECTION("GOAWAY with an error, and a dropped connection: the calls on it end") {
    auto waiting = start_call(client, stream_get(server.url("/hang"), 5s));
    server.line_with("REQUEST");
    auto goaway = start_call(client, stream_get(server.url("/goaway-error"), 5s));
    const auto end = goaway->wait(2s);
    CHECK(end.how == stream_ending::connection);
    CHECK(end.reset_code == h2_code::internal_error);
    CHECK(waiting->wait(2s).how == stream_ending::connection);
    auto hang = start_call(client, stream_get(server.url("/hang"), 5s));
    server.line_with("/hang");
    auto drop = start_call(client, stream_get(server.url("/drop"), 5s));
    CHECK(drop->wait(2s).how == stream_ending::connection);
    CHECK(hang->wait(2s).how == stream_ending::connection);
    CHECK(h2_fetch(client, server.url("/item")).http_status == 200); // a fresh connection serves
  }
  client_is_empty(client);
}

TEST_CASE("a hostile HTTP/2 downstream: every call ends by its timeout, the client keeps serving", "[h2-downstream]") {
  h2_downstream_server server;
  downstream_client client;
  SECTION("RST_STREAM at every point") {
    for (const std::string point : {"head", "body", "mid"}) {
      auto call = start_call(client, stream_get(server.url("/rst/" + point + "/2")));
      const auto end = call->wait();
      INFO(point);
      CHECK(end.how == stream_ending::reset);
      CHECK(end.reset_code == h2_code::internal_error);
      CHECK(call->head.has_value() == (point != "head"));
      const auto r = h2_fetch(client, server.url("/rst/" + point + "/8"));
      CHECK(r.error == transfer_error::connect);
    }
  }
  SECTION("a WINDOW_UPDATE flood is read through; an overflowing one ends the connection") {
    CHECK(h2_fetch(client, server.url("/window-flood")).http_status == 200);
    auto call = start_call(client, stream_get(server.url("/window-overflow")));
    const auto how = call->wait().how;
    CHECK((how == stream_ending::connection || how == stream_ending::protocol));
  }
  SECTION("a malformed :status") {
    CHECK(start_call(client, stream_get(server.url("/bad-status")))->wait().how == stream_ending::protocol);
    CHECK(h2_fetch(client, server.url("/bad-status")).error == transfer_error::protocol);
  }
  CHECK(h2_fetch(client, server.url("/item")).http_status == 200);
  client_is_empty(client);
}

TEST_CASE("a server that never sends SETTINGS, and one that is not there", "[h2-downstream]") {
  downstream_client client;
  {
    h2_downstream_server silent({"--silent"});
    auto first = start_call(client, stream_get(silent.url("/item"), 300ms));
    CHECK(first->wait(2s).how == stream_ending::timeout);
    silent.line_with("CONN 1");
    auto second = start_call(client, stream_get(silent.url("/item"), 300ms));
    CHECK(second->wait(2s).how == stream_ending::timeout);
    silent.line_with("CONN 2"); // the silent connection was given up, not reused
    CHECK(h2_fetch(client, silent.url("/item"), 300ms).error == transfer_error::timeout);
  }
  auto refused = start_call(client, stream_get("http://127.0.0.1:1/item", 2s));
  CHECK(refused->wait().how == stream_ending::connection);
  client_is_empty(client);
}

namespace {

/// Sets SSL_CERT_FILE (OpenSSL's default verify paths read it) for the scope.
struct trusted_h2_ca {
  explicit trusted_h2_ca(const std::string& file) { ::setenv("SSL_CERT_FILE", file.c_str(), 1); }
  ~trusted_h2_ca() { ::unsetenv("SSL_CERT_FILE"); }
};

/// cpp-httplib's TLS server on 127.0.0.1, which speaks no h2: `handler` answers every GET, on one
/// of `threads` threads (it serves a kept-alive connection on one thread until it closes).
struct h1_only_tls_server {
  httplib::SSLServer server;
  std::thread thread;
  std::string url; ///< https://127.0.0.1:port/x
  h1_only_tls_server(const gather::test::tls_files& files, httplib::Server::Handler handler, std::size_t threads = 8)
    : server(files.cert.c_str(), files.key.c_str()) {
    REQUIRE(server.is_valid());
    server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server.Get(".*", std::move(handler));
    const int port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running())
      std::this_thread::yield();
    url = "https://127.0.0.1:" + std::to_string(port) + "/x";
  }
  ~h1_only_tls_server() {
    server.stop();
    thread.join();
  }
};

} // namespace

TEST_CASE("https with ALPN: h2 when the server chooses it, HTTP/1.1 when it does not", "[h2-downstream]") {
  const auto& files = gather::test::tls_files::get();
  trusted_h2_ca ca(files.cert);
  downstream_client client; // its TLS contexts read SSL_CERT_FILE now
  SECTION("h2 by ALPN") {
    h2_downstream_server server({"--tls", files.cert, files.key});
    const auto r = h2_fetch(client, server.url("/item", "https"));
    CHECK(r.error == transfer_error::none);
    CHECK(r.http_status == 200);
    CHECK(server.line_with("REQUEST").find("/item") != std::string::npos);
    CHECK(start_call(client, stream_get(server.url("/trailers", "https")))->wait().how == stream_ending::complete);
  }
  SECTION("a server without h2: the transfer goes over HTTP/1.1, a call (which needs h2) ends connection") {
    h1_only_tls_server server(files, [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"ok":1})", "application/json");
    });
    const std::string url = server.url;
    SECTION("transfers first") {
      for (int i = 0; i < 2; ++i) { // the first through the ALPN probe, the second remembered
        const auto r = h2_fetch(client, url);
        CHECK(r.error == transfer_error::none);
        CHECK(r.body == R"({"ok":1})");
      }
      // The pool remembers the answer: the call ends without a connection of its own.
      const auto end = start_call(client, stream_get(url))->wait();
      CHECK(end.how == stream_ending::connection);
      CHECK(end.detail.find("chose HTTP/1.1 by ALPN (remembered") != std::string::npos);
    }
    SECTION("a call first") {
      // Its own link asks ALPN; the answer is the pool's: the next call does not ask again, and
      // a transfer goes over HTTP/1.1 without a probe.
      auto end = start_call(client, stream_get(url))->wait();
      CHECK(end.how == stream_ending::connection);
      CHECK(end.detail.find("did not choose h2 by ALPN") != std::string::npos);
      end = start_call(client, stream_get(url))->wait();
      CHECK(end.how == stream_ending::connection);
      CHECK(end.detail.find("chose HTTP/1.1 by ALPN (remembered") != std::string::npos);
      CHECK(h2_fetch(client, url).body == R"({"ok":1})");
    }
  }
  client_is_empty(client);
}

TEST_CASE("an HTTP/1.1-only TLS origin with http2: calls at once all answered, its links pooled and closed when idle",
          "[h2-downstream]") {
  // The connections ALPN made HTTP/1.1 are links of the one HTTP/1.1 pool (h1_link.hpp): reused
  // while ready, closed after downstream_idle_timeout_ms. The server tells them apart by the
  // client's port.
  const auto& files = gather::test::tls_files::get();
  trusted_h2_ca ca(files.cert);
  std::mutex mutex;
  std::vector<int> ports; // per request, in arrival order
  h1_only_tls_server server(files, [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mutex);
      ports.push_back(req.remote_port);
    }
    res.set_content(R"({"ok":1})", "application/json");
  }, 48);
  const std::string url = server.url;
  const auto ports_seen = [&] {
    std::lock_guard lock(mutex);
    return ports;
  };
  io_loops loops(1);
  loops.start();
  {
    downstream_client client(loops, gather::pool_bounds{{300ms, 1000ms}});
    // 24 at once, the first ones through the ALPN answer: none lost, none failed.
    constexpr int at_once = 24;
    std::vector<std::promise<transfer_result>> promises(at_once);
    for (auto& promise : promises) {
      transfer_request request{url, {}, 3s, 1 << 20};
      request.http2 = true;
      client.submit(std::move(request), [&promise](transfer_result&& r) { promise.set_value(std::move(r)); });
    }
    for (auto& promise : promises) {
      auto future = promise.get_future();
      REQUIRE(future.wait_for(8s) == std::future_status::ready);
      const auto r = future.get();
      INFO(r.detail);
      CHECK(r.error == transfer_error::none);
      CHECK(r.http_status == 200);
      CHECK(r.body == R"({"ok":1})");
    }
    const auto first = ports_seen();
    CHECK(first.size() == static_cast<std::size_t>(at_once)); // one request each: none sent twice
    CHECK(client.inflight() == 0); // each counted once, through the hand-over to HTTP/1.1
    const std::set<int> pooled(first.begin(), first.end());
    // One after another at once: each on a connection of the pool, none new.
    for (int i = 0; i < 4; ++i)
      CHECK(h2_fetch(client, url).http_status == 200);
    const auto reused = ports_seen();
    for (std::size_t i = first.size(); i < reused.size(); ++i)
      CHECK(pooled.count(reused[i]) == 1);
    // Past the idle bound the pool has closed them: the next call comes on a new connection.
    std::this_thread::sleep_for(700ms); // (the bound under test is time: 300 ms, then slack)
    CHECK(h2_fetch(client, url).http_status == 200);
    const auto after = ports_seen();
    REQUIRE(after.size() == reused.size() + 1);
    CHECK(pooled.count(after.back()) == 0);
    client_is_empty(client);
  }
  loops.stop();
}

TEST_CASE("a section and a batch with http2 true call over h2c, a failing one degrades as any", "[h2-downstream]") {
  using namespace gather::test;
  h2_downstream_server server;
  auto sections = json::array({section("part", server.url("/echo?p={id}"), 2000, {{"required", true}, {"http2", true}}),
                               section("slow", server.url("/hang"), 300, {{"fallback", "none"}, {"http2", true}})});
  auto config = route_config_json("/p/{id}", sections, 3000, {{"deadline_header", "x-deadline-ms"}});
  config["routes"].push_back({{"path", "/items"},
                              {"batch", {{"url", server.url("/echo?item={item}")}, {"timeout_ms", 2000}, {"http2", true}}}});
  running_gateway gateway(config);
  const auto answer = gateway.get("/p/7", {{"X-Request-Id", "req-h2"}});
  REQUIRE(answer);
  REQUIRE(answer->status == 200);
  const auto body = json::parse(answer->body);
  const auto& echo = body["data"]["part"];
  CHECK(echo["path"] == "/echo?p=7");
  std::map<std::string, std::string> seen;
  for (const auto& h : echo["headers"])
    seen[h[0]] = h[1];
  CHECK(seen["x-request-id"] == "req-h2");
  CHECK(seen.count("x-deadline-ms") == 1);
  CHECK(seen[":scheme"] == "http");
  CHECK(body["data"]["slow"] == "none");
  CHECK(server.line_with("RESET").find(" 8 /hang") != std::string::npos); // the slow call's timeout
  const auto batch = gateway.post("/items", R"({"items": ["a", "b"]})");
  REQUIRE(batch);
  CHECK(batch->status == 200);
  CHECK(batch->body.find("/echo?item=b") != std::string::npos);
  for (int i = 0; i < 500 && gateway.gw().downstream_inflight() != 0; ++i)
    std::this_thread::sleep_for(2ms);
  CHECK(gateway.gw().downstream_inflight() == 0);
}

namespace {

/// A transfer's completion that only counts that it ran.
downstream_client::completion counted(std::atomic<int>& runs) {
  return [&runs](transfer_result&&) { ++runs; };
}

transfer_request http2_transfer(const std::string& url, std::chrono::milliseconds timeout) {
  transfer_request request{url, {}, timeout, 1 << 20};
  request.http2 = true;
  return request;
}

} // namespace

TEST_CASE("the in-flight count: each call counted once and let go once, cancelled, timed out or handed over",
          "[h2-downstream]") {
  SECTION("a cancelled http2 transfer and a cancelled call") {
    h2_downstream_server server;
    downstream_client client;
    std::atomic<int> runs{0};
    const auto transfer = client.submit(http2_transfer(server.url("/hang"), 10s), counted(runs));
    server.line_with("REQUEST");
    auto events = std::make_shared<recorded_call>();
    const auto call = client.call(stream_get(server.url("/hang"), 10s), events);
    server.line_with("REQUEST");
    CHECK(client.inflight() == 2);
    client.cancel(transfer);
    client.cancel(call);
    CHECK(server.line_with("RESET").find(" 8 /hang") != std::string::npos);
    CHECK(server.line_with("RESET").find(" 8 /hang") != std::string::npos);
    client_is_empty(client);
    CHECK(runs.load() == 0);
    CHECK_FALSE(events->has_ended());
  }
  SECTION("a timed-out http2 transfer and a timed-out call") {
    h2_downstream_server server;
    downstream_client client;
    CHECK(h2_fetch(client, server.url("/hang"), 200ms).error == transfer_error::timeout);
    CHECK(start_call(client, stream_get(server.url("/hang"), 200ms))->wait().how == stream_ending::timeout);
    client_is_empty(client);
  }
  SECTION("http2 transfers handed over to HTTP/1.1 by ALPN: one request each, none counted twice") {
    const auto& files = gather::test::tls_files::get();
    trusted_h2_ca ca(files.cert);
    std::atomic<int> requests{0};
    h1_only_tls_server server(files, [&](const httplib::Request&, httplib::Response& res) {
      ++requests;
      res.set_content(R"({"ok":1})", "application/json");
    }, 16);
    downstream_client client;
    constexpr int at_once = 8; // all waiting for the first ALPN answer
    std::atomic<int> ok{0}, runs{0};
    for (int i = 0; i < at_once; ++i)
      client.submit(http2_transfer(server.url, 3s), [&](transfer_result&& r) {
        ok += r.http_status == 200 ? 1 : 0;
        ++runs;
      });
    REQUIRE(gather::test::eventually([&] { return runs.load() == at_once; }, 8s));
    CHECK(ok.load() == at_once);
    CHECK(client.inflight() == 0);
    CHECK(requests.load() == at_once);
  }
}

TEST_CASE("a client dropped after its loop stopped: running and queued calls of both kinds go, none completes",
          "[h2-downstream]") {
  // The tickets of calls still in the stopped loop's queue are destroyed with the loop, after the
  // client (ASan sees any use of what the client freed).
  h2_downstream_server server;
  gather::test::silent_server silent;
  std::atomic<int> runs{0};
  std::vector<std::shared_ptr<recorded_call>> calls;
  {
    io_loops loops(1);
    loops.start();
    downstream_client client(loops);
    for (int i = 0; i < 3; ++i)
      client.submit(transfer_request{silent.base_url() + "/x", {}, 10s, 1 << 20}, counted(runs));
    for (int i = 0; i < 2; ++i)
      client.submit(http2_transfer(server.url("/hang"), 10s), counted(runs));
    for (int i = 0; i < 2; ++i) {
      calls.push_back(std::make_shared<recorded_call>());
      client.call(stream_get(server.url("/hang"), 10s), calls.back());
    }
    REQUIRE(gather::test::eventually([&] { return silent.accepted() == 3; }));
    for (int i = 0; i < 4; ++i)
      server.line_with("REQUEST");
    CHECK(client.inflight() == 7);
    loops.stop();
    client.submit(transfer_request{silent.base_url() + "/x", {}, 10s, 1 << 20}, counted(runs));
    client.submit(http2_transfer(server.url("/hang"), 10s), counted(runs));
    calls.push_back(std::make_shared<recorded_call>());
    client.call(stream_get(server.url("/hang"), 10s), calls.back());
    CHECK(client.inflight() == 10);
    CHECK(client.queued() == 3);
  } // the client first, then the loops with the handlers they never ran
  CHECK(runs.load() == 0);
  for (const auto& call : calls)
    CHECK_FALSE(call->has_ended());
  CHECK(gather::test::eventually([&] { return silent.closed_by_peer() == 3; }, 2s));
}

TEST_CASE("downstream_alpn_memory_ms: an origin whose ALPN chose HTTP/1.1 is remembered for it, or asked every time",
          "[h2-downstream]") {
  const auto& files = gather::test::tls_files::get();
  trusted_h2_ca ca(files.cert);
  std::mutex mutex;
  std::set<int> ports; // the connections the origin saw
  h1_only_tls_server server(files, [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mutex);
      ports.insert(req.remote_port);
    }
    res.set_content(R"({"ok":1})", "application/json");
  });
  const auto connections = [&] {
    std::lock_guard lock(mutex);
    return ports.size();
  };
  io_loops loops(1);
  loops.start();
  for (const auto memory : {60000ms, 0ms}) {
    INFO("downstream_alpn_memory_ms " << memory.count());
    {
      std::lock_guard lock(mutex);
      ports.clear();
    }
    downstream_client client(loops, gather::pool_bounds{{60000ms, 1000ms}, memory});
    for (int i = 0; i < 3; ++i)
      CHECK(h2_fetch(client, server.url).http_status == 200);
    // Remembered: the next calls take the pooled HTTP/1.1 connection. Not: each offers h2 on a new
    // connection, which ALPN makes HTTP/1.1 again.
    CHECK(connections() == (memory.count() > 0 ? 1u : 3u));
    client_is_empty(client);
  }
  loops.stop();
}

TEST_CASE("an https origin that chooses h2 by ALPN: transfers made while the pool asked go on its one connection",
          "[h2-downstream][pool]") {
  // The pool's probe connection is filed as an HTTP/2 link and the transfers that waited for its
  // answer are its calls: one connection, one request each, each counted once.
  const auto& files = gather::test::tls_files::get();
  trusted_h2_ca ca(files.cert);
  h2_downstream_server server({"--tls", files.cert, files.key});
  downstream_client client;
  constexpr int at_once = 8;
  std::atomic<int> ok{0}, runs{0};
  for (int i = 0; i < at_once; ++i)
    client.submit(http2_transfer(server.url("/item", "https"), 3s), [&](transfer_result&& r) {
      ok += r.http_status == 200 && r.error == transfer_error::none ? 1 : 0;
      ++runs;
    });
  REQUIRE(gather::test::eventually([&] { return runs.load() == at_once; }, 8s));
  CHECK(ok.load() == at_once);
  CHECK(client.inflight() == 0);
  CHECK(server.line_with("CONN").find("CONN 1") != std::string::npos);
  for (int i = 0; i < at_once; ++i)
    CHECK(server.line_with("REQUEST").find("REQUEST 1 ") != std::string::npos);
  // Later transfers find the link: still the one connection.
  CHECK(h2_fetch(client, server.url("/item", "https")).http_status == 200);
  CHECK(server.line_with("REQUEST").find("REQUEST 1 ") != std::string::npos);
  CHECK_FALSE(server.process.wait_for_line("CONN 2", std::chrono::milliseconds(200)));
  client_is_empty(client);
}

TEST_CASE("the pool asks ALPN once per origin: a probe that ends without an answer passes the question on",
          "[h2-downstream][pool]") {
  SECTION("cancelled while its handshake hangs: the next waiting transfer makes the next probe") {
    gather::test::silent_server silent; // accepts, never speaks: the TLS handshake waits
    const std::string url = "https://127.0.0.1:" + std::to_string(silent.port()) + "/x";
    downstream_client client;
    std::atomic<int> runs{0};
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < 3; ++i)
      ids.push_back(client.submit(http2_transfer(url, 10s), counted(runs)));
    REQUIRE(gather::test::eventually([&] { return silent.accepted() == 1; }));
    CHECK(client.inflight() == 3); // one connection: the other two wait for its answer
    client.cancel(ids[0]);
    REQUIRE(gather::test::eventually([&] { return silent.accepted() == 2; }));
    client.cancel(ids[1]);
    REQUIRE(gather::test::eventually([&] { return silent.accepted() == 3; }));
    client.cancel(ids[2]);
    client_is_empty(client);
    CHECK(runs.load() == 0);
  }
  SECTION("refused: each waiting transfer fails on its own attempt, none waits out its timeout") {
    const std::string url = "https://127.0.0.1:" + std::to_string(gather::test::unused_port()) + "/x";
    downstream_client client;
    constexpr int at_once = 4;
    std::atomic<int> refused{0}, runs{0};
    for (int i = 0; i < at_once; ++i)
      client.submit(http2_transfer(url, 10s), [&](transfer_result&& r) {
        refused += r.error == transfer_error::connect ? 1 : 0;
        ++runs;
      });
    REQUIRE(gather::test::eventually([&] { return runs.load() == at_once; }, 5s));
    CHECK(refused.load() == at_once);
    client_is_empty(client);
  }
}
