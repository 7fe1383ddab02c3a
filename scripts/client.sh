#!/usr/bin/env bash
# client.sh - emulate the installer-script telemetry clients against an installstats server.
#
# --protocol upload (default): the legacy client (misc/api.func: post_to_api, post_to_api_vm,
# post_update_to_api) byte for byte, flaws included: JSON is built by string interpolation
# and nothing is escaped.
# --protocol v1 | v2: today's clients (POST /telemetry): every field every time, in the real
# key order and layout, the error and model strings escaped (jq, else awk), the real retries.
# See --help.
set -u

usage() {
  cat <<'USAGE'
Usage:
  scripts/client.sh [options] start                          POST $BASE/upload  ("installation started")
  scripts/client.sh [options] update [STATUS [ERROR]]        POST $BASE/upload/updatestatus
  scripts/client.sh [options] install [done|failed [ERROR]]  a whole run: start, then at most one update
  scripts/client.sh --protocol v1|v2 [options] start | progress STATUS | ping |
            final STATUS [EXIT_CODE [ERROR]] | install [STATUS [EXIT_CODE [ERROR]]] |
            tool NAME [STATUS [EXIT_CODE [ERROR]]] | addon NAME [...]   POST /telemetry

Emulates the telemetry client of the community "Proxmox VE helper scripts" installers.
--protocol picks the client generation:
  upload  (default) the legacy client (until 2026-02): POST $BASE/upload, $BASE/upload/updatestatus
  v1      ProxmoxVE misc/api.func since 2026-07-20: POST /telemetry, 28 keys, curl's User-Agent
  v2      core engine api/telemetry.func since 2026-08-18: POST /telemetry, 33 keys,
          "payload_version": 2 first, User-Agent community-scripts-core/2

Commands, --protocol upload:
  start                          POST $BASE/upload ("status": "installing")
  update [STATUS [ERROR]]        POST $BASE/upload/updatestatus; STATUS defaults to failed,
                                 ERROR to "No error message" (an empty argument counts as absent)
  install [done|failed [ERROR]]  start, then (after --sleep) ONE update: done (error "none")
                                 unless failed is given. SIGINT/SIGTERM during the run report
                                 failed "INTERRUPTED"/"TERMINATED"; the POST_UPDATE_DONE guard
                                 keeps it to one update per run, as in the real scripts.
  Sent byte for byte, flaws included: the JSON is interpolated and NOTHING is escaped, so an
  ERROR holding `"` or a newline, or an empty or "32G" number, goes out as broken JSON:
    curl -s -w "%{http_code}" -L --post301 --post302 -X POST \
         -H "Content-Type: application/json" -d "$JSON" "$URL"

Commands, --protocol v1|v2 (POST to $TELEMETRY_URL if set, else $BASE/telemetry):
  start                          "installing", full payload (up to 3 attempts)
  progress STATUS                host progress ping with the full payload (validation,
                                 configuring, ...; 1 attempt)
  ping                           the one-line in-container ping: status configuring
                                 (v2 9 keys, v1 8 keys; 1 attempt; same URL, although the
                                 real v1 container ping is hard-wired to the public server)
  final STATUS [EXIT_CODE [ERROR]]
                                 the final report, with the client's mapping: done|success ->
                                 success (exit 0); failed with 129/130/143 -> aborted (v2 also
                                 the declines 113/114/122/253/254); aborted; anything else ->
                                 unknown. EXIT_CODE: v1 defaults to 1 (failed), 130 (aborted),
                                 0 (unknown), non-digits -> 1; v2 (the newest engine) sends 199
                                 when none or a non-number is given, 0 for "none"; >255 -> 255.
                                 v2 sends no final report for a run whose start was never
                                 attempted: env POST_TO_API_DONE unset (an update run) sends
                                 nothing; install and start set it, "false" (start not accepted)
                                 still sends. ERROR replaces the built error text (see below).
                                 2 attempts with the full error, then (error set) 2 with the
                                 short error
  install [success|failed|aborted [EXIT_CODE [ERROR]]]
                                 a whole run: start, progress validation, progress configuring,
                                 --pings container pings, (--sleep), final (default success).
                                 --vm: start and final only. --retries K: K failed attempts
                                 first (exit EXIT_CODE if failed, else 1), each followed by a
                                 new execution_id (same random_id).
                                 SIGINT/SIGTERM/SIGHUP during the run send the final as
                                 failed 130/143/129 (-> aborted) and end the run
  tool NAME [success|failed [EXIT_CODE [ERROR]]]
  addon NAME [success|failed [EXIT_CODE [ERROR]]]
                                 a tool (type pve) / addon one-shot: fresh random_id =
                                 execution_id (--id sets both), own key list, 1 attempt
  Every request: curl -sS -w "%{http_code}" -m 5 (final: -m 10) -X POST "$URL"
    -H "Content-Type: application/json" [-A community-scripts-core/2] -d "$JSON" -o /dev/null
  (no redirects followed); a non-2xx code (000 = no connection) counts as a failed attempt.
  The error text is built as the client does: "exit_code=N | <explanation>" plus
  " | at line L: CMD" (or " | command: CMD") when --failed-command is set, then "\n---\n"
  and the output of --log/--log-lines (last 60 non-noise lines, at most 10240 bytes).
  Aborts send the header only. Short error (final attempts 3-4): "exit_code=N |
  <explanation> | at line L: <first 200 bytes of CMD>". error_category (client table)
  only with an error text; ERROR_CATEGORY_OVERRIDE wins; aborted -> user_aborted (v2: unless
  ERROR_CATEGORY_OVERRIDE is set, as the engine does).

Options (before the command; upload: a set environment variable, even empty, is sent as is):
  --protocol P       upload (default), v1 or v2
  --url BASE         base URL (env INSTALLSTATS_URL; default http://127.0.0.1:8080).
                     v1/v2: env TELEMETRY_URL, when set, is the full URL and wins
  --id ID            random_id (env RANDOM_UUID; default a new UUID). upload: an empty id
                     skips the start report and sends updates with "random_id": "".
                     v1/v2: an empty id sends nothing (tool/addon: a fresh UUID)
  --execution-id ID  v1/v2 execution_id (env EXECUTION_ID; default = random_id)
  --vm               VM client: type vm, ct_type 2, disk_size with its trailing G stripped
                     (upload: disableip6 "", env CT_TYPE ignored)
  --app NAME         nsapp        (env NSAPP, v1/v2 also app; default debian)
  --method M         method       (env METHOD;      default default)
  --os TYPE          os_type      (env var_os;      default debian)
  --os-version V     os_version   (env var_version; default 12)
  --pve VERSION      pve_version  (env PVEVERSION; else `pveversion` when installed; else
                     8.2.2). upload: empty sends the literal "not found"; v1/v2 send ""
  --disk N           disk_size    (env DISK_SIZE; default 8. upload: sent as is, G stripped
                     for --vm; v1/v2: one trailing G stripped, non-digits -> 0)
  --cores N          core_count   (env CORE_COUNT;  default 1)
  --ram N            ram_size     (env RAM_SIZE;    default 512)
  --type T           type         (default lxc, vm with --vm; v1/v2 env TELEMETRY_TYPE;
                     newer clients also send turnkey, pve, addon, tool)
  --ct-type N        ct_type      (env CT_TYPE;     default 1, or 2 with --vm)
  --sleep SECONDS    install: wait this long before the final report/update (default 0)
  -v, --verbose      print each URL, JSON sent and reply on stderr
  -h, --help         print this help and exit 0
  --                 end of options
 upload only:
  --legacy           older container revision that does not send disableip6
                     (without it disableip6 is env DISABLEIP6, default "no")
  --host-version     send the version as "host_version" instead of "pve_version"
 v1/v2 only (env in parentheses, read as the real client reads it):
  --pings N          install: container pings per attempt (default 4)
  --retries K        install: K failed attempts before the requested one (default 0)
  --retry-sleep S    seconds between attempts of one report (default 1)
  --duration N       install_duration of final/tool/addon reports (else the client timer:
                     env INSTALL_START_TIME, started by v2 start / v1 install)
  --log FILE         command output for the error text
  --log-lines N      ... or N generated log lines
  --failed-command C (FAILED_COMMAND) failing command: error header, v2 failed_command
  --failed-line L    (FAILED_LINE) its line: error header, v2 failed_line (non-digits -> 0)
  --no-jq            escape with the awk fallback even when jq exists (env CLIENT_NO_JQ=1)
  --cpu-vendor V     (CPU_VENDOR; default unknown)   --cpu-model M  (CPU_MODEL; default "")
  --gpu-vendor V     (GPU_VENDOR; default unknown)   --gpu-model M  (GPU_MODEL; default "")
  --gpu-passthrough P  sent as is; default v1 GPU_PASSTHROUGH or unknown (igpu/dgpu/unknown),
                     v2 yes if var_gpu or ENABLE_GPU is yes, else no
  --ram-speed N      (RAM_SPEED; default "")         --arch A  (default dpkg/uname; v2 amd64..)
  --has-arm B        (HAS_ARM; default true for arm64/aarch64, else false)
  --platform P       (TELEMETRY_PLATFORM; default pve; addon default "")
  --kernel K         v2 kernel_version (KERNEL_VERSION; default `uname -r`)
  --app-version V    v2 app_version (APPLICATION_VERSION, var_appversion; default "")
  --repo-source S    (REPO_SOURCE; default v1 ProxmoxVE, v2 ProxmoxVED: the engine's own
                     attribution when it cannot tell the script repository)
  --repo-slug S      (REPO_SLUG; default community-scripts/<source> for those two, else "")
  Also read: TELEMETRY_TOOL_TYPE (v2 tool type), ERROR_CATEGORY_OVERRIDE, POST_TO_API_DONE (v2 final).

Opt-out: DIAGNOSTICS=no in the environment sends nothing and prints nothing
(a note on stderr with -v); exit 0.

Output: one line per request sent (retries included) on stdout, with 000 when the server
cannot be reached:
  upload:  "<endpoint> <http_code>"           upload 201 | updatestatus 200
  v1/v2:   "telemetry <status> <http_code>"   telemetry installing 202 | telemetry success 500
           (<status> as sent: installing, validation, configuring, success, failed, ...)

Exit status: 0 when the requests were sent, whatever the HTTP code (the real client is
fire-and-forget); 1 when curl could not connect (or is missing); 2 on usage errors.

Needs bash, curl and coreutils; v1/v2 also awk (jq used when installed).
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
PROTOCOL=upload
VM=0
LEGACY=0
HOST_VERSION_KEY=0
SLEEP_SECONDS=0
OPT_ID_SET=0 OPT_ID=""
OPT_PVE_SET=0 OPT_PVE=""
OPT_TYPE_SET=0 OPT_TYPE=""
OPT_CT_TYPE_SET=0 OPT_CT_TYPE=""
# v1/v2 only
OPT_EXEC_ID_SET=0 OPT_EXEC_ID=""
OPT_GPU_PT_SET=0 OPT_GPU_PT=""
OPT_ARCH=""
PINGS=4
RETRIES=0
RETRY_SLEEP=1
DURATION=""
LOG_FILE=""
LOG_LINES=""
NO_JQ=0
[[ ${CLIENT_NO_JQ:-0} != 0 && -n ${CLIENT_NO_JQ:-} ]] && NO_JQ=1
LEGACY_OPT_USED="" # the last upload-only option given
NEW_OPT_USED=""    # the last v1/v2-only option given

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
  --legacy) LEGACY=1; LEGACY_OPT_USED=$1 ;;
  --host-version) HOST_VERSION_KEY=1; LEGACY_OPT_USED=$1 ;;
  --protocol) need_value "$1" "$#"; PROTOCOL=$2; shift ;;
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
  --no-jq) NO_JQ=1; NEW_OPT_USED=$1 ;;
  --execution-id | --pings | --retries | --retry-sleep | --duration | --log | --log-lines | \
    --failed-command | --failed-line | --cpu-vendor | --cpu-model | --gpu-vendor | --gpu-model | \
    --gpu-passthrough | --ram-speed | --arch | --has-arm | --platform | --kernel | --app-version | \
    --repo-source | --repo-slug)
    need_value "$1" "$#"
    NEW_OPT_USED=$1
    case $1 in
    --execution-id) OPT_EXEC_ID_SET=1; OPT_EXEC_ID=$2 ;;
    --pings) PINGS=$2 ;;
    --retries) RETRIES=$2 ;;
    --retry-sleep) RETRY_SLEEP=$2 ;;
    --duration) DURATION=$2 ;;
    --log) LOG_FILE=$2 ;;
    --log-lines) LOG_LINES=$2 ;;
    --failed-command) FAILED_COMMAND=$2 ;;
    --failed-line) FAILED_LINE=$2 ;;
    --cpu-vendor) CPU_VENDOR=$2 ;;
    --cpu-model) CPU_MODEL=$2 ;;
    --gpu-vendor) GPU_VENDOR=$2 ;;
    --gpu-model) GPU_MODEL=$2 ;;
    --gpu-passthrough) OPT_GPU_PT_SET=1; OPT_GPU_PT=$2 ;;
    --ram-speed) RAM_SPEED=$2 ;;
    --arch) OPT_ARCH=$2 ;;
    --has-arm) HAS_ARM=$2 ;;
    --platform) TELEMETRY_PLATFORM=$2 ;;
    --kernel) KERNEL_VERSION=$2 ;;
    --app-version) APPLICATION_VERSION=$2 ;;
    --repo-source) REPO_SOURCE=$2 ;;
    --repo-slug) REPO_SLUG=$2 ;;
    esac
    shift
    ;;
  --)
    shift
    break
    ;;
  -*) usage_error "unknown option: $1" ;;
  *) break ;;
  esac
  shift
done

case $PROTOCOL in
upload | v1 | v2) ;;
*) usage_error "--protocol must be upload, v1 or v2, not: $PROTOCOL" ;;
esac

(($# > 0)) || usage_error "missing command (see --help)"
COMMAND=$1
shift

is_count() { [[ $1 =~ ^[0-9]+$ ]]; }
is_seconds() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }

if [[ $PROTOCOL == upload ]]; then
  [[ -z $NEW_OPT_USED ]] || usage_error "$NEW_OPT_USED needs --protocol v1 or v2"
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
    is_seconds "$SLEEP_SECONDS" || usage_error "--sleep needs a number of seconds, not: $SLEEP_SECONDS"
    ;;
  progress | ping | final | tool | addon) usage_error "$COMMAND needs --protocol v1 or v2" ;;
  *) usage_error "unknown command: $COMMAND" ;;
  esac
  if ((VM && LEGACY)); then
    usage_error "--legacy is a container client revision; it cannot be combined with --vm"
  fi
else
  [[ -z $LEGACY_OPT_USED ]] || usage_error "$LEGACY_OPT_USED is an upload-protocol option"
  case $COMMAND in
  start | ping)
    (($# == 0)) || usage_error "$COMMAND takes no arguments"
    ;;
  progress)
    if (($# != 1)) || [[ -z $1 ]]; then usage_error "progress takes one STATUS"; fi
    ;;
  final)
    if (($# < 1 || $# > 3)) || [[ -z $1 ]]; then usage_error "final takes STATUS [EXIT_CODE [ERROR]]"; fi
    ;;
  install)
    (($# <= 3)) || usage_error "install takes at most STATUS, EXIT_CODE and ERROR"
    case ${1:-success} in
    success | done | failed | aborted) ;;
    *) usage_error "install status must be success, failed or aborted, not: $1" ;;
    esac
    is_seconds "$SLEEP_SECONDS" || usage_error "--sleep needs a number of seconds, not: $SLEEP_SECONDS"
    ;;
  tool | addon)
    if (($# < 1 || $# > 4)) || [[ -z $1 ]]; then
      usage_error "$COMMAND takes NAME [success|failed [EXIT_CODE [ERROR]]]"
    fi
    case ${2:-success} in
    success | done | failed) ;;
    *) usage_error "$COMMAND status must be success or failed, not: $2" ;;
    esac
    ;;
  update) usage_error "update is an upload-protocol command; use final" ;;
  *) usage_error "unknown command: $COMMAND" ;;
  esac
  is_count "$PINGS" || usage_error "--pings needs a count, not: $PINGS"
  is_count "$RETRIES" || usage_error "--retries needs a count, not: $RETRIES"
  is_seconds "$RETRY_SLEEP" || usage_error "--retry-sleep needs a number of seconds, not: $RETRY_SLEEP"
  [[ -z $DURATION ]] || is_count "$DURATION" || usage_error "--duration needs seconds, not: $DURATION"
  [[ -z $LOG_LINES ]] || is_count "$LOG_LINES" || usage_error "--log-lines needs a count, not: $LOG_LINES"
  [[ -z $LOG_FILE || -z $LOG_LINES ]] || usage_error "use either --log or --log-lines"
  [[ -z $LOG_FILE || -r $LOG_FILE ]] || usage_error "cannot read --log file: $LOG_FILE"
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

CURL_FAILED=0

finish() {
  if ((CURL_FAILED)); then
    exit 1
  fi
  exit 0
}

# ================================================================ /telemetry clients (v1, v2)
# Our own implementation of what research notes A.1-A.7 describe (docs: telemetry protocol).

# The host version, as the legacy path finds it, but "" stays "".
tm_pve_version() {
  local v
  if ((OPT_PVE_SET)); then
    printf '%s' "$OPT_PVE"
  elif [[ -n ${PVEVERSION+set} ]]; then
    printf '%s' "$PVEVERSION"
  elif command -v pveversion >/dev/null 2>&1; then
    # "pve-manager/8.4.1/... (running kernel: ...)" -> 8.4.1
    v=$(pveversion 2>/dev/null)
    v=${v#*/}
    v=${v%%/*}
    [[ $v == *' '* ]] && v=""
    printf '%s' "$v"
  else
    printf '8.2.2'
  fi
}

# json_escape TEXT: sets ESCAPED to TEXT as the inside of a JSON string. Like the client:
# ANSI colour sequences and control bytes (CR too, but not tab and newline) are dropped,
# then jq -Rs does the escaping, or (no jq, or --no-jq) an awk that escapes \ " tab and
# joins the lines with \n. Both give the same bytes for valid UTF-8.
ESCAPED=""
json_escape() {
  local s=$1 out
  if [[ $s == *$'\e'* ]]; then
    # (the trailing x keeps trailing newlines through $(...))
    s=$(printf '%sx' "$s" | LC_ALL=C awk '{ gsub(/\033\[[0-9;?]*[A-Za-z]/, ""); print }')
    s=${s%x}
  fi
  if [[ $s == *[$'\001'-$'\037'$'\177']* ]]; then
    s=$(printf '%sx' "$s" | LC_ALL=C tr -d '\001-\010\013-\037\177')
    s=${s%x}
  fi
  if [[ -z $s ]]; then
    ESCAPED=""
    return
  fi
  if ((USE_JQ)); then
    out=$(printf '%s' "$s" | jq -Rs .)
    out=${out#\"}
    out=${out%\"}
  else
    # index()/substr() only: no regex or gsub replacement quirks (mawk and gawk agree).
    out=$(printf '%s' "$s" | LC_ALL=C awk '
      function swap(str, ch, by,    res, k) {
        res = ""
        while ((k = index(str, ch)) > 0) {
          res = res substr(str, 1, k - 1) by
          str = substr(str, k + 1)
        }
        return res str
      }
      BEGIN { bs = "\\"; q = "\"" }
      {
        line = swap($0, bs, bs bs)
        line = swap(line, q, bs q)
        line = swap(line, "\t", bs "t")
        printf "%s%s", (NR > 1 ? bs "n" : ""), line
      }')
    # awk cannot see a final newline; jq keeps it as \n
    [[ $s == *$'\n' ]] && out+='\n'
  fi
  ESCAPED=$out
}

# Our own wording for the common exit codes (the client has a long table).
explain_code() {
  case $1 in
  1) printf 'General error' ;;
  2) printf 'Shell syntax error or builtin misuse' ;;
  100) printf 'APT: package manager error (broken or unmet dependencies)' ;;
  127) printf 'Command not found' ;;
  113) printf 'LXC: container under-provisioned, the user stopped the update' ;;
  114) printf 'LXC: storage too low, the user stopped the update' ;;
  122) printf 'LXC: no internet access, the user chose not to continue' ;;
  129) printf 'Hangup (SIGHUP): terminal closed' ;;
  130) printf 'Interrupted by user (SIGINT, Ctrl+C)' ;;
  137) printf 'Killed (SIGKILL): out of memory?' ;;
  143) printf 'Terminated (SIGTERM)' ;;
  199) printf 'Engine: no exit code was passed to the report' ;;
  253) printf 'App: update stopped, the user declined the data migration' ;;
  254) printf 'App: the user declined the prompt (or it timed out)' ;;
  255) printf 'DPKG: fatal internal error' ;;
  *) printf 'Unknown error' ;;
  esac
}

# The client's exit code -> error_category table (core adds 227 to proxmox, and files the
# declines 113/114/122/253/254 as user_aborted).
error_category_of() {
  case $1 in
  6 | 7 | 22 | 35) printf network ;;
  28 | 124 | 211) printf timeout ;;
  214 | 217 | 219 | 224) printf storage ;;
  100 | 101 | 102 | 127 | 160 | 161 | 162 | 255) printf dependency ;;
  126 | 152) printf permission ;;
  10 | 128 | 20[3-8]) printf config ;;
  200 | 209 | 210 | 212 | 213 | 215 | 216 | 218 | 22[0-3] | 225 | 231) printf proxmox ;;
  227) if [[ $PROTOCOL == v2 ]]; then printf proxmox; else printf unknown; fi ;;
  150 | 151 | 153 | 154) printf service ;;
  17[0-3] | 18[0-3] | 19[0-3]) printf database ;;
  243 | 24[5-9]) printf runtime ;;
  129 | 130 | 143) printf user_aborted ;;
  113 | 114 | 122 | 253 | 254) if [[ $PROTOCOL == v2 ]]; then printf user_aborted; else printf unknown; fi ;;
  134 | 137) printf resource ;;
  139 | 141) printf signal ;;
  1 | 2) printf shell ;;
  *) printf unknown ;;
  esac
}

# The output block of the error text: the last 60 non-noise lines of --log FILE (or of
# --log-lines N generated lines), at most 10240 bytes (whole lines dropped from the front).
log_output() {
  if [[ -n $LOG_LINES ]]; then
    log_source() {
      LC_ALL=C awk -v n="$LOG_LINES" -v app="$F_NSAPP" 'BEGIN {
        for (i = 1; i <= n; i++) {
          if (i == n) printf "E: %s: step %d of %d failed (\"%s-setup\" returned 1)\n", app, i, n, app
          else if (i % 3 == 0) printf "Setting up %s-part%d (1.%d.0) ...\n", app, i, i
          else printf "[%s] step %d/%d: writing /opt/%s/conf.d/%d.conf\n", app, i, n, app, i
        }
      }'
    }
  elif [[ -n $LOG_FILE ]]; then
    log_source() { cat -- "$LOG_FILE"; }
  else
    return 0
  fi
  log_source | LC_ALL=C awk -v maxl=60 -v maxb=10240 '
    { sub(/\r+$/, "") }
    /^[ \t]*$/ { next }
    /^(Get|Hit|Ign):/ || /^Fetched / || /^Unpacking / || /^Selecting previously/ { next }
    /^Preparing to unpack/ || /^Processing triggers for/ || /^\(Reading database/ { next }
    /Reading package lists/ || /Reading state information/ || /Building dependency tree/ { next }
    /^[0-9]+% \[/ { next }
    { n++; buf[n % maxl] = $0 }
    END {
      if (n == 0) exit
      first = n > maxl ? n - maxl + 1 : 1
      total = -1
      for (i = first; i <= n; i++) total += length(buf[i % maxl]) + 1
      while (total > maxb && first < n) { total -= length(buf[first % maxl]) + 1; first++ }
      last = buf[n % maxl]
      if (total > maxb) { buf[n % maxl] = substr(last, length(last) - maxb + 1) }
      for (i = first; i <= n; i++) printf "%s%s", buf[i % maxl], (i < n ? "\n" : "")
    }'
}

# clamp_exit CODE: the client's sanitising (non-digits -> 1, > 255 -> 255)
clamp_exit() {
  local c=$1
  [[ $c =~ ^[0-9]+$ ]] || c=1
  if ((${#c} > 3)) || ((10#$c > 255)); then
    c=255
  fi
  printf '%s' "$c"
}

failed_line_value() {
  if [[ ${FAILED_LINE:-} =~ ^[0-9]+$ ]]; then printf '%s' "$FAILED_LINE"; else printf 0; fi
}

# error_header CODE: "exit_code=N | <explanation>[ | at line L: CMD | command: CMD]"
error_header() {
  local h cmd=${FAILED_COMMAND:-}
  h="exit_code=$1 | $(explain_code "$1")"
  if [[ -n $cmd ]]; then
    if [[ ${FAILED_LINE:-} =~ ^[0-9]+$ ]]; then
      h+=" | at line $FAILED_LINE: $cmd"
    else
      h+=" | command: $cmd"
    fi
  fi
  printf '%s' "$h"
}

# build_error CODE: the header, then "\n---\n" and the log output when there is some
build_error() {
  local out
  out=$(log_output)
  if [[ -n $out ]]; then
    printf '%s\n---\n%s' "$(error_header "$1")" "$out"
  else
    error_header "$1"
  fi
}

# short_error CODE: what the last two final attempts carry (no log, command cut to 200 bytes)
short_error() {
  local cmd=${FAILED_COMMAND:-} line=${FAILED_LINE:-}
  printf 'exit_code=%s | %s' "$1" "$(explain_code "$1")"
  if [[ -n $cmd ]]; then
    [[ $line =~ ^[0-9]+$ ]] || line='?'
    cmd=$(printf '%s' "$cmd" | head -c 200)
    printf ' | at line %s: %s' "$line" "$cmd"
  fi
}

# ---------------------------------------------------------------- values
tm_setup() {
  local arch_raw
  USE_JQ=0
  if ((!NO_JQ)) && command -v jq >/dev/null 2>&1; then
    USE_JQ=1
  fi
  if ! command -v awk >/dev/null 2>&1; then
    printf 'client.sh: awk not found, nothing sent\n' >&2
    exit 1
  fi
  if [[ -n ${TELEMETRY_URL:-} ]]; then
    TM_URL=$TELEMETRY_URL
    note "TELEMETRY_URL is set: posting to $TM_URL"
  else
    TM_URL="${BASE%/}/telemetry"
  fi
  note "escaping with $(if ((USE_JQ)); then printf jq; else printf awk; fi)"

  if ((OPT_ID_SET)); then
    F_RID=$OPT_ID
  elif [[ -n ${RANDOM_UUID+set} ]]; then
    F_RID=$RANDOM_UUID
  else
    F_RID=$(new_uuid)
  fi
  if ((OPT_EXEC_ID_SET)); then
    F_EID=$OPT_EXEC_ID
  else
    F_EID=${EXECUTION_ID:-$F_RID}
  fi

  if ((VM)); then
    F_TYPE=vm
    F_CT=2 # post_to_api_vm sets CT_TYPE=2 for the whole run
  else
    F_TYPE=${TELEMETRY_TYPE:-lxc}
    F_CT=${CT_TYPE:-1}
  fi
  ((OPT_TYPE_SET)) && F_TYPE=$OPT_TYPE
  ((OPT_CT_TYPE_SET)) && F_CT=$OPT_CT_TYPE

  # Unset means "use the emulator's default"; set (even empty) goes through the client's
  # own defaults (${NSAPP:-${app:-unknown}}, ${CORE_COUNT:-0}, ...).
  if [[ -n ${NSAPP+set} || -n ${app+set} ]]; then
    F_NSAPP=${NSAPP:-${app:-unknown}}
  else
    F_NSAPP=debian
  fi
  F_OS=${var_os-debian}
  F_OSV=${var_version-12}
  F_PVE=$(tm_pve_version)
  F_METHOD=${METHOD:-default}
  F_DISK=${DISK_SIZE-8}
  F_DISK=${F_DISK%G}
  [[ $F_DISK =~ ^[0-9]+$ ]] || F_DISK=0
  F_CORES=${CORE_COUNT-1}
  F_CORES=${F_CORES:-0}
  F_RAM=${RAM_SIZE-512}
  F_RAM=${F_RAM:-0}

  F_CPU_V=${CPU_VENDOR:-unknown}
  json_escape "${CPU_MODEL:-}"
  F_CPU_M=$ESCAPED
  F_GPU_V=${GPU_VENDOR:-unknown}
  json_escape "${GPU_MODEL:-}"
  F_GPU_M=$ESCAPED
  if ((OPT_GPU_PT_SET)); then
    F_GPU_PT=$OPT_GPU_PT
  elif [[ $PROTOCOL == v2 ]]; then
    # v2: whether a GPU is passed to the guest
    if [[ ${var_gpu:-} == yes || ${ENABLE_GPU:-} == yes ]]; then F_GPU_PT=yes; else F_GPU_PT=no; fi
  else
    # v1: the host's capability (igpu/dgpu/unknown)
    F_GPU_PT=${GPU_PASSTHROUGH:-unknown}
  fi
  F_RAM_SPEED=${RAM_SPEED:-}

  if [[ -n $OPT_ARCH ]]; then
    F_ARCH=$OPT_ARCH
  else
    if command -v dpkg >/dev/null 2>&1; then
      arch_raw=$(dpkg --print-architecture 2>/dev/null)
    fi
    [[ -n ${arch_raw:-} ]] || arch_raw=$(uname -m)
    F_ARCH=$arch_raw
    if [[ $PROTOCOL == v2 ]]; then
      case $arch_raw in
      x86_64) F_ARCH=amd64 ;;
      aarch64) F_ARCH=arm64 ;;
      armv7* | armhf) F_ARCH=armhf ;;
      i386 | i686) F_ARCH=i386 ;;
      esac
    fi
  fi
  F_PLATFORM=${TELEMETRY_PLATFORM-pve}
  if [[ -n ${HAS_ARM:-} ]]; then
    F_HAS_ARM=$HAS_ARM
  elif [[ $F_ARCH == arm64 || $F_ARCH == aarch64 ]]; then
    F_HAS_ARM=true
  else
    F_HAS_ARM=false
  fi
  json_escape "${KERNEL_VERSION-$(uname -r)}"
  F_KERNEL=$ESCAPED
  json_escape "${APPLICATION_VERSION:-${var_appversion:-}}"
  F_APPV=$ESCAPED
  if [[ -n ${REPO_SOURCE:-} ]]; then
    F_REPO=$REPO_SOURCE
  elif [[ $PROTOCOL == v2 ]]; then
    F_REPO=ProxmoxVED # core's fallback
  else
    F_REPO=ProxmoxVE
  fi
  F_SLUG=${REPO_SLUG:-}
  if [[ -z $F_SLUG && ($F_REPO == ProxmoxVE || $F_REPO == ProxmoxVED) ]]; then
    F_SLUG=community-scripts/$F_REPO
  fi
}

# ---------------------------------------------------------------- payloads
# Keys and rendered values (strings quoted as is: escape before), then one layout:
# tm_block = the heredoc layout ("{", then "    \"key\": value" lines, "}"),
# tm_line = the container ping's one line without spaces.
TK=() TV=()
kv_reset() { TK=() TV=(); }
kv_num() { TK+=("$1") TV+=("$2"); }
kv_str() { TK+=("$1") TV+=("\"$2\""); }
tm_block() {
  local i out="{"
  for i in "${!TK[@]}"; do
    ((i)) && out+=","
    out+=$'\n'"    \"${TK[i]}\": ${TV[i]}"
  done
  PAYLOAD=$out$'\n'"}"
}
tm_line() {
  local i out="{"
  for i in "${!TK[@]}"; do
    ((i)) && out+=","
    out+="\"${TK[i]}\":${TV[i]}"
  done
  PAYLOAD=$out"}"
}

# tm_full STATUS EXIT_CODE ERROR_ESC CATEGORY DURATION FAILED_COMMAND_ESC FAILED_LINE:
# the one builder of start, host progress and final reports (28 keys v1, 33 keys v2).
tm_full() {
  kv_reset
  [[ $PROTOCOL == v2 ]] && kv_num payload_version 2
  kv_str random_id "$F_RID"
  kv_str execution_id "$F_EID"
  kv_str type "$F_TYPE"
  kv_str nsapp "$F_NSAPP"
  kv_str status "$1"
  kv_num ct_type "$F_CT"
  kv_num disk_size "$F_DISK"
  kv_num core_count "$F_CORES"
  kv_num ram_size "$F_RAM"
  kv_str os_type "$F_OS"
  kv_str os_version "$F_OSV"
  kv_str pve_version "$F_PVE"
  kv_str method "$F_METHOD"
  kv_num exit_code "$2"
  kv_str error "$3"
  kv_str error_category "$4"
  kv_num install_duration "$5"
  kv_str cpu_vendor "$F_CPU_V"
  kv_str cpu_model "$F_CPU_M"
  kv_str gpu_vendor "$F_GPU_V"
  kv_str gpu_model "$F_GPU_M"
  kv_str gpu_passthrough "$F_GPU_PT"
  kv_str ram_speed "$F_RAM_SPEED"
  kv_str arch "$F_ARCH"
  kv_str platform "$F_PLATFORM"
  kv_num has_arm "$F_HAS_ARM"
  if [[ $PROTOCOL == v2 ]]; then
    kv_str kernel_version "$F_KERNEL"
    kv_str app_version "$F_APPV"
    kv_str failed_command "$6"
    kv_num failed_line "$7"
  fi
  kv_str repo_source "$F_REPO"
  kv_str repo_slug "$F_SLUG"
  tm_block
}

# ---------------------------------------------------------------- sending
# tm_post LABEL TIMEOUT: POST $PAYLOAD once; print "telemetry LABEL CODE"; 0 on a 2xx
tm_post() {
  local code rc
  local -a args=(-sS -w "%{http_code}" -m "$2" -X POST "$TM_URL" -H "Content-Type: application/json")
  [[ $PROTOCOL == v2 ]] && args+=(-A "community-scripts-core/2")
  args+=(-d "$PAYLOAD" -o /dev/null)
  note "POST $TM_URL ($1, -m $2)"
  if ((VERBOSE)); then
    printf '%s\n' "$PAYLOAD" >&2
  fi
  code=$(curl "${args[@]}")
  rc=$?
  [[ $code =~ ^[0-9]{3}$ ]] || code=000
  note "reply $code (curl exit $rc)"
  printf 'telemetry %s %s\n' "$1" "$code"
  ((rc == 0)) || CURL_FAILED=1
  [[ $code =~ ^2[0-9][0-9]$ ]]
}

# tm_send LABEL TIMEOUT ATTEMPTS: up to ATTEMPTS posts until a 2xx, --retry-sleep apart
tm_send() {
  local i
  for ((i = 1; i <= $3; i++)); do
    tm_post "$1" "$2" && return 0
    if ((i < $3)) && [[ $RETRY_SLEEP != 0 ]]; then
      sleep "$RETRY_SLEEP"
    fi
  done
  return 1
}

# ---------------------------------------------------------------- the timer
TIMER_STARTED=0
[[ ${INSTALL_START_TIME:-} =~ ^[0-9]+$ ]] && TIMER_STARTED=1
timer_start() {
  if ((!TIMER_STARTED)); then
    INSTALL_START_TIME=$(date +%s)
    TIMER_STARTED=1
  fi
}
# elapsed [noclamp]: seconds since the timer started (0 when it did not), clamped 0..86400
elapsed() {
  local d=0
  if ((TIMER_STARTED)); then
    d=$(($(date +%s) - INSTALL_START_TIME))
  fi
  if [[ ${1:-} != noclamp ]]; then
    ((d < 0)) && d=0
    ((d > 86400)) && d=86400
  fi
  printf '%s' "$d"
}
# the duration of a terminal report: --duration, else the timer
final_duration() {
  local d
  if [[ -n $DURATION ]]; then
    if ((${#DURATION} > 15)); then d=999999999999999; else d=$((10#$DURATION)); fi
    if [[ ${1:-} != noclamp ]] && ((d > 86400)); then
      d=86400
    fi
    printf '%s' "$d"
  else
    elapsed "${1:-}"
  fi
}

# ---------------------------------------------------------------- reports
tm_start() {
  # v2 starts the install clock in the start report itself (so it reports 0)
  [[ $PROTOCOL == v2 ]] && timer_start
  tm_full installing 0 "" "" "$(elapsed)" "" 0
  if tm_send installing 5 3; then POST_TO_API_DONE=true; else POST_TO_API_DONE=false; fi
}

tm_progress() {
  tm_full "$1" 0 "" "" "$(elapsed)" "" 0
  tm_send "$1" 5 1
}

tm_ping() {
  kv_reset
  [[ $PROTOCOL == v2 ]] && kv_num payload_version 2
  kv_str random_id "$F_RID"
  kv_str execution_id "$F_EID"
  kv_str type lxc
  kv_str nsapp "$F_NSAPP"
  kv_str status configuring
  kv_str platform "$F_PLATFORM"
  kv_str repo_source "$F_REPO"
  kv_str repo_slug "$F_SLUG"
  tm_line
  tm_send configuring 5 1
}

# tm_final STATUS [EXIT_CODE [ERROR]]: post_update_to_api, once per execution
POST_UPDATE_DONE=false
tm_final() {
  local status code err="" cat="" fcmd="" fline=0 err_esc fcmd_esc dur
  if [[ $POST_UPDATE_DONE == true ]]; then
    note "final report already sent for this execution (POST_UPDATE_DONE): not sending \"$1\""
    return 0
  fi
  if [[ $PROTOCOL == v2 ]]; then
    # The newest engine: no terminal report for a run whose start was never attempted (an
    # update run); 199 when no exit code reached it; the declines are aborts.
    if [[ -z ${POST_TO_API_DONE:-} ]]; then
      note "no start report was attempted (POST_TO_API_DONE unset): no final report"
      return 0
    fi
    if [[ ${2-} =~ ^[0-9]+$ ]]; then
      code=$(clamp_exit "$2")
    elif [[ ${2-} == none ]]; then
      code=0
    else
      code=199
    fi
    case $1 in
    done | success) status=success code=0 ;;
    failed)
      status=failed
      case $code in 113 | 114 | 122 | 129 | 130 | 143 | 253 | 254) status=aborted ;; esac
      ;;
    aborted) status=aborted ;;
    *) status=unknown ;;
    esac
  else
    case $1 in
    done | success) status=success code=0 ;;
    failed)
      code=$(clamp_exit "${2:-1}")
      status=failed
      case $code in 129 | 130 | 143) status=aborted ;; esac
      ;;
    aborted) status=aborted code=$(clamp_exit "${2:-130}") ;;
    *) status=unknown code=$(clamp_exit "${2:-0}") ;;
    esac
  fi
  if [[ $status != success ]]; then
    fcmd=${FAILED_COMMAND:-}
    fline=$(failed_line_value)
    if [[ -n ${3:-} ]]; then
      err=$3
    elif [[ $status == aborted ]]; then
      err="exit_code=$code | $(explain_code "$code")"
    else
      err=$(build_error "$code")
    fi
    if [[ $status == aborted && $PROTOCOL == v2 ]]; then
      cat=${ERROR_CATEGORY_OVERRIDE:-user_aborted}
    elif [[ $status == aborted ]]; then
      cat=user_aborted
    else
      cat=${ERROR_CATEGORY_OVERRIDE:-$(error_category_of "$code")}
    fi
  fi
  dur=$(final_duration)
  json_escape "$err"
  err_esc=$ESCAPED
  json_escape "$fcmd"
  fcmd_esc=$ESCAPED
  tm_full "$status" "$code" "$err_esc" "$cat" "$dur" "$fcmd_esc" "$fline"
  if tm_send "$status" 10 2; then
    POST_UPDATE_DONE=true
    return 0
  fi
  [[ -n $err ]] || return 0
  json_escape "$(short_error "$code")"
  note "full report not accepted: retrying with the short error"
  tm_full "$status" "$code" "$ESCAPED" "$cat" "$dur" "$fcmd_esc" "$fline"
  tm_send "$status" 10 2 && POST_UPDATE_DONE=true
  return 0
}

# tm_oneshot tool|addon NAME [STATUS [EXIT_CODE [ERROR]]]: post_tool_to_api / post_addon_to_api
tm_oneshot() {
  local kind=$1 name=$2 status=success code=0 err="" cat="" id dur
  if [[ ${3:-success} == failed ]]; then
    status=failed
    code=${4:-1}
    [[ $code =~ ^[0-9]+$ ]] || code=1 # not clamped to 255 here
    if [[ -n ${5:-} ]]; then err=$5; else err=$(build_error "$code"); fi
    cat=${ERROR_CATEGORY_OVERRIDE:-$(error_category_of "$code")}
  fi
  # every run is its own execution: a fresh id for both (RANDOM_UUID/EXECUTION_ID unused)
  if [[ -n $OPT_ID ]]; then id=$OPT_ID; else id=$(new_uuid); fi
  dur=$(final_duration noclamp)
  json_escape "$err"
  kv_reset
  [[ $PROTOCOL == v2 ]] && kv_num payload_version 2
  kv_str random_id "$id"
  kv_str execution_id "$id"
  if [[ $kind == addon ]]; then
    kv_str type addon
  elif [[ $PROTOCOL == v2 ]]; then
    kv_str type "${TELEMETRY_TOOL_TYPE:-pve}"
  else
    kv_str type pve
  fi
  kv_str nsapp "$name"
  kv_str status "$status"
  kv_num exit_code "$code"
  kv_str error "$ESCAPED"
  kv_str error_category "$cat"
  kv_num install_duration "$dur"
  if [[ $kind == addon ]]; then
    # the container's /etc/os-release; no platform detection inside a container
    kv_str os_type "$F_OS"
    kv_str os_version "$F_OSV"
    kv_str platform "${TELEMETRY_PLATFORM:-}"
  else
    kv_str pve_version "$F_PVE"
    kv_str platform "$F_PLATFORM"
  fi
  kv_str repo_source "$F_REPO"
  kv_str repo_slug "$F_SLUG"
  tm_block
  tm_send "$status" 5 1
  return 0
}

# ---------------------------------------------------------------- install run
TM_SLEEP_PID=""
# shellcheck disable=SC2317  # runs from the traps
tm_on_signal() {
  # The real signal handlers report failed 129/130/143 (-> aborted) and exit.
  if [[ -n $TM_SLEEP_PID ]]; then
    kill "$TM_SLEEP_PID" 2>/dev/null
  fi
  tm_final failed "$1"
  finish
}

# tm_lifecycle STATUS EXIT_CODE ERROR: one attempt, as build_container and the install run it
tm_lifecycle() {
  local i
  tm_start
  if ((!VM)); then
    tm_progress validation
    tm_progress configuring
  fi
  # v1 starts its install clock just before the container install (lxc-attach)
  timer_start
  if ((!VM)); then
    for ((i = 0; i < PINGS; i++)); do
      tm_ping
    done
  fi
  if [[ $SLEEP_SECONDS != 0 ]]; then
    sleep "$SLEEP_SECONDS" &
    TM_SLEEP_PID=$!
    wait "$TM_SLEEP_PID"
    TM_SLEEP_PID=""
  fi
  tm_final "$1" "$2" "$3"
}

tm_install() {
  local status=${1:-success} code=${2:-} err=${3:-} i attempt_code=1
  trap 'tm_on_signal 130' INT
  trap 'tm_on_signal 143' TERM
  trap 'tm_on_signal 129' HUP
  # the failed attempts before the requested one (the recovery menu's retries)
  if [[ $status == failed && -n $code ]]; then
    case $(clamp_exit "$code") in
    129 | 130 | 143) ;;
    113 | 114 | 122 | 253 | 254) [[ $PROTOCOL == v2 ]] || attempt_code=$code ;;
    *) attempt_code=$code ;;
    esac
  fi
  for ((i = 0; i < RETRIES; i++)); do
    tm_lifecycle failed "$attempt_code" "$err"
    # telemetry_new_attempt: a new execution_id, same random_id, guards cleared
    F_EID=$(new_uuid)
    POST_UPDATE_DONE=false
    POST_TO_API_DONE=false
    note "new attempt: execution_id $F_EID"
  done
  tm_lifecycle "$status" "$code" "$err"
}

tm_main() {
  tm_setup
  if [[ $COMMAND != tool && $COMMAND != addon && -z $F_RID ]]; then
    note "empty random_id: the client sends nothing"
    finish
  fi
  case $COMMAND in
  start) tm_start ;;
  progress) tm_progress "$1" ;;
  ping) tm_ping ;;
  final) tm_final "$@" ;;
  install) tm_install "$@" ;;
  tool | addon) tm_oneshot "$COMMAND" "$@" ;;
  esac
  finish
}

if [[ $PROTOCOL != upload ]]; then
  tm_main "$@"
fi

# ================================================================ legacy /upload client
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
