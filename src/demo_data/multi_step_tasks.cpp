// example_multi_step demo tasks (environments/example_multi_step/README.md): a list of term/synonym
// pairs, a question about one term; the policy looks up each synonym's value (one tool call per
// turn), reports the values with extract_synonym_values, then answers. Wrong trajectories make the
// mistakes the verifier measures: wrong order, the term's own value (minefield), a missing synonym,
// another term's synonyms, or no report at all.
#include <algorithm>
#include <boost/json.hpp>

#include "core/json_text.h"
#include "demo_data/tasks.h"

namespace gym::demo_data {
namespace json = boost::json;

namespace {

struct Term {
  std::string name;
  std::vector<std::string> synonyms;  // distinct across all terms
  std::array<std::string, 2> questions;
};

const std::vector<Term> kTerms{
    {"Cold",
     {"Chilly", "Frigid", "Icy"},
     {"How do I keep my hands warm on a winter bike ride?",
      "Why do water pipes burst when the temperature drops below freezing?"}},
    {"Fast",
     {"Rapid", "Swift"},
     {"Which trains reach the highest speeds in regular service?",
      "How can I type more quickly without making more mistakes?"}},
    {"Happy",
     {"Joyful", "Content", "Glad"},
     {"What small daily habits make people feel more cheerful?",
      "Why do guests smile so much at weddings?"}},
    {"Big",
     {"Huge", "Vast", "Enormous"},
     {"How large can a blue whale grow?", "What is the largest desert on the planet?"}},
    {"Small",
     {"Tiny", "Little", "Petite"},
     {"What is the smallest bone in the human body?",
      "How do ants carry objects many times their own weight?"}},
    {"Loud",
     {"Noisy", "Deafening"},
     {"How can I soundproof a bedroom next to a busy street?",
      "Why are jet engines so hard on the ears at takeoff?"}},
    {"Quiet",
     {"Silent", "Hushed"},
     {"Where can I find a peaceful place to study in a big city?",
      "Why do libraries ask visitors to whisper?"}},
    {"Old",
     {"Ancient", "Aged"},
     {"Which trees alive today have been standing the longest?",
      "How do archaeologists date pottery from thousands of years ago?"}},
    {"New",
     {"Fresh", "Novel", "Recent"},
     {"What are the latest trends in electric cars?",
      "How should I break in a pair of boots I just bought?"}},
    {"Bright",
     {"Radiant", "Vivid"},
     {"Why does fresh snow hurt your eyes on a sunny day?",
      "Which stars shine most brilliantly in the night sky?"}},
    {"Dark",
     {"Gloomy", "Shadowy", "Murky"},
     {"How do deep-sea fish find food where no sunlight reaches?",
      "Why do some rooms feel dim even with every lamp switched on?"}},
    {"Strong",
     {"Sturdy", "Robust", "Powerful"},
     {"What lets a bridge carry a line of heavy trucks?",
      "How do weightlifters build so much muscle?"}},
    {"Weak",
     {"Feeble", "Fragile"},
     {"Why do my legs feel shaky after a long illness?",
      "How should I pack glassware so that it survives a move?"}},
    {"Rich",
     {"Wealthy", "Affluent", "Prosperous"},
     {"How did merchant families build fortunes in Renaissance Italy?",
      "What do millionaires usually invest in?"}},
    {"Poor",
     {"Needy", "Impoverished"},
     {"What programs help families who cannot afford groceries?",
      "Why do some regions stay low-income for generations?"}},
    {"Wet",
     {"Damp", "Soggy", "Drenched"},
     {"How do I dry out a phone that fell into a puddle?",
      "Why does my basement smell musty after heavy rain?"}},
    {"Dry",
     {"Parched", "Brittle"},
     {"How do desert plants survive with almost no rain?",
      "Why does the skin on my hands crack in winter?"}},
    {"Easy",
     {"Simple", "Straightforward", "Basic"},
     {"What is a beginner-friendly bread recipe?",
      "Which musical instruments take the least effort to learn?"}},
    {"Hard",
     {"Difficult", "Tough", "Arduous"},
     {"Why is climbing Everest such a challenge?", "What makes some math exams so demanding?"}},
    {"Angry",
     {"Furious", "Irate", "Livid"},
     {"How can I calm down after a heated argument?",
      "Why do drivers lose their temper in traffic jams?"}},
    {"Sad",
     {"Sorrowful", "Mournful", "Downcast"},
     {"How can I support a friend who is grieving?", "Why do some songs make people cry?"}},
    {"Brave",
     {"Courageous", "Fearless", "Valiant"},
     {"What drives firefighters to run into burning buildings?",
      "Which explorers took the greatest risks?"}},
    {"Clean",
     {"Spotless", "Tidy", "Pristine"},
     {"How do hospitals keep operating rooms sterile?",
      "What is the best way to organize a cluttered desk?"}},
    {"Dirty",
     {"Filthy", "Grimy", "Soiled"},
     {"How do I get mud stains out of jeans?", "Why do city windows get coated with grime?"}},
    {"Hot",
     {"Scorching", "Sweltering", "Boiling"},
     {"How can I stay cool during a heat wave?",
      "Why is the surface of Venus hotter than that of Mercury?"}},
    {"Tall",
     {"Lofty", "Soaring"},
     {"How do skyscrapers resist strong winds?", "What are the highest trees on Earth?"}},
    {"Tired",
     {"Weary", "Exhausted", "Drowsy"},
     {"Why do I feel sleepy after lunch?", "How long should I rest after running a marathon?"}},
    {"Hungry",
     {"Starving", "Famished", "Ravenous"},
     {"What snacks keep me full between meals?", "Why do teenagers seem to eat all the time?"}},
    {"Smart",
     {"Clever", "Brilliant", "Wise"},
     {"How do crows solve puzzles to get food?", "What study habits do top students share?"}},
    {"Funny",
     {"Hilarious", "Amusing", "Witty"},
     {"What makes a stand-up routine get big laughs?", "Why are some cat videos so entertaining?"}},
    {"Beautiful",
     {"Gorgeous", "Lovely", "Stunning"},
     {"Which national parks have the most scenic views?", "What makes a sunset look so striking?"}},
    {"Empty",
     {"Hollow", "Bare"},
     {"Why do abandoned shopping malls feel eerie?",
      "What should I do with the spare room after my kids move out?"}},
};

constexpr int kTermsListed = 12;

// get_synonym_value's answer: the sum of the synonym's code points (the synonyms are ASCII).
std::int64_t synonym_value(const std::string& s) {
  std::int64_t sum = 0;
  for (unsigned char c : s) sum += c;
  return sum;
}

json::array tools() {
  auto tool = [](const char* name, const char* description, json::object properties,
                 const char* required) {
    return json::object{{"type", "function"},
                        {"name", name},
                        {"description", description},
                        {"parameters", json::object{{"type", "object"},
                                                    {"properties", std::move(properties)},
                                                    {"required", json::array{required}},
                                                    {"additionalProperties", false}}},
                        {"strict", true}};
  };
  return json::array{
      tool("get_synonym_value", "Look up the numeric value of one synonym.",
           json::object{
               {"synonym", json::object{{"type", "string"},
                                        {"description", "The synonym, spelled as in the list."}}}},
           "synonym"),
      tool("extract_synonym_values",
           "Report the values of the relevant term's synonyms, in the order of the list.",
           json::object{
               {"synonym_values",
                json::object{{"type", "array"},
                             {"items", json::object{{"type", "integer"}}},
                             {"description", "One value per synonym of the relevant term."}}}},
           "synonym_values")};
}

// One tool call per model turn, each followed by what our resources server answers.
struct Recorder {
  Rng& rng;
  json::array output;

  void call(const char* name, const json::object& args, const json::object& result) {
    auto c = function_call(rng, name, core::render_json(args));
    output.push_back(c);
    output.push_back(function_call_output(c, core::render_json(result)));
  }
  std::int64_t lookup(const std::string& synonym) {
    std::int64_t v = synonym_value(synonym);
    call("get_synonym_value", {{"synonym", synonym}}, {{"synonym_value", v}});
    return v;
  }
  void extract(const std::vector<std::int64_t>& values) {
    call("extract_synonym_values", {{"synonym_values", json::value_from(values)}},
         {{"success", true}});
  }
  void say(const std::string& text) { output.push_back(assistant_message(rng, text)); }
};

std::string list_text(const std::vector<std::int64_t>& values) {
  std::vector<std::string> parts;
  for (auto v : values) parts.push_back(std::to_string(v));
  return "[" + join(parts, ", ") + "]";
}

std::string quoted(const std::vector<std::string>& words) {
  std::vector<std::string> parts;
  for (const auto& w : words) parts.push_back("'" + w + "'");
  return join(parts, " and ");
}

enum class Kind { correct, detour, wrong_order, minefield, partial, wrong_term, no_report };

Kind draw_kind(Rng& rng, bool right) {
  double u = rng.unit();
  if (right) return u < 0.8 ? Kind::correct : Kind::detour;
  if (u < 0.25) return Kind::wrong_order;
  if (u < 0.45) return Kind::minefield;
  if (u < 0.65) return Kind::partial;
  if (u < 0.85) return Kind::wrong_term;
  return Kind::no_report;
}

}  // namespace

Task multi_step_task(Rng& rng, int index) {
  std::vector<std::size_t> order(kTerms.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  rng.shuffle(order);
  const Term& term = kTerms[order[0]];
  const Term& decoy = kTerms[order[1]];  // listed too: a plausible wrong choice
  std::vector<std::pair<const Term*, std::string>> pairs;
  for (int i = 0; i < kTermsListed; ++i)
    for (const auto& s : kTerms[order[static_cast<std::size_t>(i)]].synonyms)
      pairs.emplace_back(&kTerms[order[static_cast<std::size_t>(i)]], s);
  rng.shuffle(pairs);

  // Synonyms of a term in the order the list shows them, which is the order asked for.
  auto listed = [&](const Term& t) {
    std::vector<std::string> out;
    for (const auto& [owner, s] : pairs)
      if (owner == &t) out.push_back(s);
    return out;
  };
  std::string list;
  for (const auto& [owner, s] : pairs)
    list += "\nThe term '" + owner->name + "' has the synonym '" + s + "'.";
  std::string system =
      "# Task\nYou find numeric values for synonyms. Decide which term in the list below the "
      "user's question is about, call get_synonym_value once for every synonym of that term, "
      "then call extract_synonym_values with all of those values, in the order the synonyms "
      "appear in the list. Call one tool at a time.\n\n# Synonyms" +
      list +
      "\n\n# Example\nIf a question were about the term 'Quick' and the list gave it the "
      "synonyms 'Nimble' and 'Hasty', in that order, you would look up both values, say 7 and "
      "9, and then extract [7, 9].";
  const auto expected = listed(term);
  std::vector<std::int64_t> expected_values;
  for (const auto& s : expected) expected_values.push_back(synonym_value(s));
  const std::int64_t term_value = synonym_value(term.name);

  Task task;
  task.row = json::object{
      {"id", index},
      {"responses_create_params",
       json::object{
           {"input",
            json::array{
                input_message("system", system),
                input_message("user", term.questions[static_cast<std::size_t>(rng.below(2))])}},
           {"tools", tools()},
           {"parallel_tool_calls", false}}},
      {"expected_synonyms", json::value_from(expected)},
      {"expected_synonym_values", json::value_from(expected_values)},
      {"minefield_label", term.name},
      {"minefield_label_value", term_value}};

  for (bool right : draw_outcomes(rng)) {
    Recorder rec{rng, {}};
    std::optional<std::vector<std::int64_t>> reported;  // extract_synonym_values' argument
    std::vector<std::int64_t> values;
    switch (draw_kind(rng, right)) {
      case Kind::detour:
        rec.lookup(term.name);  // checks the term itself, then does the task right
        [[fallthrough]];
      case Kind::correct:
        for (const auto& s : expected) values.push_back(rec.lookup(s));
        reported = values;
        break;
      case Kind::wrong_order:
        for (auto it = expected.rbegin(); it != expected.rend(); ++it)
          values.push_back(rec.lookup(*it));
        reported = values;
        break;
      case Kind::minefield:
        values.push_back(rec.lookup(term.name));
        for (const auto& s : expected) values.push_back(rec.lookup(s));
        reported = values;
        break;
      case Kind::partial:
        values.push_back(rec.lookup(expected.front()));
        reported = values;
        break;
      case Kind::wrong_term:
        for (const auto& s : listed(decoy)) values.push_back(rec.lookup(s));
        reported = values;
        break;
      case Kind::no_report:
        for (const auto& s : expected) values.push_back(rec.lookup(s));
        break;
    }
    if (reported) {
      rec.extract(*reported);
      rec.say("The synonym values are " + list_text(*reported) + ".");
    } else {
      rec.say("The values for " + quoted(expected) + " are " + list_text(values) + ".");
    }

    // The verifier's rule on what was reported.
    std::vector<std::int64_t> actual = reported.value_or(std::vector<std::int64_t>{});
    std::vector<std::int64_t> distinct;
    for (auto v : actual)
      if (std::find(distinct.begin(), distinct.end(), v) == distinct.end()) distinct.push_back(v);
    double common = 0;
    for (auto v : distinct)
      if (std::find(expected_values.begin(), expected_values.end(), v) != expected_values.end())
        ++common;
    const bool accuracy = actual == expected_values;
    const double overlap = common / static_cast<double>(expected_values.size());
    Trajectory t;
    t.output = std::move(rec.output);
    t.reward = accuracy ? 1.0 : 0.0;
    t.extras = json::object{{"parsed_synonym_values", json::value_from(actual)},
                            {"accuracy", accuracy},
                            {"set_overlap", overlap},
                            {"original_term_minefield_hit",
                             std::find(actual.begin(), actual.end(), term_value) != actual.end()},
                            {"order_instruction_following_failure", !accuracy && overlap == 1.0}};
    task.trajectories.push_back(std::move(t));
  }
  return task;
}

}  // namespace gym::demo_data
