// Accept and Accept-Encoding with q-values: which answer format, which content coding.
#include <catch2/catch.hpp>

#include "gather/front/negotiation.hpp"

using gather::answer_format;
using gather::choose_coding;
using gather::choose_format;
using gather::content_coding;

namespace {
const std::vector<answer_format> both{answer_format::ndjson, answer_format::sse};
const std::vector<content_coding> br_gzip{content_coding::br, content_coding::gzip};
} // namespace

TEST_CASE("Accept: a stream only when named, with a q above 0 and at least json's", "[unit][negotiation]") {
  CHECK(choose_format("", both) == answer_format::json);
  CHECK(choose_format("application/json", both) == answer_format::json);
  CHECK(choose_format("*/*", both) == answer_format::json);
  CHECK(choose_format("application/*", both) == answer_format::json);
  CHECK(choose_format("application/x-ndjson", both) == answer_format::ndjson);
  CHECK(choose_format("APPLICATION/X-NDJSON", both) == answer_format::ndjson);
  CHECK(choose_format("text/event-stream", both) == answer_format::sse);
  CHECK(choose_format("Text/Event-Stream; charset=utf-8", both) == answer_format::sse);
  CHECK(choose_format("application/x-ndjson, */*;q=0.1", both) == answer_format::ndjson);
  CHECK(choose_format("application/x-ndjson;q=0", both) == answer_format::json);
  CHECK(choose_format("application/x-ndjson;q=0.5, application/json", both) == answer_format::json);
  CHECK(choose_format("application/x-ndjson;q=0.5, application/json;q=0.5", both) == answer_format::ndjson);
  CHECK(choose_format("application/x-ndjson;q=0.5, */*", both) == answer_format::json);
  CHECK(choose_format("application/x-ndjson;q=0.5, application/*;q=0.4", both) == answer_format::ndjson);
  // The most specific range decides json's q: application/json;q=0 beats */*.
  CHECK(choose_format("application/x-ndjson;q=0.1, application/json;q=0, */*", both) == answer_format::ndjson);
  // Two streams: the higher q, then the first listed.
  CHECK(choose_format("application/x-ndjson;q=0.4, text/event-stream;q=0.9", both) == answer_format::sse);
  CHECK(choose_format("text/event-stream, application/x-ndjson", both) == answer_format::sse);
  CHECK(choose_format("application/x-ndjson, text/event-stream", both) == answer_format::ndjson);
  // Only what the route offers (a batch route streams NDJSON only).
  CHECK(choose_format("text/event-stream", {answer_format::ndjson}) == answer_format::json);
  // Malformed q drops its element; whitespace and empty elements are fine.
  CHECK(choose_format("application/x-ndjson;q=2", both) == answer_format::json);
  CHECK(choose_format("application/x-ndjson;q=abc", both) == answer_format::json);
  CHECK(choose_format(" , application/x-ndjson ; q = 0.8 ,", both) == answer_format::ndjson);
  CHECK(choose_format("application/x-ndjson;q=1.000", both) == answer_format::ndjson);
  CHECK(choose_format("application/x-ndjson;q=1.001", both) == answer_format::json);
  CHECK(choose_format("application/x-ndjson;ext=\"a,b\";q=0.9", both) == answer_format::ndjson);
}

TEST_CASE("Accept-Encoding: the first configured coding the client accepts", "[unit][negotiation]") {
  CHECK(choose_coding("", br_gzip) == content_coding::identity);
  CHECK(choose_coding("identity", br_gzip) == content_coding::identity);
  CHECK(choose_coding("gzip", br_gzip) == content_coding::gzip);
  CHECK(choose_coding("GZIP", br_gzip) == content_coding::gzip);
  CHECK(choose_coding("x-gzip", br_gzip) == content_coding::gzip);
  CHECK(choose_coding("gzip, deflate, br", br_gzip) == content_coding::br);
  CHECK(choose_coding("gzip, br", {content_coding::gzip, content_coding::br}) == content_coding::gzip);
  CHECK(choose_coding("br;q=0, gzip", br_gzip) == content_coding::gzip);
  CHECK(choose_coding("br;q=0, gzip;q=0", br_gzip) == content_coding::identity);
  CHECK(choose_coding("*", br_gzip) == content_coding::br);
  CHECK(choose_coding("*;q=0", br_gzip) == content_coding::identity);
  CHECK(choose_coding("br;q=0, *", br_gzip) == content_coding::gzip);
  CHECK(choose_coding("gzip;q=0.001", br_gzip) == content_coding::gzip);
  CHECK(choose_coding("deflate", br_gzip) == content_coding::identity);
  CHECK(choose_coding("br", {content_coding::gzip}) == content_coding::identity);
}
