// A SIGHUP reload that changes a .proto (docs/grpc.md, "Where message types come from"): the real
// `gather serve` compiling `protos.files` from a directory the test writes, against the real
// gRPC server of tests/support/grpc_library_server.py run "evolved" (its library.proto already has
// GetBookRequest.edition and Book.subtitle, which the gateway's first .proto lacks).
// Every wait is on something observable: a server event line, the reload counters, a log line.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/test_helpers.hpp"
#include "support/test_server.hpp"

using json = nlohmann::json;
using namespace gather::test;

namespace {

std::string read_whole(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// `text` with `from` replaced by `to`; the test stops when `from` is not there.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

/// The tests' library.proto, and the later one the evolved server runs.
const std::string first_proto = read_whole(std::string(GATHER_TEST_PROTOS) + "/linkd/v3/library.proto");
std::string later_proto() {
  auto text = replaced(first_proto, "message GetBookRequest {\n  string isbn = 1;\n",
                       "message GetBookRequest {\n  string isbn = 1;\n  string edition = 2;\n");
  return replaced(text, "google.protobuf.Timestamp published = 8;\n",
                  "google.protobuf.Timestamp published = 8;\n  string subtitle = 9;\n");
}

/// A directory of .proto files the gateway compiles (`protos.import_paths`), removed at the end.
struct proto_dir {
  std::filesystem::path root;
  proto_dir() {
    char name[] = "/tmp/gather-protos-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    root = name;
    std::filesystem::create_directories(root / "linkd" / "v3");
  }
  ~proto_dir() { std::filesystem::remove_all(root); }
  void write_library(const std::string& text) const {
    const auto path = root / "linkd" / "v3" / "library.proto";
    {
      std::ofstream out{path.string() + ".next", std::ios::trunc};
      out << text;
    }
    std::filesystem::rename(path.string() + ".next", path);
  }
};

/// GET /books/{isbn}: one required unary section; `edition` in its message once the .proto has it.
json library_config(const std::string& target, const proto_dir& protos, bool with_edition) {
  json message = {{"isbn", "{isbn}"}};
  if (with_edition)
    message["edition"] = "second";
  json meta = {{"name", "meta"}, {"required", true}, {"timeout_ms", 20000},
               {"grpc", {{"target", target}, {"method", "linkd.v3.Library/GetBook"}, {"message", message}}}};
  return {{"listen", "127.0.0.1:0"},
          {"protos", {{"files", {"linkd/v3/library.proto"}}, {"import_paths", {protos.root.string()}}}},
          {"routes", {{{"path", "/books/{isbn}"}, {"deadline_ms", 30000}, {"sections", {meta}}}}}};
}

long counter_of(const std::string& scrape, const std::string& series) {
  const auto at = scrape.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stol(scrape.substr(at + series.size() + 2));
}

bool reloads_at(httplib::Client& c, long ok, long invalid) {
  return eventually([&] {
    const auto r = c.Get("/metrics");
    return r && counter_of(r->body, R"(gather_config_reloads_total{result="ok"})") == ok &&
           counter_of(r->body, R"(gather_config_reloads_total{result="invalid"})") == invalid;
  }, std::chrono::seconds(10));
}

json meta_of(const httplib::Result& r) {
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  return json::parse(r->body)["data"]["meta"];
}

/// Runs `what` however the test leaves the scope (a failed REQUIRE throws past a joinable thread).
struct when_leaving {
  std::function<void()> what;
  ~when_leaving() { what(); }
};

} // namespace

TEST_CASE("grpc reload: a changed .proto serves new requests, a request in flight keeps its descriptors, "
          "a broken one is refused",
          "[grpc-section][reload]") {
  child_process server{"/usr/bin/python3", {std::string(GATHER_SOURCE_DIR) + "/tests/support/grpc_library_server.py",
                                            GATHER_TEST_DESCRIPTOR_SET, "evolved"}};
  const auto port_line = server.wait_for_line("port ");
  REQUIRE(port_line);
  const std::string target = "http://127.0.0.1:" + port_line->substr(port_line->find(' ') + 1);
  auto call_seen = [&](const std::string& isbn) {
    const auto line = server.wait_for_line("\"isbn\": \"" + isbn + "\"");
    REQUIRE(line);
    return json::parse(*line);
  };

  proto_dir protos;
  protos.write_library(first_proto);
  const std::string file = temp_file(library_config(target, protos, false).dump());
  child_process gw{binary, {"serve", "--config", file}};
  const auto listening = gw.wait_for_line("listening on");
  REQUIRE(listening);
  const int port = port_of(*listening);
  httplib::Client c{"127.0.0.1", port};
  c.set_read_timeout(10, 0);

  // The first .proto: the server's subtitle is an unknown field, not shown.
  auto meta = meta_of(c.Get("/books/978-1"));
  CHECK(meta["title"] == "Book 0");
  CHECK_FALSE(meta.contains("subtitle"));
  CHECK(call_seen("978-1")["request"] == json{{"isbn", "978-1"}});

  // A request in flight: the server holds its call until the reload is done.
  std::optional<httplib::Result> held;
  std::thread held_client([&] {
    httplib::Client slow{"127.0.0.1", port};
    slow.set_read_timeout(30, 0);
    held = slow.Get("/books/held");
  });
  when_leaving finish_held{[&] {
    server.signal(SIGUSR2);
    if (held_client.joinable())
      held_client.join();
  }};
  CHECK(call_seen("held")["request"] == json{{"isbn", "held"}});

  protos.write_library(later_proto());
  {
    std::ofstream out{file, std::ios::trunc};
    out << library_config(target, protos, true).dump();
  }
  gw.signal(SIGHUP);
  REQUIRE(reloads_at(c, 1, 0));

  // A new request: its message made with the new GetBookRequest, its answer read with the new Book.
  meta = meta_of(c.Get("/books/978-2"));
  CHECK(meta["subtitle"] == "second edition");
  CHECK(call_seen("978-2")["request"] == json{{"isbn", "978-2"}, {"edition", "second"}});

  // The held request answers now, read with the descriptors it began with.
  finish_held.what();
  REQUIRE(held);
  meta = meta_of(*held);
  CHECK(meta["isbn"] == "held");
  CHECK(meta["title"] == "Book 0");
  CHECK_FALSE(meta.contains("subtitle"));

  // A .proto that does not compile: the reload is refused, saying where, and the later one serves on.
  protos.write_library(replaced(later_proto(), "string subtitle = 9;", "string subtitle = ;"));
  gw.signal(SIGHUP);
  REQUIRE(reloads_at(c, 1, 1));
  CHECK(gw.wait_for_stderr("linkd/v3/library.proto:"));
  CHECK(gw.wait_for_stderr(R"("result":"invalid")"));
  meta = meta_of(c.Get("/books/978-3"));
  CHECK(meta["subtitle"] == "second edition");
  CHECK(call_seen("978-3")["request"] == json{{"isbn", "978-3"}, {"edition", "second"}});

  // One that compiles but lost the field the message names: refused by the message's JSON path.
  protos.write_library(first_proto);
  gw.signal(SIGHUP);
  REQUIRE(reloads_at(c, 1, 2));
  CHECK(gw.wait_for_stderr("routes[0].sections[0].grpc.message.edition"));
  meta = meta_of(c.Get("/books/978-4"));
  CHECK(meta["subtitle"] == "second edition");
  CHECK(call_seen("978-4")["request"] == json{{"isbn", "978-4"}, {"edition", "second"}});

  gw.signal(SIGTERM);
  CHECK(gw.wait_exit() == 0);
}
