"""process.Process as envd answers it, over raw Connect (the SDKs read
these answers): a command whose timeout passes ends its stream with
deadline_exceeded; a killed one's end says 'signal: killed'; a signal to a
pid that is not there is not_found; List gives cmd, args, cwd, envs and tag
as Start was given them; a sandbox's info has its lifecycle.

    usage: cmds.py BUILD_DIR"""
import json
import os
import struct
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from harness import Daemon, check, envelope, envelopes, finish  # noqa: E402

build = sys.argv[1]
d = Daemon(build, "cmds")
tokens = {}


def envd_h(sid, stream=False, timeout_ms=None):
    h = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983",
         "Content-Type": "application/connect+json" if stream else "application/json"}
    if timeout_ms is not None:
        h["Connect-Timeout-Ms"] = str(timeout_ms)
    if tokens.get(sid):
        h["X-Access-Token"] = tokens[sid]
    return h


def open_stream(sid, method, body, timeout_ms=None):
    """A streamed call of process.Process, its answer still to read."""
    r = urllib.request.Request(f"{d.base}/process.Process/{method}", data=envelope(body), method="POST",
                               headers=envd_h(sid, True, timeout_ms))
    return urllib.request.urlopen(r, timeout=60)


def stream(sid, method, body, timeout_ms=None):
    """The envelopes of a streamed call, as (flags, json) pairs."""
    with open_stream(sid, method, body, timeout_ms) as resp:
        return envelopes(resp.read())


def start_bg(sid, cmd, args, **kw):
    """Starts a command and reads its stream until the start event: the pid
    (the rest of the stream is dropped; the command runs on)."""
    proc = {"cmd": cmd, "args": args, **kw.get("proc", {})}
    resp = open_stream(sid, "Start", {"process": proc, **kw.get("top", {})}, 0)
    fl, n = struct.unpack(">BI", resp.read(5))
    ev = json.loads(resp.read(n))
    resp.close()
    return ev["event"]["start"]["pid"]


def end_of(env):
    ends = [o for fl, o in env if fl & 2]
    events = [o.get("event", {}) for fl, o in env if not fl & 2]
    return (ends[0] if ends else None), next((e["end"] for e in events if "end" in e), None)


with d:
    st, sb = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120}, d.key(0))
    check("create", st == 201, sb)
    sid = sb["sandboxID"]
    tokens[sid] = sb.get("envdAccessToken")

    env = stream(sid, "Start", {"process": {"cmd": "/bin/sleep", "args": ["30"]}}, timeout_ms=1000)
    trailer, end = end_of(env)
    check("a command whose timeout passes: the stream ends with deadline_exceeded",
          trailer and trailer.get("error", {}).get("code") == "deadline_exceeded", env)
    check("... and no normal end event (exit -1) comes before it", end is None, env)

    st, v = d.req("POST", "/process.Process/SendSignal",
                  {"process": {"pid": 999999}, "signal": "SIGNAL_SIGKILL"}, envd_h(sid))
    check("a signal to a pid that is not there: 404 not_found", st == 404 and v.get("code") == "not_found", (st, v))

    pid = start_bg(sid, "/bin/bash", ["-l", "-c", 'sleep 60; echo "a  b"'],
                   proc={"cwd": "/tmp", "envs": {"K": "v w"}}, top={"tag": "t1"})
    st, v = d.req("POST", "/process.Process/List", {}, envd_h(sid))
    p = next((x for x in (v or {}).get("processes", []) if x.get("pid") == pid), None)
    check("List has the command", p, v)
    c = (p or {}).get("config", {})
    check("List: cmd as started", c.get("cmd") == "/bin/bash", c)
    check("List: args as started (a -c script is one argument)", c.get("args") == ["-l", "-c", 'sleep 60; echo "a  b"'], c)
    check("List: cwd", c.get("cwd") == "/tmp", c)
    check("List: envs", c.get("envs") == {"K": "v w"}, c)
    check("List: tag", (p or {}).get("tag") == "t1", p)

    st, v = d.req("POST", "/process.Process/SendSignal",
                  {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"}, envd_h(sid))
    check("SIGKILL of a running command: 200", st == 200, (st, v))
    env = stream(sid, "Connect", {"process": {"pid": pid}})
    trailer, end = end_of(env)
    # the command may already be gone (not_found) or its end is replayed
    st, v = d.req("POST", "/process.Process/List", {}, envd_h(sid))
    check("a killed command leaves the list", all(x.get("pid") != pid for x in v.get("processes", [])), v)

    pid2 = start_bg(sid, "/bin/sleep", ["60"])
    resp = open_stream(sid, "Connect", {"process": {"pid": pid2}}, 0)
    d.req("POST", "/process.Process/SendSignal", {"process": {"pid": pid2}, "signal": "SIGNAL_SIGKILL"}, envd_h(sid))
    env = envelopes(resp.read())
    trailer, end = end_of(env)
    check("a killed command's end: status and error 'signal: killed'",
          end and end.get("status") == "signal: killed" and end.get("error") == "signal: killed", env)

    pid3 = start_bg(sid, "/bin/sleep", ["60"])
    trailer, end = end_of(stream(sid, "Connect", {"process": {"pid": pid3}}, timeout_ms=1000))
    check("a Connect whose own timeout passes ends with deadline_exceeded",
          trailer and trailer.get("error", {}).get("code") == "deadline_exceeded" and end is None, (trailer, end))
    st, v = d.req("POST", "/process.Process/List", {}, envd_h(sid))
    check("... and the command runs on", any(x.get("pid") == pid3 for x in v.get("processes", [])), v)

    st, info = d.req("GET", f"/sandboxes/{sid}", headers=d.key(0))
    check("info of a kill-on-timeout sandbox: lifecycle {onTimeout: kill, autoResume: false}",
          info.get("lifecycle") == {"onTimeout": "kill", "autoResume": False}, info)
    st, sb2 = d.req("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 120, "autoPause": True,
                                               "autoResume": {"enabled": True}}, d.key(0))
    st, info = d.req("GET", f"/sandboxes/{sb2.get('sandboxID')}", headers=d.key(0))
    check("info of an autoPause+autoResume sandbox: lifecycle {onTimeout: pause, autoResume: true}",
          info.get("lifecycle") == {"onTimeout": "pause", "autoResume": True}, info)
finish()
