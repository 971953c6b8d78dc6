#include "gather/values/section_outcome.hpp"

namespace gather {

const char* to_string(section_status status) {
  switch (status) {
    case section_status::ok: return "ok";
    case section_status::timeout: return "timeout";
    case section_status::error: return "error";
    case section_status::rejected: return "rejected";
    case section_status::skipped: return "skipped";
  }
  return "error";
}

const char* to_string(data_source source) {
  switch (source) {
    case data_source::live: return "live";
    case data_source::cache: return "cache";
    case data_source::fallback: return "fallback";
    case data_source::stale: return "stale";
  }
  return "live";
}

const char* to_string(not_made_reason why) {
  switch (why) {
    case not_made_reason::none: return "";
    case not_made_reason::max_concurrent: return "max_concurrent";
    case not_made_reason::circuit_open: return "circuit_open";
    case not_made_reason::retry_budget: return "retry_budget";
    case not_made_reason::bad_body: return "bad_body";
  }
  return "";
}

} // namespace gather
