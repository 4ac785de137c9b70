"""A code cell whose sandbox is killed mid-run does not end as a normal,
empty execution: the stream is cut (the SDKs raise their error), as when
an E2B sandbox goes away under a request. A command's stream likewise
ends with an error, never with a normal end.

    usage: cell_kill.py BUILD_DIR"""
import http.client
import json
import os
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Daemon, broke, check, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "cell_kill")


def plane(sb, port, **extra):
    return {"E2b-Sandbox-Id": sb["sandboxID"], "E2b-Sandbox-Port": str(port),
            "X-Access-Token": sb.get("envdAccessToken") or "", **extra}


def killer(sid, after):
    time.sleep(after)
    d.req("DELETE", f"/sandboxes/{sid}", headers=d.key(0))


try:
    st, sb = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120}, d.key(0))
    check("create", st == 201, sb)
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
    body = json.dumps({"code": "import time\nprint('before', flush=True)\ntime.sleep(30)\n", "language": "python"})
    c.request("POST", "/execute", body, plane(sb, 49999, **{"Content-Type": "application/json"}))
    r = c.getresponse()
    check("/execute: 200", r.status == 200, r.status)
    threading.Thread(target=killer, args=(sb["sandboxID"], 3), daemon=True).start()
    cut = False
    try:
        out = r.read()
    except http.client.IncompleteRead as e:
        out, cut = e.partial, True
    lines = [json.loads(ln) for ln in out.splitlines() if ln.strip()]
    check("the cell's output before the kill arrived", any(x.get("text") == "before\n" for x in lines), lines)
    check("a cell whose sandbox was killed: no normal end_of_execution",
          not any(x.get("type") == "end_of_execution" for x in lines), lines)
    check("... the stream is cut instead", cut, lines)
    c.close()

    st, sb2 = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120}, d.key(0))
    raw = json.dumps({"process": {"cmd": "/bin/sleep", "args": ["30"]}}).encode()
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
    c.request("POST", "/process.Process/Start", struct.pack(">BI", 0, len(raw)) + raw,
              plane(sb2, 49983, **{"Content-Type": "application/connect+json", "Connect-Timeout-Ms": "0"}))
    r = c.getresponse()
    threading.Thread(target=killer, args=(sb2["sandboxID"], 2), daemon=True).start()
    env = []
    try:
        out = r.read()
    except http.client.IncompleteRead as e:
        out = e.partial
    while len(out) >= 5:
        fl, n = struct.unpack(">BI", out[:5])
        env.append((fl, json.loads(out[5:5 + n])))
        out = out[5 + n:]
    ends = [o for fl, o in env if not fl & 2 and "end" in o.get("event", {})]
    trailer = [o for fl, o in env if fl & 2]
    check("a command whose sandbox was killed: no normal end event", not ends, env)
    check("... its stream ends with an error (unavailable)",
          trailer and trailer[0].get("error", {}).get("code") == "unavailable", env)
    c.close()
except Exception:
    broke()
finally:
    d.stop()
finish()
