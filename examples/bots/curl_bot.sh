#!/usr/bin/env bash
# A Love Letter Arena bot in bash, with curl and jq only. It plays one match to its end.
#
#   curl_bot.sh new [RULESET] [SEATS]   create a match (classic, 2 by default), join it, play it
#   curl_bot.sh join MATCH_ID           take the next free seat of a match, play it
#   curl_bot.sh play MATCH_ID           play a match this player already sits in
#
# Environment: LLSDK_URL (the server, default http://127.0.0.1:8000); LLSDK_TOKEN (a player's
# token; without it the bot registers a new player named BOT_NAME, default curl-bot-<random>);
# BOT_TOKENS_TO_WIN (a match it creates ends at this many tokens instead of the ruleset's).
# It prints the match id first, then one line per move and per round, and the result last.
# Strategy: a random legal action, never giving up the Princess when anything else is legal.
# The protocol is described in docs/protocol.md; the rules in docs/rules.md.
set -euo pipefail

BASE=${LLSDK_URL:-http://127.0.0.1:8000}
BASE=${BASE%/}
WAIT=${BOT_WAIT:-30}   # seconds each long-poll may be held

die() { echo "curl_bot: $*" >&2; exit 1; }
command -v jq >/dev/null || die "needs jq (Debian: apt-get install jq)"

# api METHOD PATH [JSON BODY] [EXTRA CURL ARGS...]: prints the body, then the HTTP status on
# its own last line. Network errors are retried (the server may be restarting).
api() {
  local method=$1 path=$2 body=${3:-} tries=0 out
  shift; shift; [ $# -gt 0 ] && shift
  local args=(-sS -X "$method" -w '\n%{http_code}' -H 'Accept: application/json')
  [ -n "${TOKEN:-}" ] && args+=(-H "Authorization: Bearer $TOKEN")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
  until out=$(curl "${args[@]}" "$@" "$BASE$path"); do
    tries=$((tries + 1)); [ "$tries" -ge 10 ] && die "$method $path: no answer from $BASE"
    sleep 1
  done
  printf '%s\n' "$out"
}
status_of() { tail -n1 <<<"$1"; }
body_of() { sed '$d' <<<"$1"; }

# call METHOD PATH [BODY] [CURL ARGS...]: the body of a 2xx answer, else dies with the error.
call() {
  local out; out=$(api "$@")
  case $(status_of "$out") in
    2??) body_of "$out" ;;
    *) die "$1 $2: $(body_of "$out" | jq -r '"\(.status) \(.code): \(.message)"' 2>/dev/null \
                       || status_of "$out")" ;;
  esac
}

# join MATCH: take the next seat; a join that raced another one (409 version_conflict) is tried
# again, as the error says.
join() {
  local out tries=0
  while :; do
    out=$(api POST "/v1/matches/$1/join")
    case $(status_of "$out") in
      2??) return 0 ;;
      409) [ "$(body_of "$out" | jq -r .code)" = version_conflict ] && [ $((tries += 1)) -lt 20 ] \
             || die "join: $(body_of "$out" | jq -r '"\(.status) \(.code): \(.message)"')" ;;
      *) die "join: $(body_of "$out")" ;;
    esac
  done
}

TOKEN=${LLSDK_TOKEN:-}
if [ -z "$TOKEN" ]; then
  name=${BOT_NAME:-curl-bot-$RANDOM$RANDOM}
  TOKEN=$(call POST /v1/players "$(jq -nc --arg n "$name" '{name: $n}')" | jq -r .token)
fi
SEAT=

cmd=${1:-new}
case $cmd in
  new)
    options=$(jq -nc --arg r "${2:-classic}" --argjson s "${3:-2}" --arg t "${BOT_TOKENS_TO_WIN:-}" \
      '{ruleset: $r, seats: $s} + (if $t == "" then {} else {tokens_to_win: ($t | tonumber)} end)')
    MATCH=$(call POST /v1/matches "$options" | jq -r .match_id)
    join "$MATCH" ;;
  join) MATCH=${2:?usage: curl_bot.sh join MATCH_ID}
        join "$MATCH" ;;
  play) MATCH=${2:?usage: curl_bot.sh play MATCH_ID} ;;
  *) die "usage: curl_bot.sh new [RULESET] [SEATS] | join MATCH_ID | play MATCH_ID" ;;
esac
echo "match $MATCH"

# The action to play: a random one of the legal actions, the Princess only if nothing else.
choose() {
  jq -c --argjson r "$RANDOM" '
    .legal_actions as $all
    | ([$all[] | select(.card != "princess")] | if length > 0 then . else $all end) as $ok
    | $ok[$r % ($ok | length)]'
}

VERSION=0
ROUND_SEEN=0
while :; do
  # Long-poll: answered as soon as the match passes VERSION (or after WAIT seconds).
  VIEW=$(call GET "/v1/matches/$MATCH/view?wait=$WAIT&after=$VERSION")
  while :; do
    # One jq for the fields the loop needs: version, seat, last round ended, status, moves.
    IFS=$'\t' read -r VERSION SEAT ROUND STATUS NLEGAL < <(jq -r \
      '[.version, .seat, (.last_round.round // 0), .status, (.legal_actions | length)] | @tsv' \
      <<<"$VIEW")
    # Rounds ended since we last looked (the view carries the previous round's result).
    if [ "$ROUND" -gt "$ROUND_SEEN" ]; then
      ROUND_SEEN=$ROUND
      jq -r '.last_round | "round \(.round): winners \(.winners) (\(.reason)), tokens \(.tokens)"' \
        <<<"$VIEW"
    fi
    if [ "$STATUS" = finished ]; then
      jq -r --argjson me "$SEAT" \
        '"finished: winners \(.result.winners), tokens \(.result.tokens)" +
         (if (.result.winners | index($me)) != null then " (we won)" else "" end)' <<<"$VIEW"
      exit 0
    fi
    [ "$NLEGAL" -gt 0 ] || break
    ACTION=$(choose <<<"$VIEW")
    echo "seat $SEAT plays $ACTION"
    # One Idempotency-Key per move, so a retry after a lost answer is never applied twice;
    # expected_version refuses the move if the match moved since we read it.
    KEY=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || echo "k$RANDOM$RANDOM$RANDOM$(date +%s%N)")
    BODY=$(jq -c --argjson v "$VERSION" '. + {expected_version: $v}' <<<"$ACTION")
    OUT=$(api POST "/v1/matches/$MATCH/actions" "$BODY" -H "Idempotency-Key: $KEY")
    case $(status_of "$OUT") in
      200) VIEW=$(body_of "$OUT") ;;                   # the answer is our new view
      409) break ;;                                    # the match moved (a timeout?): read again
      *) die "action refused: $(body_of "$OUT")" ;;
    esac
  done
done
