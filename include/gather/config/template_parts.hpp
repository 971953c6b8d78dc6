// The pieces a configuration's templates are made of, parsed once by the config reader: a URL
// template's literal text and placeholders, a reference to another section's field, and the
// configuration's unit of time. Shared by config.hpp, grpc_config.hpp and upstream_config.hpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace gather {

using millis = std::chrono::milliseconds;

/// A dotted path into a JSON object: "a.b" -> {"a", "b"}.
using field_path = std::vector<std::string>;

/// One piece of a URL template: literal text or a placeholder to substitute.
struct url_part {
  enum class kind {
    literal, ///< `text` is copied as written
    capture, ///< `{id}`: path capture named `text`
    query,   ///< `{query.q}`: inbound query parameter named `text`
    header,  ///< `{header.h}`: inbound header named `text` (stored lower-case)
    section, ///< `{s.a.b}`: field `field` of section `text`'s data (index `section`)
    item,    ///< `{item}`: the batch item (batch routes only)
    claim,   ///< `{claim.NAME}`: claim `text` of the request's verified token (routes with auth)
    client,  ///< `{client.ip}`: the client's address (the peer, or through `trusted_proxies`)
    body,    ///< `{body}`, `{body.a.b}`: the request's JSON body, or field `field` of it (write routes)
  };
  kind what = kind::literal;
  std::string text;
  field_path field;        ///< kind::section and kind::body (empty: the whole body)
  std::size_t section = 0; ///< kind::section only: index in the route's `sections`
};

/// A parsed `url`. Placeholders only ever stand in the path or the query (never scheme, host, port).
struct url_template {
  std::string source; ///< as written in the config
  std::vector<url_part> parts;
};

/// A reference `s.a.b` to a field of another section's data.
struct field_ref {
  std::size_t section = 0; ///< index in the route's `sections`
  field_path field;        ///< may be empty: the whole data
};

} // namespace gather
