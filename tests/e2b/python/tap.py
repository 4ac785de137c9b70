"""What the Python SDK flows share, a few lines of TAP: tests register with
@test, run() runs them in order, prints the plan and one line per test, and
exits non-zero when any failed. Sandboxes a test made (with create() or
acreate(), or put on `made`) are killed after it."""
import asyncio
import inspect
import sys
import traceback

from e2b import AsyncSandbox, Sandbox

_tests = []
made = []


def create(cls=Sandbox, **opts):
    """A sandbox of class cls (the code interpreter's too) for two minutes."""
    s = cls.create(timeout=120, **opts)
    made.append(s)
    return s


async def acreate(cls=AsyncSandbox, **opts):
    """create() with the asyncio client."""
    s = await cls.create(timeout=120, **opts)
    made.append(s)
    return s


def state(info):
    """A sandbox's state as a string, whether the SDK gives an enum or not."""
    return getattr(info.state, "value", info.state)


def test(name):
    def add(fn):
        _tests.append((name, fn))
        return fn
    return add


def eq(a, b, msg):
    if a != b:
        raise AssertionError(f"{msg}: {a!r} != {b!r}")


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


async def _akill_made():
    for s in made:
        try:
            r = s.kill()
            if inspect.isawaitable(r):
                await r
        except Exception:
            pass
    made.clear()


def run():
    print(f"1..{len(_tests)}", flush=True)
    failed = 0

    async def arun():
        nonlocal failed
        for i, (name, fn) in enumerate(_tests, 1):
            try:
                r = fn()
                if inspect.isawaitable(r):
                    r = await r
                print(f"ok {i} - {name}", flush=True)
            except Exception as e:
                failed += 1
                print(f"not ok {i} - {name}", flush=True)
                for line in traceback.format_exception(e):
                    for l in line.rstrip("\n").split("\n"):
                        print(f"# {l}", flush=True)
            await _akill_made()

    asyncio.run(arun())
    sys.exit(1 if failed else 0)
