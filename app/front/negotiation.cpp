#include "gather/front/negotiation.hpp"

#include <optional>
#include <string>

#include "gather/values/header_text.hpp"

namespace gather {

namespace {

struct weighted {
  std::string name; ///< lower-case: a media range or a coding
  double q = 1.0;
};

/// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ); nullopt when malformed.
std::optional<double> parse_q(std::string_view text) {
  if (text.empty() || text.size() > 5 || (text[0] != '0' && text[0] != '1'))
    return std::nullopt;
  if (text.size() > 1 && text[1] != '.')
    return std::nullopt;
  double q = text[0] - '0';
  double scale = 0.1;
  for (std::size_t i = 2; i < text.size(); ++i, scale /= 10) {
    if (text[i] < '0' || text[i] > '9' || (text[0] == '1' && text[i] != '0'))
      return std::nullopt;
    q += (text[i] - '0') * scale;
  }
  return q;
}

/// Splits at commas outside quoted strings; each element's name (lower-case, parameters other than
/// q dropped) and q. A malformed q drops its element.
std::vector<weighted> parse_list(std::string_view header) {
  std::vector<weighted> out;
  std::size_t start = 0;
  bool quoted = false;
  for (std::size_t i = 0; i <= header.size(); ++i) {
    if (i < header.size()) {
      if (header[i] == '"' && (i == 0 || header[i - 1] != '\\'))
        quoted = !quoted;
      if (quoted || header[i] != ',')
        continue;
    }
    auto element = header.substr(start, i - start);
    start = i + 1;
    const auto semicolon = element.find(';');
    const auto name = trim_ows(element.substr(0, semicolon));
    if (name.empty())
      continue;
    weighted entry;
    for (char c : name)
      entry.name += lower_ascii(c);
    bool valid = true;
    for (auto params = semicolon == std::string_view::npos ? std::string_view{} : element.substr(semicolon + 1);
         !params.empty();) {
      const auto next = params.find(';');
      const auto param = trim_ows(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
      const auto eq = param.find('=');
      if (eq != std::string_view::npos && trim_ows(param.substr(0, eq)).size() == 1 && lower_ascii(param[0]) == 'q') {
        const auto q = parse_q(trim_ows(param.substr(eq + 1)));
        valid = q.has_value();
        if (q)
          entry.q = *q;
      }
    }
    if (valid)
      out.push_back(std::move(entry));
  }
  return out;
}

/// q of `type/subtype` by the most specific range that matches it; 0 when none does.
double media_q(const std::vector<weighted>& ranges, std::string_view type, bool wildcards) {
  const auto slash = type.find('/');
  const std::string major_any = std::string(type.substr(0, slash)) + "/*";
  std::optional<double> exact, major, any;
  for (const auto& range : ranges) {
    if (range.name == type)
      exact = exact ? std::max(*exact, range.q) : range.q;
    else if (wildcards && range.name == major_any)
      major = major ? std::max(*major, range.q) : range.q;
    else if (wildcards && range.name == "*/*")
      any = any ? std::max(*any, range.q) : range.q;
  }
  return exact ? *exact : major ? *major : any ? *any : 0.0;
}

} // namespace

answer_format choose_format(std::string_view accept, const std::vector<answer_format>& offered) {
  // What most clients send (curl, fetch(), many libraries): no offered type other than JSON can
  // match `*/*` exactly, so it is JSON, without a list parsed and a string made per offered type.
  if (accept.empty() || accept == "*/*")
    return answer_format::json;
  const auto ranges = parse_list(accept);
  if (ranges.empty())
    return answer_format::json;
  std::optional<answer_format> best;
  double best_q = 0;
  std::size_t best_at = ranges.size();
  for (const auto format : offered) {
    const std::string type = media_type(format);
    for (std::size_t at = 0; at < ranges.size(); ++at) {
      if (ranges[at].name != type)
        continue;
      const double q = media_q(ranges, type, false);
      if (q > best_q || (q == best_q && q > 0 && at < best_at)) {
        best = format;
        best_q = q;
        best_at = at;
      }
      break;
    }
  }
  if (!best || best_q <= 0 || best_q < media_q(ranges, "application/json", true))
    return answer_format::json;
  return *best;
}

const char* coding_token(content_coding coding) {
  switch (coding) {
    case content_coding::br: return "br";
    case content_coding::gzip: return "gzip";
    case content_coding::identity: break;
  }
  return "identity";
}

content_coding choose_coding(std::string_view accept_encoding, const std::vector<content_coding>& offered) {
  const auto codings = parse_list(accept_encoding);
  for (const auto coding : offered) {
    const std::string token = coding_token(coding);
    std::optional<double> named, any;
    for (const auto& entry : codings) {
      if (entry.name == token || (coding == content_coding::gzip && entry.name == "x-gzip"))
        named = named ? std::max(*named, entry.q) : entry.q;
      else if (entry.name == "*")
        any = any ? std::max(*any, entry.q) : entry.q;
    }
    if ((named ? *named : any ? *any : 0.0) > 0)
      return coding;
  }
  return content_coding::identity;
}

} // namespace gather
