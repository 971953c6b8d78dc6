// The X-Request-Id of a request (docs/api.md): the client's when it is well formed, else a new one.
#pragma once

#include <string>

#include "gather/values/request_head.hpp"

namespace gather {

/// The X-Request-Id rule: the inbound id when it is [A-Za-z0-9._-]{1,64}, else a fresh one.
std::string request_id_for(const request_head& head);

} // namespace gather
