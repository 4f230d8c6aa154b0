#!/usr/bin/env bash
# The one version of stcheck: `[workspace.package] version` in the root Cargo.toml. Every
# crate of the workspace inherits it; the two crates outside the workspace (python/, js/, each
# its own workspace) carry a copy, which this script writes and checks. The wheels take theirs
# from those manifests (maturin; python/pyproject.toml says `dynamic = ["version"]`), and the
# npm package.json is written by js/build.sh from js/Cargo.toml. The root pyproject.toml (the
# pre-commit hook's environment) names the version and its pin on stcheck-cli.
#
# Usage: scripts/version.sh           print the version
#        scripts/version.sh check     exit 1 if a copy differs (CI runs this)
#        scripts/version.sh set X.Y.Z write X.Y.Z everywhere, and the lock files after it
#                                     (needs cargo and crates.io for python/'s lock file)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
copies=(python/Cargo.toml js/Cargo.toml)

# The first `version = "..."` of a manifest's [package] or [workspace.package] table.
manifest_version() {
  sed -n '/^\[\(package\|workspace\.package\)\]/,/^\[/s/^version = "\([^"]*\)"$/\1/p' "$1" | head -1
}

version="$(manifest_version Cargo.toml)"
[ -n "$version" ] || { echo "version.sh: no version in Cargo.toml" >&2; exit 1; }

case "${1:-}" in
  "") echo "$version" ;;
  check)
    bad=0
    for m in "${copies[@]}"; do
      v="$(manifest_version "$m")"
      if [ "$v" != "$version" ]; then
        echo "version.sh: $m says $v, Cargo.toml says $version (scripts/version.sh set $version)" >&2
        bad=1
      fi
    done
    grep -q '^dynamic = \["version"\]$' python/pyproject.toml \
      || { echo "version.sh: python/pyproject.toml must take its version from Cargo.toml" >&2; bad=1; }
    grep -q '^dynamic = \["version"\]$' conformance/wheel/pyproject.toml \
      || { echo "version.sh: conformance/wheel/pyproject.toml must take its version from Cargo.toml" >&2; bad=1; }
    grep -qx "version = \"$version\"" pyproject.toml && grep -q "\"stcheck-cli==$version\"" pyproject.toml \
      || { echo "version.sh: pyproject.toml (the pre-commit hook's) must say $version twice" >&2; bad=1; }
    # The crates meant for crates.io name each other's exact version (path dependencies need
    # one to be published).
    if grep -hE '^stcheck(-gate|-print)? = \{ version = "=' gate/Cargo.toml print/Cargo.toml cli/Cargo.toml serve/Cargo.toml \
        | grep -vqF "version = \"=$version\""; then
      echo "version.sh: a path dependency in gate/, print/, cli/ or serve/ names another version than $version" >&2
      bad=1
    fi
    # The lock files' entries of the path crates (no `source`), but the fuzz crate's own 0.0.0:
    # a stale one makes every --locked build fail.
    for lock in Cargo.lock python/Cargo.lock js/Cargo.lock fuzz/Cargo.lock; do
      awk -v want="$version" -v lock="$lock" '
        /^\[\[package\]\]/ { if (name != "") check(); name = ""; ver = ""; src = 0; next }
        /^name = / { name = $3; gsub(/"/, "", name) }
        /^version = / { ver = $3; gsub(/"/, "", ver) }
        /^source = / { src = 1 }
        function check() {
          if (!src && name ~ /^stcheck/ && name != "stcheck-fuzz" && ver != want) {
            printf "version.sh: %s has %s %s (scripts/version.sh set %s)\n", lock, name, ver, want > "/dev/stderr"
            bad = 1
          }
        }
        END { if (name != "") check(); exit bad }
      ' "$lock" || bad=1
    done
    grep -q "^## \[$version\]" CHANGELOG.md \
      || { echo "version.sh: CHANGELOG.md has no entry ## [$version]" >&2; bad=1; }
    exit "$bad"
    ;;
  set)
    new="${2:?version.sh set needs a version}"
    [[ "$new" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "version.sh: $new is not X.Y.Z" >&2; exit 2; }
    for m in Cargo.toml "${copies[@]}"; do
      sed -i "0,/^version = \"$(manifest_version "$m")\"$/s//version = \"$new\"/" "$m"
    done
    sed -i -E "s/^(stcheck(-gate|-print)?) = \{ version = \"=$version\"/\1 = { version = \"=$new\"/" \
      gate/Cargo.toml print/Cargo.toml cli/Cargo.toml serve/Cargo.toml
    sed -i -e "s/^version = \"$version\"$/version = \"$new\"/" \
      -e "s/\"stcheck-cli==$version\"/\"stcheck-cli==$new\"/" pyproject.toml
    for m in Cargo.toml "${copies[@]}" fuzz/Cargo.toml; do
      cargo update --quiet --workspace --manifest-path "$m"
    done
    echo "$new"
    ;;
  *) echo "version.sh: unknown argument $1" >&2; exit 2 ;;
esac
