# The files `gym env init NAME` writes: "<template>|<path in the new folder>", with @ENV_NAME@
# (NAME) and @ENV_CLASS@ (its upstream-style class name) replaced in both. src/cli embeds them
# in the binary; tests/unit/environments builds and tests one instance of them.
set(GYM_ENV_TEMPLATE_FILES
    "CMakeLists.txt.in|CMakeLists.txt"
    "environment.cpp.in|@ENV_NAME@.cpp"
    "config.yaml.in|configs/@ENV_NAME@.yaml"
    "example.jsonl.in|data/example.jsonl"
    "example_rollouts.jsonl.in|data/example_rollouts.jsonl"
    "test.cpp.in|tests/@ENV_NAME@_test.cpp"
    "README.md.in|README.md")
set(GYM_ENV_TEMPLATE_DIR ${CMAKE_CURRENT_LIST_DIR})
