// One item of a batch request, as the front read it and the batch's calls and rows use it.
#pragma once

#include <string>

namespace gather {

struct batch_item {
  std::string text; ///< what `{item}` substitutes: a string as is, a number as JSON writes it
  std::string json; ///< the item as its result row shows it: 7 stays 7, "7" stays "7"
};

} // namespace gather
