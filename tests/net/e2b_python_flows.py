"""The official E2B Python SDK's network options against aboxd in the
private world of tests/net/world.py (e2b_python.py runs this with the
SDK's dependencies): E2B's default, allow_internet_access, network
allow_out / deny_out by address, by name and as callables, update_network
on an instance and by id (with allow_internet_access alone), E2B's
validation errors, and the asyncio client. Hosts of the world: 203.0.113.10
(allowed.test, www.other.test) and 203.0.113.11 (other.test) answer
"hello from ADDRESS" over HTTP."""
from e2b import ALL_TRAFFIC, Sandbox

from tap import acreate, check, create, eq, run, test


def sh(s, cmd):
    """The command's stdout, or '' when it failed (curl's errors)."""
    try:
        return s.commands.run(cmd, timeout=30).stdout
    except Exception as e:
        return getattr(e, "stdout", "") or ""


def get(s, url):
    return sh(s, f"curl -sS -m 5 {url}")


def reach(s, url):
    # what must get through: a longer bound, so that a loaded machine is
    # not taken for a refusal (refusals are checked with get)
    return sh(s, f"curl -sS -m 20 {url}")


def refused(fn, text):
    try:
        fn()
    except Exception as e:
        check(text in str(e), f"expected an error saying {text!r}, got {type(e).__name__}: {e}")
        return
    raise AssertionError(f"expected an error saying {text!r}, the call succeeded")


@test("no network settings: the internet, as on E2B")
def default_open():
    s = create()
    check("hello from 203.0.113.10" in reach(s, "http://allowed.test/"), "allowed.test over HTTP")
    check("hello" not in get(s, "http://169.254.169.254/"), "the metadata address is never reached")


@test("allow_internet_access=False lets nothing out, and get_info says so")
def no_internet():
    s = create(allow_internet_access=False)
    check("hello" not in get(s, "http://203.0.113.10/"), "an address answered")
    check("none" in sh(s, "getent hosts allowed.test || echo none"), "a name resolved")
    eq(s.get_info().allow_internet_access, False, "get_info().allow_internet_access")


@test("network allow_out by name with deny_out ALL_TRAFFIC; get_info shows them")
def by_name():
    s = create(network={"allow_out": ["allowed.test"], "deny_out": [ALL_TRAFFIC]})
    check("hello from 203.0.113.10" in reach(s, "http://allowed.test/"), "an allowed name")
    check("hello" not in get(s, "http://203.0.113.11/"), "an address is not a name")
    net = s.get_info().network or {}
    eq(net.get("allow_out"), ["allowed.test"], "get_info().network allow_out")
    eq(net.get("deny_out"), [ALL_TRAFFIC], "get_info().network deny_out")


@test("allow_out and deny_out as callables of the SDK's context")
def callables():
    s = create(network={"allow_out": lambda ctx: ["203.0.113.11"], "deny_out": lambda ctx: [ctx.all_traffic]})
    check("hello from 203.0.113.11" in reach(s, "http://203.0.113.11/"), "the allowed address")
    check("hello" not in get(s, "http://203.0.113.10/"), "another address")


@test("update_network on the instance and by id, allow_internet_access alone included")
def update():
    s = create()
    check("hello" in reach(s, "http://203.0.113.10/"), "open at first")
    s.update_network({"deny_out": [ALL_TRAFFIC]})
    check("hello" not in get(s, "http://203.0.113.10/"), "closed after deny_out ALL_TRAFFIC")
    s.update_network({"allow_internet_access": True})
    check("hello" in reach(s, "http://203.0.113.10/"), "open after allow_internet_access=True")
    s.update_network({"allow_internet_access": False})
    check("hello" not in get(s, "http://203.0.113.10/"), "closed after allow_internet_access=False")
    Sandbox.update_network(s.sandbox_id, {"allow_out": ["203.0.113.10"], "deny_out": [ALL_TRAFFIC]})
    check("hello" in reach(s, "http://203.0.113.10/"), "the allowed address after an update by id")
    check("hello" not in get(s, "http://203.0.113.11/"), "and only that one")
    refused(lambda: s.update_network({"deny_out": ["not-a-cidr"]}), "invalid denied CIDR not-a-cidr")


@test("E2B's validation errors, with E2B's texts")
def validation():
    refused(lambda: create(network={"allow_out": ["allowed.test"]}),
            "When specifying allowed domains in allow out, you must include 'ALL_TRAFFIC' in deny out")
    refused(lambda: create(network={"deny_out": ["example.com"]}), "invalid denied CIDR example.com")


@test("the asyncio client: deny_out by address, then update_network")
async def with_asyncio():
    s = await acreate(network={"deny_out": ["203.0.113.11/32"]})

    async def out(url, secs):
        try:
            return (await s.commands.run(f"curl -sS -m {secs} {url}", timeout=30)).stdout
        except Exception as e:
            return getattr(e, "stdout", "") or ""
    check("hello" in await out("http://203.0.113.10/", 20), "an address not denied")
    check("hello" not in await out("http://203.0.113.11/", 5), "the denied one")
    await s.update_network({"deny_out": [ALL_TRAFFIC]})
    check("hello" not in await out("http://203.0.113.10/", 5), "closed after the update")


run()
