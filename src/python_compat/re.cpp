#include "python_compat/re.h"

#include "python_compat/errors.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>
#include <stdexcept>

namespace gym::python_compat {

struct PyRegex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

// Python spellings PCRE2 reads differently (see the header).
std::string translate_pattern(std::string_view p) {
  static constexpr std::string_view kExtraSpace = "\\x{1c}-\\x{1f}";
  std::string out;
  bool in_set = false;
  std::size_t set_start = 0;  // index of the first character inside the set
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      ++i;
      if (!in_set && n == 'Z') {
        out += "\\z";
      } else if (n == 's') {
        out += in_set ? "\\s" + std::string(kExtraSpace) : "[\\s" + std::string(kExtraSpace) + "]";
      } else if (!in_set && n == 'S') {
        out += "[^\\s" + std::string(kExtraSpace) + "]";
      } else {
        out += '\\';
        out += n;
      }
      continue;
    }
    if (!in_set && c == '[') {
      in_set = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      set_start = i + 1;
      continue;
    }
    if (in_set && c == ']' && i != set_start) in_set = false;
    out += c;
  }
  return out;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  int n = pcre2_get_error_message(code, buffer, sizeof buffer);
  return n < 0 ? "PCRE2 error " + std::to_string(code)
               : std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
}

}  // namespace

PyMatch::PyMatch(std::string_view subject, std::vector<std::pair<std::size_t, std::size_t>> spans)
    : subject_(subject), spans_(std::move(spans)) {}

bool PyMatch::matched(std::size_t group) const {
  return group < spans_.size() && spans_[group].first != kUnset;
}

std::size_t PyMatch::start(std::size_t group) const { return spans_.at(group).first; }
std::size_t PyMatch::end(std::size_t group) const { return spans_.at(group).second; }

std::string_view PyMatch::group(std::size_t group) const {
  if (!matched(group)) return {};
  return subject_.substr(spans_[group].first, spans_[group].second - spans_[group].first);
}

PyRegex::PyRegex(std::string_view pattern, unsigned flags) : code_(std::make_unique<Code>()) {
  std::uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (flags & kIgnoreCase) options |= PCRE2_CASELESS;
  if (flags & kDotAll) options |= PCRE2_DOTALL;
  if (flags & kMultiline) options |= PCRE2_MULTILINE;
  auto translated = translate_pattern(pattern);
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(context, PCRE2_NEWLINE_LF);
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              options, &error, &offset, context);
  pcre2_compile_context_free(context);
  if (!code_->code)
    throw PyRegexError(pcre2_message(error) + " at position " + std::to_string(offset));
  std::uint32_t count = 0;
  pcre2_pattern_info(code_->code, PCRE2_INFO_CAPTURECOUNT, &count);
  groups_ = count;
}

PyRegex::~PyRegex() = default;
PyRegex::PyRegex(PyRegex&&) noexcept = default;
PyRegex& PyRegex::operator=(PyRegex&&) noexcept = default;

std::optional<PyMatch> PyRegex::run(std::string_view text, std::size_t pos,
                                    unsigned options) const {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                       options, data.get(), nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return std::nullopt;
  if (rc < 0) throw std::runtime_error("regular expression match failed: " + pcre2_message(rc));
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
  std::vector<std::pair<std::size_t, std::size_t>> spans(groups_ + 1);
  for (std::size_t g = 0; g <= groups_; ++g) {
    if (static_cast<int>(g) < rc && ovector[2 * g] != PCRE2_UNSET) {
      spans[g] = {ovector[2 * g], ovector[2 * g + 1]};
    } else {
      spans[g] = {static_cast<std::size_t>(-1), static_cast<std::size_t>(-1)};
    }
  }
  return PyMatch(text, std::move(spans));
}

std::optional<PyMatch> PyRegex::search(std::string_view text, std::size_t pos) const {
  if (pos > text.size()) return std::nullopt;
  return run(text, pos, 0);
}

std::optional<PyMatch> PyRegex::match(std::string_view text) const {
  return run(text, 0, PCRE2_ANCHORED);
}

std::optional<PyMatch> PyRegex::fullmatch(std::string_view text) const {
  return run(text, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED);
}

std::vector<PyMatch> PyRegex::finditer(std::string_view text) const {
  std::vector<PyMatch> out;
  std::size_t pos = 0;
  bool last_empty = false;
  while (pos <= text.size()) {
    // After an empty match the next one may start at the same place only if it is not empty.
    auto m = run(text, pos, last_empty ? PCRE2_NOTEMPTY_ATSTART : 0);
    if (!m) break;
    last_empty = m->start() == m->end();
    pos = m->end();
    out.push_back(std::move(*m));
  }
  return out;
}

std::vector<std::string> PyRegex::findall(std::string_view text) const {
  if (groups_ > 1) throw std::logic_error("findall with several groups returns tuples");
  std::vector<std::string> out;
  for (const auto& m : finditer(text)) out.emplace_back(m.group(groups_ == 1 ? 1 : 0));
  return out;
}

std::string PyRegex::sub(std::string_view replacement, std::string_view text) const {
  std::string out;
  std::size_t copied = 0;
  for (const auto& m : finditer(text)) {
    out.append(text.substr(copied, m.start() - copied));
    for (std::size_t i = 0; i < replacement.size(); ++i) {
      char c = replacement[i];
      if (c != '\\' || i + 1 == replacement.size()) {
        out += c;
        continue;
      }
      char n = replacement[++i];
      if (n == '\\') {
        out += '\\';
      } else if (is_ascii_digit(n) && n != '0') {
        std::size_t group = static_cast<std::size_t>(n - '0');
        if (i + 1 < replacement.size() && is_ascii_digit(replacement[i + 1]) &&
            group * 10 + static_cast<std::size_t>(replacement[i + 1] - '0') <= groups_)
          group = group * 10 + static_cast<std::size_t>(replacement[++i] - '0');
        if (group > groups_) throw PyRegexError("invalid group reference " + std::to_string(group));
        out.append(m.group(group));
      } else {
        throw std::logic_error(std::string("unsupported escape in replacement: \\") + n);
      }
    }
    copied = m.end();
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace gym::python_compat
