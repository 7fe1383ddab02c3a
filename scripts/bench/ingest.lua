-- wrk script for scripts/bench-ingest.ts: realistic, varied installstats reports.
--
--   wrk -t2 -c64 -d10s -s scripts/bench/ingest.lua http://127.0.0.1:PORT -- MODE NONCE OUTDIR TAG RECORD
--
-- MODE   start: start reports only (POST /upload)
--        mixed: start reports, and for every acknowledged start its status update
--               (POST /upload/updatestatus), sent after the start's 2xx by the same wrk thread
--        telemetry: the current clients (POST /telemetry, payload v2, every field): per execution
--               installing, validation, configuring and the final report (4 requests), each sent
--               after the previous one's 2xx; a fifth of the runs fail with a ~10 KiB error (the
--               client's log tail), and a third of those are retried as a new execution (the first
--               attempt's execution_id is its random_id, a retry's a new id, as the clients send them)
-- NONCE  0..65535, different for every wrk run against the same database (ids stay unique)
-- OUTDIR where each thread writes the execution_ids of acknowledged reports (for /upload the
--        random_id): TAG-tN-start.txt ("created") and TAG-tN-update.txt (final "updated"), one per line
-- RECORD 1: define response() (record ids, count statuses); 0: no response() callback at all
--        (wrk is faster without it; only for measuring that cost, start mode only)
--
-- done() prints one line "BENCHJSON {...}" with throughput, latency percentiles (µs) and per-thread
-- counters; the harness parses it.
--
-- random_id layout (UUID v4 shape): RRRRRRRR-RRRR-4TTT-vRRR-NNNNCCCCCCCC with R random, T thread,
-- N nonce, C per-thread counter: unique per (run, thread, counter), while the random leading
-- digits make inserts land all over the primary-key B-tree, as real UUIDs do.

-- ---------------------------------------------------------------- main state (setup/done)
local threads = {}
local next_tid = 0

function setup(thread)
  thread:set("tid", next_tid)
  next_tid = next_tid + 1
  table.insert(threads, thread)
end

-- ---------------------------------------------------------------- data

-- Application names, most popular first (popularity follows a Zipf-like long tail).
local APPS = {
  "docker", "homeassistant", "pihole", "jellyfin", "adguard", "debian", "ubuntu", "vaultwarden",
  "plex", "nginxproxymanager", "alpine", "immich", "frigate", "mqtt", "zigbee2mqtt", "nodered",
  "nextcloudpi", "paperless-ngx", "uptimekuma", "homarr", "tailscale", "wireguard", "portainer",
  "cloudflared", "sonarr", "radarr", "prowlarr", "qbittorrent", "esphome", "grafana", "influxdb",
  "mariadb", "postgresql", "unifi", "omada", "photoprism", "navidrome", "audiobookshelf",
  "syncthing", "gitea", "forgejo", "n8n", "ollama", "openwebui", "dockge", "komodo", "jellyseerr",
  "overseerr", "lidarr", "readarr", "bazarr", "sabnzbd", "transmission", "deluge", "tdarr",
  "emby", "kavita", "komga", "calibre-web", "mealie", "tandoor", "actualbudget", "firefly",
  "bookstack", "wikijs", "trilium", "memos", "linkwarden", "karakeep", "wallos", "homepage",
  "dashy", "heimdall", "flame", "authentik", "keycloak", "authelia", "crowdsec", "technitiumdns",
  "unbound", "bind9", "adguardhome-sync", "nginx", "caddy", "traefik", "haproxy", "apache-guacamole",
  "meshcentral", "rustdeskserver", "zabbix", "prometheus", "alertmanager", "loki", "netdata",
  "glances", "beszel", "checkmk", "librenms", "observium", "scrutiny", "smokeping", "speedtest-tracker",
  "myspeed", "changedetection", "gotify", "ntfy", "apprise", "mosquitto", "emqx", "rabbitmq",
  "redis", "mongodb", "couchdb", "minio", "garage", "seafile", "owncloud", "filebrowser",
  "cockpit", "webmin", "turnkey-fileserver", "samba", "nfs-server", "openmediavault", "proxmox-backup-server",
  "pbs", "runtipi", "casaos", "umbrel", "cosmos", "yunohost", "coolify", "dokploy", "caprover",
  "jenkins", "gitlab", "drone", "woodpecker", "act-runner", "code-server", "openvscode-server",
  "jupyter", "rstudio", "stirling-pdf", "it-tools", "cyberchef", "searxng", "whoogle", "freshrss",
  "miniflux", "tt-rss", "wallabag", "shiori", "linkding", "hoarder", "readeck", "vikunja",
  "planka", "wekan", "focalboard", "kanboard", "leantime", "openproject", "redmine", "taiga",
  "nocodb", "baserow", "appsmith", "budibase", "directus", "strapi", "ghost", "wordpress",
  "grav", "hugo", "jekyll", "writefreely", "matrix-synapse", "conduit", "dendrite", "element",
  "rocketchat", "mattermost", "zulip", "jitsi", "mumble", "teamspeak", "minecraft", "crafty-controller",
  "pterodactyl", "pelican", "factorio", "valheim", "palworld", "satisfactory", "terraria", "ark",
  "steamcmd", "sunshine", "moonlight", "kasm", "guacamole", "xrdp", "ubuntu-desktop", "windows",
  "haos-vm", "opnsense", "pfsense", "openwrt", "mikrotik-routeros", "vyos", "ipfire", "truenas",
  "unraid", "debian-vm", "ubuntu2404-vm", "ubuntu2204-vm", "docker-vm", "nextcloud-vm", "umbrel-os-vm",
  "arch-linux-vm", "alpine-docker", "alpine-nextcloud", "alpine-vaultwarden", "alpine-grafana",
  "alpine-redis", "alpine-mariadb", "alpine-postgresql", "alpine-zigbee2mqtt", "alpine-adguard",
  "alpine-tinyauth", "tinyauth", "pocketid", "pocketbase", "supabase", "appwrite", "convex",
  "openobserve", "signoz", "uptime-kuma-next", "healthchecks", "cronicle", "ofelia", "watchtower",
  "diun", "wud", "renovate", "semaphore", "ansible", "awx", "rundeck", "salt", "puppet",
  "foreman", "netbox", "nautobot", "phpipam", "snipe-it", "glpi", "ralph", "grocy", "homebox",
  "inventree", "part-db", "spoolman", "octoprint", "mainsail", "fluidd", "obico", "scrypted",
  "shinobi", "zoneminder", "motioneye", "agentdvr", "viseron", "double-take", "compreface",
  "deepstack", "codeproject-ai", "whisper", "piper", "openwakeword", "wyoming", "rhasspy",
  "evcc", "openhab", "iobroker", "fhem", "domoticz", "homebridge", "scrypted-nvr", "matterbridge",
  "zwave-js-ui", "deconz", "rtl433", "teslamate", "traccar", "owntracks", "dawarich", "hortusfox",
  "magicmirror", "fladder", "jellystat", "tautulli", "ombi", "requestrr", "notifiarr", "recyclarr",
  "autobrr", "flaresolverr", "byparr", "huntarr", "cleanuparr", "decluttarr", "unpackerr",
  "nzbget", "pyload", "jdownloader", "metube", "tubearchivist", "pinchflat", "ytdl-sub",
  "lazylibrarian", "mylar3", "kapowarr", "suwayomi", "mediamanager", "threadfin", "ersatztv",
  "dispatcharr", "tunarr", "channels", "tvheadend", "owncast", "peertube", "pixelfed",
  "mastodon", "gotosocial", "lemmy", "misskey", "akkoma", "bluesky-pds", "postal", "mailcow",
  "stalwart", "mailu", "docker-mailserver", "roundcube", "snappymail", "listmonk", "umami",
  "plausible", "matomo", "goaccess", "openobserve-lite", "rustfs", "sftpgo", "pairdrop", "send",
  "privatebin", "hastebin", "opengist", "excalidraw", "drawio", "onlyoffice", "collabora",
  "docmost", "outline", "affine", "siyuan", "joplin-server", "silverbullet", "anytype", "logseq",
}

local OS = { -- os_type, os_version, weight
  { "debian", "12", 46 }, { "debian", "13", 14 }, { "debian", "11", 6 },
  { "ubuntu", "24.04", 14 }, { "ubuntu", "22.04", 8 }, { "ubuntu", "24.10", 2 }, { "ubuntu", "20.04", 1 },
  { "alpine", "3.22", 4 }, { "alpine", "3.21", 3 }, { "alpine", "3.20", 1 }, { "alpine", "3.19", 1 },
}

local PVE = { -- pve_version, weight (PVE 7.4 to 9.x, and clients that cannot tell)
  { "8.4.1", 14 }, { "8.4.0", 5 }, { "8.3.5", 6 }, { "8.3.4", 3 }, { "8.3.2", 3 }, { "8.3.0", 2 },
  { "8.2.7", 5 }, { "8.2.4", 4 }, { "8.2.2", 5 }, { "8.1.10", 2 }, { "8.1.4", 3 }, { "8.0.4", 2 },
  { "9.0.3", 9 }, { "9.0.10", 6 }, { "9.0.0", 2 }, { "9.1.1", 5 }, { "9.1.2", 3 },
  { "7.4-19", 2 }, { "7.4-17", 1 }, { "7.4-3", 1 }, { "not found", 1 },
}

local METHODS = { { "default", 70 }, { "advanced", 18 }, { "mydefaults-global", 5 }, { "mydefaults-app", 4 }, { "appdefaults", 3 } }

-- Error texts for failed runs, as the reference client sends them (bash error lines, exit-code
-- sentences, interrupted runs); plain text here, JSON-escaped once in init().
local FAILURES = {
  { "INTERRUPTED", 6 },
  { "TERMINATED", 2 },
  { "1", 4 },
  { "100", 3 },
  { "exit code 1: while executing command apt-get install -y curl sudo mc gnupg", 8 },
  { "exit code 100: apt-get -y install ffmpeg", 6 },
  { "Unexpected error: exit code 100 - Package manager error: apt could not install or update packages (dpkg lock or broken dependencies)", 5 },
  { "exit code 127: command not found (a required program is missing or not in PATH)", 4 },
  { "exit code 130: Script terminated by Ctrl+C", 3 },
  { "exit code 255: Unknown critical error, often due to missing permissions or broken scripts", 3 },
  { "exit code 1: Generic error or unknown failure", 5 },
  { "exit code 28: curl: (28) Operation timed out after 30001 milliseconds with 0 bytes received", 3 },
  { "curl: (6) Could not resolve host: github.com", 4 },
  { "curl: (7) Failed to connect to 192.168.1.50 port 443 after 3072 ms: Couldn't connect to server", 2 },
  { "wget: unable to resolve host address 'deb.nodesource.com'", 2 },
  { "E: Unable to locate package python3-distutils", 3 },
  { "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1234 (apt-get)", 3 },
  { "E: Failed to fetch http://deb.debian.org/debian/pool/main/o/openssl/libssl3_3.0.15-1~deb12u1_amd64.deb  Temporary failure resolving 'deb.debian.org'", 2 },
  { "npm ERR! code ENOTEMPTY\nnpm ERR! syscall rename\nnpm ERR! path /usr/lib/node_modules/pnpm", 2 },
  { "error: externally-managed-environment\n\n× This environment is externally managed", 1 },
  { "fatal: unable to access 'https://github.com/immich-app/immich.git/': Could not resolve host: github.com", 1 },
  { "line 412: cd: /opt/paperless/src: No such file or directory", 2 },
  { "[ERROR] in line 87: exit code 1: while executing command \"systemctl enable -q --now $APP\"", 3 },
  { "pct create 118 local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst failed: storage 'local-lvm' does not exist", 2 },
  { "A problem occurred while trying to create container: unable to create CT 105 - storage 'local-zfs' is not available on node 'pve'", 2 },
  { "Container 117 failed to start: startup for container '117' failed", 2 },
  { "No network in container after 10 tries (ping 1.1.1.1 failed)", 2 },
  { "IPv6 is not supported: Network unreachable [2001:db8::1]:443", 1 },
  { "Docker compose failed: Error response from daemon: pull access denied for ghcr.io/goauthentik/server, repository does not exist", 1 },
  { "error: failed to download `https://dl.min.io/server/minio/release/linux-amd64/minio`: HTTP 403\t(retrying 3/3)", 1 },
  { "Killed\nexit code 137: process killed (out of memory)", 2 },
  { "\\e[01;31m✖\\e[m Failed to set up database: psql: error: connection to server on socket \"/var/run/postgresql/.s.PGSQL.5432\" failed", 1 },
}

local DONE_ERRORS = { { "none", 85 }, { "", 10 }, { "No error message", 5 } }

local HEADERS = { ["Content-Type"] = "application/json", ["User-Agent"] = "curl/7.88.1", ["Accept"] = "*/*" }

-- ---------------------------------------------------------------- helpers

local random, floor, format, concat = math.random, math.floor, string.format, table.concat

local function json_escape(s)
  s = s:gsub('\\', '\\\\'):gsub('"', '\\"'):gsub('\n', '\\n'):gsub('\t', '\\t'):gsub('\r', '\\r')
  return (s:gsub('[%z\1-\31]', function(c) return format('\\u%04x', c:byte()) end))
end

-- Weighted choice: items = { {value..., weight}, ... } -> cumulative array for binary search.
local function weighted(items, weight_index)
  local cum, total = {}, 0
  for i, item in ipairs(items) do
    total = total + item[weight_index]
    cum[i] = total
  end
  return function()
    local r = random() * total
    local lo, hi = 1, #cum
    while lo < hi do
      local mid = floor((lo + hi) / 2)
      if cum[mid] < r then lo = mid + 1 else hi = mid end
    end
    return items[lo]
  end
end

-- ---------------------------------------------------------------- per-thread state (init)

function init(args)
  mode = args[1] or "start"
  nonce = tonumber(args[2] or "0") % 65536
  outdir = args[3] or "."
  tag = args[4] or "run"
  recording = (args[5] or "1") ~= "0"
  if mode ~= "start" and mode ~= "mixed" and mode ~= "telemetry" then error("mode must be start, mixed or telemetry") end
  if mode ~= "start" and not recording then error(mode .. " mode needs response()") end
  tid = tid or 0
  math.randomseed(nonce * 7919 + tid * 104729 + 1)

  counter = 0
  sent_start, sent_update = 0, 0
  n_created, n_updated, n_duplicate, n_held, n_other2xx, n_409, n_4xx, n_5xx, n_noid = 0, 0, 0, 0, 0, 0, 0, 0, 0
  queue, qhead, qtail = {}, 1, 1

  local apps = {}
  for rank, name in ipairs(APPS) do apps[rank] = { name, 1 / (rank ^ 1.05) } end
  pick_app = weighted(apps, 2)
  pick_os = weighted(OS, 3)
  pick_pve = weighted(PVE, 2)
  pick_method = weighted(METHODS, 2)
  local fails = {}
  for i, f in ipairs(FAILURES) do fails[i] = { json_escape(f[1]), f[2] } end
  pick_failure = weighted(fails, 2)
  pick_done_error = weighted(DONE_ERRORS, 2)
  -- telemetry: execution_id -> its state; the ~10 KiB log tails failed runs send
  runs = {}
  log_tails = {}
  for k = 1, 4 do
    local lines = {}
    for l = 1, 90 do lines[l] = format("[%02d:%02d:%02d] step %d of build %d: compiling module_%d.c -> module_%d.o (warning: unused variable 'tmp%d')", 10 + k, l % 60, (l * 7) % 60, l, k, l, l, l) end
    log_tails[k] = json_escape(concat(lines, "\n"))
  end

  if recording then
    fstart = assert(io.open(format("%s/%s-t%d-start.txt", outdir, tag, tid), "w"))
    fupdate = assert(io.open(format("%s/%s-t%d-update.txt", outdir, tag, tid), "w"))
    fstart:setvbuf("full", 65536)
    fupdate:setvbuf("full", 65536)
  else
    response = nil -- wrk checks for a response() function after the first thread's init
  end
end

local function new_id()
  counter = counter + 1
  return format("%08x-%04x-4%03x-%x%03x-%04x%08x",
    random(0, 0xffffffff), random(0, 0xffff), tid % 4096, random(8, 11), random(0, 0xfff), nonce, counter)
end

local function start_body(id)
  local app = pick_app()[1]
  local osv = pick_os()
  local is_vm = random() < 0.12 or app:sub(-3) == "-vm"
  local disableip6
  local r = random()
  if is_vm then
    disableip6 = ', "disableip6": ""'
  elseif r < 0.55 then
    disableip6 = ', "disableip6": "yes"'
  elseif r < 0.75 then
    disableip6 = ', "disableip6": "no"'
  else
    disableip6 = "" -- older client revisions do not send it
  end
  local disk = ({ 2, 4, 4, 6, 8, 8, 8, 10, 12, 16, 20, 32, 64 })[random(1, 13)]
  local cores = ({ 1, 1, 2, 2, 2, 2, 4, 4, 6, 8 })[random(1, 10)]
  local ram = ({ 512, 1024, 1024, 2048, 2048, 2048, 4096, 4096, 8192, 16384 })[random(1, 10)]
  local ct_type, type_ = random() < 0.8 and 1 or 0, "lxc"
  if is_vm then ct_type, type_ = 2, "vm" end
  return format('{"ct_type": %d, "type":"%s", "disk_size": %d, "core_count": %d, "ram_size": %d, "os_type": "%s", "os_version": "%s"%s, "nsapp": "%s", "method": "%s", "pve_version": "%s", "status": "installing", "random_id": "%s"}',
    ct_type, type_, disk, cores, ram, osv[1], osv[2], disableip6, app, pick_method()[1], pick_pve()[1], id)
end

local function update_body(id)
  local status, err
  if random() < 0.78 then
    status, err = "done", pick_done_error()[1]
  else
    status, err = "failed", pick_failure()[1]
  end
  return format('{"status": "%s", "error": "%s", "random_id": "%s"}', status, err, id)
end

-- ---------------------------------------------------------------- telemetry (current clients)

local TEL_STEPS = { "installing", "validation", "configuring" }
local CPU = { { "intel", "Intel(R) Core(TM) i5-8500T CPU @ 2.10GHz" }, { "amd", "AMD Ryzen 7 5700U with Radeon Graphics" }, { "intel", "Intel(R) N100" } }
local GPU = { { "intel", "UHD Graphics 630", "no" }, { "nvidia", "GeForce GTX 1650", "yes" }, { "", "", "no" }, { "amd", "Radeon Vega 8", "no" } }

-- The descriptive part of a run's reports: the same in all of them (the client sends it each time).
local function tel_fields(rid, eid)
  local app = pick_app()[1]
  local osv = pick_os()
  local is_vm = random() < 0.12 or app:sub(-3) == "-vm"
  local cpu, gpu = CPU[random(1, #CPU)], GPU[random(1, #GPU)]
  return format('"payload_version": 2, "random_id": "%s", "execution_id": "%s", "type": "%s", "nsapp": "%s", "ct_type": %d, "disk_size": %d, "core_count": %d, "ram_size": %d, "os_type": "%s", "os_version": "%s", "pve_version": "%s", "method": "%s", "cpu_vendor": "%s", "cpu_model": "%s", "gpu_vendor": "%s", "gpu_model": "%s", "gpu_passthrough": "%s", "ram_speed": "%d", "arch": "amd64", "platform": "pve", "has_arm": false, "kernel_version": "6.8.12-%d-pve", "app_version": "%d.%d.%d", "repo_source": "ProxmoxVE", "repo_slug": "community-scripts/ProxmoxVE"',
    rid, eid, is_vm and "vm" or "lxc", app, is_vm and 2 or 1, ({ 4, 8, 8, 16, 32 })[random(1, 5)], ({ 1, 2, 2, 4 })[random(1, 4)],
    ({ 1024, 2048, 2048, 4096 })[random(1, 4)], osv[1], osv[2], pick_pve()[1], pick_method()[1], cpu[1], cpu[2], gpu[1], gpu[2], gpu[3],
    -- An app installs its current release, now and then the previous one: a few versions per app,
    -- as real installs have (random versions would make every app's version list thousands long).
    ({ 2400, 3200, 4800 })[random(1, 3)], random(1, 12), #app % 10, app:byte(1) % 20, random() < 0.9 and 1 or 0)
end

-- A run's execution_id is its random_id on the first attempt and a new id for each retry, as the
-- clients send it (docs/protocol.md; the core client falls back to RANDOM_UUID until a retry sets one).
local function tel_new(rid, attempt)
  local eid = attempt == 1 and rid or new_id()
  runs[eid] = { fields = tel_fields(rid, eid), step = 1, rid = rid, attempt = attempt }
  return eid
end

local function tel_body(eid)
  local run = runs[eid]
  if run.step <= #TEL_STEPS then
    return format('{%s, "status": "%s", "exit_code": 0, "error": "", "install_duration": %d}', run.fields, TEL_STEPS[run.step], (run.step - 1) * 40)
  end
  -- The final report: success, or a failure with its category, command and the client's log tail.
  if run.failed then
    return format('{%s, "status": "failed", "exit_code": 100, "error": "exit_code=100 | APT: package installation failed | at line 212: apt-get install -y libssl-dev\\n---\\n%s", "error_category": "dependency", "failed_command": "apt-get install -y libssl-dev", "failed_line": 212, "install_duration": 130}',
      run.fields, log_tails[random(1, #log_tails)])
  end
  return format('{%s, "status": "success", "exit_code": 0, "error": "", "install_duration": %d}', run.fields, random(60, 400))
end

-- The next id waiting for its next report (a status update, the next step of a run), or nil.
local function dequeue()
  if qhead >= qtail then return nil end
  local id = queue[qhead]
  queue[qhead] = nil
  qhead = qhead + 1
  sent_update = sent_update + 1
  return id
end

function request()
  local id = dequeue()
  if mode == "telemetry" then
    if not id then
      sent_start = sent_start + 1
      id = tel_new(new_id(), 1)
    end
    return wrk.format("POST", "/telemetry", HEADERS, tel_body(id))
  end
  if id then return wrk.format("POST", "/upload/updatestatus", HEADERS, update_body(id)) end
  sent_start = sent_start + 1
  return wrk.format("POST", "/upload", HEADERS, start_body(new_id()))
end

-- A /telemetry answer moves its run on: the next report, a retry as a new execution, or the end.
local function tel_advance(eid, result)
  local run = runs[eid]
  if not run then return end
  if result == "created" then
    fstart:write(eid, "\n")
    n_created = n_created + 1
  elseif run.step > #TEL_STEPS and result == "updated" then
    fupdate:write(eid, "\n")
    n_updated = n_updated + 1
  elseif result == "updated" then
    n_other2xx = n_other2xx + 1
  elseif result == "duplicate" then
    n_duplicate = n_duplicate + 1
  end
  if run.step <= #TEL_STEPS then
    run.step = run.step + 1
    if run.step > #TEL_STEPS then run.failed = random() < 0.2 end
    queue[qtail] = eid
    qtail = qtail + 1
    return
  end
  runs[eid] = nil
  if run.failed and run.attempt == 1 and random() < 0.33 then
    queue[qtail] = tel_new(run.rid, 2)
    qtail = qtail + 1
  end
end

function response(status, headers, body)
  if mode == "telemetry" and status >= 200 and status < 300 then
    local eid = body:match('"execution_id":"([^"]+)"')
    if not eid then n_noid = n_noid + 1 else tel_advance(eid, body:match('"result":"(%a+)"')) end
    return
  end
  if status >= 200 and status < 300 then
    local id = body:match('"random_id":"([^"]+)"')
    local result = body:match('"result":"(%a+)"')
    if not id then
      n_noid = n_noid + 1
    elseif result == "created" then
      n_created = n_created + 1
      fstart:write(id, "\n")
      if mode == "mixed" then
        queue[qtail] = id
        qtail = qtail + 1
      end
    elseif result == "updated" then
      n_updated = n_updated + 1
      fupdate:write(id, "\n")
    elseif result == "duplicate" then
      n_duplicate = n_duplicate + 1
    elseif result == "held" then
      n_held = n_held + 1
    else
      n_other2xx = n_other2xx + 1
    end
  elseif status == 409 then
    n_409 = n_409 + 1
  elseif status >= 500 then
    n_5xx = n_5xx + 1
  else
    n_4xx = n_4xx + 1
  end
end

-- ---------------------------------------------------------------- summary (main state)

function done(summary, latency, requests)
  local per_thread = {}
  local fields = { "sent_start", "sent_update", "n_created", "n_updated", "n_duplicate", "n_held", "n_other2xx", "n_409", "n_4xx", "n_5xx", "n_noid" }
  for _, t in ipairs(threads) do
    local parts = { format('"tid":%d', t:get("tid")) }
    for _, f in ipairs(fields) do parts[#parts + 1] = format('"%s":%d', f, t:get(f) or 0) end
    per_thread[#per_thread + 1] = "{" .. concat(parts, ",") .. "}"
  end
  local e = summary.errors
  io.write(format('BENCHJSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"mean":%.1f,"stdev":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d},"threads":[%s]}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.stdev, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    concat(per_thread, ",")))
end
