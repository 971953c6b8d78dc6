// HTTP/2 error codes (RFC 9113 §7) as Gather sends and reads them, on both sides: the front resets
// a client's stream with them, the downstream client sends and tests them. libnghttp2's enum says
// the same; this is for the code that does not include nghttp2.h.
#pragma once

#include <cstdint>

namespace gather::h2_code {

constexpr std::uint32_t no_error = 0x0, protocol_error = 0x1, internal_error = 0x2,
                        flow_control_error = 0x3, refused_stream = 0x7, cancel = 0x8,
                        enhance_your_calm = 0xb, inadequate_security = 0xc;

} // namespace gather::h2_code
