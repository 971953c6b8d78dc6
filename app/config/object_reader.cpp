// Typed reads of one JSON object's members, each problem reported under the member's path.

#include "config_reader.hpp"

#include <cstdint>

namespace gather::config_reader {

std::string an_integer(long long min, long long max) {
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

std::optional<long long> integer_in(const json& value, long long min, long long max) {
  long long number = 0;
  if (value.is_number_unsigned()) {
    const auto unsigned_number = value.get<std::uint64_t>();
    if (unsigned_number > static_cast<std::uint64_t>(max))
      return std::nullopt;
    number = static_cast<long long>(unsigned_number);
  } else if (value.is_number_integer()) {
    number = value.get<std::int64_t>();
  } else {
    return std::nullopt;
  }
  if (number < min || number > max)
    return std::nullopt;
  return number;
}

const json* object_reader::find(std::string_view key) const {
  const auto it = object_.find(std::string(key));
  return it == object_.end() ? nullptr : &*it;
}

void object_reader::problem(std::string_view key, const std::string& message) const {
  problems_.add(path_of(key), message);
}

void object_reader::reject_unknown_keys(std::initializer_list<std::string_view> known) const {
  for (const auto& member : object_.items()) {
    if (!contains(known, member.key()))
      problem(member.key(), "unknown key");
  }
}

bool object_reader::require(std::string_view key, const std::string& expected) const {
  if (find(key))
    return true;
  problem(key, "is required (" + expected + ")");
  return false;
}

void object_reader::read_millis(std::string_view key, long long min, long long max,
                                millis& out) const {
  long long ms = out.count();
  read_integer(key, min, max, ms);
  out = millis(ms);
}

void object_reader::read_required_millis(std::string_view key, long long min, long long max,
                                         millis& out) const {
  if (require(key, an_integer(min, max)))
    read_millis(key, min, max, out);
}

void object_reader::read_number(std::string_view key, long long min, long long max,
                                double& out) const {
  const json* value = find(key);
  if (!value)
    return;
  const auto in_range = [&](double number) { return number >= min && number <= max; };
  if (value->is_number() && in_range(value->get<double>()))
    out = value->get<double>();
  else
    problem(key, "must be a number from " + std::to_string(min) + " to " + std::to_string(max));
}

void object_reader::read_bool(std::string_view key, bool& out) const {
  const json* value = find(key);
  if (!value)
    return;
  if (value->is_boolean())
    out = value->get<bool>();
  else
    problem(key, "must be true or false");
}

std::optional<std::string> object_reader::read_string(std::string_view key,
                                                      const std::string& expected) const {
  const json* value = find(key);
  if (!value)
    return std::nullopt;
  if (value->is_string())
    return value->get<std::string>();
  problem(key, "must be " + expected);
  return std::nullopt;
}

std::optional<object_reader> object_reader::read_object(std::string_view key) const {
  const json* value = find(key);
  if (!value)
    return std::nullopt;
  if (value->is_object())
    return object_reader(*value, path_of(key), problems_);
  problem(key, "must be an object");
  return std::nullopt;
}

void read_file_names(const object_reader& object,
                     std::initializer_list<std::pair<const char*, std::string*>> keys) {
  for (auto [key, file] : keys) {
    if (!object.require(key, "a file name"))
      continue;
    if (auto name = object.read_string(key, "a non-empty file name"); name && !name->empty())
      *file = *name;
    else if (name)
      object.problem(key, "must be a non-empty file name");
  }
}

} // namespace gather::config_reader
