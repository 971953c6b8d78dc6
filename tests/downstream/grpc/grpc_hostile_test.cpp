// A hostile gRPC downstream (docs/grpc.md): raw HTTP/2 frames from h2_server.py (python3-h2),
// each answer chosen by the call's x-mode metadata. Every call ends as the contract says by its
// timeout (a broken answer `error`, one that never ends `timeout`), and the gateway keeps serving.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"

using json = nlohmann::json;
using gather::test::running_gateway;

namespace {

/// h2_server.py in its own process (`--silent`: it never sends a byte).
class hostile_grpc_server {
public:
  explicit hostile_grpc_server(std::vector<std::string> args = {})
      : process_("/usr/bin/python3", with_script(std::move(args))) {
    const auto line = process_.wait_for_line("PORT ");
    REQUIRE(line);
    port_ = std::stoi(line->substr(line->find("PORT ") + 5));
  }
  std::string target() const { return "http://127.0.0.1:" + std::to_string(port_); }

private:
  static std::vector<std::string> with_script(std::vector<std::string> args) {
    args.insert(args.begin(), std::string(GATHER_SOURCE_DIR) + "/tests/downstream/h2/h2_server.py");
    return args;
  }
  gather::test::child_process process_;
  int port_ = 0;
};

/// One optional gRPC section "g" (300 ms) calling `target`, its x-mode forwarded; 1 KiB answers.
json hostile_config(const std::string& target) {
  json g = {{"name", "g"}, {"timeout_ms", 300}, {"fallback", {{"fell", true}}},
            {"forward_headers", {"x-mode"}},
            {"grpc", {{"target", target}, {"method", "linkd.v3.Library/GetBook"},
                      {"message", {{"isbn", "1"}}}}}};
  auto cfg = gather::test::route_config_json("/g", json::array({g}), 1000);
  cfg["protos"] = {{"descriptor_sets", {GATHER_TEST_DESCRIPTOR_SET}}};
  cfg["max_response_bytes"] = 1024;
  return cfg;
}

/// The section's status for a call answered as `mode`, checked to end by its timeout.
std::string status_for(running_gateway& gw, const std::string& mode) {
  INFO("x-mode: " << mode);
  const auto start = std::chrono::steady_clock::now();
  auto r = gw.get("/g", {{"X-Mode", mode}});
  REQUIRE(r);
  CHECK(gather::test::ms_since(start) < 900);
  REQUIRE(r->status == 200);
  const auto body = json::parse(r->body);
  CHECK(body["sections"]["g"]["ms"].get<int>() <= 400);
  if (body["sections"]["g"]["status"] != "ok")
    CHECK(body["data"]["g"] == json{{"fell", true}});
  return body["sections"]["g"]["status"];
}

} // namespace

TEST_CASE("grpc hostile: every broken answer ends its section by the timeout, and the gateway keeps serving",
          "[grpc-section][hostile]") {
  hostile_grpc_server server;
  running_gateway gw(hostile_config(server.target()));
  CHECK(status_for(gw, "grpc/ok") == "ok");
  const std::map<std::string, std::string> expected = {
    {"grpc/prefix-over", "error"}, // the stream ended inside a message
    {"grpc/huge-prefix", "error"}, // a 100 MB length prefix: over max_response_bytes at once
    {"grpc/big", "error"},         // a message over max_response_bytes
    {"grpc/compressed", "error"},
    {"grpc/bad-message", "error"}, // no linkd.v3.Book
    {"grpc/no-trailers", "error"}, // no grpc-status
    {"grpc/html", "error"},        // not gRPC
    {"status/503", "error"},       // not gRPC (UNAVAILABLE)
    {"bad-status", "error"},
    {"grpc/rst-mid", "error"},
    {"grpc/rst-after", "error"},
    {"rst/head/2", "error"},
    {"refuse", "error"},           // refused every time: UNAVAILABLE
    {"goaway-error", "error"},     // GOAWAY with the stream in flight
    {"drop", "error"},             // the connection closed
    {"window-flood", "error"},     // survived; then a JSON answer: not gRPC
    {"grpc/never-ends", "timeout"},
    {"hang", "timeout"},
  };
  for (const auto& [mode, status] : expected)
    CHECK(status_for(gw, mode) == status);
  CHECK(status_for(gw, "grpc/ok") == "ok"); // still serving, on a fresh connection if need be
  const auto metrics = gw.get("/metrics")->body;
  for (const char* code : {"OK", "INTERNAL", "UNKNOWN", "UNAVAILABLE", "DEADLINE_EXCEEDED"})
    CHECK(metrics.find(std::string(R"(gather_grpc_calls_total{route="/g",section="g",code=")") + code + "\"}") !=
          std::string::npos);
}

TEST_CASE("grpc hostile: a server that never sends SETTINGS times the call out", "[grpc-section][hostile]") {
  hostile_grpc_server silent({"--silent"});
  running_gateway gw(hostile_config(silent.target()));
  CHECK(status_for(gw, "grpc/ok") == "timeout");
  CHECK(status_for(gw, "grpc/ok") == "timeout");
}
