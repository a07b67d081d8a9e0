#!/usr/bin/env bash
# Formats the C++ sources with the root .clang-format: every .h and .cpp file that git
# tracks under src/, environments/, tests/, bench/ and fuzz/.
#
# Usage: scripts/format.sh           rewrite the files in place (`make format`)
#        scripts/format.sh --check   change nothing; list the files that differ and exit 1 if any
#                                    (the `format_check` test of `make test`)
#
# The layout is pinned to clang-format 14, Debian 12's, which scripts/setup.sh installs: other major
# versions lay out some constructs differently, so the script refuses them. CLANG_FORMAT names the
# binary to use (default: clang-format-14 when on PATH, else clang-format).
set -euo pipefail

PROG=format.sh
REQUIRED_MAJOR=14

check=0
case ${1:-} in
  "") ;;
  --check) check=1 ;;
  -h | --help)
    sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "$PROG: unknown argument '$1' (try --help)" >&2
    exit 2
    ;;
esac

cd "$(dirname "${BASH_SOURCE[0]}")/.."

clang_format=${CLANG_FORMAT:-}
if [[ -z $clang_format ]]; then
  if command -v clang-format-$REQUIRED_MAJOR >/dev/null; then
    clang_format=clang-format-$REQUIRED_MAJOR
  else
    clang_format=clang-format
  fi
fi
if ! command -v "$clang_format" >/dev/null; then
  echo "$PROG: $clang_format not found (bash scripts/setup.sh installs clang-format $REQUIRED_MAJOR)" >&2
  exit 2
fi
version=$("$clang_format" --version)
if [[ ! $version =~ version\ ([0-9]+)\. || ${BASH_REMATCH[1]} != "$REQUIRED_MAJOR" ]]; then
  echo "$PROG: clang-format $REQUIRED_MAJOR is required (Debian 12's; bash scripts/setup.sh installs it)," \
    "$clang_format is: $version" >&2
  exit 2
fi

git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "$PROG: $(pwd) is not a git work tree (the files to format are git's tracked files)" >&2; exit 2; }
files=()
while IFS= read -r -d '' f; do files+=("$f"); done < <(
  git ls-files -z -- 'src/*.h' 'src/*.cpp' 'environments/*.h' 'environments/*.cpp' 'tests/*.h' \
    'tests/*.cpp' 'bench/*.h' 'bench/*.cpp' 'fuzz/*.h' 'fuzz/*.cpp')
if ((${#files[@]} == 0)); then
  echo "$PROG: no tracked .h/.cpp files under src/, environments/, tests/, bench/, fuzz/" >&2
  exit 2
fi

if ((check == 0)); then
  "$clang_format" -i "${files[@]}"
  echo "$PROG: formatted ${#files[@]} files with $version"
  exit 0
fi

# One run over all files; each offending file is named once (its first diagnostic is enough).
rc=0
out=$("$clang_format" --dry-run -Werror --ferror-limit=1 "${files[@]}" 2>&1) || rc=$?
declare -A tracked=()
for f in "${files[@]}"; do tracked[$f]=1; done
bad=()
while IFS= read -r f; do
  [[ -n ${tracked[$f]:-} ]] && bad+=("$f")
done < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
if ((rc != 0 && ${#bad[@]} == 0)); then
  echo "$PROG: $clang_format failed:" >&2
  echo "$out" | head -n 20 >&2
  exit 2
fi
if ((${#bad[@]} == 0)); then
  echo "$PROG: all ${#files[@]} files match .clang-format ($version)"
  exit 0
fi
echo "$PROG: ${#bad[@]} of ${#files[@]} files differ from .clang-format ($version):"
printf '  %s\n' "${bad[@]}"
echo "run \`make format\` (scripts/format.sh) to fix them"
exit 1
