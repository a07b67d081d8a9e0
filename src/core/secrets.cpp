#include "core/secrets.h"

#include "core/shell_word.h"

#include <boost/json.hpp>

#include <optional>

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

std::optional<std::pair<std::string, std::string>> secret_override(const std::string& arg) {
  const auto eq = arg.find('=');
  if (arg.starts_with("-") || eq == std::string::npos) return std::nullopt;
  std::string key = arg.substr(0, eq);
  key.erase(0, key.find_first_not_of('+'));
  std::string value = arg.substr(eq + 1);
  const auto dot = key.rfind('.');
  if (value.empty() || value.starts_with("${") ||
      !is_secret_key(dot == std::string::npos ? key : key.substr(dot + 1)))
    return std::nullopt;
  return std::pair{arg.substr(0, eq + 1), std::move(value)};
}

std::string masked_command_line(const std::vector<std::string>& args) {
  const std::string mask(kMaskedSecret);
  std::string line;
  auto add = [&](const std::string& word) { line += (line.empty() ? "" : " ") + word; };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--model-api-key" && i + 1 < args.size()) {
      add(a);
      add(mask);
      ++i;
    } else if (a.starts_with("--model-api-key=")) {
      add("--model-api-key=" + mask);
    } else if (auto secret = secret_override(a)) {
      add(shell_word(secret->first + mask));
    } else {
      add(shell_word(a));
    }
  }
  return line;
}

}  // namespace gym::core
