// What the front's HTTP/2 tests (tests/front/h2_*_test.cpp) share: a downstream and a config with
// /p and /big, running a python3-h2 client case (h2_client.py) and curl, the check that a fresh
// connection is still served, and a figure of /metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/test_server.hpp"

namespace gather::test::h2_front_support {

inline const std::string h2_client_script = GATHER_SOURCE_DIR "/tests/front/h2_client.py";

/// A downstream with /item (a small JSON answer after `delay`), /big (about 1 MB at once) and
/// /hang (no answer within any test's time).
struct h2_downstream {
  test_server server;
  explicit h2_downstream(std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
    server.get("/hang", [this](const httplib::Request&, httplib::Response& res) {
      server.hang();
      res.set_content("{}", "application/json");
    });
    server.get("/item", [this, delay](const httplib::Request&, httplib::Response& res) {
      if (delay.count() > 0)
        server.delay(delay);
      res.set_content(R"({"id": 7, "name": "lamp"})", "application/json");
    });
    server.get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"blob\": \"" + std::string(1 << 20, 'x') + "\"}", "application/json");
    });
    server.start();
  }
};

/// Routes: /p (one section, /item), /big (one section, /big), and `extra` routes.
inline nlohmann::json h2_config(const std::string& base, nlohmann::json top = nlohmann::json::object(),
                                nlohmann::json extra_routes = nlohmann::json::array()) {
  auto cfg = route_config_json("/p", nlohmann::json::array({section("part", base + "/item", 2000, {{"required", true}})}),
                               3000, top);
  cfg["routes"].push_back({{"path", "/big"}, {"deadline_ms", 3000},
                           {"sections", nlohmann::json::array({section("blob", base + "/big", 2000, {{"required", true}})})}});
  for (auto& r : extra_routes)
    cfg["routes"].push_back(r);
  return cfg;
}

/// h2_client.py CASE PORT ARGS...: its last stdout line as JSON.
inline nlohmann::json h2_case(const std::string& name, int port, const std::vector<std::string>& args) {
  std::vector<std::string> all{h2_client_script, name, std::to_string(port)};
  all.insert(all.end(), args.begin(), args.end());
  const auto r = run("/usr/bin/python3", all);
  INFO("h2_client.py " << name << ": " << r.out << r.err);
  REQUIRE(r.code == 0);
  auto out = r.out;
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  return nlohmann::json::parse(out.substr(out.rfind('\n') + 1)); // the last line
}

/// After a hostile case: a fresh connection's request is answered 200 within 1 s.
inline void normal_request_answered(int port) {
  const auto answer = h2_case("normal", port, {"/p"});
  CHECK(answer["status"] == 200);
  CHECK(answer["ms"].get<double>() < 1000);
}

/// curl ARGS... URL: "HTTP_VERSION STATUS" on the last line, the body before it.
struct curl_answer {
  std::string version, body;
  int status = 0;
};
inline curl_answer curl(std::vector<std::string> args) {
  args.insert(args.begin(), {"-s", "--max-time", "10", "-w", "\n%{http_version} %{http_code}"});
  const auto r = run("/usr/bin/curl", args);
  INFO("curl: " << r.err);
  REQUIRE(r.code == 0);
  const auto cut = r.out.rfind('\n');
  curl_answer out;
  out.body = r.out.substr(0, cut);
  std::smatch m;
  const std::string tail = r.out.substr(cut + 1);
  REQUIRE(std::regex_match(tail, m, std::regex{R"((\S+) (\d+))"}));
  out.version = m[1];
  out.status = std::stoi(m[2]);
  return out;
}

inline std::uint64_t h2_metric(running_gateway& gw, const std::string& series) {
  const auto r = gw.get("/metrics");
  REQUIRE(r);
  const auto at = r->body.find("\n" + series + " ");
  if (at == std::string::npos)
    return 0;
  return std::stoull(r->body.substr(at + series.size() + 2));
}

} // namespace gather::test::h2_front_support
