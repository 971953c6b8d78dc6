#include "request_start.hpp"

#include <algorithm>

#include "gather/front/query_string.hpp"

namespace gather {

inbound_request inbound_of(const request_head& head,
                           std::vector<std::pair<std::string, std::string>> captures,
                           const std::string& request_id, steady_time arrived,
                           const trace_context& trace) {
  inbound_request in;
  in.request_id = request_id;
  in.arrived = arrived;
  in.trace = trace;
  in.captures = std::move(captures);
  in.client_ip = head.client;
  const auto question = head.target.find('?');
  if (question != std::string::npos)
    in.query = parse_query(std::string_view{head.target}.substr(question + 1));
  for (const auto& [name, value] : head.headers)
    in.headers.emplace(name, value);
  return in;
}

steady_time request_deadline(const std::string& header_lower, const inbound_request& in, millis budget) {
  auto deadline = in.arrived + budget;
  if (header_lower.empty())
    return deadline;
  // It shortens the deadline, never lengthens it.
  const auto asked = in.header_value(header_lower);
  if (!asked.empty() && asked.size() <= 6 &&
      std::all_of(asked.begin(), asked.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const auto ms = std::stol(asked);
    if (ms > 0 && ms <= 600000)
      deadline = std::min(deadline, in.arrived + millis{ms});
  }
  return deadline;
}

} // namespace gather
