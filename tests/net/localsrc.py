"""Local package sources for the template tests, made from files the test
writes and this machine's installed Debian packages (never fetched):

    debian_rootfs(dir, packages)  a Debian root filesystem holding the
        packages named and everything they depend on, copied from this
        machine with their dpkg records, so apt-get and pip work in it
    apt_repo(dir, name, script)   a flat apt repository with one package
        that installs /usr/bin/NAME (a shell script)
    pip_index(dir, project, module, text)  a simple index (PEP 503) with
        one pure-Python wheel whose module's hello() returns text
    layer_of(dir)                 (raw tar, gzip) of a folder, for
        registry.Layout.image"""
import base64
import gzip
import hashlib
import io
import os
import re
import subprocess
import zipfile


def _installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", pkg], capture_output=True, text=True)
    return r.stdout.startswith("ii")


def _providers():
    """virtual package -> an installed package that provides it (awk: mawk)."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}|${Package}|${Provides}\n"],
                         capture_output=True, text=True).stdout
    prov = {}
    for ln in out.splitlines():
        st, pkg, pv = ln.split("|", 2)
        if st.startswith("ii"):
            for v in pv.split(","):
                v = re.split(r"[ (]", v.strip())[0]
                if v:
                    prov.setdefault(v, pkg)
    return prov


def closure(packages):
    """packages and all they depend on (installed alternatives only)."""
    prov = _providers()
    want, seen = set(packages), set()
    while want:
        p = want.pop()
        if p in seen:
            continue
        seen.add(p)
        r = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", p], capture_output=True, text=True)
        for alt in r.stdout.split(","):
            for a in alt.split("|"):
                n = re.split(r"[ (:]", a.strip())[0]
                if n and not _installed(n):
                    n = prov.get(n)
                if n:
                    if n not in seen:
                        want.add(n)
                    break
    return sorted(seen)


def debian_rootfs(d, packages):
    """A root filesystem in d (which must not exist) of packages, Debian's
    essential ones and their dependencies, as this machine has them
    installed."""
    # with Debian's essential set, which dpkg and maintainer scripts
    # take for granted (diff, ldconfig, perl for debconf)
    ess = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}|${Essential}|${Package}\n"],
                         capture_output=True, text=True).stdout
    essential = [ln.split("|")[2] for ln in ess.splitlines() if ln.startswith("ii") and ln.split("|")[1] == "yes"]
    pkgs = closure(list(packages) + essential)
    os.makedirs(d)
    # merged /usr, as Debian 12 lays it out
    for top in ("bin", "sbin", "lib", "lib64"):
        os.makedirs(os.path.join(d, "usr", top), exist_ok=True)
        os.symlink(f"usr/{top}", os.path.join(d, top))
    paths = set()
    for p in pkgs:
        out = subprocess.run(["dpkg", "-L", p], capture_output=True, text=True).stdout
        paths.update(ln for ln in out.splitlines() if ln.startswith("/") and ln != "/.")
    lst = os.path.join(d, ".files")
    with open(lst, "w") as f:
        f.write("\n".join(sorted(paths)) + "\n")
    # through the symlinks made above, as the packages' files lie here
    sh = (f"tar -C / -cf - --no-recursion --ignore-failed-read -T {lst} 2>/dev/null | "
          f"tar -C {d} -xf - --keep-directory-symlink")
    subprocess.run(["sh", "-c", sh], check=True)
    os.unlink(lst)
    # their dpkg records: what apt and dpkg find installed
    db = os.path.join(d, "var", "lib", "dpkg")
    for sub in ("info", "updates", "triggers", "alternatives"):
        os.makedirs(os.path.join(db, sub), exist_ok=True)
    status = subprocess.run(["dpkg-query", "-s", *pkgs], capture_output=True, text=True).stdout
    with open(os.path.join(db, "status"), "w") as f:
        f.write(status)
    for name in ("available", "diversions", "statoverride"):
        open(os.path.join(db, name), "w").close()
    info = "/var/lib/dpkg/info"
    keep = set(pkgs)
    for n in os.listdir(info):
        base = n.rsplit(".", 1)[0].split(":")[0]
        if base in keep and n.endswith((".list", ".md5sums", ".conffiles")):
            with open(os.path.join(info, n), "rb") as s, open(os.path.join(db, "info", n), "wb") as t:
                t.write(s.read())
    for sub in ("var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "etc/apt/sources.list.d",
                "tmp", "root", "home/user", "usr/local/bin"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    os.chmod(os.path.join(d, "tmp"), 0o1777)
    os.chown(os.path.join(d, "home/user"), 1000, 1000)
    with open(os.path.join(d, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/bash\n_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
                "user:x:1000:1000::/home/user:/bin/bash\n")
    with open(os.path.join(d, "etc", "group"), "w") as f:
        f.write("root:x:0:\nnogroup:x:65534:\nuser:x:1000:\n")
    with open("/etc/ld.so.cache", "rb") as s, open(os.path.join(d, "etc", "ld.so.cache"), "wb") as t:
        t.write(s.read())
    return pkgs


def layer_of(d):
    raw = subprocess.run(["tar", "-C", d, "--numeric-owner", "-cf", "-", "."], capture_output=True,
                         check=True).stdout
    return raw, gzip.compress(raw, compresslevel=1, mtime=0)


def apt_repo(d, name, script):
    """A flat repository in d: `deb [trusted=yes] URL ./` finds package
    name (version 1.0, no dependencies)."""
    pkg = os.path.join(d, "build", name)
    os.makedirs(os.path.join(pkg, "DEBIAN"))
    os.makedirs(os.path.join(pkg, "usr", "bin"))
    with open(os.path.join(pkg, "DEBIAN", "control"), "w") as f:
        f.write(f"Package: {name}\nVersion: 1.0\nArchitecture: all\nMaintainer: abox tests <tests@abox.invalid>\n"
                f"Description: a package of abox's template tests\n")
    tool = os.path.join(pkg, "usr", "bin", name)
    with open(tool, "w") as f:
        f.write("#!/bin/sh\n" + script + "\n")
    os.chmod(tool, 0o755)
    deb = os.path.join(d, f"{name}_1.0_all.deb")
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", pkg, deb], check=True,
                   stdout=subprocess.DEVNULL)
    data = open(deb, "rb").read()
    stanza = (f"Package: {name}\nVersion: 1.0\nArchitecture: all\nMaintainer: abox tests <tests@abox.invalid>\n"
              f"Filename: ./{os.path.basename(deb)}\nSize: {len(data)}\n"
              f"SHA256: {hashlib.sha256(data).hexdigest()}\nDescription: a package of abox's template tests\n\n")
    with open(os.path.join(d, "Packages"), "w") as f:
        f.write(stanza)
    p = stanza.encode()
    with open(os.path.join(d, "Release"), "w") as f:
        f.write("Origin: abox-tests\nLabel: abox-tests\nSuite: tests\nCodename: tests\n"
                "Date: Mon, 07 Dec 2026 00:00:00 UTC\nArchitectures: amd64 all\n"
                f"SHA256:\n {hashlib.sha256(p).hexdigest()} {len(p)} Packages\n")


def pip_index(d, project, module, text):
    """d/simple/PROJECT/ lists one wheel (in d/files) of module module."""
    dist = project.replace("-", "_")
    whl = f"{dist}-1.0-py3-none-any.whl"
    files = {
        f"{module}/__init__.py": f"def hello():\n    return {text!r}\n".encode(),
        f"{dist}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {project}\nVersion: 1.0\n".encode(),
        f"{dist}-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: abox-tests\nRoot-Is-Purelib: true\n"
                                      b"Tag: py3-none-any\n",
    }

    def rec(data):
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{n},{rec(b)},{len(b)}\n" for n, b in files.items()) + f"{dist}-1.0.dist-info/RECORD,,\n"
    files[f"{dist}-1.0.dist-info/RECORD"] = record.encode()
    os.makedirs(os.path.join(d, "files"), exist_ok=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, b in files.items():
            z.writestr(n, b)
    data = buf.getvalue()
    with open(os.path.join(d, "files", whl), "wb") as f:
        f.write(data)
    idx = os.path.join(d, "simple", project)
    os.makedirs(idx)
    with open(os.path.join(idx, "index.html"), "w") as f:
        f.write(f'<html><body><a href="../../files/{whl}#sha256={hashlib.sha256(data).hexdigest()}">{whl}</a>'
                f"</body></html>\n")
