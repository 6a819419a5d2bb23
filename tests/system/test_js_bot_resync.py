"""The JavaScript example bot (examples/bots/js/bot.mjs) on the ladder when its notice cursor
expires (issue 23, item 4): far more notices than the inbox keeps arrive while it waits, its
next poll gets 410 cursor_expired, and it resynchronises from its match list, goes on from
``oldest_cursor`` and plays its ladder match to the end. Whole stack (gunicorn, the RQ worker,
``rq cron``) on a private Redis."""

from __future__ import annotations

import os
import subprocess
import time

import orjson
import pytest

from service.store import inbox
from tests.support.stack import running_stack, wait_for
from tests.system.test_example_bots import (
    LADDER_ENV,
    REPO,
    command,
    finish,
    first_line,
    needs_tools,
)

pytestmark = [pytest.mark.timeout(240), needs_tools]


def test_the_js_bot_resyncs_when_its_cursor_expired() -> None:
    with running_stack(LADDER_ENV) as s:
        env = {k: v for k, v in os.environ.items() if k not in ("LLSDK_TOKEN", "REDIS_URL")}
        env.update(LLSDK_URL=s.url, BOT_WAIT="1")
        late_id, late_token = s.register("js-late")
        late = subprocess.Popen(command("js", "ladder", "js", "1"),
                                env=dict(env, LLSDK_TOKEN=late_token), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=REPO)
        assert first_line(late) == "entered ladder js"
        # it has polled (its cursor is set) before the flood comes
        wait_for("its first polls", lambda: s.r.zscore("ll:idx:presence", late_id), timeout=30)
        time.sleep(2.5)
        pipe = s.r.pipeline()
        for i in range(inbox.MAXLEN + 300):
            pipe.xadd(inbox.key(late_id), {"n": orjson.dumps({"type": "noise", "n": i})},
                      maxlen=inbox.MAXLEN, approximate=True)
        pipe.execute()
        _, other_token = s.register("js-other")
        other = subprocess.Popen(command("js", "ladder", "js", "1"),
                                 env=dict(env, LLSDK_TOKEN=other_token), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, cwd=REPO)
        out, other_out = finish(late, timeout=150), finish(other, timeout=60)
        assert "notice cursor expired: resynchronising" in out, out
        assert "finished (1 so far)" in out and out.endswith("left ladder js\n"), out
        assert "finished (1 so far)" in other_out, other_out
        played = s.ladder_matches("js", late_id)
        assert len(played) == 1 and played[0].status == "finished"
        assert played[0].aborted is None
