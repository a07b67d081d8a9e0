#include "core/secrets.h"

#include <boost/json.hpp>

#include <string>

namespace gym::core {
namespace json = boost::json;

namespace {

void mask(json::value& v) {
  if (auto* o = v.if_object()) {
    for (auto& [k, child] : *o) {
      if (is_secret_key(k)) {
        if (child.is_string() && !child.get_string().empty()) child = kMaskedSecret;
        if (auto* list = child.if_array())
          for (auto& item : *list)
            if (item.is_string() && !item.get_string().empty()) item = kMaskedSecret;
        continue;
      }
      mask(child);
    }
  } else if (auto* a = v.if_array()) {
    for (auto& item : *a) mask(item);
  }
}

}  // namespace

bool is_secret_key(std::string_view key) {
  std::string k(key);
  for (auto& c : k)
    c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto ends = [&](std::string_view s) { return k.ends_with(s); };
  return ends("api_key") || ends("apikey") || ends("_token") || k == "token" ||
         ends("access_key") || k == "authorization" || k.find("secret") != std::string::npos ||
         k.find("password") != std::string::npos;
}

json::object masked_secrets(const json::object& cfg) {
  json::value copy = cfg;
  mask(copy);
  return std::move(copy.get_object());
}

}  // namespace gym::core
