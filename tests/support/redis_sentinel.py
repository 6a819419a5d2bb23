"""A private Redis Sentinel set: a master, a replica and three sentinels (``redis-server
--sentinel``, as Debian's redis-server package ships it), on free loopback ports in a temp dir.

    with SentinelSet() as ss:
        ss.url            # redis+sentinel://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/mymaster/0
        ss.kill_master()  # SIGKILL; the sentinels promote the replica (down after 1 s)
        ss.wait_failover()
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from types import TracebackType

import redis

from tests.support.redis_cluster import free_ports
from tests.support.redis_proc import find_redis_server, terminate

NAME = "mymaster"


class SentinelSet:
    def __init__(self, name: str = NAME, *, down_after_ms: int = 1000) -> None:
        self.name = name
        self.down_after_ms = down_after_ms
        self.exe = find_redis_server()
        self.tmpdir = tempfile.mkdtemp(prefix="llsent-")
        self.master_port, self.replica_port, *self.sentinel_ports = free_ports(5)
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{self.name}/0"

    def _spawn(self, port: int, args: list[str]) -> None:
        d = os.path.join(self.tmpdir, str(port))
        os.makedirs(d, exist_ok=True)
        log = open(os.path.join(d, "out.log"), "ab")  # noqa: SIM115 - kept by the process
        self.procs[port] = subprocess.Popen(args, cwd=d, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT)

    def _server(self, port: int, *extra: str) -> None:
        d = os.path.join(self.tmpdir, str(port))
        self._spawn(port, [self.exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                           "--appendonly", "no", "--dir", d, *extra])

    def _sentinel(self, port: int) -> None:
        d = os.path.join(self.tmpdir, str(port))
        os.makedirs(d, exist_ok=True)
        conf = os.path.join(d, "sentinel.conf")
        with open(conf, "w") as f:
            f.write(f"port {port}\nbind 127.0.0.1\ndir {d}\n"
                    f"sentinel monitor {self.name} 127.0.0.1 {self.master_port} 2\n"
                    f"sentinel down-after-milliseconds {self.name} {self.down_after_ms}\n"
                    f"sentinel failover-timeout {self.name} 10000\n"
                    f"sentinel parallel-syncs {self.name} 1\n")
        self._spawn(port, [self.exe, conf, "--sentinel"])

    def start(self) -> SentinelSet:
        try:
            self._server(self.master_port)
            self._wait_ping(self.master_port)
            self._server(self.replica_port, "--replicaof", "127.0.0.1", str(self.master_port))
            self._wait_ping(self.replica_port)
            for p in self.sentinel_ports:
                self._sentinel(p)
            for p in self.sentinel_ports:
                self._wait_ping(p)
            self._wait(lambda: self._replica_synced() and self._sentinels_agree(), 30,
                       "the replica to sync and the sentinels to see each other")
        except BaseException:
            self.stop()
            raise
        return self

    def node(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, socket_timeout=2, socket_connect_timeout=2)

    def _wait_ping(self, port: int, timeout: float = 60.0) -> None:
        def ok() -> bool:
            try:
                return bool(self.node(port).ping())
            except redis.RedisError:
                return False
        self._wait(ok, timeout, f"port {port} to answer")

    def _wait(self, check: object, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if check():  # type: ignore[operator]
                return
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}")

    def _replica_synced(self) -> bool:
        info = self.node(self.replica_port).info("replication")
        return info.get("master_link_status") == "up"

    def _sentinels_agree(self) -> bool:
        try:
            for p in self.sentinel_ports:
                m = self.node(p).execute_command("SENTINEL", "MASTER", self.name)
                fields = dict(zip(m[::2], m[1::2], strict=False)) if isinstance(m, list) else m
                if int(fields.get(b"num-other-sentinels", fields.get("num-other-sentinels",
                                                                     0))) < 2:
                    return False
                if int(fields.get(b"num-slaves", fields.get("num-slaves", 0))) < 1:
                    return False
        except redis.RedisError:
            return False
        return True

    def master_addr(self) -> tuple[str, int] | None:
        for p in self.sentinel_ports:
            try:
                got = self.node(p).execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                                                   self.name)
                if got:
                    return got[0].decode(), int(got[1])
            except redis.RedisError:
                continue
        return None

    def kill_master(self) -> int:
        """SIGKILL the current master; returns its port."""
        addr = self.master_addr()
        assert addr is not None
        port = addr[1]
        proc = self.procs.pop(port)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=5)
        return port

    def wait_failover(self, old: int, timeout: float = 60.0) -> int:
        """Wait until the sentinels name a new master that says it is one; returns its port."""
        def moved() -> bool:
            addr = self.master_addr()
            if addr is None or addr[1] == old:
                return False
            try:
                return self.node(addr[1]).info("replication").get("role") == "master"
            except redis.RedisError:
                return False
        self._wait(moved, timeout, "the sentinels to promote the replica")
        addr = self.master_addr()
        assert addr is not None
        return addr[1]

    def stop(self) -> None:
        terminate(list(self.procs.values()))
        self.procs.clear()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self) -> SentinelSet:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
