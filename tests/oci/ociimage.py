"""A small OCI image archive made from the machine's static busybox, for
the container engine tests (containerd's `ctr images import` reads it):
one uncompressed layer, its config and manifest, an index naming it."""
import hashlib
import io
import json
import os
import tarfile

TOOLS = ("sh", "echo", "sleep", "cat", "id", "hostname", "ls", "true", "readlink", "ip", "wc")


def _add(tar, name, data=None, mode=0o755, link=None, kind=None):
    ti = tarfile.TarInfo(name)
    ti.mode = mode
    ti.mtime = 0
    if kind == "dir":
        ti.type = tarfile.DIRTYPE
        tar.addfile(ti)
    elif link:
        ti.type = tarfile.SYMTYPE
        ti.linkname = link
        tar.addfile(ti)
    else:
        ti.size = len(data)
        tar.addfile(ti, io.BytesIO(data))


def _layer():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("bin", "dev", "proc", "sys", "tmp", "etc", "run"):
            _add(tar, d, kind="dir", mode=0o1777 if d == "tmp" else 0o755)
        with open("/bin/busybox", "rb") as f:
            _add(tar, "bin/busybox", f.read())
        for t in TOOLS:
            _add(tar, "bin/" + t, link="busybox")
        _add(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", mode=0o644)
    return buf.getvalue()


def write(path, name, cmd, entrypoint=None):
    """An OCI archive at path, its image named name (docker.io/library/x:tag)."""
    blobs = {}

    def blob(b):
        d = "sha256:" + hashlib.sha256(b).hexdigest()
        blobs[d] = b
        return {"digest": d, "size": len(b)}
    layer = _layer()
    lb = blob(layer)
    cfg = {"architecture": "amd64", "os": "linux",
           "config": {"Env": ["PATH=/bin"], "Cmd": cmd, "WorkingDir": "/"},
           "rootfs": {"type": "layers", "diff_ids": [lb["digest"]]}}
    if entrypoint:
        cfg["config"]["Entrypoint"] = entrypoint
    cb = blob(json.dumps(cfg).encode())
    man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
           "config": dict(cb, mediaType="application/vnd.oci.image.config.v1+json"),
           "layers": [dict(lb, mediaType="application/vnd.oci.image.layer.v1.tar")]}
    mb = blob(json.dumps(man).encode())
    index = {"schemaVersion": 2, "manifests": [dict(mb, mediaType="application/vnd.oci.image.manifest.v1+json",
                                                     annotations={"io.containerd.image.name": name,
                                                                  "org.opencontainers.image.ref.name":
                                                                  name.rsplit(":", 1)[1]})]}
    with tarfile.open(path, "w") as tar:
        _add(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode(), mode=0o644)
        _add(tar, "index.json", json.dumps(index).encode(), mode=0o644)
        for d, b in blobs.items():
            _add(tar, "blobs/sha256/" + d.split(":")[1], b, mode=0o644)
