#!/usr/bin/env bash
# Runs a command in a cgroup of its own, below this shell's, in every
# hierarchy abox uses (memory, pids, cpu, freezer, the v2 one), and removes
# that cgroup afterwards. Sandboxes are made below the cgroup of their
# creator, so two test runs on one machine, each under this, never see
# each other's sandboxes in their leftover checks.
#   usage: in-cgroup.sh NAME -- COMMAND [ARG...]
set -uo pipefail
name=${1:?usage: in-cgroup.sh NAME -- COMMAND...}
shift
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: in-cgroup.sh NAME -- COMMAND..." >&2; exit 2; }
case $name in */*|.*|"") echo "in-cgroup: bad name '$name'" >&2; exit 2 ;; esac

dirs=()
while IFS=: read -r _ ctrls path; do
  ctrls=${ctrls#name=}
  cands=()
  if [ -n "$ctrls" ]; then
    case ",$ctrls," in *,memory,*|*,pids,*|*,cpu,*|*,freezer,*) ;; *) continue ;; esac
    cands=("/sys/fs/cgroup/$ctrls$path" "/sys/fs/cgroup/${ctrls%%,*}$path")
  else
    cands=("/sys/fs/cgroup/unified$path" "/sys/fs/cgroup$path")
  fi
  for c in "${cands[@]}"; do
    if [ -d "$c" ]; then
      c=${c%/}
      mkdir -p "$c/$name" && dirs+=("$c/$name")
      break
    fi
  done
done < /proc/self/cgroup

# the child joins first, then becomes the command
bash -c 'for d in "${@:2:$1}"; do echo $$ > "$d/cgroup.procs" || exit 125; done; shift $(($1 + 1)); exec "$@"' \
  _ "${#dirs[@]}" "${dirs[@]}" "$@"
status=$?
for d in "${dirs[@]}"; do
  # processes still on their way out keep it busy for a moment: give them
  # a few seconds; sandboxes the command left running keep it for good:
  # say so, with what is in it, rather than hide it
  for _ in $(seq 50); do
    rmdir "$d" 2>/dev/null && break
    sleep 0.1
  done
  if [ -d "$d" ]; then
    echo "in-cgroup: $d is still in use (left behind?):" >&2
    find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r p; do
      echo "  $p $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)" >&2
    done
  fi
done
exit $status
