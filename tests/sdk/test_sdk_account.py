"""The SDK's account calls against the real server (gunicorn, two workers, private Redis):
``Client.rotate_token``, ``llsdk token rotate``, ``Client.delete_account`` and the
``PlayerBanned`` error with its reason."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator

import pytest
from llsdk import errors

from service.store import moderation
from tests.support.redis_proc import RedisProcess
from tests.support.sdkclient import Client
from tests.support.server import REPO, ApiServer

API_WORKERS = 2


@pytest.fixture(scope="module")
def anon(api_server: ApiServer) -> Iterator[Client]:
    with Client(api_server.url, max_retries=0) as c:
        yield c


def player(anon: Client) -> Client:
    p = anon.players.register(f"acct-{secrets.token_hex(5)}")
    assert p.token
    return anon.with_token(p.token)


def test_rotate_token_switches_the_client_and_revokes_the_old(anon: Client) -> None:
    me = player(anon)
    old = me.token
    assert old is not None
    new = me.rotate_token()
    assert new != old and me.token == new
    assert me.me.get().name.startswith("acct-")
    with pytest.raises(errors.Unauthorized):
        anon.with_token(old).me.get()


def test_cli_token_rotate_prints_the_new_token(anon: Client, api_server: ApiServer) -> None:
    me = player(anon)
    env = {**os.environ, "LLSDK_URL": api_server.url, "LLSDK_TOKEN": me.token or "",
           "NO_PROXY": "127.0.0.1"}
    done = subprocess.run([sys.executable, "-m", "llsdk", "token", "rotate", "--json"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    new = json.loads(done.stdout)["token"]
    with pytest.raises(errors.Unauthorized):
        me.me.get()
    assert anon.with_token(new).me.get().name.startswith("acct-")


def test_delete_account_then_the_token_is_unknown(anon: Client) -> None:
    me = player(anon)
    pid = me.me.get().id
    token = me.token
    me.delete_account()
    assert me.token is None
    with pytest.raises(errors.Unauthorized):
        anon.with_token(token or "").me.get()
    with pytest.raises(errors.NotFound):
        anon.players.get(pid)


def test_banned_player_gets_player_banned_with_reason(anon: Client,
                                                      redis_server: RedisProcess) -> None:
    me = player(anon)
    pid = me.me.get().id
    r = redis_server.client()
    moderation.ban(r, pid, reason="spam", until=None, by="test", ladders=[])
    r.close()
    with pytest.raises(errors.PlayerBanned) as info:
        me.me.get()
    assert (info.value.status, info.value.reason, info.value.until) == (403, "spam", None)
