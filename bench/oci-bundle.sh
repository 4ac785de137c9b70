# Sourced by the bench scripts: builds a minimal OCI bundle (host /usr
# bound read-only) for crun or runc, so the peers run the same binaries
# abox does.
mk_bundle() { # workdir, runtime, args...
  local b="$1/bundle-$2" rt=$2
  shift 2
  mkdir -p "$b/rootfs/usr" "$b/rootfs/proc" "$b/rootfs/dev" "$b/rootfs/sys" "$b/rootfs/tmp"
  ln -sfn usr/bin "$b/rootfs/bin"; ln -sfn usr/lib "$b/rootfs/lib"; ln -sfn usr/lib64 "$b/rootfs/lib64"
  (cd "$b" && rm -f config.json && "$rt" spec >/dev/null 2>&1 || true)
  python3 - "$b/config.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = sys.argv[2:]
c["root"] = {"path": "rootfs", "readonly": True}
c["mounts"].append({"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro"]})
json.dump(c, open(p, "w"))
PY
  echo "$b"
}
