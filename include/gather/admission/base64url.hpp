// base64url (RFC 4648 §5) without padding, as JOSE writes it (RFC 7515 §2). OpenSSL decodes only
// the standard alphabet and pads; this small routine is strict instead: padding, whitespace and
// characters outside the alphabet are refused, and so are non-zero bits after the last character
// (each text has exactly one decoding, so a token cannot be re-spelt and still verify).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gather {

/// The bytes `text` encodes; nullopt when it is not canonical unpadded base64url.
std::optional<std::string> base64url_decode(std::string_view text);

/// Unpadded base64url of `bytes`.
std::string base64url_encode(std::string_view bytes);

} // namespace gather
