"""Start a private, throwaway Redis Cluster: N masters (and optionally a replica each) of Debian's
``redis-server`` (7.0+, for sharded pub/sub) on free loopback ports, in a fresh temp dir.

    from tests.support.redis_cluster import RedisCluster

    with RedisCluster(masters=3) as rc:
        r = rc.client()                  # service.store.cluster.connect(rc.url)
        r.set("k", "v")

``url`` is ``redis+cluster://127.0.0.1:<port>`` (the form REDIS_URL takes, docs/operations.md).
The cluster is made with ``redis-cli --cluster create ... --cluster-yes`` and is ready when every
node reports ``cluster_state:ok`` and agrees on the slots; nodes keep no data on disk and are
killed and their directory removed on stop(). Ports come from the kernel (bind to port 0) and
are checked free with their cluster bus port (+10000), so parallel test workers don't collide.

Redis Cluster needs TCP (the cluster bus), so unlike tests/support/redis_proc.py these servers
listen on 127.0.0.1; they refuse any other address (``bind 127.0.0.1``, protected mode).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from types import TracebackType
from typing import Any

import redis

from tests.support.redis_proc import terminate

#: what the cluster tests need of redis-server: SSUBSCRIBE/SPUBLISH came with Redis 7.0
MIN_VERSION = (7, 0)


def find_cluster_tools() -> tuple[str, str] | str:
    """(redis-server, redis-cli) on PATH and new enough, or a message saying what is missing."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if not server or not cli:
        return ("no redis-server/redis-cli on PATH: `make test` installs Debian's redis-server "
                "(as root or with sudo); the Redis Cluster tests need it")
    out = subprocess.run([server, "--version"], capture_output=True, text=True, check=False)
    try:
        ver = out.stdout.split("v=")[1].split()[0]
        major, minor = (int(x) for x in ver.split(".")[:2])
    except (IndexError, ValueError):
        return f"cannot read the version of {server}: {out.stdout!r}"
    if (major, minor) < MIN_VERSION:
        return f"{server} is {ver}; the Redis Cluster tests need 7.0 or later (sharded pub/sub)"
    return server, cli


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(n: int) -> list[int]:
    """``n`` free loopback ports whose cluster bus ports (+10000) are free too."""
    out: list[int] = []
    while len(out) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 <= 65535 and port not in out and _port_free(port + 10000):
            out.append(port)
    return out


class RedisCluster:
    """A private Redis Cluster of ``masters`` masters and ``replicas`` replicas per master."""

    def __init__(self, masters: int = 3, replicas: int = 0, *,
                 startup_timeout: float = 120.0, node_timeout_ms: int = 2000) -> None:
        tools = find_cluster_tools()
        if isinstance(tools, str):
            raise RuntimeError(tools)
        self.server, self.cli = tools
        self.masters, self.replicas = masters, replicas
        self.startup_timeout = startup_timeout
        # how long a node may not answer before the others mark it failed (a master with no
        # replica then takes the cluster down until it is back): 2 s makes failover tests fast
        self.node_timeout_ms = node_timeout_ms
        self.tmpdir: str | None = None
        self.ports: list[int] = []
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        """Every node as a start-up node (any of them may be down later: failover tests)."""
        if not self.ports:
            raise RuntimeError("RedisCluster is not started")
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def client(self, **kwargs: Any) -> redis.Redis:
        """The service's client for this cluster (``service.store.cluster.connect``)."""
        from service.store import cluster

        return cluster.connect(self.url, **kwargs)

    def node(self, port: int) -> redis.Redis:
        """A plain client to one node (for CLUSTER and INFO commands)."""
        return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)

    # ----------------------------------------------------------------------- life cycle

    def start(self) -> RedisCluster:
        self.tmpdir = tempfile.mkdtemp(prefix="llcluster-")
        n = self.masters * (1 + self.replicas)
        self.ports = free_ports(n)
        try:
            for port in self.ports:
                self._spawn(port)
            for port in self.ports:
                self._wait_ping(port)
            if self.masters < 3 and not self.replicas:
                self._create_small()  # redis-cli --cluster create wants 3 masters at least
            else:
                self._create()
            self.wait_ok()
            if self.replicas:
                self._wait_replicas_in_sync()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_replicas_in_sync(self) -> None:
        """Until every replica's link to its master is up (a WAIT can then be answered)."""
        deadline = time.monotonic() + self.startup_timeout
        while True:
            links = []
            for port in self.ports:
                info = self.node(port).info("replication")
                if info.get("role") == "slave":
                    links.append(info.get("master_link_status") == "up")
                else:
                    links.append(int(info.get("connected_slaves", 0)) >= self.replicas)
            if all(links):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the replicas did not sync with their masters")
            time.sleep(0.05)

    def _create_small(self) -> None:
        """One or two masters (bench/scale.py's 1-master figures): the slots split by hand."""
        per = 16384 // self.masters
        for i, port in enumerate(self.ports):
            last = 16383 if i == self.masters - 1 else (i + 1) * per - 1
            self.node(port).execute_command("CLUSTER", "ADDSLOTSRANGE", i * per, last)
        for port in self.ports[1:]:
            self.node(self.ports[0]).execute_command("CLUSTER", "MEET", "127.0.0.1", port)

    def _create(self) -> None:
        subprocess.run(
            [self.cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports),
             "--cluster-replicas", str(self.replicas), "--cluster-yes"],
            check=True, capture_output=True, timeout=self.startup_timeout)

    def _spawn(self, port: int) -> None:
        assert self.tmpdir is not None
        d = os.path.join(self.tmpdir, str(port))
        os.makedirs(d)
        self.procs[port] = subprocess.Popen(self._args(port, d), cwd=d,
                                            stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)

    def _args(self, port: int, d: str) -> list[str]:
        return [
            self.server, "--port", str(port), "--bind", "127.0.0.1",
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(self.node_timeout_ms), "--save", "", "--appendonly", "no",
            "--enable-debug-command", "local",  # DEBUG SLEEP: a replica that lags (failover)
            "--daemonize", "no", "--dir", d, "--logfile", "redis.log",
        ]  # fmt: skip

    def _wait_ping(self, port: int) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            proc = self.procs[port]
            if proc.poll() is not None:
                raise RuntimeError(f"redis-server on {port} exited with {proc.returncode}:\n"
                                   f"{self.log_tail(port)}")
            try:
                if self.node(port).ping():
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on {port} did not answer PING")
            time.sleep(0.02)

    def wait_ok(self, ports: list[int] | None = None) -> None:
        """Until every (running) node says ``cluster_state:ok`` and they agree on the epoch."""
        deadline = time.monotonic() + self.startup_timeout
        ports = ports or [p for p in self.ports if self.running(p)]
        while True:
            states = []
            for port in ports:
                try:
                    info = self.node(port).cluster("info")
                    states.append((info.get("cluster_state"), info.get("cluster_known_nodes"),
                                   info.get("cluster_slots_assigned")))
                except redis.RedisError:
                    states.append(None)
            if all(s is not None and s[0] == "ok" and str(s[2]) == "16384" for s in states):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not become ok: {states}")
            time.sleep(0.05)

    def masters_now(self) -> dict[int, list[Any]]:
        """Port -> slot ranges of every master with slots and not failed, as a running node
        sees the cluster."""
        for port in self.ports:
            if not self.running(port):
                continue
            try:
                nodes = self.node(port).cluster("nodes")
            except redis.RedisError:
                continue
            return {int(addr.rsplit(":", 1)[1]): info["slots"] for addr, info in nodes.items()
                    if "master" in info["flags"] and "fail" not in info["flags"]
                    and info.get("slots")}
        return {}

    def master_of(self, key: str) -> int:
        """The port of the master that holds ``key``'s slot now."""
        slot = int(self.node(self.ports[0]).cluster("keyslot", key)) if self.running(
            self.ports[0]) else int(next(self.node(p) for p in self.ports
                                         if self.running(p)).cluster("keyslot", key))
        for port, ranges in self.masters_now().items():
            if any(int(lo) <= slot <= int(hi) for lo, hi in ranges):
                return port
        raise RuntimeError(f"no master holds slot {slot}")

    def replica_of(self, master: int) -> int:
        """The port of a replica of the master on ``master``."""
        nodes = self.node(master).cluster("nodes")
        me = next(info["node_id"] for info in nodes.values() if "myself" in info["flags"])
        return next(int(addr.rsplit(":", 1)[1]) for addr, info in nodes.items()
                    if info.get("master_id") == me)

    def wait_failover(self, dead: int, timeout: float = 30.0) -> None:
        """Until a replica of the killed master ``dead`` has taken its slots over and every
        running node says ``cluster_state:ok``."""
        deadline = time.monotonic() + timeout
        while True:
            masters = self.masters_now()
            if dead not in masters and len(masters) == self.masters:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"no failover of {dead}: masters {sorted(masters)}")
            time.sleep(0.1)
        self.wait_ok()

    def running(self, port: int) -> bool:
        proc = self.procs.get(port)
        return proc is not None and proc.poll() is None

    def kill(self, port: int) -> None:
        """SIGKILL one node (a crashed master, for failover tests)."""
        proc = self.procs.get(port)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)

    def revive(self, port: int) -> None:
        """Start a killed node again in its own directory: its nodes.conf makes it rejoin the
        cluster (a killed master comes back as a replica of the one that took over)."""
        assert self.tmpdir is not None
        d = os.path.join(self.tmpdir, str(port))
        self.procs[port] = subprocess.Popen(self._args(port, d), cwd=d,
                                            stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
        self._wait_ping(port)
        self.wait_ok()
        if self.replicas:
            self._wait_replicas_in_sync()

    def log_tail(self, port: int, lines: int = 20) -> str:
        try:
            assert self.tmpdir is not None
            with open(os.path.join(self.tmpdir, str(port), "redis.log"), encoding="utf-8",
                      errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except (OSError, AssertionError):
            return "(no log)"

    def flushall(self) -> None:
        """Empty every master (replicas follow)."""
        for port in self.ports:
            if not self.running(port):
                continue
            node = self.node(port)
            try:
                if node.info("replication").get("role") == "master":
                    node.flushall()
            except redis.RedisError:
                pass
            finally:
                node.close()

    def stop(self) -> None:
        procs, self.procs = self.procs, {}
        terminate(list(procs.values()))
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def __enter__(self) -> RedisCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class ClusterStack:
    """What the fixtures hand a test as ``redis_server`` when it runs on a cluster
    (tests/conftest.py): a :class:`RedisCluster` for the data and a private single Redis for RQ's
    queues (``QUEUE_REDIS_URL``), with the interface of ``RedisProcess`` that tests use."""

    kind = "cluster"

    def __init__(self, masters: int = 3, *, node_timeout_ms: int = 2000) -> None:
        from tests.support.redis_proc import RedisProcess

        self.cluster = RedisCluster(masters, node_timeout_ms=node_timeout_ms)
        self.queue = RedisProcess()

    @property
    def url(self) -> str:
        return self.cluster.url

    @property
    def queue_url(self) -> str:
        return self.queue.url

    @property
    def env(self) -> dict[str, str]:
        """What a process of the service needs besides ``REDIS_URL=url``."""
        return {"QUEUE_REDIS_URL": self.queue.url}

    def client(self, **kwargs: Any) -> redis.Redis:
        from service.store import cluster

        return cluster.connect(self.url, queue=self.queue.url, **kwargs)

    def queue_client(self) -> redis.Redis:
        return self.queue.client()

    def flushall(self) -> None:
        self.cluster.flushall()
        q = self.queue.client()
        try:
            q.flushall()
        finally:
            q.close()

    def start(self) -> ClusterStack:
        self.queue.start()
        try:
            self.cluster.start()
        except BaseException:
            self.queue.stop()
            raise
        return self

    def stop(self) -> None:
        self.cluster.stop()
        self.queue.stop()

    def __enter__(self) -> ClusterStack:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
