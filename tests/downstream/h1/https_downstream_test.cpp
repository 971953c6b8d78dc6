// https downstreams: the client verifies the certificate chain and the host name, with SNI, over
// a real TLS server on loopback (cpp-httplib's SSLServer with a certificate the test makes).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

#include <httplib.h>

#include "gather/downstream/call/downstream_client.hpp"

using namespace std::chrono_literals;
using gather::downstream_client;
using gather::transfer_error;
using gather::transfer_request;
using gather::transfer_result;

namespace {

/// A self-signed certificate for IP 127.0.0.1 (no DNS name), made with the openssl command.
struct test_certificate {
  std::string dir, cert, key;
  test_certificate() {
    dir = (std::filesystem::temp_directory_path() / ("gather-https-" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir);
    cert = dir + "/cert.pem";
    key = dir + "/key.pem";
    const std::string command = "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + key + " -out " +
                                cert + " -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1" +
                                " >/dev/null 2>&1";
    REQUIRE(std::system(command.c_str()) == 0);
  }
  ~test_certificate() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

/// An HTTPS server on 127.0.0.1 answering {"ok":1} on every GET.
struct https_server {
  httplib::SSLServer server;
  std::thread thread;
  int port = 0;
  explicit https_server(const test_certificate& c) : server(c.cert.c_str(), c.key.c_str()) {
    REQUIRE(server.is_valid());
    server.Get(".*", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"ok":1})", "application/json");
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running())
      std::this_thread::yield();
  }
  ~https_server() {
    server.stop();
    thread.join();
  }
};

transfer_result fetch_url(downstream_client& client, const std::string& url) {
  auto promise = std::make_shared<std::promise<transfer_result>>();
  auto future = promise->get_future();
  transfer_request request;
  request.url = url;
  request.timeout = 5s;
  client.submit(std::move(request), [promise](transfer_result&& r) { promise->set_value(std::move(r)); });
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  return future.get();
}

/// Sets SSL_CERT_FILE (OpenSSL's default verify paths read it) for the scope.
struct trusted_ca {
  explicit trusted_ca(const std::string& file) { ::setenv("SSL_CERT_FILE", file.c_str(), 1); }
  ~trusted_ca() { ::unsetenv("SSL_CERT_FILE"); }
};

} // namespace

TEST_CASE("an https downstream with a trusted certificate answers, on a kept-alive connection", "[client]") {
  test_certificate cert;
  https_server server{cert};
  trusted_ca trust{cert.cert};
  downstream_client client; // reads the trusted CAs when made
  const auto url = "https://127.0.0.1:" + std::to_string(server.port) + "/x";
  for (int i = 0; i < 3; ++i) {
    const auto r = fetch_url(client, url);
    INFO(r.detail);
    CHECK(r.error == transfer_error::none);
    CHECK(r.http_status == 200);
    CHECK(r.body == R"({"ok":1})");
  }
}

TEST_CASE("an https downstream whose certificate is not trusted, or names another host, is a connect error", "[client]") {
  test_certificate cert;
  https_server server{cert};
  SECTION("not trusted: the system's CAs do not know it") {
    downstream_client client;
    const auto r = fetch_url(client, "https://127.0.0.1:" + std::to_string(server.port) + "/x");
    CHECK(r.error == transfer_error::connect);
    CHECK(r.body.empty());
  }
  SECTION("trusted, but the URL names a host the certificate does not") {
    trusted_ca trust{cert.cert};
    downstream_client client;
    const auto r = fetch_url(client, "https://localhost:" + std::to_string(server.port) + "/x");
    INFO(r.detail);
    CHECK(r.error == transfer_error::connect);
    CHECK(r.body.empty());
  }
}
