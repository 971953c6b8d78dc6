// Content negotiation (RFC 9110 §12.5): which answer format `Accept` asks for, which content
// coding `Accept-Encoding` allows. Case-insensitive, q-values honoured.
#pragma once

#include <string_view>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/values/answer_format.hpp"

namespace gather {

/// A progressive format among `offered` when `Accept` names it explicitly with a q above 0 and at
/// least that of application/json (exact, `application/*` or `*/*`); otherwise json. Wildcards
/// never ask for a stream. Two streams named: the higher q, then the one listed first.
answer_format choose_format(std::string_view accept, const std::vector<answer_format>& offered);

/// The first of `offered` (the configured preference) that `Accept-Encoding` accepts: named with
/// a q above 0, or covered by `*` with a q above 0 and not named with q=0. `x-gzip` is gzip. No
/// header, or nothing acceptable: identity.
content_coding choose_coding(std::string_view accept_encoding, const std::vector<content_coding>& offered);

/// `Content-Encoding`'s token for a coding ("br", "gzip"; "identity").
const char* coding_token(content_coding coding);

} // namespace gather
