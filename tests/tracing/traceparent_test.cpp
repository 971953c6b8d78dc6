// W3C traceparent: parsing (version 00 rules, future versions, invalid values), formatting, ids,
// the ratio sampler and the trace a request starts.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <set>
#include <string>

#include "gather/tracing/call_span.hpp"
#include "gather/tracing/traceparent.hpp"
#include "support/trace_text.hpp"

using namespace gather;
using gather::test::text;

namespace {

const std::string trace_hex = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string parent_hex = "00f067aa0ba902b7";

bool lower_hex(const std::string& s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

} // namespace

TEST_CASE("traceparent: a valid version 00 value gives its trace id, parent id and flag", "[unit][tracing]") {
  auto sampled = parse_traceparent("00-" + trace_hex + "-" + parent_hex + "-01");
  REQUIRE(sampled);
  CHECK(text(sampled->trace_id) == trace_hex);
  CHECK(text(sampled->parent_id) == parent_hex);
  CHECK(sampled->sampled);
  auto unsampled = parse_traceparent("00-" + trace_hex + "-" + parent_hex + "-00");
  REQUIRE(unsampled);
  CHECK_FALSE(unsampled->sampled);
  // Other flag bits are not the sampled bit.
  auto other_bits = parse_traceparent("00-" + trace_hex + "-" + parent_hex + "-02");
  REQUIRE(other_bits);
  CHECK_FALSE(other_bits->sampled);
  CHECK(parse_traceparent("00-" + trace_hex + "-" + parent_hex + "-03")->sampled);
}

TEST_CASE("traceparent: invalid values are refused", "[unit][tracing]") {
  const std::string good = "00-" + trace_hex + "-" + parent_hex + "-01";
  REQUIRE(parse_traceparent(good));
  const char* bad[] = {
    "",
    "00",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",      // short flags
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",    // v00 with more
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     // upper-case trace id
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",     // upper-case parent id
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     // all-zero trace id
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     // all-zero parent id
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // version ff
    "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // not hex
    "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // separator
    "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",     // misplaced dash
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",     // flags not hex
    "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",    // future: no dash after
  };
  for (const char* value : bad) {
    INFO(value);
    CHECK_FALSE(parse_traceparent(value));
  }
}

TEST_CASE("traceparent: a future version is read leniently from its first 55 characters", "[unit][tracing]") {
  auto exact = parse_traceparent("01-" + trace_hex + "-" + parent_hex + "-01");
  REQUIRE(exact);
  CHECK(text(exact->trace_id) == trace_hex);
  auto more = parse_traceparent("cc-" + trace_hex + "-" + parent_hex + "-01-what-the-future-adds");
  REQUIRE(more);
  CHECK(text(more->parent_id) == parent_hex);
  CHECK(more->sampled);
}

TEST_CASE("traceparent: formatting is version 00 and parses back", "[unit][tracing]") {
  const auto trace = new_trace_id();
  const auto span = new_span_id();
  const auto out = format_traceparent(trace, span, true);
  CHECK(out == "00-" + text(trace) + "-" + text(span) + "-01");
  CHECK(format_traceparent(trace, span, false).substr(53) == "00");
  auto back = parse_traceparent(out);
  REQUIRE(back);
  CHECK(back->trace_id == trace);
  CHECK(back->parent_id == span);
}

TEST_CASE("traceparent: new ids are lower-case hex, never zero, and do not repeat", "[unit][tracing]") {
  std::set<std::string> traces, spans;
  for (int i = 0; i < 10000; ++i) {
    const auto t = text(new_trace_id());
    const auto s = text(new_span_id());
    REQUIRE(lower_hex(t));
    REQUIRE(lower_hex(s));
    traces.insert(t);
    spans.insert(s);
  }
  CHECK(traces.size() == 10000);
  CHECK(spans.size() == 10000);
  // Every position takes every digit: no digit of the random bits is lost in their writing.
  for (const auto* ids : {&traces, &spans})
    for (std::size_t at = 0; at < ids->begin()->size(); ++at) {
      std::set<char> seen;
      for (const auto& id : *ids)
        seen.insert(id[at]);
      INFO((ids == &traces ? "trace" : "span") << " id position " << at);
      CHECK(seen.size() == 16);
    }
}

TEST_CASE("traceparent: the ratio sampler keeps about its share of new traces", "[unit][tracing]") {
  int kept = 0;
  for (int i = 0; i < 20000; ++i)
    kept += sample_new_trace(new_trace_id(), 0.25) ? 1 : 0;
  CHECK(kept > 4400);
  CHECK(kept < 5600);
  const auto any = new_trace_id();
  CHECK(sample_new_trace(any, 1.0));
  CHECK_FALSE(sample_new_trace(any, 0.0));
  // Decided by the id: the same trace, the same decision.
  CHECK(sample_new_trace(any, 0.5) == sample_new_trace(any, 0.5));
}

TEST_CASE("traceparent: a request continues a valid trace, honours its flag, else starts one", "[unit][tracing]") {
  const auto now = std::chrono::steady_clock::now();
  auto continued = start_trace("00-" + trace_hex + "-" + parent_hex + "-01", now, 0.0);
  CHECK(continued.trace_id_text() == trace_hex);
  CHECK(continued.has_parent);
  CHECK(text(continued.parent_id) == parent_hex);
  CHECK(continued.sampled); // the caller sampled it: the ratio does not undo that
  CHECK(continued.span_id_text() != parent_hex);
  CHECK(start_trace("00-" + trace_hex + "-" + parent_hex + "-00", now, 1.0).sampled == false);

  auto fresh = start_trace("not a traceparent", now, 1.0);
  CHECK(fresh.trace_id_text() != trace_hex);
  CHECK_FALSE(fresh.has_parent);
  CHECK(fresh.sampled);
  CHECK_FALSE(start_trace("", now, 0.0).sampled);
  const auto unix_now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(std::abs(fresh.start_unix_ns - unix_now) < 1000000000LL);
}

TEST_CASE("call span: the traceparent line is the one that starts a line, and gets a new span id",
          "[unit][tracing]") {
  const std::string request_line = "traceparent: 00-" + trace_hex + "-" + parent_hex + "-01";
  // The name inside another line's value is not the line (a forwarded header may hold anything).
  const std::string before = "X-Request-Id: abc\r\nX-Note: traceparent: 00-" + trace_hex + "-" + parent_hex +
                             "-01\r\nXtraceparent: 1\r\n";
  for (const std::string& head : {std::string{}, before}) {
    for (const bool written : {false, true}) {
      INFO("lines before: " << head.size() << ", written: " << written);
      std::string block = head + request_line + "\r\nAccept: application/json\r\n";
      const auto parsed = parse_traceparent(request_line.substr(13));
      REQUIRE(parsed);
      auto span = call_span::begin(nullptr, block, "s", 1, written ? &*parsed : nullptr);
      REQUIRE(span.started());
      const std::string expected_line =
        "traceparent: 00-" + trace_hex + "-" + text(span.span_id()) + "-01";
      CHECK(block == head + expected_line + "\r\nAccept: application/json\r\n");
      CHECK(text(span.span_id()) != parent_hex);
    }
  }
  std::string none = "X-Note: traceparent: 00-" + trace_hex + "-" + parent_hex + "-01\r\n";
  const auto unchanged = none;
  CHECK_FALSE(call_span::begin(nullptr, none, "s", 1).started());
  CHECK(none == unchanged);
}
