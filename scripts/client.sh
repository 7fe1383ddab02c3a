#!/usr/bin/env bash
# client.sh - emulate the installer-script telemetry client against an installstats server.
#
# It sends exactly what the community "Proxmox VE helper scripts" clients send
# (misc/api.func: post_to_api, post_to_api_vm, post_update_to_api), flaws included:
# JSON is built by string interpolation and nothing is escaped. See --help.
set -u

usage() {
  cat <<'USAGE'
Usage:
  scripts/client.sh [options] start                          POST $BASE/upload  ("installation started")
  scripts/client.sh [options] update [STATUS [ERROR]]        POST $BASE/upload/updatestatus
  scripts/client.sh [options] install [done|failed [ERROR]]  a whole run: start, then at most one update

Emulates the installer-script telemetry client (community "Proxmox VE helper scripts",
misc/api.func) byte for byte, including its flaws: the JSON is built by string
interpolation and NOTHING is escaped, so an ERROR holding `"` or a newline, or an empty
or "32G" number, goes out as broken JSON, exactly as in the wild. Every request is:
  curl -s -w "%{http_code}" -L --post301 --post302 -X POST \
       -H "Content-Type: application/json" -d "$JSON" "$URL"

Options (before the command; a set environment variable, even empty, is sent as is):
  --url BASE        base URL (env INSTALLSTATS_URL; default http://127.0.0.1:8080)
  --id ID           random_id (env RANDOM_UUID; default: a new UUID from
                    /proc/sys/kernel/random/uuid or uuidgen). An empty id skips the
                    start report and sends updates with "random_id": "" (as the real client)
  --vm              VM client: type "vm", ct_type 2, disableip6 "" and disk_size with its
                    trailing G stripped (env CT_TYPE is ignored, as the real VM client does)
  --legacy          older container client revision that does not send disableip6
                    (container only; without it disableip6 is env DISABLEIP6, default "no")
  --app NAME        nsapp        (env NSAPP;       default debian)
  --method M        method       (env METHOD;      default default)
  --os TYPE         os_type      (env var_os;      default debian)
  --os-version V    os_version   (env var_version; default 12)
  --pve VERSION     pve_version  (env PVEVERSION; else `pveversion` when installed;
                    else 8.2.2). An empty value means "cannot be determined" and sends
                    the literal "not found", the real client's fallback value
  --disk N          disk_size    (env DISK_SIZE;   default 8; sent unquoted, "32G" as is
                    for containers, G stripped for --vm)
  --cores N         core_count   (env CORE_COUNT;  default 1)
  --ram N           ram_size     (env RAM_SIZE;    default 512)
  --type T          type         (default lxc, or vm with --vm; newer clients send
                    turnkey, pve, addon, tool)
  --ct-type N       ct_type      (env CT_TYPE;     default 1, or 2 with --vm)
  --host-version    send the version under the key "host_version" instead of
                    "pve_version" (newer clients)
  --sleep SECONDS   install: wait this long between start and update (default 0)
  -v, --verbose     print each URL, JSON sent and raw reply on stderr
  -h, --help        print this help and exit 0
  --                end of options

Commands:
  start             the "installation started" report ("status": "installing").
  update            the status update. STATUS defaults to failed, ERROR to
                    "No error message" (an empty argument counts as absent).
  install           start, then (after --sleep) ONE update: STATUS done (error "none")
                    unless failed is given (error default "No error message"). As in the
                    real scripts, SIGINT/SIGTERM during the run report failed
                    "INTERRUPTED"/"TERMINATED", and an exit handler reports again;
                    the POST_UPDATE_DONE guard keeps it to one update per run.

Opt-out: DIAGNOSTICS=no in the environment sends nothing and prints nothing
(a note on stderr with -v); exit 0.

Output: one line per request sent on stdout, "<endpoint> <http_code>", e.g.
  upload 201
  updatestatus 200
with 000 when the server cannot be reached.

Exit status: 0 when the requests were sent, whatever the HTTP code (the real client is
fire-and-forget); 1 when curl could not connect (or is missing); 2 on usage errors.

Needs only bash, curl and coreutils.
USAGE
}

VERBOSE=0
note() {
  if ((VERBOSE)); then
    printf 'client.sh: %s\n' "$*" >&2
  fi
}

usage_error() {
  printf 'client.sh: %s\n' "$*" >&2
  printf 'Try "scripts/client.sh --help".\n' >&2
  exit 2
}

new_uuid() {
  local hex
  if [[ -r /proc/sys/kernel/random/uuid ]]; then
    cat /proc/sys/kernel/random/uuid
  elif command -v uuidgen >/dev/null 2>&1; then
    uuidgen
  else
    # coreutils-only fallback: a version-4-shaped UUID from /dev/urandom
    hex=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    printf '%s-%s-4%s-a%s-%s\n' "${hex:0:8}" "${hex:8:4}" "${hex:13:3}" "${hex:17:3}" "${hex:20:12}"
  fi
}

# ---------------------------------------------------------------- options
BASE=${INSTALLSTATS_URL:-http://127.0.0.1:8080}
VM=0
LEGACY=0
HOST_VERSION_KEY=0
SLEEP_SECONDS=0
OPT_ID_SET=0 OPT_ID=""
OPT_PVE_SET=0 OPT_PVE=""
OPT_TYPE_SET=0 OPT_TYPE=""
OPT_CT_TYPE_SET=0 OPT_CT_TYPE=""

# Options that take a value: "$1" is the option, "$2" must exist.
need_value() {
  if (($2 < 2)); then
    usage_error "option $1 needs a value"
  fi
}

while (($# > 0)); do
  case $1 in
  -h | --help)
    usage
    exit 0
    ;;
  -v | --verbose) VERBOSE=1 ;;
  --vm) VM=1 ;;
  --legacy) LEGACY=1 ;;
  --host-version) HOST_VERSION_KEY=1 ;;
  --url) need_value "$1" "$#"; BASE=$2; shift ;;
  --id) need_value "$1" "$#"; OPT_ID_SET=1; OPT_ID=$2; shift ;;
  --app) need_value "$1" "$#"; NSAPP=$2; shift ;;
  --method) need_value "$1" "$#"; METHOD=$2; shift ;;
  --os) need_value "$1" "$#"; var_os=$2; shift ;;
  --os-version) need_value "$1" "$#"; var_version=$2; shift ;;
  --pve) need_value "$1" "$#"; OPT_PVE_SET=1; OPT_PVE=$2; shift ;;
  --disk) need_value "$1" "$#"; DISK_SIZE=$2; shift ;;
  --cores) need_value "$1" "$#"; CORE_COUNT=$2; shift ;;
  --ram) need_value "$1" "$#"; RAM_SIZE=$2; shift ;;
  --type) need_value "$1" "$#"; OPT_TYPE_SET=1; OPT_TYPE=$2; shift ;;
  --ct-type) need_value "$1" "$#"; OPT_CT_TYPE_SET=1; OPT_CT_TYPE=$2; shift ;;
  --sleep) need_value "$1" "$#"; SLEEP_SECONDS=$2; shift ;;
  --)
    shift
    break
    ;;
  -*) usage_error "unknown option: $1" ;;
  *) break ;;
  esac
  shift
done

(($# > 0)) || usage_error "missing command (start, update or install)"
COMMAND=$1
shift

case $COMMAND in
start)
  (($# == 0)) || usage_error "start takes no arguments"
  ;;
update)
  (($# <= 2)) || usage_error "update takes at most STATUS and ERROR"
  ;;
install)
  (($# <= 2)) || usage_error "install takes at most a status (done|failed) and ERROR"
  if (($# >= 1)) && [[ $1 != "done" && $1 != "failed" ]]; then
    usage_error "install status must be done or failed, not: $1"
  fi
  if (($# == 2)) && [[ $1 != failed ]]; then
    usage_error "install takes an ERROR only with failed"
  fi
  [[ $SLEEP_SECONDS =~ ^[0-9]+([.][0-9]+)?$ ]] || usage_error "--sleep needs a number of seconds, not: $SLEEP_SECONDS"
  ;;
*) usage_error "unknown command: $COMMAND" ;;
esac

if ((VM && LEGACY)); then
  usage_error "--legacy is a container client revision; it cannot be combined with --vm"
fi

# ---------------------------------------------------------------- opt-out
# Like the real client: DIAGNOSTICS=no means nothing is ever sent.
if [[ ${DIAGNOSTICS:-} == no ]]; then
  note "DIAGNOSTICS=no: opted out, nothing sent"
  exit 0
fi

if ! command -v curl >/dev/null 2>&1; then
  # The real client silently returns; an emulator should say why nothing happened.
  printf 'client.sh: curl not found, nothing sent\n' >&2
  exit 1
fi

# ---------------------------------------------------------------- the values a client has
# A set variable (even empty) is used as is, as the real client interpolates it blindly.
BASE=${BASE%/}
if ((OPT_ID_SET)); then
  RANDOM_UUID=$OPT_ID
elif [[ -z ${RANDOM_UUID+set} ]]; then
  RANDOM_UUID=$(new_uuid)
fi
NSAPP=${NSAPP-debian}
METHOD=${METHOD-default}
var_os=${var_os-debian}
var_version=${var_version-12}
DISK_SIZE=${DISK_SIZE-8}
CORE_COUNT=${CORE_COUNT-1}
RAM_SIZE=${RAM_SIZE-512}
DISABLEIP6=${DISABLEIP6-no}

if ((OPT_PVE_SET)); then
  PVE_VERSION=$OPT_PVE
elif [[ -n ${PVEVERSION+set} ]]; then
  PVE_VERSION=$PVEVERSION
elif command -v pveversion >/dev/null 2>&1; then
  # "pve-manager/8.2.2/9355359cd7afbae4 (running kernel: ...)" -> 8.2.2
  PVE_VERSION=$(pveversion 2>/dev/null)
  PVE_VERSION=${PVE_VERSION#*/}
  PVE_VERSION=${PVE_VERSION%%/*}
  [[ $PVE_VERSION == *' '* ]] && PVE_VERSION=""
else
  PVE_VERSION=8.2.2
fi
[[ -n $PVE_VERSION ]] || PVE_VERSION="not found"

if ((VM)); then
  CLIENT_TYPE=vm
  CLIENT_CT_TYPE=2 # hard-wired in the real VM client
else
  CLIENT_TYPE=lxc
  CLIENT_CT_TYPE=${CT_TYPE-1}
fi
((OPT_TYPE_SET)) && CLIENT_TYPE=$OPT_TYPE
((OPT_CT_TYPE_SET)) && CLIENT_CT_TYPE=$OPT_CT_TYPE

VERSION_KEY=pve_version
((HOST_VERSION_KEY)) && VERSION_KEY=host_version

CURL_FAILED=0

# ---------------------------------------------------------------- sending
# send ENDPOINT JSON: POST it the way the real client does and print "<endpoint> <code>".
send() {
  local endpoint=$1 JSON=$2 URL RESPONSE rc code
  if [[ $endpoint == upload ]]; then
    URL="$BASE/upload"
  else
    URL="$BASE/upload/updatestatus"
  fi
  note "POST $URL"
  if ((VERBOSE)); then
    printf '%s\n' "$JSON" >&2
  fi
  # Exactly the real client's request. The reply body is captured with the code
  # appended by -w, and (like the real client) never looked at beyond that code.
  RESPONSE=$(curl -s -w "%{http_code}" -L --post301 --post302 -X POST -H "Content-Type: application/json" -d "$JSON" "$URL")
  rc=$?
  code=${RESPONSE: -3}
  [[ $code =~ ^[0-9]{3}$ ]] || code=000
  note "reply ($code, curl exit $rc): ${RESPONSE%???}"
  printf '%s %s\n' "$endpoint" "$code"
  if ((rc != 0)); then
    CURL_FAILED=1
  fi
  return 0
}

# post_start: post_to_api / post_to_api_vm. The JSON layout (4-space indent,
# "type":"lxc" without a space, unquoted numbers) is the one real clients send.
post_start() {
  local disk=$DISK_SIZE JSON
  if [[ -z $RANDOM_UUID ]]; then
    note "empty random_id: the real client skips the start report"
    return 0
  fi
  ((VM)) && disk=${DISK_SIZE%G}
  JSON="{
    \"ct_type\": $CLIENT_CT_TYPE,
    \"type\":\"$CLIENT_TYPE\",
    \"disk_size\": $disk,
    \"core_count\": $CORE_COUNT,
    \"ram_size\": $RAM_SIZE,
    \"os_type\": \"$var_os\",
    \"os_version\": \"$var_version\","
  if ((VM)); then
    JSON+="
    \"disableip6\": \"\","
  elif ((!LEGACY)); then
    JSON+="
    \"disableip6\": \"$DISABLEIP6\","
  fi
  JSON+="
    \"nsapp\": \"$NSAPP\",
    \"method\": \"$METHOD\",
    \"$VERSION_KEY\": \"$PVE_VERSION\",
    \"status\": \"installing\",
    \"random_id\": \"$RANDOM_UUID\"
}"
  send upload "$JSON"
}

# post_update [STATUS [ERROR]]: post_update_to_api. The once-per-run guard:
# the first call sends, every later call in the same run is a no-op.
POST_UPDATE_DONE=false
post_update() {
  if [[ $POST_UPDATE_DONE == true ]]; then
    note "status update already sent in this run (POST_UPDATE_DONE): not sending \"${1:-failed}\""
    return 0
  fi
  local status=${1:-failed}
  local error=${2:-No error message}
  local JSON
  # NO escaping: a `"`, `\` or newline in $error makes the JSON invalid, as in the wild.
  JSON="{
    \"status\": \"$status\",
    \"error\": \"$error\",
    \"random_id\": \"$RANDOM_UUID\"
}"
  send updatestatus "$JSON"
  POST_UPDATE_DONE=true
}

# ---------------------------------------------------------------- install run
SLEEP_PID=""
SIGNALLED=0
# shellcheck disable=SC2317  # on_signal and on_exit run from traps
on_signal() {
  # The real scripts trap SIGINT/SIGTERM with a "failed" update and carry on;
  # the final update later in the run is then swallowed by the guard.
  SIGNALLED=1
  post_update failed "$1"
  if [[ -n $SLEEP_PID ]]; then
    kill "$SLEEP_PID" 2>/dev/null
  fi
}

# shellcheck disable=SC2317
on_exit() {
  # An exit handler that reports again: with POST_UPDATE_DONE already true
  # this sends nothing, so a run never has two status updates.
  post_update failed "exit code $1"
}

run_install() {
  local status=${1:-done} error
  if [[ $status == "done" ]]; then
    error=${2:-none}
  else
    error=${2:-No error message}
  fi
  trap 'on_signal INTERRUPTED' INT
  trap 'on_signal TERMINATED' TERM
  trap 'on_exit "$?"' EXIT

  post_start
  # (a signal caught while the start report was in flight cuts the wait short)
  if [[ $SLEEP_SECONDS != 0 ]] && ((!SIGNALLED)); then
    # In the background so that a signal is handled at once, not after the sleep.
    sleep "$SLEEP_SECONDS" &
    SLEEP_PID=$!
    wait "$SLEEP_PID"
    SLEEP_PID=""
  fi
  post_update "$status" "$error"
}

case $COMMAND in
start) post_start ;;
update) post_update "$@" ;;
install) run_install "$@" ;;
*) usage_error "unknown command: $COMMAND" ;;
esac

if ((CURL_FAILED)); then
  exit 1
fi
exit 0
