// A route's `shape` rendered (private to app/answer): its compiled template's literal pieces and,
// in each hole, the bytes of a section's data or of a field found in them (json_member.hpp), so a
// shaped answer is spliced as the `data` envelope is, without parsing a section a second time.
#pragma once

#include <algorithm>
#include <string_view>

#include "gather/answer/json_member.hpp"
#include "gather/config/config.hpp"
#include "piece_writer.hpp"

namespace gather {

/// What hole `hole` shows, from the text its section shows (empty: it has none yet): null when
/// the section or the field is absent.
inline std::string_view hole_text(const shape_hole& hole, std::string_view section_text) {
  if (section_text.empty())
    return "null";
  if (hole.field.empty())
    return section_text;
  return find_member(section_text, hole.field).value_or("null");
}

/// The most put_shape writes; `text_of(i)` is the text section i shows.
template <class TextOf> std::size_t shape_bytes(const shape_template& shape, const TextOf& text_of) {
  std::size_t most = 0;
  for (const auto& literal : shape.literals)
    most += literal.size();
  for (const auto& hole : shape.holes)
    most += std::max<std::size_t>(text_of(hole.section).size(), 4);
  return most;
}

/// The template with its holes filled, its outer object left open.
template <class TextOf>
void put_shape(piece_writer& out, const shape_template& shape, const TextOf& text_of) {
  for (std::size_t i = 0; i < shape.holes.size(); ++i) {
    out.put(shape.literals[i]);
    out.put(hole_text(shape.holes[i], text_of(shape.holes[i].section)));
  }
  out.put(shape.literals.back());
}

} // namespace gather
