#include "core/secrets.h"

#include "core/shell_word.h"

#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>

namespace gym::core {
namespace json = boost::json;

namespace {

std::string normalized_key(std::string_view key) {
  std::string k(key);
  for (auto& c : k)
    c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return k;
}

bool contains_any(std::string_view text, std::initializer_list<std::string_view> parts) {
  for (auto part : parts)
    if (text.find(part) != std::string_view::npos) return true;
  return false;
}

// Every non-empty string within a secret, whatever its shape (a list of keys, a mapping of
// credentials). Numbers and booleans are settings, never secrets.
void mask_all(json::value& v) {
  if (v.is_string() && !v.get_string().empty()) {
    v = kMaskedSecret;
  } else if (auto* o = v.if_object()) {
    for (auto& [k, child] : *o) mask_all(child);
  } else if (auto* a = v.if_array()) {
    for (auto& item : *a) mask_all(item);
  }
}

void mask(json::value& v) {
  if (auto* o = v.if_object()) {
    for (auto& [k, child] : *o) {
      if (is_secret_key(k)) {
        mask_all(child);
      } else {
        mask(child);
      }
    }
  } else if (auto* a = v.if_array()) {
    for (auto& item : *a) mask(item);
  } else if (auto* s = v.if_string()) {
    // A URL may carry a password or a key (base_url: http://u:p@host/v1?api-key=...).
    if (s->find("://") != json::string::npos) {
      std::string shown = masked_url(*s);
      if (shown != std::string_view(*s)) *s = shown;
    }
  }
}

// An override's value that YAML reads as a number, a boolean or null, or a list of them: a
// setting, not a secret (++max_output_tokens=1024).
bool plain_scalar(const std::string& value) {
  static constexpr std::string_view kWords[] = {"true",  "false", "True", "False", "TRUE",
                                                "FALSE", "null",  "Null", "NULL",  "~"};
  for (auto w : kWords)
    if (value == w) return true;
  char* end = nullptr;
  std::strtod(value.c_str(), &end);
  if (!value.empty() && end == value.c_str() + value.size()) return true;
  // A list of them (++stop_token_ids=[1,2]): passed on as a secret, it would arrive as a string.
  if (value.size() < 2 || value.front() != '[' || value.back() != ']') return false;
  for (std::size_t from = 1; from < value.size() - 1;) {
    auto comma = value.find(',', from);
    if (comma == std::string::npos) comma = value.size() - 1;
    std::string item = value.substr(from, comma - from);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty() && !plain_scalar(item)) return false;
    from = comma + 1;
  }
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The n hex digits at text[from], or -1.
int hex_value(std::string_view text, std::size_t from, std::size_t n) {
  int value = 0;
  for (std::size_t i = from; i < from + n; ++i) {
    const int d = i < text.size() ? hex_digit(text[i]) : -1;
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

struct Decoded {
  std::string bytes;       // what the escape stands for (UTF-8); empty: not an escape
  std::size_t length = 0;  // how many characters of the text it spans
};

// The escape at text[at] (a backslash or '%'), decoded. A run of backslashes counts as one: JSON
// inside a JSON string escapes the escape (\\u0073).
Decoded decoded_escape(std::string_view text, std::size_t at) {
  if (text[at] == '%') {
    const int byte = hex_value(text, at + 1, 2);
    if (byte < 0) return {};
    return {std::string(1, static_cast<char>(byte)), 3};
  }
  std::size_t p = at;
  while (p < text.size() && text[p] == '\\') ++p;
  if (p == text.size()) return {};
  const std::size_t run = p - at;
  static constexpr std::string_view kLetters = "/\"bfnrt", kMeant = "/\"\b\f\n\r\t";
  if (auto i = kLetters.find(text[p]); i != std::string_view::npos)
    return {std::string(1, kMeant[i]), run + 1};
  if (text[p] != 'u') return {};
  const int cp = hex_value(text, p + 1, 4);
  if (cp < 0 || (cp >= 0xD800 && cp <= 0xDFFF)) return {};  // surrogate pairs: no key has them
  std::string bytes;
  if (cp < 0x80) {
    bytes += static_cast<char>(cp);
  } else if (cp < 0x800) {
    bytes += static_cast<char>(0xC0 | (cp >> 6));
    bytes += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    bytes += static_cast<char>(0xE0 | (cp >> 12));
    bytes += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    bytes += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return {std::move(bytes), run + 5};
}

// Where a spelling of `secret` that starts at text[at] ends; npos when none does.
std::size_t secret_end(std::string_view text, std::size_t at, std::string_view secret) {
  std::size_t k = 0;
  while (k < secret.size()) {
    if (at >= text.size()) return std::string_view::npos;
    if (text[at] == secret[k]) {  // as is first: a key may hold '%' or '\' itself
      ++at;
      ++k;
      continue;
    }
    if (text[at] != '\\' && text[at] != '%') return std::string_view::npos;
    const Decoded d = decoded_escape(text, at);
    if (d.bytes.empty() || secret.substr(k, d.bytes.size()) != d.bytes)
      return std::string_view::npos;
    k += d.bytes.size();
    at += d.length;
  }
  return at;
}

// The end of the URL whose "://" is at text[sep]: the first character a URL in prose does not
// hold, then without trailing punctuation ("see http://h/v1." names http://h/v1).
std::size_t url_end(std::string_view text, std::size_t sep) {
  std::size_t end = sep + 3;
  while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])) &&
         std::string_view("\"'<>`\\").find(text[end]) == std::string_view::npos)
    ++end;
  while (end > sep + 3 && std::string_view(".,;:)]}").find(text[end - 1]) != std::string_view::npos)
    --end;
  return end;
}

// The start of the scheme that ends at text[sep] (a letter, then letters, digits, '+', '-',
// '.'), not before `floor`; sep itself when there is none.
std::size_t scheme_start(std::string_view text, std::size_t sep, std::size_t floor) {
  std::size_t start = sep;
  while (start > floor && (std::isalnum(static_cast<unsigned char>(text[start - 1])) ||
                           std::string_view("+-.").find(text[start - 1]) != std::string_view::npos))
    --start;
  while (start < sep && !std::isalpha(static_cast<unsigned char>(text[start]))) ++start;
  return start;
}

}  // namespace

bool is_secret_key(std::string_view key) {
  const std::string k = normalized_key(key);
  if (k == "tokenizer" || k == "on_token_contiguity_break") return false;
  return contains_any(k, {"key", "token", "secret", "password", "passwd", "credential",
                          "authorization", "subscription", "private"});
}

bool is_secret_header(std::string_view name) {
  return is_secret_key(name) || normalized_key(name) == "cookie";
}

bool is_secret_query_parameter(std::string_view name) {
  const std::string k = normalized_key(name);
  return is_secret_key(k) || k == "sig" || k.find("signature") != std::string::npos;
}

std::string masked_url(std::string_view text) {
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) return std::string(text);
  const auto secret = [](const boost::urls::param_pct_view& p) {
    return p.has_value && !p.value.empty() && is_secret_query_parameter(p.key.decode());
  };
  // Never iterated when empty: Boost.URL 1.81 reads past the end of "http://h/?" then (fuzzing).
  const bool query = !parsed->encoded_query().empty();
  bool secret_param = false;
  if (query)
    for (const auto& p : parsed->encoded_params()) secret_param = secret_param || secret(p);
  const bool password = parsed->has_password() && !parsed->encoded_password().empty();
  // A user without a password is often a token itself (https://<token>@host/).
  const bool user_alone = !password && parsed->has_userinfo() && !parsed->encoded_user().empty();
  if (!password && !user_alone && !secret_param) return std::string(text);  // as written
  boost::urls::url u(*parsed);
  if (password) u.set_password(kMaskedSecret);
  if (user_alone) u.set_user(kMaskedSecret);
  if (secret_param) {
    auto params = u.encoded_params();
    for (auto it = params.begin(); it != params.end(); ++it)
      if (secret(*it)) it = params.set(it, kMaskedSecret);
  }
  return std::string(u.buffer());
}

std::string masked_urls_in(std::string_view text) {
  std::string out;
  std::size_t copied = 0;
  for (auto sep = text.find("://"); sep != std::string_view::npos; sep = text.find("://", sep)) {
    const std::size_t start = scheme_start(text, sep, copied);
    const std::size_t end = url_end(text, sep);
    if (start < sep) {
      out.append(text.substr(copied, start - copied));
      out += masked_url(text.substr(start, end - start));
      copied = end;
    }
    sep = end;
  }
  out.append(text.substr(copied));
  return out;
}

std::string masked_secret(std::string_view text, std::string_view secret) {
  if (secret.size() < 4) return std::string(text);  // too short to tell from ordinary words
  std::string out;
  std::size_t copied = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = secret_end(text, at, secret);
    if (end == std::string_view::npos) {
      ++at;
      continue;
    }
    out.append(text.substr(copied, at - copied));
    out += kMaskedSecret;
    copied = at = end;
  }
  out.append(text.substr(copied));
  return out;
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
  // A config path (a.b.api_key), not a word that merely holds '=' (http://h/v1?api-key=...).
  const bool path = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
  if (!path) return std::nullopt;
  std::string value = arg.substr(eq + 1);
  const auto dot = key.rfind('.');
  if (value.empty() || value.starts_with("${") || plain_scalar(value) ||
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
      add(shell_word(masked_urls_in(a)));  // --model-url http://user:****@host/v1
    }
  }
  return line;
}

}  // namespace gym::core
