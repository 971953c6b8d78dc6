// Inbound TLS: HTTPS answers, plain HTTP gets none, and bad key or certificate files.
//
// The event-driven front (include/gather/front/) against real gateways over real loopback
// sockets: HTTP/1.0 framing, the keep-alive idle timeout, Expect: 100-continue, inbound TLS,
// max_connections, a burst of 1,000 connections on a fresh process, 10,000 idle connections, and
// the config keys behind it all. Timing margins hold on a loaded 2-core machine.
#include <catch2/catch.hpp>

#include <csignal>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/raw_client.hpp"
#include "support/test_helpers.hpp"
#include "support/tls_files.hpp"
#include "front/front_test_support.hpp"

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;
using namespace gather::test::front_support;

namespace {

// ---- TLS files ----------------------------------------------------------------------------------

/// An HTTPS client that trusts the test certificate (and checks the host name against it).
std::unique_ptr<httplib::SSLClient> https_client(int port) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  c->set_ca_cert_path(tls_files::get().cert.c_str());
  c->enable_server_certificate_verification(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(10, 0);
  return c;
}

/// The lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::stringstream in{text};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0)
      out.push_back(line);
  return out;
}

} // namespace

// ---- 4. TLS ---------------------------------------------------------------------------------------

TEST_CASE("TLS: HTTPS gets the normal answer, plain HTTP on the TLS port gets none", "[front][tls]") {
  const auto& files = tls_files::get();
  front_downstream down;
  down.server.start();
  running_gateway gw{front_config(down.base_url(), {{"tls", {{"cert_file", files.cert}, {"key_file", files.key}}}})};

  auto c = https_client(gw.port());
  auto r = c->Get("/p");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(json::parse(r->body)["data"]["s"] == json{{"ok", 1}});
  CHECK_FALSE(r->get_header_value("X-Request-Id").empty());
  // Keep-alive over TLS: the same client again.
  auto again = c->Get("/p");
  REQUIRE(again);
  CHECK(again->status == 200);

  {
    raw_connection plain{gw.port()};
    REQUIRE(plain.send(get_head("/p")));
    bool closed = false;
    const std::string bytes = read_until_closed(plain.fd(), milliseconds{5000}, closed);
    CHECK(closed);
    CHECK(bytes.find("HTTP/1.1 200") == std::string::npos);
  }

  auto fresh = https_client(gw.port());
  auto after = fresh->Get("/p");
  REQUIRE(after);
  CHECK(after->status == 200);
}

TEST_CASE("TLS: gather serve prints an https address and answers over TLS", "[front][tls]") {
  const auto& files = tls_files::get();
  front_downstream down;
  down.server.start();
  json cfg = front_config(down.base_url(), {{"tls", {{"cert_file", files.cert}, {"key_file", files.key}}}});
  child_process gw{binary, {"serve", "--config", temp_file(cfg.dump())}};
  auto line = gw.wait_for_line("listening on");
  REQUIRE(line);
  CHECK(line->find("listening on https://127.0.0.1:") != std::string::npos);
  auto c = https_client(port_of(*line));
  auto r = c->Get("/p");
  REQUIRE(r);
  CHECK(r->status == 200);
  gw.signal(SIGTERM);
  CHECK(gw.wait_exit() == 0);
}

TEST_CASE("TLS: gather check and serve report a missing or foreign key and a missing certificate by JSON path", "[front][tls][cli]") {
  const auto& files = tls_files::get();
  const auto config_with = [](const std::string& cert, const std::string& key) {
    json cfg = {{"listen", "127.0.0.1:0"},
                {"routes",
                 {{{"path", "/p"},
                   {"sections",
                    {{{"name", "s"}, {"url", "http://127.0.0.1:1/x"}, {"timeout_ms", 100}, {"required", true}}}}}}},
                {"tls", {{"cert_file", cert}, {"key_file", key}}}};
    return temp_file(cfg.dump());
  };
  const std::string missing = files.dir + "/no-such-file.pem";

  auto good = run(binary, {"check", "--config", config_with(files.cert, files.key)});
  INFO("good: " << good.out << good.err);
  CHECK(good.code == 0);

  struct bad_case {
    std::string what, cert, key, prefix;
  };
  for (const auto& c : {bad_case{"missing key", files.cert, missing, "tls.key_file:"},
                        bad_case{"foreign key", files.cert, files.other_key, "tls.key_file:"},
                        bad_case{"missing certificate", missing, files.key, "tls.cert_file:"}}) {
    const std::string file = config_with(c.cert, c.key);
    auto r = run(binary, {"check", "--config", file});
    INFO(c.what << ": exit " << r.code << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.code == 2);
    CHECK_FALSE(lines_starting(r.err, c.prefix).empty());
    CHECK(r.out.find("ok") == std::string::npos);
    auto served = run(binary, {"serve", "--config", file});
    CHECK(served.code == 2);
    CHECK_FALSE(lines_starting(served.err, c.prefix).empty());
    CHECK(served.out.find("listening") == std::string::npos);
  }
}
