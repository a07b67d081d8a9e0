#include <map>

#include <boost/json.hpp>

#include "core/config.h"
#include "core/config_steps.h"
#include "core/yaml_json.h"
#include "core_test_support.h"
#include "temp_dir.h"

namespace gym::core {
namespace {

namespace json = boost::json;
using gym::test::TempDir;
using testing::config_error_of;
using testing::sources_in;

GetEnv fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

json::object resolved(const std::string& yaml, const GetEnv& env = fake_env({})) {
  json::object cfg = parse_yaml(yaml, "test.yaml").as_object();
  ConfigOrigins origins;
  origins.record(cfg, "test.yaml");
  resolve_interpolations(cfg, origins, env);
  return cfg;
}

json::object directed(const std::string& yaml) {
  json::object cfg = parse_yaml(yaml, "test.yaml").as_object();
  apply_directives(cfg, ConfigOrigins());
  return cfg;
}

// ---- interpolation ----

TEST(Interpolation, AbsolutePathKeepsTheType) {
  json::object cfg = resolved(R"(
a: {b: 5, f: 0.5, t: true, list: [1, 2], map: {k: v}}
int: ${a.b}
list: ${a.list}
map: ${a.map}
elem: ${a.list.1}
)");
  EXPECT_EQ(cfg.at("int"), 5);
  EXPECT_EQ(cfg.at("int").kind(), json::kind::int64);
  EXPECT_EQ(cfg.at("list"), json::array({1, 2}));
  EXPECT_EQ(cfg.at("map"), json::parse(R"({"k": "v"})"));
  EXPECT_EQ(cfg.at("elem"), 2);
}

TEST(Interpolation, EmbeddedBecomesTextLikePythonStr) {
  json::object cfg = resolved(R"(
host: 127.0.0.1
port: 8000
a: {f: 0.5, t: true, n: null}
url: http://${host}:${port}/v1
text: f=${a.f} t=${a.t} n=${a.n}
)");
  EXPECT_EQ(cfg.at("url"), "http://127.0.0.1:8000/v1");
  EXPECT_EQ(cfg.at("text"), "f=0.5 t=True n=None");
}

TEST(Interpolation, NestedReferencesResolve) {
  json::object cfg = resolved(R"(
x: ${y}
y: ${z.inner}
z: {inner: "${w}-suffix"}
w: 3
which: b
pick: {a: 1, b: 2}
chosen: ${pick.${which}}
)");
  EXPECT_EQ(cfg.at("x"), "3-suffix");
  EXPECT_EQ(cfg.at("z").at("inner"), "3-suffix");
  EXPECT_EQ(cfg.at("chosen"), 2);
}

TEST(Interpolation, ReferencedSubtreesAreResolvedFirst) {
  json::object cfg = resolved("copy: ${src}\nsrc: {a: '${v}', b: ['${v}']}\nv: 7\n");
  EXPECT_EQ(cfg.at("copy"), json::parse(R"({"a": 7, "b": [7]})"));
}

TEST(Interpolation, EnvironmentVariables) {
  json::object cfg = resolved(R"(
set: ${oc.env:GYM_TOKEN}
embedded: Bearer ${oc.env:GYM_TOKEN}
defaulted: ${oc.env:GYM_UNSET,fallback}
quoted_default: ${oc.env:GYM_UNSET,'a,b'}
null_default: ${oc.env:GYM_UNSET,null}
set_wins: ${oc.env:GYM_TOKEN,unused}
port: ${oc.env:GYM_PORT}
)",
                              fake_env({{"GYM_TOKEN", "secret"}, {"GYM_PORT", "8000"}}));
  EXPECT_EQ(cfg.at("set"), "secret");
  EXPECT_EQ(cfg.at("embedded"), "Bearer secret");
  EXPECT_EQ(cfg.at("defaulted"), "fallback");
  EXPECT_EQ(cfg.at("quoted_default"), "a,b");
  EXPECT_TRUE(cfg.at("null_default").is_null());
  EXPECT_EQ(cfg.at("set_wins"), "secret");
  EXPECT_EQ(cfg.at("port"), "8000");  // as in OmegaConf, environment values are strings
  EXPECT_EQ(get_int(cfg, "port", 0, 1, 65535), 8000);
}

TEST(Interpolation, UnsetEnvironmentVariableSaysWhatToDo) {
  std::string msg = config_error_of([] { resolved("m: {key: '${oc.env:GYM_NOPE}'}\n"); });
  EXPECT_CONTAINS(msg, "config error in test.yaml");
  EXPECT_CONTAINS(msg, "'m.key'");
  EXPECT_CONTAINS(msg, "export GYM_NOPE=<value>");
  EXPECT_CONTAINS(msg, "++m.key=<value>");
}

TEST(Interpolation, UnresolvableReferenceGivesAnOverrideHint) {
  std::string msg = config_error_of([] { resolved("a: {b: 1}\nx: {y: '${nope.key}'}\n"); });
  EXPECT_CONTAINS(msg, "config error in test.yaml: key 'x.y' refers to ${nope.key}");
  EXPECT_CONTAINS(msg, "++nope.key=<value>");
  msg = config_error_of([] { resolved("a: {bee: 1}\nx: ${a.bea}\n"); });
  EXPECT_CONTAINS(msg, "did you mean 'a.bee'?");
}

TEST(Interpolation, CyclesAreErrors) {
  std::string msg = config_error_of([] { resolved("a: ${b}\nb: ${c}\nc: ${a}\n"); });
  EXPECT_CONTAINS(msg, "interpolation cycle: a -> b -> c -> a");
  msg = config_error_of([] { resolved("a: {b: '${a}'}\n"); });
  EXPECT_CONTAINS(msg, "interpolation cycle");
}

TEST(Interpolation, EscapesAndUnknownResolvers) {
  json::object cfg = resolved("v: 1\nlit: '\\${v} is ${v}'\n");
  EXPECT_EQ(cfg.at("lit"), "${v} is 1");
  EXPECT_CONTAINS(config_error_of([] { resolved("x: ${oc.decode:1}\n"); }), "resolver 'oc.decode'");
  EXPECT_CONTAINS(config_error_of([] { resolved("x: a ${inherit_from:b}\nb: 1\n"); }),
                  "only works as the whole value");
  EXPECT_CONTAINS(config_error_of([] { resolved("x: ${.sibling}\n"); }), "absolute paths");
  EXPECT_CONTAINS(config_error_of([] { resolved("x: 'a ${b'\n"); }), "unterminated");
}

// ---- ??? ----

TEST(MissingValues, AllAreReportedInOneError) {
  TempDir dir;
  dir.write("a.yaml", "model:\n  name: ???\n  url: ???\n");
  dir.write("b.yaml", "agent:\n  datasets:\n    - path: ???\nok: 1\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"a.yaml", "b.yaml"};
  std::string msg = config_error_of([&] { load_config(s); });
  EXPECT_CONTAINS(msg, "3 keys are missing");
  EXPECT_CONTAINS(msg, "model.name (from " + dir.file("a.yaml") + ")");
  EXPECT_CONTAINS(msg, "model.url (from " + dir.file("a.yaml") + ")");
  EXPECT_CONTAINS(msg, "agent.datasets[0].path (from " + dir.file("b.yaml") + ")");
  EXPECT_CONTAINS(msg, "++model.name=<value>");
}

TEST(MissingValues, ResolvedBeforeTheCheckByOverrides) {
  TempDir dir;
  dir.write("a.yaml", "model:\n  name: ???\n");
  ConfigSources s = sources_in({dir.path()});
  s.config_paths = {"a.yaml"};
  s.overrides = {"model.name=gpt"};
  EXPECT_EQ(load_config(s).at("model").at("name"), "gpt");
}

// ---- directives ----

TEST(Directives, InheritFromMovesTheSourceAndMergesOwnKeysOverIt) {
  json::object cfg = directed(R"(
generic: {impl: {host: h, port: 1, deep: {a: 1, b: 2}}}
mine:
  _inherit_from: generic
  impl: {port: 2, deep: {b: 3}}
)");
  EXPECT_FALSE(cfg.contains("generic"));
  EXPECT_EQ(cfg.at("mine"),
            json::parse(R"({"impl": {"host": "h", "port": 2, "deep": {"a": 1, "b": 3}}})"));
}

TEST(Directives, StringFormsAndCopy) {
  json::object cfg = directed(R"(
src: {k: 1}
other: {j: 2}
moved: ${inherit_from:src}
copied: ${copy:other}
copied_block: {_copy: other, extra: 3}
)");
  EXPECT_FALSE(cfg.contains("src"));
  EXPECT_EQ(cfg.at("moved"), json::parse(R"({"k": 1})"));
  EXPECT_EQ(cfg.at("other"), json::parse(R"({"j": 2})"));
  EXPECT_EQ(cfg.at("copied"), json::parse(R"({"j": 2})"));
  EXPECT_EQ(cfg.at("copied_block"), json::parse(R"({"j": 2, "extra": 3})"));
}

TEST(Directives, SeveralBlocksMayInheritFromOneSource) {
  json::object cfg =
      directed("base: {v: 1}\none: ${inherit_from:base}\ntwo: {_inherit_from: base}\n");
  EXPECT_EQ(cfg.at("one").at("v"), 1);
  EXPECT_EQ(cfg.at("two").at("v"), 1);
  EXPECT_FALSE(cfg.contains("base"));
}

TEST(Directives, DeleteKeyRemovesOwnAndInheritedKeys) {
  json::object cfg = directed(R"(
base: {a: 1, b: 2, c: 3}
plain: {x: 1, y: 2, _delete_key: "x"}
mine: {_inherit_from: base, _delete_key: "a, c, z", z: 9}
)");
  EXPECT_EQ(cfg.at("plain"), json::parse(R"({"y": 2})"));
  EXPECT_EQ(cfg.at("mine"), json::parse(R"({"b": 2})"));
  std::string msg = config_error_of(
      [] { directed("base: {a: 1}\nmine: {_inherit_from: base, _delete_key: nope}\n"); });
  EXPECT_CONTAINS(msg, "no key 'nope'");
}

TEST(Directives, ChainedInheritanceResolvesTheSourcesDirectives) {
  json::object cfg = directed(R"(
root: {a: 1}
middle: {_copy: root, b: 2}
leaf: {_copy: middle, c: 3}
)");
  EXPECT_EQ(cfg.at("leaf"), json::parse(R"({"a": 1, "b": 2, "c": 3})"));
}

TEST(Directives, BadSourcesAreErrors) {
  std::string msg =
      config_error_of([] { directed("server: {v: 1}\nmine: ${inherit_from:servr}\n"); });
  EXPECT_CONTAINS(msg, "'mine' inherits from 'servr', which does not exist");
  EXPECT_CONTAINS(msg, "did you mean 'server'?");
  msg = config_error_of([] { directed("a: ${copy:b}\nb: ${copy:a}\n"); });
  EXPECT_CONTAINS(msg, "inherits back");
  // An unset source leaves the target unset, for the ??? report.
  EXPECT_EQ(directed("src: ???\nmine: ${inherit_from:src}\n").at("mine"), "???");
}

}  // namespace
}  // namespace gym::core
