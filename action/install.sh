#!/usr/bin/env bash
# The action's first step: fetch the stcheck-cli wheel of $STCHECK_VERSION and SHA256SUMS from
# $STCHECK_ARTIFACTS (a URL or a directory), verify the wheel against SHA256SUMS and, when
# given, against $STCHECK_SHA256, install it into a virtual environment under $RUNNER_TEMP and
# put its bin/ on the job's PATH ($GITHUB_PATH). Nothing is built.
set -euo pipefail
: "${STCHECK_VERSION:?}" "${STCHECK_ARTIFACTS:?the action needs the input artifacts}" "${RUNNER_TEMP:?}" "${GITHUB_PATH:?}"
wheel="stcheck_cli-$STCHECK_VERSION-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] \
  || { echo "::error title=stcheck::the release has a wheel for Linux x86_64 only, not $(uname -s)-$(uname -m)"; exit 2; }
dl="$RUNNER_TEMP/stcheck-download"
rm -rf "$dl" && mkdir -p "$dl"
for f in "$wheel" SHA256SUMS; do
  case "$STCHECK_ARTIFACTS" in
    https://*|http://*) curl --fail --silent --show-error --location --retry 3 -o "$dl/$f" "${STCHECK_ARTIFACTS%/}/$f" ;;
    *) cp "$STCHECK_ARTIFACTS/$f" "$dl/$f" ;;
  esac
done
# The wheel's line of SHA256SUMS must be there and match; other lines are not ours to check.
(cd "$dl" && grep -E "^[0-9a-f]{64}  $wheel\$" SHA256SUMS | sha256sum --check --strict --quiet -) \
  || { echo "::error title=stcheck::$wheel does not match its line in SHA256SUMS (or has none)"; exit 2; }
if [ -n "${STCHECK_SHA256:-}" ]; then
  echo "$STCHECK_SHA256  $dl/$wheel" | sha256sum --check --strict --quiet - \
    || { echo "::error title=stcheck::$wheel does not have the pinned SHA-256 $STCHECK_SHA256"; exit 2; }
fi
venv="$RUNNER_TEMP/stcheck-venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-index --no-deps "$dl/$wheel"
"$venv/bin/stcheck" --version
echo "$venv/bin" >> "$GITHUB_PATH"
