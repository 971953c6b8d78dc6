// gRPC server reflection end to end (docs/grpc.md, "Server reflection"): a real gateway with no
// descriptor of its own asks a real gRPC server (Debian's grpcio, tests/support/
// grpc_library_server.py, serving reflection v1 and/or v1alpha) for its methods' files.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <csignal>
#include <mutex>
#include <string>
#include <vector>

#include "gather/actors/serving_config.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/downstream/grpc/grpc_reflection.hpp"
#include "support/child_process.hpp"
#include "support/gateway_fixture.hpp"

using json = nlohmann::json;
using gather::test::running_gateway;

namespace {

/// The Python server with reflection in the versions given ({} for none).
class reflecting_library {
public:
  explicit reflecting_library(const std::vector<std::string>& apis)
      : process_("/usr/bin/python3", args_of(apis)) {
    auto line = process_.wait_for_line("port ");
    REQUIRE(line);
    port_ = std::stoi(line->substr(line->find(' ') + 1));
  }
  std::string target() const { return "http://127.0.0.1:" + std::to_string(port_); }
  json event(const std::string& needle) {
    auto line = process_.wait_for_line(needle);
    REQUIRE(line);
    return json::parse(*line);
  }
  /// Reflection names GetBookAgain from now on.
  void add_method() {
    process_.signal(SIGUSR1);
    event("\"added\"");
  }

private:
  static std::vector<std::string> args_of(const std::vector<std::string>& apis) {
    std::vector<std::string> args{std::string(GATHER_SOURCE_DIR) + "/tests/support/grpc_library_server.py",
                                  GATHER_TEST_DESCRIPTOR_SET};
    args.insert(args.end(), apis.begin(), apis.end());
    return args;
  }
  gather::test::child_process process_;
  int port_ = 0;
};

json reflected_section(const std::string& name, const std::string& target, const std::string& method,
                       json message, json extra = json::object()) {
  json section = {{"name", name}, {"timeout_ms", 300},
                  {"grpc", {{"target", target}, {"method", "linkd.v3.Library/" + method},
                            {"message", std::move(message)}, {"reflection", true}}}};
  for (auto& [k, v] : extra.items())
    section[k] = v;
  return section;
}

/// meta (GetBook, required) and related (SearchBooks, 5 of a stream), no `protos` at all.
json reflected_config(const std::string& target) {
  return gather::test::route_config_json(
      "/books/{isbn}",
      {reflected_section("meta", target, "GetBook", {{"isbn", "{isbn}"}}, {{"required", true}}),
       reflected_section("related", target, "SearchBooks", {{"query", "{query.q}"}, {"page_size", 5}},
                         {{"fallback", json::array()}, {"grpc", {{"target", target},
                           {"method", "linkd.v3.Library/SearchBooks"}, {"reflection", true},
                           {"message", {{"query", "{query.q}"}, {"page_size", 5}}}, {"max_messages", 5}}}})},
      800);
}

const gather::reflection_source& source_of(running_gateway& gw, const std::string& target) {
  return *gw.gw().serving()->reflected->sources().at(target);
}

/// The reflection log lines a registry writes, awaited one by one.
class reflection_lines {
public:
  gather::reflection_log sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(json::parse(line));
      added_.notify_all();
    };
  }
  /// The `n`th line (from 0), once written.
  json at(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool came = added_.wait_for(lock, std::chrono::seconds(10), [&] { return lines_.size() > n; });
    REQUIRE(came);
    return lines_[n];
  }

private:
  std::mutex mutex_;
  std::condition_variable added_;
  std::vector<json> lines_;
};

} // namespace

TEST_CASE("grpc reflection: v1 at start, no descriptor of the gateway's own", "[grpc-reflection]") {
  reflecting_library server({"v1"});
  running_gateway gw(reflected_config(server.target()));
  // The gateway asked before it listened: the first request finds both methods.
  auto asked = server.event("\"reflection\"");
  CHECK(asked["api"] == "v1");
  CHECK(asked["asked"] == "linkd.v3.Library");
  auto r = gw.get("/books/978-7?q=three");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const auto body = json::parse(r->body);
  CHECK(body["data"]["meta"]["isbn"] == "978-7");
  CHECK(body["data"]["meta"]["format"] == "EBOOK"); // the enum by name: the type came whole
  CHECK(body["data"]["meta"]["sold"] == "12345678901234");
  CHECK(body["data"]["related"].size() == 3);
  CHECK(source_of(gw, server.target()).api() == "v1");
}

TEST_CASE("grpc reflection: an import that did not come with the file is asked for by name", "[grpc-reflection]") {
  reflecting_library server({"v1", "lean"});
  running_gateway gw(reflected_config(server.target()));
  CHECK(server.event("\"reflection\"")["asked"] == "linkd.v3.Library");
  CHECK(server.event("\"reflection\"")["asked"] == "linkd/v3/extra.proto");
  auto r = gw.get("/books/1?q=three");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(json::parse(r->body)["data"]["meta"]["isbn"] == "1");
}

TEST_CASE("grpc reflection: a server that speaks only v1alpha is asked again in v1alpha", "[grpc-reflection]") {
  reflecting_library server({"v1alpha"});
  running_gateway gw(reflected_config(server.target()));
  CHECK(server.event("\"reflection\"")["api"] == "v1alpha"); // v1 answered UNIMPLEMENTED first
  auto r = gw.get("/books/1?q=ten");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(json::parse(r->body)["data"]["related"].size() == 5);
  CHECK(source_of(gw, server.target()).api() == "v1alpha");
}

TEST_CASE("grpc reflection: a method added after start is asked for once a request names it", "[grpc-reflection]") {
  reflecting_library server({"v1"});
  auto cfg = reflected_config(server.target());
  cfg["routes"][0]["sections"].push_back(
      reflected_section("again", server.target(), "GetBookAgain", {{"isbn", "{isbn}"}},
                        {{"fallback", json::object()}}));
  running_gateway gw(cfg);
  server.event("\"reflection\""); // the start's ask: no GetBookAgain yet
  server.add_method();
  const auto& source = source_of(gw, server.target());
  const auto asks = source.asks_done();
  // The first request that names it: no call, no wait; its target is asked.
  auto r = gw.get("/books/1?q=three");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  auto body = json::parse(r->body);
  CHECK(body["sections"]["again"]["status"] == "error");
  CHECK(body["data"]["meta"]["isbn"] == "1");
  CHECK(server.event("\"reflection\"")["asked"] == "linkd.v3.Library");
  REQUIRE(source.wait_asks(asks + 1, std::chrono::steady_clock::now() + std::chrono::seconds(5)));
  r = gw.get("/books/2?q=three");
  REQUIRE(r);
  body = json::parse(r->body);
  CHECK(body["sections"]["again"]["status"] == "ok");
  CHECK(body["data"]["again"]["isbn"] == "2");
  CHECK(source.unknown_asks() == 1);
  // A method that never comes asks once per 10 s, not once per request.
  cfg["routes"][0]["sections"][2]["grpc"]["method"] = "linkd.v3.Library/Nope";
  REQUIRE(gw.gw().reload(gather::load_config(cfg.dump()), "test"));
  const auto& reloaded = source_of(gw, server.target());
  CHECK(&reloaded == &source); // kept across the reload, with what it gave
  r = gw.get("/books/3?q=three");
  REQUIRE(r);
  body = json::parse(r->body);
  CHECK(body["data"]["meta"]["isbn"] == "3"); // the files it had serve while the reload asks
  CHECK(body["sections"]["again"]["status"] == "error");
  for (int i = 0; i < 5; ++i)
    CHECK(gw.get("/books/4?q=three")->status == 200);
  CHECK(source.unknown_asks() == 1); // the first request's, less than 10 s ago
  // The reload asked again (not paced) and brought what the server has.
  REQUIRE(source.wait_asks(asks + 2, std::chrono::steady_clock::now() + std::chrono::seconds(5)));
  CHECK(source.version() >= 3);
}

TEST_CASE("grpc reflection: a server without reflection ends the sections error at once, the gateway serves on", "[grpc-reflection]") {
  reflecting_library server({});
  auto cfg = reflected_config(server.target());
  cfg["routes"][0]["sections"][0]["required"] = false;
  cfg["routes"][0]["sections"][0]["fallback"] = json::object();
  running_gateway gw(cfg);
  auto r = gw.get("/books/1?q=three");
  REQUIRE(r);
  CHECK(r->status == 200);
  // The server does serve GetBook and SearchBooks: an error here means no call was made.
  const auto body = json::parse(r->body);
  CHECK(body["sections"]["meta"]["status"] == "error");
  CHECK(body["sections"]["related"]["status"] == "error");
  CHECK(source_of(gw, server.target()).api().empty());
  CHECK(source_of(gw, server.target()).version() == 0);
}

TEST_CASE("grpc reflection: Debian's own grpc++ reflection service (v1alpha)", "[grpc-reflection]") {
  // Built beside the gather binary (tests/CMakeLists.txt).
  const std::string binary = GATHER_BINARY;
  gather::test::child_process server(binary.substr(0, binary.rfind('/')) + "/gather_test_grpcpp_server", {});
  auto line = server.wait_for_line("port ");
  REQUIRE(line);
  const std::string target = "http://127.0.0.1:" + line->substr(line->find(' ') + 1);
  auto cfg = gather::test::route_config_json(
      "/books/{isbn}", {reflected_section("meta", target, "GetBook", {{"isbn", "{isbn}"}}, {{"required", true}})}, 800);
  running_gateway gw(cfg);
  auto r = gw.get("/books/978-7");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const auto meta = json::parse(r->body)["data"]["meta"];
  CHECK(meta["title"] == "grpc++");
  CHECK(meta["format"] == "EBOOK");
  CHECK(meta["stock"] == 0); // defaults printed: the whole type came by reflection
  CHECK(source_of(gw, target).api() == "v1alpha");
}

TEST_CASE("grpc reflection: the two messages on the wire", "[grpc-reflection][unit]") {
  namespace rw = gather::reflection_wire;
  // file_containing_symbol is field 4, file_by_filename field 3 (both length-delimited).
  CHECK(rw::symbol_request("a.B") == std::string("\x22\x03" "a.B"));
  CHECK(rw::file_request("x.proto") == std::string("\x1a\x07" "x.proto"));
  rw::response files;
  // valid_host "h", then file_descriptor_response{file_descriptor_proto: "ab", "c"}.
  REQUIRE(rw::parse_response(std::string("\x0a\x01h\x22\x07\x0a\x02" "ab\x0a\x01" "c", 12), files));
  CHECK(files.files == std::vector<std::string>{"ab", "c"});
  CHECK_FALSE(files.is_error);
  rw::response error;
  // error_response{error_code: 5, error_message: "no"}.
  REQUIRE(rw::parse_response(std::string("\x3a\x06\x08\x05\x12\x02no", 8), error));
  CHECK(error.is_error);
  CHECK(error.error_code == 5);
  CHECK(error.error_message == "no");
  rw::response bad;
  CHECK_FALSE(rw::parse_response("", bad));                                      // neither answer
  CHECK_FALSE(rw::parse_response(std::string("\x22\x09\x0a\x02", 4), bad));      // cut short
  CHECK_FALSE(rw::parse_response("<html>", bad));                                // not protobuf
  CHECK_FALSE(rw::parse_response(std::string("\x22\xff\xff\xff\xff\x0f", 6), bad)); // a length past the end
}

TEST_CASE("grpc reflection: a batch's method, and a reflected method no section can call", "[grpc-reflection][batch]") {
  reflecting_library server({"v1"});
  json batch = {{"timeout_ms", 300}, {"fields", {"isbn"}},
                {"grpc", {{"target", server.target()}, {"method", "linkd.v3.Library/GetBook"},
                          {"message", {{"isbn", "{item}"}}}, {"reflection", true}}}};
  auto cfg = gather::test::batch_route_config_json("/books", batch);
  // AddBooks is client streaming: check cannot know it, the server's answer tells.
  auto page = gather::test::route_config_json(
      "/adds/{isbn}", {reflected_section("adds", server.target(), "AddBooks", json::object(),
                                         {{"fallback", json::object()}})}, 800);
  cfg["routes"].push_back(page["routes"][0]);
  running_gateway gw(cfg);
  auto r = gw.post("/books", R"({"items": ["978-1", 7]})");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const auto results = json::parse(r->body)["results"];
  REQUIRE(results.size() == 2);
  CHECK(results[0]["data"] == json{{"isbn", "978-1"}});
  CHECK(results[1]["data"] == json{{"isbn", "7"}});
  r = gw.get("/adds/1");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(json::parse(r->body)["sections"]["adds"]["status"] == "error"); // no call made
}

TEST_CASE("grpc reflection: protos.reflection bounds each ask, and a reload changes the bounds", "[grpc-reflection]") {
  reflecting_library server({"v1"});
  const auto soon = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(10); };
  SECTION("through the gateway: an answer over max_bytes leaves no descriptor; the default serves after a reload") {
    auto cfg = reflected_config(server.target());
    cfg["routes"][0]["sections"][0]["required"] = false;
    cfg["routes"][0]["sections"][0]["fallback"] = json::object();
    cfg["protos"]["reflection"] = {{"max_bytes", 100}}; // library.proto alone is over 1 KiB
    running_gateway gw(cfg);
    const auto& source = source_of(gw, server.target());
    REQUIRE(source.wait_asks(1, soon()));
    CHECK(source.version() == 0);
    auto r = gw.get("/books/1?q=three");
    REQUIRE(r);
    CHECK(json::parse(r->body)["sections"]["meta"]["status"] == "error"); // no descriptor, no call
    CHECK(source.unknown_asks() == 1); // asked again, with the same 100 bytes: fails again
    cfg["protos"].erase("reflection");
    REQUIRE(gw.gw().reload(gather::load_config(cfg.dump()), "test"));
    REQUIRE(source.wait_asks(3, soon())); // the reload's ask, with the default 16 MiB
    CHECK(source.version() == 1);
    r = gw.get("/books/2?q=three");
    REQUIRE(r);
    CHECK(json::parse(r->body)["data"]["meta"]["isbn"] == "2");
  }
  SECTION("the log line of a failed ask names the limit") {
    reflection_lines lines;
    gather::reflection_registry registry(lines.sink());
    gather::downstream_client client;
    auto source = registry.source_for(server.target());
    gather::reflection_limits small;
    small.max_bytes = 100;
    source->ask(client, {"linkd.v3.Library"}, small);
    const auto failed = lines.at(0);
    CHECK(failed["result"] == "failed");
    CHECK(failed["files"] == 0);
    CHECK(failed["detail"].get<std::string>().find("protos.reflection.max_bytes (100)") != std::string::npos);
    source->ask(client, {"linkd.v3.Library"}, gather::reflection_limits{});
    const auto ok = lines.at(1);
    CHECK(ok["result"] == "ok");
    CHECK(ok["files"].get<int>() >= 1);
    CHECK(source->version() == 1);
  }
  SECTION("an ask that needs more calls than max_calls ends failed") {
    reflecting_library lean({"v1", "lean"}); // the import comes only when asked for by name
    reflection_lines lines;
    gather::reflection_registry registry(lines.sink());
    gather::downstream_client client;
    auto source = registry.source_for(lean.target());
    gather::reflection_limits one_call;
    one_call.max_calls = 1;
    source->ask(client, {"linkd.v3.Library"}, one_call);
    const auto failed = lines.at(0);
    CHECK(failed["result"] == "failed");
    CHECK(failed["detail"] == "more than protos.reflection.max_calls (1) calls");
    one_call.max_calls = 2;
    source->ask(client, {"linkd.v3.Library"}, one_call);
    CHECK(lines.at(1)["result"] == "ok");
  }
}
