#include "gather/answer/batch_response.hpp"

namespace gather {

batch_counts count_rows(const batch_plan& plan, const std::vector<section_outcome>& calls) {
  batch_counts counts;
  for (auto call : plan.call_of_row) {
    switch (calls[call].status) {
      case section_status::ok: ++counts.ok; break;
      case section_status::timeout: ++counts.timeout; break;
      case section_status::rejected: ++counts.rejected; break;
      case section_status::error:
      case section_status::skipped: ++counts.error; break; // a batch call is never skipped
    }
  }
  return counts;
}

http_reply build_batch_reply(const batch_plan& plan, const std::vector<section_outcome>& calls) {
  // Sized once: a large batch's data is copied into the body exactly once, with no regrowth.
  std::size_t size = 96;
  for (std::size_t row = 0; row < plan.rows.size(); ++row)
    size += plan.rows[row].size() + calls[plan.call_of_row[row]].data.size() + 64;
  std::string body;
  body.reserve(size);
  body += "{\"results\":[";
  for (std::size_t row = 0; row < plan.rows.size(); ++row) {
    const auto& call = calls[plan.call_of_row[row]];
    if (row > 0)
      body += ',';
    body += "{\"item\":";
    body += plan.rows[row];
    body += ",\"status\":\"";
    body += to_string(call.status);
    body += '"';
    if (call.status == section_status::ok) {
      body += ",\"data\":";
      body += call.data;
    }
    body += ",\"attempts\":";
    body += std::to_string(call.attempts);
    body += '}';
  }
  const auto counts = count_rows(plan, calls);
  body += "],\"counts\":{\"ok\":" + std::to_string(counts.ok) +
          ",\"timeout\":" + std::to_string(counts.timeout) +
          ",\"error\":" + std::to_string(counts.error) +
          ",\"rejected\":" + std::to_string(counts.rejected) + "},\"degraded\":";
  body += counts.ok == plan.rows.size() ? "false}" : "true}";
  http_reply reply;
  reply.body = std::move(body);
  return reply;
}

} // namespace gather
