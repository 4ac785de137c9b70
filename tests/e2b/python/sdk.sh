# Sourced: finds the official E2B Python SDKs and their dependencies for
# the tests that drive aboxd with them (run.sh here, tests/net's
# e2b_python.sh).
#   e2b_python_sdk BUILD_DIR SRC_DIR
# sets sdk (the folder holding e2b/, e2b_connect/ and
# e2b_code_interpreter/) and PYTHONPATH (the dependencies), or returns 1
# with the reason in e2b_python_why. The SDKs are not part of this
# repository. They are found at
#   ABOX_E2B_PYTHON_SDK      the folder holding them
# or else beside the checkout this clone came from (its origin, or the main
# worktree): ../shared/reference/e2b-python. Their dependencies are set up
# by the tool found at ABOX_E2B_PYTHON_ENV_TOOL (default: the SDK folder's
# ../../tools/python-sdk-env.sh), unpacked once into ABOX_E2B_PYTHON_ENV
# (default ${XDG_CACHE_HOME:-~/.cache}/abox-e2b-python), outside the clone.
e2b_python_sdk() {
  local build=$1 src=$2 b c oc origin common tool envdir
  e2b_python_why=
  sdk=${ABOX_E2B_PYTHON_SDK:-}
  if [ -z "$sdk" ]; then
    local bases=()
    origin=$(git -C "$src" remote get-url origin 2>/dev/null || true)
    origin=${origin#file://}
    if [ -n "$origin" ] && [ -d "$origin" ]; then
      bases+=("$origin")
      # the origin may itself be a worktree: its main checkout too
      oc=$(git -C "$origin" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
      [ -n "$oc" ] && bases+=("$(dirname "$oc")")
    fi
    common=$(git -C "$src" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    [ -n "$common" ] && bases+=("$(dirname "$common")")
    bases+=("$(git -C "$src" rev-parse --show-toplevel 2>/dev/null || echo "$src/../../..")")
    for b in "${bases[@]}"; do
      c=$b/../shared/reference/e2b-python
      if [ -d "$c/e2b" ]; then sdk=$(cd "$c" && pwd); break; fi
    done
  fi
  if [ -z "$sdk" ] || [ ! -d "$sdk/e2b" ]; then
    e2b_python_why="the E2B Python SDK is not found: set ABOX_E2B_PYTHON_SDK (tried beside the origin checkout)"
    return 1
  fi
  tool=${ABOX_E2B_PYTHON_ENV_TOOL:-$sdk/../../tools/python-sdk-env.sh}
  envdir=${ABOX_E2B_PYTHON_ENV:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/abox-e2b-python}
  if [ ! -f "$envdir/env.sh" ]; then
    if [ ! -f "$tool" ]; then
      e2b_python_why="no dependency set-up tool at $tool (set ABOX_E2B_PYTHON_ENV_TOOL)"
      return 1
    fi
    if ! bash "$tool" "$envdir" >"$build/e2b-python-env.log" 2>&1; then
      e2b_python_why="setting up the SDK's dependencies failed (see $build/e2b-python-env.log)"
      return 1
    fi
  fi
  # the SDK's own env.sh names the SDK folder it was made for; ours comes first
  . "$envdir/env.sh"
}
