// The HTTP/2 downstream client over h2c: calls, their events and ends, GOAWAY, hostile servers.
//
// The downstream client over HTTP/2 (stream_call.hpp, transfer_request::http2), against a real
// HTTP/2 server in another process: h2_server.py (python3-h2), well-behaved and hostile, over h2c
// by prior knowledge. Every call ends as stream_call.hpp says by its timeout, and the client holds
// nothing afterwards (inflight() back to 0).
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gather/downstream/call/downstream_client.hpp"

#include "support/h2_downstream_server.hpp"
#include "downstream/h2/h2_downstream_test_support.hpp"

using namespace std::chrono_literals;
using namespace gather;
using gather::test::h2_downstream_server;
using json = nlohmann::json;
using namespace gather::test::h2_downstream_support;

namespace {

std::string header_of(const header_list& headers, const std::string& name) {
  for (const auto& [n, v] : headers)
    if (n == name)
      return v;
  return {};
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
