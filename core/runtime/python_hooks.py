"""Python hooks: user code run in a child process with a timeout.

The hook's source defines `check(event: dict) -> dict` returning
`{"decision": "allow" | "block", "reason": str}`. The loop starts `sys.executable -I -c RUNNER`
(isolated mode: no user site, no PYTHON* variables, no script directory on sys.path), writes
`{"source": ..., "event": ...}` as JSON to its stdin, and reads one JSON line back from stdout.

The runner points `sys.stdout` at stderr while the hook runs, so a hook's debug `print` cannot
corrupt the protocol line. Everything else is an error decision, never an exception:

- an untrusted hook (`trusted: false`, e.g. imported from elsewhere) -> "python hook not trusted",
  without starting a process;
- past `hook.timeout` -> the child's whole process group is killed -> "timed out";
- `check` raises (or the source does not compile) -> the exception line, with the hook line;
- the hook process dies before it returns -> its exit code, or the signal that killed it;
- no output, non-JSON output, or a result of the wrong shape -> an error naming what came back.

The child gets a scrubbed environment: only the variables in `ENV_ALLOW` (PATH, locale,
time zone, temporary folder, HOME) and those named `HAT_HOOK_*`, never the parent's API keys
or tokens. On Linux the runner makes itself a child subreaper and runs the hook in a forked
worker, so whatever the hook starts (even a grandchild that calls `setsid` or double-forks)
stays in the runner's process tree: on a timeout the whole tree is stopped and killed, and a
hook that returns, raises or crashes (exits early, is killed by a signal) leaves nothing
running: the runner outlives the worker, kills its remaining descendants, and reports how
the worker ended. The hook's process group is killed as well once the runner has exited.

A child process isolates crashes, hangs and memory blowups from the loop; it is not a security
sandbox, which is why imported hooks need explicit trust.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

from core.harness.models import Hook
from core.runtime.hook_result import HookResult

ENV_ALLOW = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "TEMP",
        "TMP",
        "SYSTEMROOT",  # Windows needs these two to start Python at all
        "WINDIR",
    }
)
ENV_PREFIXES = ("LC_", "HAT_HOOK_")


def hook_environment(parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a Python hook runs with: the allow-listed part of `parent`."""
    source = os.environ if parent is None else parent
    return {k: v for k, v in source.items() if k in ENV_ALLOW or k.startswith(ENV_PREFIXES)}


RUNNER = r"""
import json, os, signal, sys, traceback

def _subreaper():
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        except Exception:
            pass

def _children():
    me, kids = os.getpid(), []
    try:
        names = os.listdir("/proc")
    except OSError:
        return kids
    for name in names:
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name, "rb") as fh:
                    ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == me:
                kids.append(int(name))
    return kids

def _reap():
    for _ in range(100):
        kids = _children()
        if not kids:
            return
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in kids:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass

def _main(text):
    out = sys.stdout
    sys.stdout = sys.stderr
    try:
        request = json.loads(text)
        namespace = {"__name__": "hat_hook"}
        exec(compile(request["source"], "<hook>", "exec"), namespace)
        check = namespace.get("check")
        if not callable(check):
            raise TypeError("the hook source defines no check(event) function")
        line = json.dumps({"result": check(request["event"])}, allow_nan=False)
    except BaseException as exc:
        lines = traceback.format_exception_only(type(exc), exc)
        message = "".join(lines).strip().splitlines()[-1]
        frames = traceback.extract_tb(exc.__traceback__)
        where = [f.lineno for f in frames if f.filename == "<hook>"]
        if isinstance(exc, SyntaxError) and exc.filename == "<hook>":
            where.append(exc.lineno)
        if where and where[-1]:
            message += f" (hook line {where[-1]})"
        line = json.dumps({"error": message})
    out.write(line + "\n")
    out.flush()

def _supervise(text):
    # the hook runs in a forked worker; this process (the subreaper) outlives it, so whatever
    # the worker started is still its descendant when the worker exits, crashes or is killed
    pid = os.fork()
    if pid == 0:
        try:
            _main(text)
        finally:
            try:
                sys.stderr.flush()
            finally:
                os._exit(0)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    _reap()
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal %d" % number
        message = "it was killed by %s before it returned" % name
        sys.stdout.write(json.dumps({"crashed": message}) + "\n")
        sys.stdout.flush()
    sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)

_subreaper()
if sys.platform.startswith("linux") and hasattr(os, "fork"):
    _supervise(sys.stdin.read())
else:
    _main(sys.stdin.read())
"""

_MAX_SHOWN = 200


async def run_python_hook(
    hook: Hook, event: dict[str, Any], *, python: str | None = None
) -> HookResult:
    """Run `hook.source`'s `check(event)` in a child process; never raises."""
    if not hook.trusted:
        return HookResult.error("python hook not trusted")
    if not hook.source or not hook.source.strip():
        return HookResult.error("python hook has no source")
    request = json.dumps({"source": hook.source, "event": event}, default=str).encode()
    try:
        proc = await asyncio.create_subprocess_exec(
            python or sys.executable,
            "-I",
            "-c",
            RUNNER,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=hook_environment(),
            start_new_session=os.name == "posix",
        )
    except OSError as exc:
        return HookResult.error(f"python hook could not start: {exc}")
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(request), hook.timeout)
    except TimeoutError:
        await _kill(proc)
        return HookResult.error(f"python hook timed out after {hook.timeout:g} s")
    except BaseException:  # cancelled: do not leave the child behind
        await _kill(proc)
        raise
    if os.name == "posix":  # whatever is left in the hook's process group
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    return decode_output(stdout, stderr, proc.returncode)


def decode_output(stdout: bytes, stderr: bytes, returncode: int | None) -> HookResult:
    """Turn the runner's output into a decision (error on anything unexpected)."""
    lines = stdout.decode("utf-8", errors="replace").strip().splitlines()
    if not lines:
        tail = stderr.decode("utf-8", errors="replace").strip().splitlines()[-1:]
        detail = f": {tail[0][:_MAX_SHOWN]}" if tail else ""
        return HookResult.error(f"python hook printed no result (exit code {returncode}){detail}")
    last = lines[-1].strip()
    try:
        data = json.loads(last)
    except json.JSONDecodeError:
        return HookResult.error(f"python hook printed garbage: {last[:_MAX_SHOWN]!r}")
    if not isinstance(data, dict):
        return HookResult.error(f"python hook printed garbage: {last[:_MAX_SHOWN]!r}")
    if "error" in data:
        return HookResult.error(f"python hook raised {data['error']}"[: _MAX_SHOWN * 2])
    if "crashed" in data:
        return HookResult.error(f"python hook crashed: {data['crashed']}"[: _MAX_SHOWN * 2])
    result = data.get("result")
    shape = 'expected {"decision": "allow" | "block", "reason": str}'
    if not isinstance(result, dict):
        shown = json.dumps(result)[:_MAX_SHOWN]
        return HookResult.error(f"python hook returned {shown}; {shape}")
    decision = result.get("decision")
    reason = result.get("reason", "")
    if decision not in ("allow", "block") or not isinstance(reason, str):
        shown = json.dumps(result)[:_MAX_SHOWN]
        return HookResult.error(f"python hook returned {shown}; {shape}")
    if decision == "block":
        return HookResult.block(reason or "blocked by a python hook")
    return HookResult.allow(reason)


def kill_tree(pid: int, *, keep_root: bool = False) -> None:
    """Kill process `pid` and every descendant, wherever their session or group: stop them all
    first (so none can fork a new one), then kill. Since the runner is a child subreaper, an
    orphan of the hook stays under it until then. With `keep_root`, `pid` itself is resumed
    instead of killed, so it reaps the others (the runner then exits on its own)."""
    import psutil

    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    seen: dict[int, psutil.Process] = {pid: root}
    for _ in range(20):
        try:
            found = root.children(recursive=True)
        except psutil.Error:
            found = []
        new = [p for p in found if p.pid not in seen]
        for proc in [root, *new] if len(seen) == 1 else new:
            with contextlib.suppress(psutil.Error):
                proc.suspend()
        seen.update((p.pid, p) for p in new)
        if not new:
            break
    for proc in seen.values():
        with contextlib.suppress(psutil.Error):
            if proc is not root or not keep_root:
                proc.kill()
    if keep_root:
        with contextlib.suppress(psutil.Error):
            root.resume()


async def _kill(proc: asyncio.subprocess.Process) -> None:
    supervised = sys.platform.startswith("linux")  # the runner reaps the hook's processes
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if os.name == "posix":
                kill_tree(proc.pid, keep_root=supervised)
                if supervised:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(proc.wait(), 5.0)
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(proc.wait(), 5.0)
