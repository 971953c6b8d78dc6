// gRPC sections as `gather check` reads them (docs/grpc.md): the `grpc` object and
// `protos` without the descriptors, then the checks against real descriptors (a set protoc made,
// and .proto files compiled at load), every problem under its JSON path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gather/config/config.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"

using gather::load_config;
using json = nlohmann::json;

namespace {

json grpc_route(json grpc, json extra = json::object()) {
  json section = {{"name", "meta"}, {"timeout_ms", 300}, {"required", true}, {"grpc", grpc}};
  for (auto& [k, v] : extra.items())
    section[k] = v;
  return {{"routes", {{{"path", "/books/{isbn}"}, {"sections", {section}}}}}};
}

json get_book(json message = {{"isbn", "{isbn}"}}) {
  return {{"target", "http://127.0.0.1:50051"}, {"method", "linkd.v3.Library/GetBook"},
          {"message", message}};
}

json with_set(json cfg) {
  cfg["protos"] = {{"descriptor_sets", {GATHER_TEST_DESCRIPTOR_SET}}};
  return cfg;
}

std::vector<std::string> grpc_problems(const json& cfg) {
  auto loaded = load_config(cfg.dump());
  if (!loaded.value)
    return loaded.problems;
  return gather::attach_proto_catalog(*loaded.value);
}

bool has_grpc_problem(const std::vector<std::string>& all, const std::string& text) {
  const bool found = std::any_of(all.begin(), all.end(), [&](const std::string& p) { return p == text; });
  if (!found)
    for (const auto& p : all)
      UNSCOPED_INFO("problem: " << p);
  return found;
}

} // namespace

TEST_CASE("a gRPC section is read: target, method, message, placeholders", "[unit][config][grpc]") {
  auto loaded = load_config(with_set(grpc_route(get_book({{"isbn", "{isbn}"}, {"n", "x{query.q}y"}})))
                                .dump());
  REQUIRE(loaded.value);
  const auto& s = loaded.value->routes[0].sections[0];
  REQUIRE(s.grpc);
  CHECK(s.url.source.empty());
  CHECK(s.grpc->target == "http://127.0.0.1:50051");
  CHECK(s.grpc->service == "linkd.v3.Library");
  CHECK(s.grpc->method == "GetBook");
  CHECK(s.grpc->full_method() == "linkd.v3.Library/GetBook");
  REQUIRE(s.grpc->placeholders.size() == 2);
  CHECK(s.grpc->placeholders[0].pointer == "/isbn");
  CHECK(s.grpc->placeholders[0].whole);
  CHECK(s.grpc->placeholders[1].pointer == "/n");
  CHECK_FALSE(s.grpc->placeholders[1].whole);
  CHECK(loaded.value->protos.descriptor_sets.size() == 1);
}

TEST_CASE("a gRPC message that reads another section makes the section depend on it",
          "[unit][config][grpc]") {
  json cfg = grpc_route(get_book({{"isbn", "{base.isbn}"}}), {{"required", false}, {"fallback", json::object()}});
  cfg["routes"][0]["sections"].insert(cfg["routes"][0]["sections"].begin(),
                                      json{{"name", "base"}, {"url", "http://127.0.0.1:1/b"},
                                           {"timeout_ms", 100}, {"required", true}});
  auto loaded = load_config(cfg.dump());
  REQUIRE(loaded.value);
  CHECK(loaded.value->routes[0].sections[1].depends_on == std::vector<std::size_t>{0});
  CHECK(loaded.value->routes[0].resolve_order == std::vector<std::size_t>{0, 1});
}

TEST_CASE("the grpc object's own mistakes are problems by path", "[unit][config][grpc]") {
  const std::string at = "routes[0].sections[0]";
  auto problems = load_config(grpc_route({{"target", "http://h:1/x"}, {"method", "GetBook"},
                                          {"message", "x"}, {"max_messages", 0}, {"other", 1}})
                                  .dump())
                      .problems;
  CHECK(has_grpc_problem(problems, at + ".grpc.other: unknown key"));
  CHECK(has_grpc_problem(problems, at + ".grpc.target: must be an origin only (no path, query or user)"));
  CHECK(has_grpc_problem(problems, at + ".grpc.method: must be a string \"package.Service/Method\" (dotted names, one slash)"));
  CHECK(has_grpc_problem(problems, at + ".grpc.message: must be a JSON object (the request message in the proto3 JSON mapping)"));
  CHECK(has_grpc_problem(problems, at + ".grpc.max_messages: must be an integer from 1 to 10000"));

  problems = load_config(grpc_route({{"target", "grpc://h"}}).dump()).problems;
  CHECK(has_grpc_problem(problems, at + ".grpc.target: must start with http:// or https://"));
  CHECK(has_grpc_problem(problems, at + ".grpc.method: is required (a string \"package.Service/Method\")"));
  problems = load_config(grpc_route({{"target", "http://h"}, {"method", "a.B/C"}}).dump()).problems;
  CHECK(has_grpc_problem(problems, at + ".grpc.target: must name its port (\"http://host:port\" or \"https://host:port\")"));

  json both = grpc_route(get_book());
  both["routes"][0]["sections"][0]["url"] = "http://h:1/x";
  CHECK(has_grpc_problem(load_config(both.dump()).problems,
                         at + ": has both \"url\" and \"grpc\" (a section calls one or the other)"));

  problems = load_config(grpc_route(get_book({{"isbn", "{nope}"}, {"q", {{"deep", {"{query.q}", "{x.y}"}}}}})).dump())
                 .problems;
  CHECK(has_grpc_problem(problems, at + ".grpc.message.isbn: {nope}: the route path has no capture {nope}"));
  CHECK(has_grpc_problem(problems, at + ".grpc.message.q.deep[1]: {x.y}: this route has no section \"x\""));
}

TEST_CASE("a batch's grpc message must contain {item}", "[unit][config][grpc]") {
  json cfg = {{"routes", {{{"path", "/b"}, {"batch", {{"timeout_ms", 100}, {"grpc", get_book({{"isbn", "x"}})}}}}}}};
  CHECK(has_grpc_problem(load_config(cfg.dump()).problems,
                         "routes[0].batch.grpc: its message must contain {item}"));
  cfg["routes"][0]["batch"]["grpc"]["message"]["isbn"] = "{item}";
  auto loaded = load_config(cfg.dump());
  REQUIRE(loaded.value);
  REQUIRE(loaded.value->routes[0].batch->grpc);
  CHECK(loaded.value->routes[0].batch->grpc->placeholders[0].whole);
}

TEST_CASE("protos: lists of names, import_paths only with files", "[unit][config][grpc]") {
  json cfg = grpc_route(get_book());
  cfg["protos"] = {{"descriptor_sets", {""}}, {"import_paths", {"/x"}}, {"extra", true}};
  auto problems = load_config(cfg.dump()).problems;
  CHECK(has_grpc_problem(problems, "protos.extra: unknown key"));
  CHECK(has_grpc_problem(problems, "protos.descriptor_sets[0]: must be a non-empty file name"));
  CHECK(has_grpc_problem(problems, "protos.import_paths: only with \"files\" (the .proto files found under them)"));
}

TEST_CASE("protos.reflection: the reflection limits, their defaults and ranges", "[unit][config][grpc]") {
  auto loaded = load_config(grpc_route(get_book()).dump());
  REQUIRE(loaded.value);
  const auto& defaults = loaded.value->protos.reflection;
  CHECK(defaults.call_timeout == std::chrono::milliseconds(5000));
  CHECK(defaults.max_bytes == 16777216);
  CHECK(defaults.max_calls == 64);
  CHECK(defaults.pace == std::chrono::milliseconds(10000));
  CHECK(defaults.start_wait == std::chrono::milliseconds(5000));

  json cfg = grpc_route(get_book());
  cfg["protos"]["reflection"] = {{"timeout_ms", 250}, {"max_bytes", 100}, {"max_calls", 3},
                                 {"pace_ms", 1}, {"start_wait_ms", 0}};
  loaded = load_config(cfg.dump());
  REQUIRE(loaded.value);
  const auto& set = loaded.value->protos.reflection;
  CHECK(set.call_timeout == std::chrono::milliseconds(250));
  CHECK(set.max_bytes == 100);
  CHECK(set.max_calls == 3);
  CHECK(set.pace == std::chrono::milliseconds(1));
  CHECK(set.start_wait == std::chrono::milliseconds(0));

  cfg["protos"]["reflection"] = {{"timeout_ms", 0}, {"max_bytes", 1073741825}, {"max_calls", 0},
                                 {"pace_ms", "10"}, {"start_wait_ms", -1}, {"wait_ms", 5}};
  auto problems = load_config(cfg.dump()).problems;
  CHECK(problems.size() == 6);
  CHECK(has_grpc_problem(problems, "protos.reflection.timeout_ms: must be an integer from 1 to 600000"));
  CHECK(has_grpc_problem(problems, "protos.reflection.max_bytes: must be an integer from 1 to 1073741824"));
  CHECK(has_grpc_problem(problems, "protos.reflection.max_calls: must be an integer from 1 to 10000"));
  CHECK(has_grpc_problem(problems, "protos.reflection.pace_ms: must be an integer from 1 to 3600000"));
  CHECK(has_grpc_problem(problems, "protos.reflection.start_wait_ms: must be an integer from 0 to 600000"));
  CHECK(has_grpc_problem(problems, "protos.reflection.wait_ms: unknown key"));
  cfg["protos"]["reflection"] = 5;
  CHECK(has_grpc_problem(load_config(cfg.dump()).problems, "protos.reflection: must be an object"));
}

TEST_CASE("check: gRPC sections against a descriptor set", "[unit][config][grpc]") {
  const std::string at = "routes[0].sections[0].grpc";
  SECTION("a good section builds its plan") {
    auto loaded = load_config(with_set(grpc_route(get_book())).dump());
    REQUIRE(loaded.value);
    REQUIRE(gather::attach_proto_catalog(*loaded.value).empty());
    REQUIRE(loaded.value->descriptors);
    const auto& plan = loaded.value->descriptors->sections[0][0];
    REQUIRE(plan);
    CHECK(plan->method->full_name() == "linkd.v3.Library.GetBook");
    CHECK(plan->as_text == std::vector<bool>{true});
    CHECK(plan->output_url == "type.googleapis.com/linkd.v3.Book");
  }
  SECTION("an unknown method or service") {
    json grpc = get_book();
    grpc["method"] = "linkd.v3.Library/Nope";
    CHECK(has_grpc_problem(grpc_problems(with_set(grpc_route(grpc))),
                           at + ".method: service linkd.v3.Library has no method Nope (or set \"reflection\": true to ask the server)"));
    grpc["method"] = "linkd.v9.Library/GetBook";
    CHECK(has_grpc_problem(grpc_problems(with_set(grpc_route(grpc))),
                           at + ".method: no descriptor set or file of \"protos\" has service linkd.v9.Library (or set \"reflection\": true to ask the server)"));
    grpc["reflection"] = true; // the server may know it: not check's to say
    CHECK(grpc_problems(with_set(grpc_route(grpc))).empty());
  }
  SECTION("client and bidirectional streaming") {
    json grpc = get_book(json::object());
    grpc["method"] = "linkd.v3.Library/AddBooks";
    CHECK(has_grpc_problem(grpc_problems(with_set(grpc_route(grpc))),
                           at + ".method: linkd.v3.Library.AddBooks is client streaming: only unary and server-streaming methods can be called"));
    grpc["method"] = "linkd.v3.Library/WatchBooks";
    CHECK(has_grpc_problem(grpc_problems(with_set(grpc_route(grpc))),
                           at + ".method: linkd.v3.Library.WatchBooks is bidirectional streaming: only unary and server-streaming methods can be called"));
  }
  SECTION("max_messages on a unary method, or missing on a stream") {
    json grpc = get_book();
    grpc["max_messages"] = 5;
    CHECK(has_grpc_problem(grpc_problems(with_set(grpc_route(grpc))),
                           at + ".max_messages: only for a server-streaming method (linkd.v3.Library.GetBook is unary)"));
    grpc = get_book({{"query", "{isbn}"}, {"page_size", 5}});
    grpc["method"] = "linkd.v3.Library/SearchBooks";
    CHECK(has_grpc_problem(grpc_problems(with_set(grpc_route(grpc))),
                           at + ": needs \"max_messages\" (1 to 10000): linkd.v3.Library.SearchBooks is server streaming"));
    grpc["max_messages"] = 5;
    CHECK(grpc_problems(with_set(grpc_route(grpc))).empty());
  }
  SECTION("message keys the input type lacks, values it cannot hold") {
    json grpc = get_book({{"query", "x"},
                          {"pageSize", "abc"},
                          {"filter", {{"tags", {"a", 1}}, {"nope", 1}, {"minSold", "12"}}},
                          {"extra", {{"any", {1, "two"}}}},
                          {"labels", {{"k", "{isbn}"}}}});
    grpc["method"] = "linkd.v3.Library/SearchBooks";
    grpc["max_messages"] = 5;
    auto problems = grpc_problems(with_set(grpc_route(grpc)));
    CHECK(problems.size() == 3);
    CHECK(has_grpc_problem(problems, at + ".message.filter.nope: linkd.v3.Filter has no field \"nope\""));
    CHECK(std::count_if(problems.begin(), problems.end(), [&](const std::string& p) {
            return p.rfind(at + ".message.pageSize: ", 0) == 0;
          }) == 1);
    CHECK(std::count_if(problems.begin(), problems.end(), [&](const std::string& p) {
            return p.rfind(at + ".message.filter.tags: ", 0) == 0;
          }) == 1);
  }
  SECTION("a placeholder into a string field goes in as text, into others as its own type") {
    json grpc = get_book({{"query", "{isbn}"}, {"page_size", "{query.n}"}, {"labels", {{"k", "{isbn}"}}},
                          {"extra", "{query.x}"}, {"filter", {{"tags", {"{isbn}"}}}}});
    grpc["method"] = "linkd.v3.Library/SearchBooks";
    grpc["max_messages"] = 5;
    auto loaded = load_config(with_set(grpc_route(grpc)).dump());
    REQUIRE(loaded.value);
    REQUIRE(gather::attach_proto_catalog(*loaded.value).empty());
    const auto& section = loaded.value->routes[0].sections[0];
    const auto& plan = *loaded.value->descriptors->sections[0][0];
    REQUIRE(plan.as_text.size() == section.grpc->placeholders.size());
    for (std::size_t i = 0; i < plan.as_text.size(); ++i) {
      const auto& pointer = section.grpc->placeholders[i].pointer;
      INFO(pointer);
      CHECK(plan.as_text[i] == (pointer != "/page_size" && pointer != "/extra"));
    }
  }
}

TEST_CASE("check: descriptor sets and .proto files that cannot be used", "[unit][config][grpc]") {
  json cfg = grpc_route(get_book());
  cfg["protos"] = {{"descriptor_sets", {"/nonexistent/library.pb"}}};
  CHECK(has_grpc_problem(grpc_problems(cfg),
                         "protos.descriptor_sets[0]: cannot read \"/nonexistent/library.pb\""));
  const std::string garbage = "/tmp/gather-grpc-config-test-garbage.pb";
  std::ofstream(garbage) << "\xff\xff\xff not a descriptor set";
  cfg["protos"] = {{"descriptor_sets", {garbage}}};
  CHECK(has_grpc_problem(grpc_problems(cfg),
                         "protos.descriptor_sets[0]: \"" + garbage +
                             "\" is not a FileDescriptorSet (protoc --include_imports --descriptor_set_out)"));
  cfg["protos"] = {{"files", {"linkd/v3/missing.proto"}}, {"import_paths", {GATHER_TEST_PROTOS}}};
  auto problems = grpc_problems(cfg);
  REQUIRE(!problems.empty());
  CHECK(problems[0].rfind("protos.files[0]: ", 0) == 0);
  const std::string broken_dir = "/tmp/gather-grpc-config-test-protos";
  std::filesystem::create_directories(broken_dir);
  std::ofstream(broken_dir + "/broken.proto") << "syntax = \"proto3\";\nmessage A { strin x = 1; }\n";
  cfg["protos"] = {{"files", {"broken.proto"}}, {"import_paths", {broken_dir}}};
  problems = grpc_problems(cfg);
  REQUIRE(!problems.empty());
  CHECK(problems[0].rfind("protos.files[0]: broken.proto:2:", 0) == 0);
}

TEST_CASE("check: .proto files compiled at load, well-known types importable", "[unit][config][grpc]") {
  json grpc = get_book({{"query", "q"}, {"extra", {{"a", 1}}}});
  grpc["method"] = "linkd.v3.Library/SearchBooks";
  grpc["max_messages"] = 3;
  json cfg = grpc_route(grpc);
  cfg["protos"] = {{"files", {"linkd/v3/library.proto"}}, {"import_paths", {GATHER_TEST_PROTOS}}};
  auto loaded = load_config(cfg.dump());
  REQUIRE(loaded.value);
  const auto problems = gather::attach_proto_catalog(*loaded.value);
  for (const auto& p : problems)
    UNSCOPED_INFO(p);
  REQUIRE(problems.empty());
  REQUIRE(loaded.value->descriptors->sections[0][0]);
  CHECK(loaded.value->descriptors->sections[0][0]->server_streaming());
  // The same file from a set and from source is one file, not a conflict.
  cfg["protos"]["descriptor_sets"] = {GATHER_TEST_DESCRIPTOR_SET};
  CHECK(grpc_problems(cfg).empty());
}
