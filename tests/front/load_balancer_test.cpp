// Behind a load balancer, end to end (docs/gateway.md, "Behind a load balancer"): a real gateway,
// clients that connect from other loopback source addresses (127.0.0.2 a trusted balancer,
// 127.0.0.3 anyone else), PROXY protocol headers written byte for byte, and a downstream that
// echoes the `{client.ip}` it was called with.
#include <catch2/catch.hpp>

#include <openssl/ssl.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"
#include "support/proxy_bytes.hpp"
#include "support/raw_client.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"
#include "support/tls_files.hpp"

using namespace gather::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* lb_balancer_ip = "127.0.0.2";
constexpr const char* lb_stranger_ip = "127.0.0.3";

/// A downstream that answers {"ip": <the ip query value it was called with>}.
struct lb_client_echo {
  test_server server;
  lb_client_echo() {
    server.get(R"(/who)", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(json{{"ip", req.get_param_value("ip")}}.dump(), "application/json");
    });
    server.start();
  }
};

json lb_gateway_config(const lb_client_echo& down, json top) {
  return route_config_json("/who", {section("who", down.server.base_url() + "/who?ip={client.ip}", 2000,
                                            {{"required", true}})},
                           3000, std::move(top));
}

/// The client the downstream was told of, for one request sent on `conn`; "" when no answer came.
std::string lb_client_seen(raw_connection& conn, const std::string& extra_headers = "") {
  if (!conn.send(get_head("/who", extra_headers)))
    return {};
  const auto answer = conn.read_response(5s);
  if (!answer || answer->status != 200)
    return {};
  return json::parse(answer->body)["data"]["who"]["ip"].get<std::string>();
}

std::string lb_client_from(const char* source, int port, const std::string& extra_headers = "") {
  raw_connection conn{port, source};
  return lb_client_seen(conn, extra_headers);
}

/// v2 PROXY over IPv6 from [2001:db8::9]:4711, with an ALPN TLV after the addresses.
std::string lb_v2_ipv6_header() {
  const std::string tlv{"\x01\x00\x08http/1.1", 11};
  return proxy_v2_header('\x21', '\x21', ipv6_doc_address(9) + ipv6_doc_address(1) + be16(4711) + be16(80) + tlv);
}

/// v2 PROXY over IPv4 from `four_bytes`:5000.
std::string lb_v2_ipv4_header(const std::string& four_bytes) {
  return proxy_v2_header('\x21', '\x11', four_bytes + std::string{"\x0a\x00\x00\x01", 4} + be16(5000) + be16(80));
}

/// Connects from `source`, writes `header` and says whether the gateway closed the connection
/// within `limit` without a byte of answer.
bool lb_closed_unanswered(int port, const char* source, const std::string& header, std::chrono::milliseconds limit) {
  raw_connection conn{port, source};
  conn.send(header);
  return conn.wait_closed(limit) && conn.buffered().empty();
}

} // namespace

TEST_CASE("trusted proxies: X-Forwarded-For names the client only when the peer is trusted",
          "[front][balancer]") {
  lb_client_echo down;
  running_gateway gw{lb_gateway_config(down, {{"trusted_proxies", {"127.0.0.2/32", "::1/128"}}})};
  CHECK(lb_client_from(lb_balancer_ip, gw.port(), "X-Forwarded-For: 6.6.6.6, 198.51.100.7\r\n") == "198.51.100.7");
  CHECK(lb_client_from(lb_balancer_ip, gw.port(), "Forwarded: for=\"[2001:db8::7]:443\";proto=https\r\n") == "2001:db8::7");
  CHECK(lb_client_from(lb_balancer_ip, gw.port(), "X-Forwarded-For: not-an-address\r\n") == lb_balancer_ip); // passed over
  CHECK(lb_client_from(lb_balancer_ip, gw.port()) == lb_balancer_ip);
  // Anyone else's headers are not believed.
  CHECK(lb_client_from(lb_stranger_ip, gw.port(), "X-Forwarded-For: 198.51.100.7\r\nForwarded: for=198.51.100.8\r\n") == lb_stranger_ip);
}

TEST_CASE("trusted proxies: rate_limit per ip counts the forwarded client, and a stranger cannot spoof one",
          "[front][balancer][ratelimit]") {
  lb_client_echo down;
  json cfg = lb_gateway_config(down, {{"trusted_proxies", {"127.0.0.2/32"}}});
  cfg["routes"][0]["rate_limit"] = {{"per", "ip"}, {"rate_per_s", 0.01}, {"burst", 2}};
  running_gateway gw{cfg};
  const auto status_from = [&](const char* source, const std::string& forwarded) {
    raw_connection conn{gw.port(), source};
    conn.send(get_head("/who", "X-Forwarded-For: " + forwarded + "\r\n"));
    const auto answer = conn.read_response(5s);
    return answer ? answer->status : 0;
  };
  // Behind the balancer: one bucket per client, not one for the balancer.
  CHECK(status_from(lb_balancer_ip, "198.51.100.1") == 200);
  CHECK(status_from(lb_balancer_ip, "198.51.100.1") == 200);
  CHECK(status_from(lb_balancer_ip, "198.51.100.1") == 429);
  CHECK(status_from(lb_balancer_ip, "198.51.100.2") == 200);
  // A stranger's forwarded addresses are its own bucket all the same.
  CHECK(status_from(lb_stranger_ip, "203.0.113.1") == 200);
  CHECK(status_from(lb_stranger_ip, "203.0.113.2") == 200);
  CHECK(status_from(lb_stranger_ip, "203.0.113.3") == 429);
}

TEST_CASE("PROXY protocol: v1 and v2 name the client over HTTP/1.1, LOCAL and UNKNOWN leave the balancer",
          "[front][balancer][proxy]") {
  lb_client_echo down;
  running_gateway gw{lb_gateway_config(down, {{"listen_proxy_protocol", true},
                                            {"trusted_proxies", {"127.0.0.2/32", "127.0.0.5/32"}}})};
  {
    raw_connection conn{gw.port(), lb_balancer_ip};
    conn.send("PROXY TCP4 198.51.100.9 10.0.0.1 5555 80\r\n");
    CHECK(lb_client_seen(conn) == "198.51.100.9");
    CHECK(lb_client_seen(conn) == "198.51.100.9"); // the next request on the connection: the same client
  }
  {
    raw_connection conn{gw.port(), lb_balancer_ip};
    conn.send(lb_v2_ipv6_header());
    CHECK(lb_client_seen(conn) == "2001:db8::9");
  }
  {
    raw_connection conn{gw.port(), lb_balancer_ip};
    conn.send(proxy_v2_header('\x20', '\x00', "")); // LOCAL: the balancer's own health check
    CHECK(lb_client_seen(conn) == lb_balancer_ip);
  }
  {
    raw_connection conn{gw.port(), lb_balancer_ip};
    conn.send("PROXY UNKNOWN\r\n");
    CHECK(lb_client_seen(conn) == lb_balancer_ip);
  }
  {
    // The header's source is the peer the X-Forwarded-For walk starts from: a trusted one here.
    raw_connection conn{gw.port(), lb_balancer_ip};
    conn.send(lb_v2_ipv4_header(std::string{"\x7f\x00\x00\x05", 4}));
    CHECK(lb_client_seen(conn, "X-Forwarded-For: 203.0.113.7\r\n") == "203.0.113.7");
  }
  {
    raw_connection conn{gw.port(), lb_balancer_ip}; // an untrusted source: its headers are not believed
    conn.send(lb_v2_ipv4_header(std::string{"\xc6\x33\x64\x0a", 4}));
    CHECK(lb_client_seen(conn, "X-Forwarded-For: 203.0.113.7\r\n") == "198.51.100.10");
  }
  {
    // A header sent a byte at a time is read all the same, and nothing past it is taken.
    raw_connection conn{gw.port(), lb_balancer_ip};
    const std::string header = "PROXY TCP4 198.51.100.11 10.0.0.1 5555 80\r\n";
    for (char c : header) {
      conn.send(std::string(1, c));
      std::this_thread::sleep_for(1ms); // the bytes arrive apart, as a slow balancer sends them
    }
    CHECK(lb_client_seen(conn) == "198.51.100.11");
  }
}

TEST_CASE("PROXY protocol: untrusted, missing, malformed, truncated and oversized headers close without an answer",
          "[front][balancer][proxy]") {
  lb_client_echo down;
  running_gateway gw{lb_gateway_config(down, {{"listen_proxy_protocol", true},
                                            {"trusted_proxies", {"127.0.0.2/32"}},
                                            {"request_timeout_ms", 1000},
                                            {"admin", {{"listen", "127.0.0.1:0"}}}})};
  const std::string good = "PROXY TCP4 198.51.100.9 10.0.0.1 5555 80\r\n";
  // From a peer outside trusted_proxies: closed at once, even with a valid header.
  CHECK(lb_closed_unanswered(gw.port(), lb_stranger_ip, good + get_head("/who"), 500ms));
  // No header, a wrong signature, a broken line, an oversized v2: closed as soon as the bytes show it.
  CHECK(lb_closed_unanswered(gw.port(), lb_balancer_ip, get_head("/who"), 500ms));
  CHECK(lb_closed_unanswered(gw.port(), lb_balancer_ip, std::string{"\r\n\r\n\0\r\nQUIZ\n\x21\x11\x00\x0c", 16}, 500ms));
  CHECK(lb_closed_unanswered(gw.port(), lb_balancer_ip, "PROXY TCP4 198.51.100.9 10.0.0.1 5555\r\n", 500ms));
  CHECK(lb_closed_unanswered(gw.port(), lb_balancer_ip, "PROXY UNKNOWN " + std::string(100, 'x'), 500ms));
  CHECK(lb_closed_unanswered(gw.port(), lb_balancer_ip, proxy_v2_signature + "\x21\x11" + be16(65000), 500ms));
  // A truncated header (or none at all): closed when the request-head time limit passes, not before.
  for (const std::string& part : {good.substr(0, 20), lb_v2_ipv6_header().substr(0, 30), std::string{}}) {
    raw_connection conn{gw.port(), lb_balancer_ip};
    conn.send(part);
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(conn.wait_closed(700ms));
    CHECK(conn.wait_closed(3s));
    CHECK(ms_since(start) >= 700);
    CHECK(conn.buffered().empty());
  }
  // The gateway serves on: a good header still gets its answer.
  raw_connection conn{gw.port(), lb_balancer_ip};
  conn.send(good);
  CHECK(lb_client_seen(conn) == "198.51.100.9");
  // The admin listener takes no PROXY header: the operator's own client reads the count there.
  httplib::Client admin{"127.0.0.1", gw.gw().admin_port()};
  CHECK(body_of(admin.Get("/debug/actors"))["proxy_refused"].get<int>() == 9);
}

TEST_CASE("PROXY protocol: h2c behind the header is HTTP/2", "[front][balancer][proxy][h2]") {
  lb_client_echo down;
  running_gateway gw{lb_gateway_config(down, {{"listen_proxy_protocol", true}, {"trusted_proxies", {"127.0.0.2/32"}}})};
  raw_connection conn{gw.port(), lb_balancer_ip};
  // The PROXY header, then the HTTP/2 preface and an empty SETTINGS frame in the same write.
  conn.send("PROXY TCP4 198.51.100.9 10.0.0.1 5555 80\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" +
            std::string{"\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9});
  const auto bytes = conn.read_at_least(9, 3s);
  REQUIRE(bytes.size() >= 9);
  CHECK(bytes[3] == '\x04'); // the server's SETTINGS: it took the preface as HTTP/2's
}

TEST_CASE("PROXY protocol: TLS behind the header, its ClientHello left for the handshake", "[front][balancer][proxy][tls]") {
  lb_client_echo down;
  const auto& files = tls_files::get();
  running_gateway gw{lb_gateway_config(down, {{"listen_proxy_protocol", true},
                                            {"trusted_proxies", {"127.0.0.2/32"}},
                                            {"tls", {{"cert_file", files.cert}, {"key_file", files.key}}}})};
  raw_connection conn{gw.port(), lb_balancer_ip};
  REQUIRE(conn.send(lb_v2_ipv6_header()));
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, conn.fd());
  REQUIRE(SSL_connect(ssl) == 1);
  const auto request = get_head("/who", "Connection: close\r\n");
  REQUIRE(SSL_write(ssl, request.data(), static_cast<int>(request.size())) > 0);
  std::string answer;
  char chunk[4096];
  for (int n; (n = SSL_read(ssl, chunk, sizeof chunk)) > 0;)
    answer.append(chunk, static_cast<std::size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  CHECK(answer.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(answer.find(R"("ip":"2001:db8::9")") != std::string::npos);
}

TEST_CASE("/readyz: 200 while taking traffic, 503 draining from begin_drain on, /healthz stays 200",
          "[front][balancer][ops]") {
  lb_client_echo down;
  running_gateway gw{lb_gateway_config(down, {{"admin", {{"listen", "127.0.0.1:0"}}}})};
  httplib::Client admin{"127.0.0.1", gw.gw().admin_port()};
  auto ready = gw.get("/readyz");
  REQUIRE(ready);
  CHECK(ready->status == 200);
  CHECK(body_of(ready) == json{{"status", "ready"}});
  CHECK(admin.Get("/readyz")->status == 200);
  gw.gw().begin_drain();
  const auto draining = gw.get("/readyz");
  REQUIRE(draining);
  CHECK(draining->status == 503);
  CHECK(body_of(draining) == json{{"status", "draining"}});
  CHECK(admin.Get("/readyz")->status == 503);
  CHECK(gw.get("/healthz")->status == 200);
  CHECK(admin.Get("/healthz")->status == 200);
  CHECK(gw.get("/who")->status == 200); // still serving: the balancer's time to stop sending
}

TEST_CASE("behind a balancer over HTTP/2: each stream's forwarded client, h2c and h2 over TLS behind a PROXY header",
          "[front][balancer][proxy][h2]") {
  lb_client_echo down;
  const auto& files = tls_files::get();
  // curl binds 127.0.0.2 (--interface), speaks HTTP/2 and, with --haproxy-protocol, writes a
  // PROXY v1 line naming its own address first.
  const auto ip_over_h2 = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"-s", "--max-time", "10", "--interface", lb_balancer_ip, "-H",
                               "X-Forwarded-For: 6.6.6.6, 198.51.100.7", "-w", "\n%{http_version}"});
    const auto r = run("/usr/bin/curl", args);
    INFO("curl: " << r.err);
    REQUIRE(r.code == 0);
    const auto cut = r.out.rfind('\n');
    REQUIRE(r.out.substr(cut + 1) == "2");
    return json::parse(r.out.substr(0, cut))["data"]["who"]["ip"].get<std::string>();
  };
  {
    running_gateway gw{lb_gateway_config(down, {{"trusted_proxies", {"127.0.0.2/32"}}})};
    const auto url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/who";
    CHECK(ip_over_h2({"--http2-prior-knowledge", url}) == "198.51.100.7");
  }
  {
    running_gateway gw{lb_gateway_config(down, {{"trusted_proxies", {"127.0.0.2/32"}}, {"listen_proxy_protocol", true}})};
    const auto url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/who";
    CHECK(ip_over_h2({"--http2-prior-knowledge", "--haproxy-protocol", url}) == "198.51.100.7");
  }
  {
    running_gateway gw{lb_gateway_config(down, {{"trusted_proxies", {"127.0.0.2/32"}},
                                                {"listen_proxy_protocol", true},
                                                {"tls", {{"cert_file", files.cert}, {"key_file", files.key}}}})};
    const auto url = "https://127.0.0.1:" + std::to_string(gw.port()) + "/who";
    CHECK(ip_over_h2({"--http2", "--cacert", files.cert, "--haproxy-protocol", url}) == "198.51.100.7");
  }
}
