"""`python -m app.serving.launch`: nginx in front of gunicorn, run as one unit (start.sh and the
container image start the server through this).

- It renders nginx.conf from the settings (app/serving/front.py) into a fresh run folder under the
  temporary directory (nginx's pid, its temporary files and the workers' sockets: a read-only root
  filesystem is fine), starts gunicorn with WORKER_SOCKETS pointing there, then nginx on HOST:PORT.
- The pair lives and dies together: when either process exits, the other is stopped and the
  launcher exits non-zero, so a container stops (and Kubernetes restarts it) instead of serving
  half a server.
- SIGTERM or SIGINT stops it gracefully, in the order that loses no request: nginx first (SIGQUIT:
  it closes its listening socket at once and lets the requests in flight finish, within
  GRACEFUL_TIMEOUT), then gunicorn (SIGTERM: nothing is in flight any more). A second signal stops
  both at once. Both children run in process groups of their own, so a terminal's Ctrl-C reaches
  them only through this order, and each is told to stop if the launcher itself dies.
- FRONT=none, or FRONT=auto where nginx is not installed: gunicorn alone, on a loopback address only
  (it has no defence against slow clients), and the launcher says so.

Signals are taken synchronously (blocked, then `sigwaitinfo`), so no handler races a child's exit.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import ipaddress
import logging
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import front_budget as budget
from ..assets import ServedFile, served_files
from ..config import ConfigError, Settings
from . import front

log = logging.getLogger("pilotlight.launch")

ROOT = Path(__file__).resolve().parents[2]  # the checkout (or /srv/pilotlight in the image)
GUNICORN = (sys.executable, "-m", "gunicorn", "--config", str(ROOT / "gunicorn.conf.py"))
SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGCHLD}
PR_SET_PDEATHSIG = 1
EXTRA_STOP_S = 10.0  # beyond GRACEFUL_TIMEOUT, before a child that has not stopped is killed


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] [%(process)d] [launch] %(message)s", stream=sys.stderr)
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        log.error("cannot start: %s", exc)
        return 2
    refusal = front.untrusted_proxies(settings)
    if refusal is not None:
        log.error("cannot start: %s", refusal)
        return 2
    for name, replacement in Settings.retired().items():
        log.warning("%s is no longer read: nginx now enforces the client limits (see %s in README.md)", name, replacement)
    nginx = shutil.which("nginx") if settings.front != "none" else None
    if nginx is None:
        if settings.front == "nginx":
            log.error("cannot start: FRONT=nginx, but nginx is not installed (apt-get install nginx)")
            return 2
        return _gunicorn_alone(settings)
    return _pair(settings, nginx)


def _gunicorn_alone(settings: Settings) -> int:
    """Replace this process with gunicorn, bound to a loopback address only."""
    env = dict(os.environ)
    host = settings.host
    if not _loopback(host):
        log.warning("HOST=%s: without nginx in front, gunicorn listens on 127.0.0.1 only", host)
        host = env["HOST"] = "127.0.0.1"
    reason = "FRONT=none" if settings.front == "none" else "nginx is not installed"
    log.warning(
        "%s: serving gunicorn alone on http://%s:%d (loopback only, no protection against slow clients; "
        "install nginx for the real front)", reason, host, settings.port,
    )
    env.pop("WORKER_SOCKETS", None)
    os.execve(GUNICORN[0], list(GUNICORN), env)
    return 1  # not reached


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _pair(settings: Settings, nginx: str) -> int:
    run_dir = Path(tempfile.mkdtemp(prefix="pilotlight-"))
    sockets = run_dir / "workers"  # in the temp dir, whatever FRONT_TEMP_DIR: a unix socket's path is short
    sockets.mkdir()
    # nginx's temporary files (bodies, answers): FRONT_TEMP_DIR, a volume of their own, when set
    temp_dir = run_dir if settings.front_temp_dir is None else Path(tempfile.mkdtemp(prefix="pilotlight-", dir=settings.front_temp_dir))
    user = front.nginx_user()
    if user is not None:  # nginx's workers run unprivileged and must reach the sockets and temp files
        for folder in (run_dir, sockets, temp_dir):
            folder.chmod(0o711)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2 * settings.worker_connections + 64
    nofile = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    served = served_files(settings.model_home)
    if user is not None:  # files under root's home are out of an unprivileged worker's reach
        served = _stage(served, run_dir / "static")
    conf = run_dir / "nginx.conf"
    # mode 0600: with API_KEYS it holds the keys (front.py, keyed_clients); only nginx's master reads it
    with os.fdopen(os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as out:
        out.write(front.render(settings, run_dir=run_dir, sockets=sockets, user=user, rlimit_nofile=nofile,
                               temp_dir=temp_dir, served=served))

    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        env = {**os.environ, "WORKER_SOCKETS": str(sockets)}
        if user is not None:  # nginx's workers run as this group's user: the sockets' only reader beside their owner
            env["WORKER_SOCKET_GROUP"] = user.split()[1]
        gunicorn = _spawn(list(GUNICORN), env=env, parent_gone=signal.SIGTERM)
        # nginx opens the port once a worker is warm: until then the port refuses connections, as
        # gunicorn's own did while the models loaded (a startupProbe waits), and nginx's log stays quiet
        stopped = _wait_first_worker(gunicorn, sockets)
        if stopped is not None:
            return stopped
        proxy = _spawn([nginx, "-e", "stderr", "-p", str(run_dir), "-c", str(conf)], env=dict(os.environ),
                       parent_gone=signal.SIGQUIT)
        log.info(
            "nginx (pid %d) on http://%s in front of gunicorn (pid %d), %d worker socket(s) in %s; uploads being "
            "parsed by the workers at most %d MiB in memory (WORKERS x THREADS x MAX_UPLOAD_MB), none in a file",
            proxy.pid, front.listen_address(settings), gunicorn.pid, settings.workers, sockets,
            settings.upload_memory_bytes // 2**20,
        )
        log.info("nginx's buffers: %s", memory_figures(settings))
        limit = cgroup_memory_limit()
        if limit is not None and budget.budget_bytes(settings) >= limit:
            log.warning("FRONT_MEMORY_MB (%s) is not below this container's memory limit (%s): nginx's buffers alone "
                        "could take all of it", budget.mib(budget.budget_bytes(settings)), budget.mib(limit))
        for placeholder in front.placeholder_proxies(settings):
            log.warning("TRUSTED_PROXIES holds %s, a documentation range: put the ingress controller's pod range "
                        "there, or every client behind it counts as one (docs/deploy.md, behind an ingress)", placeholder)
        return _supervise(gunicorn=gunicorn, proxy=proxy, grace=float(settings.graceful_timeout))
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.rmtree(temp_dir, ignore_errors=True)


def memory_figures(settings: Settings) -> str:
    """The bound on nginx's buffers by phase, as the launcher logs it (app/front_budget.py)."""
    return (
        f"WORKER_CONNECTIONS={settings.worker_connections} x {budget.HEAD_KIB:g} KiB each in any phase (its pools and its "
        f"head's buffers) = {budget.mib(budget.heads_bytes(settings))}, + MAX_REQUESTS_IN_PROGRESS="
        f"{budget.requests_in_progress(settings)} x {budget.REQUEST_KIB:,} KiB each on its way to a worker or back (body "
        f"buffer, head re-sent, answer buffers) = {budget.mib(budget.in_progress_bytes(settings))}: at most "
        f"{budget.mib(budget.buffer_bytes(settings))} of FRONT_MEMORY_MB's {budget.mib(budget.budget_bytes(settings))}; "
        f"past {budget.requests_in_progress(settings)} requests in progress, 429"
    )


def cgroup_memory_limit(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """This container's memory limit in bytes (cgroup v2 memory.max, else v1), or None."""
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:  # v1 writes "no limit" as a huge number
            return int(text)
        return None
    return None


def _stage(files: list[ServedFile], folder: Path) -> list[ServedFile]:
    """The page's files where nginx's unprivileged workers can read them: hard links in `folder` (a
    copy where a link cannot be made, or the file is not readable by all). A file not there yet (an
    on-device file fetched later) keeps its own path: nginx serves it once it appears, where its
    workers may read it."""
    folder.mkdir(mode=0o711)
    staged = []
    for index, item in enumerate(files):
        if not item.path.exists():
            staged.append(item)
            continue
        target = folder / f"{index}-{item.path.name}"
        try:
            if not item.path.stat().st_mode & 0o004:
                raise PermissionError(item.path)
            os.link(item.path, target)
        except OSError:
            shutil.copyfile(item.path, target)
            target.chmod(0o644)
        staged.append(dataclasses.replace(item, path=target))
    return staged


def _wait_first_worker(gunicorn: subprocess.Popen[bytes], sockets: Path) -> int | None:
    """Until a worker's socket appears: None then; an exit code when gunicorn exited or a signal
    came first (gunicorn is stopped)."""
    while not any(sockets.glob("worker-*.sock")):
        code = gunicorn.poll()
        if code is not None:
            log.error("gunicorn exited with %s before a worker was warm", code)
            return code or 1
        info = signal.sigtimedwait(SIGNALS, 0.05)
        if info is not None and info.si_signo != signal.SIGCHLD:
            log.info("%s before a worker was warm: stopping gunicorn", signal.Signals(info.si_signo).name)
            _signal(gunicorn, signal.SIGTERM)
            _wait(gunicorn, grace=0.0)
            return 0
    return None


def _spawn(command: list[str], *, env: dict[str, str], parent_gone: int) -> subprocess.Popen[bytes]:
    def child() -> None:  # between fork and exec: undo what the launcher set for itself
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
        libc = ctypes.util.find_library("c")
        if libc is not None:
            ctypes.CDLL(libc).prctl(PR_SET_PDEATHSIG, int(parent_gone))

    return subprocess.Popen(command, env=env, process_group=0, preexec_fn=child)  # noqa: S603, PLW1509


def _supervise(*, gunicorn: subprocess.Popen[bytes], proxy: subprocess.Popen[bytes], grace: float) -> int:
    """Wait for a signal or a child's exit; returns the launcher's exit code."""
    while True:
        for name, process in (("gunicorn", gunicorn), ("nginx", proxy)):
            code = process.poll()
            if code is not None:
                log.error("%s exited with %s: stopping the server", name, code)
                _stop_both(gunicorn=gunicorn, proxy=proxy, grace=grace, fast=True)
                return (128 - code if code < 0 else code) or 1
        info = signal.sigwaitinfo(SIGNALS)
        if info.si_signo == signal.SIGCHLD:
            continue
        log.info("%s: stopping nginx (letting requests in flight finish), then gunicorn", signal.Signals(info.si_signo).name)
        _stop_both(gunicorn=gunicorn, proxy=proxy, grace=grace, fast=info.si_signo == signal.SIGQUIT)
        return 0


def _stop_both(*, gunicorn: subprocess.Popen[bytes], proxy: subprocess.Popen[bytes], grace: float, fast: bool) -> None:
    """nginx first, then gunicorn; each within `grace` + EXTRA_STOP_S, then killed. `fast` (a dead
    partner, SIGQUIT, or a second signal while nginx drains): both at once (nginx SIGTERM, gunicorn
    SIGINT)."""
    if not fast:
        _signal(proxy, signal.SIGQUIT)
        fast = not _wait(proxy, grace=grace, interruptible=True)
    if fast:
        _signal(proxy, signal.SIGTERM)
        _signal(gunicorn, signal.SIGINT)
    else:
        _signal(gunicorn, signal.SIGTERM)
    _wait(proxy, grace=grace)
    _wait(gunicorn, grace=grace)
    for process in (proxy, gunicorn):  # an orphan of a killed master (an nginx worker) goes with it
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _signal(process: subprocess.Popen[bytes], sig: int) -> None:
    if process.poll() is None:
        try:
            process.send_signal(sig)
        except ProcessLookupError:
            pass


def _wait(process: subprocess.Popen[bytes], *, grace: float, interruptible: bool = False) -> bool:
    """Wait for `process` to exit; it is killed after `grace` + EXTRA_STOP_S. `interruptible`: a
    second SIGTERM, SIGINT or SIGQUIT ends the wait early and returns False."""
    deadline = time.monotonic() + grace + EXTRA_STOP_S
    while process.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            log.error("pid %d did not stop in time: killing it", process.pid)
            process.kill()
            process.wait()
            return True
        info = signal.sigtimedwait(SIGNALS, min(left, 0.5))
        if interruptible and info is not None and info.si_signo != signal.SIGCHLD:
            log.info("second signal: stopping at once")
            return False
    return True


if __name__ == "__main__":
    sys.exit(main())
