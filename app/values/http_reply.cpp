#include "gather/values/http_reply.hpp"

#include <nlohmann/json.hpp>

namespace gather {

http_reply error_reply(int status, const std::string& code, const std::string& request_id,
                       const std::string& section, const std::string& message) {
  nlohmann::json body = {{"error", code}, {"request_id", request_id}};
  if (!section.empty())
    body["section"] = section;
  if (!message.empty())
    body["message"] = message;
  http_reply reply;
  reply.status = status;
  reply.body = body.dump();
  return reply;
}

} // namespace gather
