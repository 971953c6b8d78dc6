// A finished HTTP answer, built away from the HTTP library (by coordinators and error paths).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gather {

struct http_reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers; ///< besides Content-Type, X-Request-Id
};

/// `{"error": CODE, "request_id": ID}` plus `"section": NAME` when a section caused it (docs/api.md#errors),
/// and `"message": TEXT` when the client can be told what to fix (a refused batch body).
http_reply error_reply(int status, const std::string& code, const std::string& request_id,
                       const std::string& section = {}, const std::string& message = {});

} // namespace gather
