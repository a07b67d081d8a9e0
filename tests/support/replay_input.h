#pragma once
// The replay model's input normalisation (docs/reference/replay-model.md#how-an-answer-is-found),
// written for tests independently of the replay model's own code, so a test matching output rows to
// recorded rows checks the server rather than repeating it.
#include <boost/json.hpp>

namespace gym::test {

// `v` with every object member whose value is null removed, recursively.
boost::json::value without_nulls(const boost::json::value& v);
// A string input becomes one user message; items with a role get `type: message`; nulls removed.
boost::json::array normalized_items(const boost::json::value& input);

}  // namespace gym::test
