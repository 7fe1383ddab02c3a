// Realistic data for `installstats seed`: a seeded PRNG, the app catalogue (a Proxmox
// helper-script collection with a long tail of popularity), OS and host versions whose adoption
// shifts over the seeded window, and the error texts installer scripts really send.
// Pure: no I/O, no clock, no Math.random. The catalogue is fixed (derived from the app names);
// only the records drawn from it depend on the seed.

// ---------------------------------------------------------------- PRNG

/** sfc32, seeded through splitmix32: fast, small state, good enough for synthetic data. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private spare: number | null = null;

  constructor(seed: number) {
    let s = (Math.floor(seed) ^ Math.floor(seed / 0x1_0000_0000)) >>> 0;
    const mix = () => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = mix();
    this.b = mix();
    this.c = mix();
    this.d = mix();
    for (let i = 0; i < 12; i++) this.u32();
  }

  /** A uniform 32-bit unsigned integer. */
  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.u32() / 4294967296;
  }

  /** Uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  range(lo: number, hi: number): number {
    return lo + this.next() * (hi - lo);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** Standard normal (Box-Muller, the second value kept for the next call). */
  normal(): number {
    if (this.spare !== null) {
      const v = this.spare;
      this.spare = null;
      return v;
    }
    let u = this.next();
    while (u === 0) u = this.next();
    const r = Math.sqrt(-2 * Math.log(u));
    const theta = 2 * Math.PI * this.next();
    this.spare = r * Math.sin(theta);
    return r * Math.cos(theta);
  }
}

/** FNV-1a of a string: a stable per-name seed. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** A version 4 UUID, as `cat /proc/sys/kernel/random/uuid` gives the client, drawn from `rng`. */
export function uuid4(rng: Rng): string {
  const a = rng.u32();
  const b = rng.u32();
  const c = rng.u32();
  const d = rng.u32();
  const h = (n: number, shift: number) => HEX[(n >>> shift) & 0xff]!;
  return (
    h(a, 24) +
    h(a, 16) +
    h(a, 8) +
    h(a, 0) +
    "-" +
    h(b, 24) +
    h(b, 16) +
    "-" +
    HEX[0x40 | ((b >>> 8) & 0x0f)]! +
    h(b, 0) +
    "-" +
    HEX[0x80 | ((c >>> 24) & 0x3f)]! +
    h(c, 16) +
    "-" +
    h(c, 8) +
    h(c, 0) +
    h(d, 24) +
    h(d, 16) +
    h(d, 8) +
    h(d, 0)
  );
}

/** Weighted choice by binary search over cumulative weights. */
export class Weighted<T> {
  readonly items: readonly T[];
  readonly total: number;
  private readonly cum: Float64Array;

  constructor(entries: readonly (readonly [T, number])[]) {
    this.items = entries.map(([item]) => item);
    this.cum = new Float64Array(entries.length);
    let total = 0;
    entries.forEach(([, w], i) => {
      total += Math.max(0, w);
      this.cum[i] = total;
    });
    if (!(total > 0)) throw new Error("Weighted: no positive weight");
    this.total = total;
  }

  pick(rng: Rng): T {
    const x = rng.next() * this.total;
    const cum = this.cum;
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cum[mid]! <= x) lo = mid + 1;
      else hi = mid;
    }
    return this.items[lo]!;
  }
}

const smoothstep = (x: number): number => (x <= 0 ? 0 : x >= 1 ? 1 : x * x * (3 - 2 * x));

// ---------------------------------------------------------------- versions over time
// Every time-dependent table is a function of `frac`: the position in the seeded window, 0 at its
// start and 1 at its end. A version enters at `intro` (negative: before the window) and its share
// then decays at `decay` per window as users upgrade.

type Adoption = readonly [version: string, intro: number, weight: number, decay: number];

function adoptionWeight([, intro, weight, decay]: Adoption, frac: number): number {
  const ramp = smoothstep((frac - intro) / 0.04);
  return weight * ramp * Math.exp(-decay * Math.max(0, frac - intro));
}

export const PVE_VERSIONS: readonly Adoption[] = [
  ["7.4-3", -3, 1.0, 0.15],
  ["7.4-17", -2.2, 1.5, 0.25],
  ["7.4-19", -1.8, 2.0, 0.3],
  ["7.4-20", -1.4, 1.5, 0.3],
  ["8.0.4", -2.0, 2.0, 0.5],
  ["8.1.4", -1.7, 3.0, 0.6],
  ["8.1.10", -1.4, 2.5, 0.6],
  ["8.2.2", -1.2, 5.0, 0.8],
  ["8.2.4", -1.1, 5.0, 0.8],
  ["8.2.7", -0.9, 6.0, 0.8],
  ["8.3.0", -0.7, 3.0, 1.0],
  ["8.3.2", -0.6, 5.0, 1.0],
  ["8.3.4", -0.5, 5.0, 1.0],
  ["8.3.5", -0.4, 6.0, 1.0],
  ["8.4.0", -0.25, 8.0, 1.1],
  ["8.4.1", -0.15, 14.0, 1.2],
  ["8.4.5", 0.1, 6.0, 1.0],
  ["9.0.0", 0.22, 4.0, 3.0],
  ["9.0.3", 0.28, 8.0, 2.0],
  ["9.0.6", 0.35, 10.0, 2.0],
  ["9.0.10", 0.45, 12.0, 1.5],
  ["9.0.11", 0.52, 12.0, 1.5],
  ["9.1.1", 0.62, 16.0, 1.0],
  ["9.1.2", 0.7, 18.0, 0.8],
  ["9.1.4", 0.85, 20.0, 0.5],
  ["not found", -10, 1.2, 0],
];

/** os_type -> versions with their adoption over the window. */
export const OS_VERSIONS: Readonly<Record<string, readonly Adoption[]>> = {
  debian: [
    ["11", -3, 10, 0.6],
    ["12", -2, 80, 0.35],
    ["13", 0.3, 55, 0],
  ],
  ubuntu: [
    ["20.04", -5, 4, 0.3],
    ["22.04", -3, 30, 0.4],
    ["24.04", -1.5, 60, 0],
    ["24.10", -0.9, 8, 2.5],
    ["25.04", -0.4, 6, 1.5],
    ["25.10", 0.45, 7, 0],
  ],
  alpine: [
    ["3.19", -2, 8, 0.8],
    ["3.20", -1.5, 12, 1.2],
    ["3.21", -0.6, 20, 0.8],
    ["3.22", 0.25, 30, 0],
  ],
  fedora: [
    ["40", -1.5, 5, 1.5],
    ["41", -0.9, 10, 1],
    ["42", -0.4, 12, 0.5],
    ["43", 0.55, 12, 0],
  ],
  rockylinux: [
    ["8", -6, 3, 0.5],
    ["9", -3, 20, 0.3],
    ["10", 0.3, 8, 0],
  ],
  almalinux: [
    ["9", -3, 20, 0.3],
    ["10", 0.35, 8, 0],
  ],
  centos: [
    ["9", -3, 20, 0.2],
    ["10", 0.2, 10, 0],
  ],
  opensuse: [
    ["15.5", -2, 5, 1.5],
    ["15.6", -1, 15, 0.3],
  ],
  archlinux: [["base", -10, 1, 0]],
  devuan: [
    ["4.0", -3, 3, 1],
    ["5.0", -1.5, 12, 0.2],
  ],
  gentoo: [["current", -10, 1, 0]],
};

/** OS a user picks in the advanced dialog instead of the app's default. */
export const ADVANCED_OS: readonly (readonly [string, number])[] = [
  ["debian", 45],
  ["ubuntu", 35],
  ["alpine", 8],
  ["fedora", 3],
  ["rockylinux", 2],
  ["almalinux", 2],
  ["centos", 2],
  ["opensuse", 1],
  ["archlinux", 1],
  ["devuan", 1],
];

export const METHODS: readonly Adoption[] = [
  ["default", -1, 70, 0.15],
  ["advanced", -1, 19, 0],
  ["mydefaults-global", -1, 5, 0],
  ["mydefaults-app", -0.5, 4, 0],
  ["appdefaults", 0.3, 4, 0],
  ["generated", 0.6, 1.5, 0],
];

/** Weighted tables of a version list at position `frac`. */
export function adoptionTable(list: readonly Adoption[], frac: number): Weighted<string> {
  const entries = list.map((v) => [v[0], adoptionWeight(v, frac)] as const).filter(([, w]) => w > 1e-6);
  return new Weighted(entries.length > 0 ? entries : [[list[list.length - 1]![0], 1]]);
}

// ---------------------------------------------------------------- the app catalogue

type InstallType = "lxc" | "vm" | "turnkey" | "pve" | "addon" | "tool";

/** What an error text is built from at record time. */
export interface ErrorContext {
  app: AppSpec;
  /** Container or VM id on the user's host. */
  ctid: number;
  /** Position in the window, 0..1 (release versions move on). */
  frac: number;
  /** When the install started, epoch ms. */
  at: number;
}
type ErrorMaker = (rng: Rng, ctx: ErrorContext) => string;

export interface AppSpec {
  name: string;
  /** 1 = most installed. */
  rank: number;
  profile: string;
  type: InstallType;
  /** Container type sent by the client: 1 unprivileged, 0 privileged, 2 VM; null for host scripts. */
  ctType: number | null;
  /** Share of installs that choose the other container type (lxc only). */
  otherCtTypeShare: number;
  disk: number | null;
  cores: number | null;
  ram: number | null;
  /** The app's default OS (os_type), or a fixed os_type/os_version pair for VMs and host scripts. */
  os: string;
  fixedOsVersion: readonly string[] | null;
  /** Relative popularity (Zipf by rank, before its trend). */
  weight: number;
  /** Multiplier of `weight` at window position frac. */
  trend: (frac: number) => number;
  /** Failure rate: `failRange[0]` normally, up to `failRange[1]` during incidents (a broken release). */
  failRange: readonly [number, number];
  /** Incident windows as [from, to] window positions. */
  incidents: readonly (readonly [number, number])[];
  abortRate: number;
  /** Share of runs that never send a status update. */
  stuckRate: number;
  /** Log-normal install duration: median seconds and sigma. */
  medianS: number;
  sigma: number;
  /** The app's typical failures (60% of its failures), each with a weight. */
  errors: Weighted<ErrorMaker>;
}

/** Failure rate of `app` at window position `frac`. */
export function failRateAt(app: AppSpec, frac: number): number {
  for (const [from, to] of app.incidents) if (frac >= from && frac < to) return app.failRange[1];
  return app.failRange[0];
}

interface Profile {
  type: InstallType;
  disk: readonly number[];
  cores: readonly number[];
  ram: readonly number[];
  /** Median install time range, seconds. */
  median: readonly [number, number];
  errors: readonly ErrorKind[];
}

type ErrorKind =
  | "apt"
  | "aptLine"
  | "exitCmd"
  | "download"
  | "service"
  | "npm"
  | "pip"
  | "db"
  | "oom"
  | "gpu"
  | "docker"
  | "raw"
  | "git"
  | "go"
  | "cargo"
  | "apk"
  | "vm"
  | "host"
  | "composer"
  | "java"
  | "dotnet";

const PROFILES: Readonly<Record<string, Profile>> = {
  os: {
    type: "lxc",
    disk: [2, 4, 8],
    cores: [1, 2],
    ram: [512, 1024, 2048],
    median: [45, 90],
    errors: ["apt", "aptLine"],
  },
  tiny: {
    type: "lxc",
    disk: [2, 4],
    cores: [1],
    ram: [512, 1024],
    median: [70, 160],
    errors: ["apt", "download", "service", "exitCmd"],
  },
  alp: { type: "lxc", disk: [2, 3], cores: [1], ram: [512], median: [45, 110], errors: ["apk", "download", "service"] },
  web: {
    type: "lxc",
    disk: [4, 6, 8],
    cores: [2],
    ram: [1024, 2048],
    median: [180, 420],
    errors: ["download", "exitCmd", "service", "git", "composer", "db"],
  },
  node: {
    type: "lxc",
    disk: [6, 8, 10],
    cores: [2, 4],
    ram: [2048, 4096],
    median: [240, 540],
    errors: ["npm", "exitCmd", "git", "download", "oom"],
  },
  py: {
    type: "lxc",
    disk: [4, 6, 8],
    cores: [2],
    ram: [1024, 2048],
    median: [150, 420],
    errors: ["pip", "exitCmd", "apt", "git", "service"],
  },
  media: {
    type: "lxc",
    disk: [8, 12, 16],
    cores: [2, 4],
    ram: [2048, 4096],
    median: [120, 300],
    errors: ["gpu", "apt", "download", "service"],
  },
  arr: {
    type: "lxc",
    disk: [4, 8],
    cores: [2],
    ram: [1024, 2048],
    median: [90, 200],
    errors: ["download", "dotnet", "service", "apt"],
  },
  db: {
    type: "lxc",
    disk: [4, 8, 16],
    cores: [1, 2],
    ram: [1024, 2048],
    median: [90, 240],
    errors: ["db", "raw", "apt", "service"],
  },
  heavy: {
    type: "lxc",
    disk: [20, 25, 32, 64],
    cores: [4],
    ram: [4096, 8192],
    median: [360, 600],
    errors: ["oom", "npm", "pip", "db", "download", "exitCmd"],
  },
  ai: {
    type: "lxc",
    disk: [35, 64],
    cores: [4, 8],
    ram: [8192, 16384],
    median: [300, 600],
    errors: ["pip", "gpu", "download", "oom"],
  },
  docker: {
    type: "lxc",
    disk: [4, 8, 10],
    cores: [2],
    ram: [2048],
    median: [90, 240],
    errors: ["docker", "apt", "exitCmd"],
  },
  net: {
    type: "lxc",
    disk: [2, 4],
    cores: [1],
    ram: [512, 1024],
    median: [60, 180],
    errors: ["download", "service", "raw", "apt"],
  },
  mon: {
    type: "lxc",
    disk: [4, 8],
    cores: [1, 2],
    ram: [1024, 2048],
    median: [90, 240],
    errors: ["download", "service", "db", "go"],
  },
  home: {
    type: "lxc",
    disk: [8, 16],
    cores: [2],
    ram: [2048, 4096],
    median: [120, 360],
    errors: ["pip", "npm", "download", "service"],
  },
  gorust: {
    type: "lxc",
    disk: [4, 8],
    cores: [2],
    ram: [1024, 2048],
    median: [120, 400],
    errors: ["go", "cargo", "download", "git"],
  },
  java: {
    type: "lxc",
    disk: [6, 8, 16],
    cores: [2],
    ram: [2048, 4096],
    median: [150, 360],
    errors: ["java", "download", "service", "db"],
  },
  game: {
    type: "lxc",
    disk: [8, 16, 32],
    cores: [4],
    ram: [4096, 8192],
    median: [180, 480],
    errors: ["download", "java", "exitCmd"],
  },
  vm: { type: "vm", disk: [32, 64], cores: [2, 4], ram: [4096, 8192], median: [240, 600], errors: ["vm", "download"] },
  rvm: { type: "vm", disk: [8, 16], cores: [2, 4], ram: [2048, 4096], median: [120, 300], errors: ["vm", "download"] },
  turnkey: {
    type: "turnkey",
    disk: [8, 16],
    cores: [2],
    ram: [2048],
    median: [240, 480],
    errors: ["download", "raw", "apt"],
  },
  addon: { type: "addon", disk: [], cores: [], ram: [], median: [30, 120], errors: ["apt", "download", "service"] },
  tool: { type: "tool", disk: [], cores: [], ram: [], median: [60, 300], errors: ["host", "raw"] },
  pve: { type: "pve", disk: [], cores: [], ram: [], median: [60, 240], errors: ["host", "apt", "raw"] },
};

/**
 * The collection, most installed first: `name:profile`, and `!` marks an app whose install is
 * currently broken for many users (failure rate 20-35%), `+` one that went up in the window,
 * `-` one that went down, `*` one that appeared in the window.
 */
const CATALOGUE = `
docker:docker homeassistant:home pihole:net jellyfin:media adguard:net debian:os vaultwarden:web+
plex:media nginxproxymanager:node ubuntu:os haos-vm:vm immich:heavy+ frigate:heavy! alpine:os
mqtt:tiny zigbee2mqtt:node nodered:node nextcloudpi:heavy- paperless-ngx:py uptimekuma:node
homarr:node! tailscale:addon portainer:docker post-pve-install:pve cloudflared:net sonarr:arr
radarr:arr prowlarr:arr qbittorrent:tiny esphome:py grafana:mon influxdb:db docker-vm:vm
mariadb:db postgresql:db unifi:java omada:java photoprism:heavy- navidrome:gorust
audiobookshelf:node syncthing:gorust gitea:gorust forgejo:gorust+ n8n:node+ ollama:ai+ openwebui:ai+
dockge:docker komodo:docker* jellyseerr:node overseerr:node- lidarr:arr readarr:arr- bazarr:py
sabnzbd:py transmission:tiny deluge:py tdarr:media emby:media kavita:arr komga:java
calibre-web:py mealie:py tandoor:py! actualbudget:node firefly:web bookstack:web wikijs:node
trilium:node memos:gorust linkwarden:node karakeep:node* wallos:web homepage:node dashy:node-
heimdall:web flame:node- authentik:heavy! keycloak:java authelia:gorust crowdsec:addon
technitiumdns:arr unbound:net bind9:net adguardhome-sync:gorust nginx:tiny caddy:gorust traefik:gorust
haproxy:tiny guacamole:java meshcentral:node rustdeskserver:gorust zabbix:mon prometheus:mon
alertmanager:mon loki:mon netdata:addon glances:addon beszel:gorust+ checkmk:mon librenms:web
scrutiny:gorust smokeping:tiny speedtest-tracker:web myspeed:node changedetection:py gotify:gorust
ntfy:gorust apprise:py mosquitto:tiny emqx:java rabbitmq:java redis:db mongodb:db couchdb:db
minio:gorust garage:gorust* seafile:heavy owncloud:web filebrowser:addon cockpit:tiny webmin:addon
samba:tiny openmediavault:rvm proxmox-backup-server:os runtipi:docker casaos:docker umbrel-os-vm:vm
cosmos:docker coolify:docker* dokploy:docker* jenkins:java gitlab:heavy! woodpecker:gorust
code-server:addon openvscode-server:node jupyter:py rstudio:heavy stirling-pdf:java it-tools:node
cyberchef:node searxng:py freshrss:web miniflux:gorust tt-rss:web wallabag:web linkding:py
readeck:gorust* vikunja:gorust planka:node wekan:node focalboard:gorust- kanboard:web
leantime:web openproject:heavy redmine:web nocodb:node baserow:heavy appsmith:heavy directus:node
ghost:node wordpress:web grav:web writefreely:gorust matrix-synapse:py conduit:gorust element:node
rocketchat:heavy mattermost:gorust zulip:heavy jitsi:java mumble:tiny teamspeak:tiny
minecraft:game crafty-controller:game pterodactyl:web pelican:web* factorio:game valheim:game
palworld:game- satisfactory:game terraria:game steamcmd:game sunshine:media kasm:heavy xrdp:tiny
ubuntu-desktop:vm windows-vm:vm opnsense-vm:rvm pfsense-vm:rvm openwrt-vm:rvm mikrotik-routeros:rvm
vyos:rvm truenas-vm:vm debian-vm:vm debian-13-vm:vm* ubuntu2404-vm:vm ubuntu2204-vm:vm- nextcloud-vm:vm
arch-vm:vm alpine-docker:alp alpine-nextcloud:alp alpine-vaultwarden:alp alpine-grafana:alp
alpine-redis:alp alpine-mariadb:alp alpine-postgresql:alp alpine-zigbee2mqtt:alp alpine-adguard:alp
alpine-tinyauth:alp* tinyauth:gorust* pocketid:gorust* pocketbase:gorust supabase:heavy appwrite:heavy
openobserve:gorust healthchecks:py cronicle:node watchtower:docker diun:gorust semaphore:gorust
ansible:py awx:heavy rundeck:java netbox:py nautobot:py phpipam:web snipe-it:web glpi:web
grocy:web homebox:gorust inventree:py part-db:web spoolman:py octoprint:py mainsail:web fluidd:web
obico:heavy scrypted:node shinobi:node zoneminder:web motioneye:py agentdvr:media viseron:heavy
double-take:node compreface:heavy codeproject-ai:ai whisper:ai piper:py openwakeword:py
evcc:gorust openhab:java iobroker:node fhem:tiny domoticz:tiny homebridge:node matterbridge:node*
zwave-js-ui:node deconz:tiny teslamate:heavy traccar:java owntracks:tiny dawarich:heavy hortusfox:web
magicmirror:node jellystat:node tautulli:py ombi:arr requestrr:arr notifiarr:gorust recyclarr:arr
autobrr:gorust flaresolverr:py byparr:py* huntarr:py* cleanuparr:arr* unpackerr:gorust nzbget:tiny
pyload:py jdownloader:java metube:py tubearchivist:heavy pinchflat:web ytdl-sub:py lazylibrarian:py
mylar3:py kapowarr:py suwayomi:java threadfin:gorust ersatztv:arr dispatcharr:py* tunarr:node
channels:media tvheadend:media owncast:gorust peertube:heavy pixelfed:web gotosocial:gorust lemmy:heavy
misskey:heavy akkoma:web postal:heavy mailcow:heavy! stalwart:gorust+ docker-mailserver:docker
roundcube:web listmonk:gorust umami:node plausible:heavy matomo:web goaccess:tiny sftpgo:gorust
pairdrop:node privatebin:web opengist:gorust excalidraw:node drawio:java onlyoffice:heavy
collabora:heavy docmost:node outline:node affine:heavy* siyuan:node joplin-server:node
silverbullet:node update-lxcs:tool clean-lxcs:tool microcode:pve kernel-clean:pve host-backup:pve
post-pbs-install:pve scaling-governor:pve pve-privilege-converter:tool lxc-delete:tool monitor-all:tool
update-repo:tool* iptag:addon olivetin:addon netbird:addon coder-code-server:addon
turnkey-fileserver:turnkey turnkey-nextcloud:turnkey turnkey-wordpress:turnkey turnkey-gitea:turnkey
turnkey-openvpn:turnkey turnkey-mediaserver:turnkey fedora:os rockylinux:os almalinux:os centos:os
archlinux:os opensuse:os devuan:os gentoo:os
`;

/** Apps whose clients install privileged containers (device access, nesting). */
const PRIVILEGED = new Set([
  "frigate",
  "agentdvr",
  "sunshine",
  "kasm",
  "channels",
  "tvheadend",
  "scrypted",
  "codeproject-ai",
  "casaos",
  "runtipi",
  "openmediavault",
  "samba",
]);
const UBUNTU_APPS = new Set([
  "openwebui",
  "ollama",
  "kasm",
  "rstudio",
  "codeproject-ai",
  "whisper",
  "sunshine",
  "ubuntu",
]);

/** VMs and host scripts: their fixed os_type and os_version choices. */
const FIXED_OS: Readonly<Record<string, readonly [string, readonly string[]]>> = {
  "haos-vm": ["haos", ["15.2", "16.0", "16.1", "16.2", "16.3"]],
  "docker-vm": ["debian", ["12", "13"]],
  "umbrel-os-vm": ["umbrelos", ["1.4", "1.5"]],
  "ubuntu-desktop": ["ubuntu", ["24.04", "25.04"]],
  "windows-vm": ["windows", ["11", "2022", "2025"]],
  "opnsense-vm": ["opnsense", ["25.1", "25.7"]],
  "pfsense-vm": ["pfsense", ["2.7.2", "2.8.0"]],
  "openwrt-vm": ["openwrt", ["23.05.5", "24.10.0", "24.10.2"]],
  "mikrotik-routeros": ["routeros", ["7.18", "7.19", "7.20"]],
  vyos: ["vyos", ["1.4", "1.5"]],
  "truenas-vm": ["truenas", ["25.04", "25.10"]],
  "debian-vm": ["debian", ["12"]],
  "debian-13-vm": ["debian", ["13"]],
  "ubuntu2404-vm": ["ubuntu", ["24.04"]],
  "ubuntu2204-vm": ["ubuntu", ["22.04"]],
  "nextcloud-vm": ["debian", ["12"]],
  "arch-vm": ["archlinux", ["base"]],
  openmediavault: ["debian", ["12"]],
};

const ZIPF_EXPONENT = 0.95;

function trendFor(mark: string, rng: Rng): (frac: number) => number {
  switch (mark) {
    case "+": {
      const slope = rng.range(1.2, 2.5);
      return (f) => 0.4 + slope * f;
    }
    case "-": {
      const drop = rng.range(0.5, 0.85);
      return (f) => 1.3 - drop * f;
    }
    case "*": {
      // Launched inside the window: nothing before, a launch spike, then a plateau.
      const launch = rng.range(0.15, 0.8);
      const level = rng.range(0.8, 2.5);
      return (f) => (f < launch ? 0 : level * (1 + 2 * Math.exp(-(f - launch) / 0.03)));
    }
    default: {
      const wobble = rng.range(-0.25, 0.25);
      const phase = rng.range(0, 2 * Math.PI);
      return (f) => 1 + wobble * Math.sin(2 * Math.PI * f + phase);
    }
  }
}

/** Builds the app catalogue; deterministic (every choice is seeded from the app's name). */
export function buildCatalogue(): AppSpec[] {
  const tokens = CATALOGUE.trim().split(/\s+/);
  return tokens.map((token, i) => {
    const m = /^([a-z0-9-]+):([a-z]+)([!+*-]?)$/.exec(token);
    if (!m) throw new Error(`bad catalogue entry ${token}`);
    const [, name, profileName, mark] = m as unknown as [string, string, string, string];
    const profile = PROFILES[profileName];
    if (!profile) throw new Error(`unknown profile ${profileName} for ${name}`);
    const rng = new Rng(hashString(name));
    const rank = i + 1;
    const vmLike = profile.type === "vm";
    const hostScript = profile.type === "pve" || profile.type === "tool" || profile.type === "addon";

    let ctType: number | null = vmLike ? 2 : hostScript ? null : PRIVILEGED.has(name) ? 0 : 1;
    if (ctType === 1 && rng.chance(0.05)) ctType = 0;

    const fixed = FIXED_OS[name];
    let os: string;
    let fixedOsVersion: readonly string[] | null = null;
    if (fixed) [os, fixedOsVersion] = fixed;
    else if (profileName === "os") os = name === "proxmox-backup-server" ? "debian" : name;
    else if (profileName === "alp") os = "alpine";
    else if (vmLike) os = "debian";
    else if (UBUNTU_APPS.has(name) || (!hostScript && rng.chance(0.06))) os = "ubuntu";
    else os = "debian";

    // Failure rates: log-uniform 2-14% for most, 8-18% for some, 20-35% for the broken ones.
    let lo: number;
    if (mark === "!") lo = rng.range(0.2, 0.32);
    else if (rng.chance(0.15)) lo = rng.range(0.08, 0.18);
    else lo = Math.exp(rng.range(Math.log(0.02), Math.log(0.14)));
    if (vmLike) lo = Math.min(0.3, lo * 1.3);
    const hi = Math.min(0.4, lo + rng.range(0.04, 0.14));
    const incidents: [number, number][] = [];
    const nIncidents = rng.int(0, 2);
    for (let k = 0; k < nIncidents; k++) {
      const from = rng.range(0, 0.97);
      incidents.push([from, from + rng.range(2, 10) / 365]);
    }

    const medianS = Math.round(rng.range(profile.median[0], profile.median[1]));
    const errorKinds = [...profile.errors];
    const errors = new Weighted(
      errorKinds.map(
        (kind, k) =>
          [makeAppError(kind, name, profileName, rng), (errorKinds.length - k) * rng.range(0.6, 1.6)] as const,
      ),
    );

    const pickOr = (list: readonly number[]) => (list.length === 0 ? null : rng.pick(list));
    return {
      name,
      rank,
      profile: profileName,
      type: profile.type,
      ctType,
      otherCtTypeShare: vmLike || hostScript ? 0 : rng.range(0.04, 0.16),
      disk: pickOr(profile.disk),
      cores: pickOr(profile.cores),
      ram: pickOr(profile.ram),
      os,
      fixedOsVersion,
      weight: 1 / rank ** ZIPF_EXPONENT,
      trend: trendFor(mark, rng),
      failRange: [lo, hi] as const,
      incidents,
      abortRate: rng.range(0.01, 0.025) * (medianS > 300 ? 1.4 : 1),
      stuckRate: vmLike ? rng.range(0.015, 0.035) : rng.range(0.004, 0.015),
      medianS,
      sigma: rng.range(0.45, 0.8),
      errors,
    };
  });
}

// ---------------------------------------------------------------- error texts

const LAN_PREFIXES = [
  "192.168.1",
  "192.168.0",
  "192.168.178",
  "192.168.2",
  "10.0.0",
  "10.0.1",
  "10.10.10",
  "172.16.0",
  "192.168.10",
  "192.168.100",
];
const lanIp = (r: Rng): string => `${r.pick(LAN_PREFIXES)}.${r.int(2, 254)}`;
const publicIp = (r: Rng): string =>
  r.pick([
    `140.82.${r.int(112, 121)}.${r.int(3, 6)}`,
    `185.199.${r.int(108, 111)}.133`,
    `151.101.${r.int(0, 255)}.${r.pick([132, 194, 67])}`,
    `1.1.1.1`,
    `8.8.8.8`,
  ]);
const ipv6 = (r: Rng): string =>
  r.pick([
    `2a01:4f8:${r.int(0x1000, 0xffff).toString(16)}::${r.int(1, 255).toString(16)}`,
    `2606:50c0:8000::15${r.int(3, 4)}`,
    `2001:db8::${r.int(1, 99)}`,
    `2a00:1450:4001:${r.int(0x800, 0x82f).toString(16)}::200e`,
  ]);
const STORAGES = [
  "local-lvm",
  "local-lvm",
  "local-lvm",
  "local-zfs",
  "local",
  "nvme",
  "data",
  "ssd-pool",
  "ceph-pool",
  "tank",
  "vmdata",
  "local-btrfs",
];
const HOSTS = [
  "github.com",
  "github.com",
  "raw.githubusercontent.com",
  "deb.debian.org",
  "archive.ubuntu.com",
  "registry.npmjs.org",
  "pypi.org",
  "download.docker.com",
  "dl-cdn.alpinelinux.org",
  "objects.githubusercontent.com",
  "deb.nodesource.com",
];
const version = (_r: Rng, ctx: ErrorContext, base: number): string => {
  const steps = Math.floor(ctx.frac * 24) + (base % 7);
  return `${base % 4}.${Math.floor(steps / 5) + (base % 13)}.${steps % 5}`;
};

/** Packages and build commands that fail, by the kind of app (profile), with a fallback. */
const APT_PKGS: Readonly<Record<string, readonly string[]>> = {
  media: ["intel-media-va-driver-non-free", "ffmpeg", "libva-drm2", "va-driver-all", "mesa-va-drivers"],
  py: ["python3.11-venv", "python3-distutils", "python3-pip", "libpq-dev", "python3.12-dev", "libgl1-mesa-glx"],
  ai: ["python3.11-venv", "nvidia-container-toolkit", "libgl1-mesa-glx", "python3.12-dev"],
  java: ["openjdk-17-jre-headless", "temurin-21-jre", "temurin-17-jdk"],
  db: ["postgresql-16", "mariadb-server", "mongodb-org", "redis-server", "libjemalloc2"],
  web: ["php8.2-fpm", "php8.3-cli", "libapache2-mod-php8.2", "php8.2-imagick", "composer"],
  node: ["nodejs", "yarn", "libvips42", "chromium-driver", "libmagickwand-6.q16-6"],
  heavy: ["nodejs", "libvips42", "postgresql-16-pgvector", "redis-server", "libmagickwand-6.q16-6"],
  home: ["python3.13-venv", "libturbojpeg0", "bluez", "libpcap-dev"],
  docker: ["docker-ce", "docker-compose-plugin", "containerd.io"],
  "": [
    "software-properties-common",
    "libssl1.1",
    "gnupg2",
    "apt-transport-https",
    "libicu72",
    "libtiff5",
    "netcat",
    "sudo",
  ],
};
const COMMANDS: Readonly<Record<string, readonly string[]>> = {
  node: ["npm ci", "npm run build", "pnpm install --frozen-lockfile", "yarn install", "corepack enable"],
  home: ["npm ci", "pip install -r requirements.txt", "uv sync --frozen"],
  py: ["pip install -r requirements.txt", "uv sync --frozen", "python3 -m venv /opt/APP/venv"],
  gorust: ["go build -o /opt/APP/APP", "cargo build --release"],
  java: ["mvn -q package -DskipTests", "java -jar /opt/APP/APP.jar --init"],
  arr: ["dotnet publish -c Release", "tar -xzf /tmp/APP.tar.gz -C /opt/APP"],
  web: ["composer install --no-dev", "php artisan migrate --force", "bundle install", "make install"],
  heavy: ["npm run build", "pip install -r requirements.txt", "docker compose up -d", "bundle exec rake db:migrate"],
  docker: ["docker compose up -d", "docker run -d --name APP --restart always"],
  "": [
    "systemctl enable -q --now APP",
    "git clone https://github.com/APP/APP /opt/APP",
    "tar -xzf /tmp/APP.tar.gz -C /opt/APP",
    "make install",
  ],
};
const forProfile = <T>(table: Readonly<Record<string, readonly T[]>>, profile: string): readonly T[] =>
  table[profile] ?? table[""]!;
/** A failing step sent as the raw bash command line. */
const RAW_COMMANDS: Readonly<Record<string, readonly string[]>> = {
  db: [
    `sed -i "s/^#\\?listen_addresses.*/listen_addresses = '*'/" /etc/postgresql/16/main/postgresql.conf`,
    `mysql -u root -e "CREATE DATABASE APP; GRANT ALL ON APP.* TO 'APP'@'localhost' IDENTIFIED BY '$DB_PASS';"`,
  ],
  net: [
    `sed -i 's/^#\\?DNSStubListener=.*/DNSStubListener=no/' /etc/systemd/resolved.conf && systemctl restart systemd-resolved`,
    `curl -fsSL https://github.com/APP/APP/releases/latest/download/APP_linux_amd64.tar.gz | tar -xz -C /usr/local/bin`,
  ],
  turnkey: [
    `pveam download local debian-12-turnkey-APP_18.0-1_amd64.tar.gz`,
    `pct exec $CTID -- bash -c "turnkey-init --skip-prompts"`,
  ],
  tool: [
    `for ct in $(pct list | awk 'NR>1 {print $1}'); do pct exec "$ct" -- bash -c "apt-get update && apt-get -y dist-upgrade"; done`,
    `pct set $CTID -mp0 /mnt/pve/media,mp=/mnt/media`,
  ],
  pve: [`sed -i 's/^deb/#deb/' /etc/apt/sources.list.d/pve-enterprise.list`, `proxmox-boot-tool refresh`],
  "": [
    `msg_info "Installing Dependencies"; $STD apt-get install -y curl sudo mc gnupg`,
    `echo "deb [signed-by=/usr/share/keyrings/APP.gpg] https://repo.APP.io/apt stable main" >/etc/apt/sources.list.d/APP.list`,
    `wget -qO- https://get.APP.dev | bash -s -- --no-prompt`,
  ],
};

/** One app-specific failure, its fixed parts chosen now (from the app's own PRNG). */
function makeAppError(kind: ErrorKind, app: string, profile: string, rng: Rng): ErrorMaker {
  const sub = (s: string) => s.replaceAll("APP", app);
  const line = rng.int(40, 900);
  const pkg = rng.pick(forProfile(APT_PKGS, profile));
  const cmd = sub(rng.pick(forProfile(COMMANDS, profile)));
  const code = rng.pick([1, 1, 1, 2, 100, 127, 126, 255]);
  const base = rng.int(1, 1000);
  const owner = rng.chance(0.5) ? app : `${app}-app`;
  switch (kind) {
    case "apt":
      return rng.chance(0.5)
        ? () => `E: Unable to locate package ${pkg}`
        : () =>
            `Reading package lists...\nBuilding dependency tree...\nE: Package '${pkg}' has no installation candidate`;
    case "aptLine":
      return (r) => `Failed at line ${line + r.pick([0, 0, 3, 7])}: apt-get install -y ${pkg} curl sudo (exit 100)`;
    case "exitCmd":
      return (r) =>
        r.chance(0.5)
          ? `exit code ${code}: while executing command ${cmd}`
          : `[ERROR] in line ${line + r.pick([0, 0, 2, 5])}: exit code ${code}: while executing command "${cmd}"`;
    case "download":
      return (r, ctx) => {
        const v = version(r, ctx, base);
        return r.chance(0.6)
          ? `wget https://github.com/${owner}/${app}/releases/download/v${v}/${app}-${v}-linux-amd64.tar.gz failed`
          : `curl: (22) The requested URL returned error: ${r.pick([404, 404, 403, 502])}\nFailed to download https://github.com/${owner}/${app}/releases/download/v${v}/${app}_${v}_amd64.deb`;
      };
    case "service":
      return () =>
        `Job for ${app}.service failed because the control process exited with error code.\nSee "systemctl status ${app}.service" and "journalctl -xeu ${app}.service" for details.`;
    case "npm": {
      const npmCode = rng.pick(["ERESOLVE", "ENOTEMPTY", "ELIFECYCLE", "EBADENGINE", "ECONNRESET"]);
      return (r, ctx) =>
        r.chance(0.7)
          ? `npm ERR! code ${npmCode}\nnpm ERR! path /opt/${app}\nnpm ERR! A complete log of this run can be found in: /root/.npm/_logs/${new Date(ctx.at + r.int(5_000, 90_000)).toISOString().replace(/[:.]/g, "_")}-debug-0.log`
          : `FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\nexit code 134: while executing command npm run build`;
    }
    case "pip": {
      const wheel = rng.pick([
        "psycopg2",
        "lxml",
        "numpy",
        "grpcio",
        "cryptography",
        "pillow",
        "uvloop",
        "torch",
        "onnxruntime",
      ]);
      return (r) =>
        r.chance(0.6)
          ? `ERROR: Could not build wheels for ${wheel}, which is required to install pyproject.toml-based projects`
          : `error: externally-managed-environment\n\n× This environment is externally managed\n╰─> To install Python packages system-wide, try apt install python3-xyz`;
    }
    case "db":
      return (r) =>
        r.chance(0.6)
          ? `psql: error: connection to server on socket "/var/run/postgresql/.s.PGSQL.5432" failed: No such file or directory`
          : `ERROR 2002 (HY000): Can't connect to local server through socket '/run/mysqld/mysqld.sock' (${r.pick([2, 111])})`;
    case "oom":
      return () => `Killed\nexit code 137: process killed (out of memory)`;
    case "gpu":
      return (r) =>
        r.chance(0.6)
          ? `No GPU found: /dev/dri/renderD128 does not exist (is the device passed through to CT ${100 + r.int(0, 150)}?)`
          : `vainfo: error: failed to initialize display (exit 1): hardware acceleration not available`;
    case "docker":
      return (r) =>
        r.chance(0.5)
          ? `docker: Error response from daemon: Get "https://registry-1.docker.io/v2/": net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers).`
          : `Error response from daemon: toomanyrequests: You have reached your unauthenticated pull rate limit. https://www.docker.com/increase-rate-limit`;
    case "raw": {
      const raw = sub(rng.pick(forProfile(RAW_COMMANDS, profile)));
      return () => raw;
    }
    case "git":
      return (r) =>
        r.chance(0.6)
          ? `fatal: unable to access 'https://github.com/${owner}/${app}.git/': Could not resolve host: github.com`
          : `fatal: destination path '/opt/${app}' already exists and is not an empty directory.`;
    case "go":
      return (r, ctx) =>
        `go: github.com/${owner}/${app}@v${version(r, ctx, base)}: Get "https://proxy.golang.org/github.com/${owner}/${app}/@v/list": dial tcp [${ipv6(r)}]:443: connect: network is unreachable`;
    case "cargo":
      return (r) =>
        `error: could not compile \`${app.replace(/-/g, "_")}\` (bin "${app}") due to ${r.int(1, 9)} previous errors\nexit code 101: while executing command cargo build --release`;
    case "composer":
      return (r) =>
        r.chance(0.5)
          ? `line ${line}: cd: /opt/${app}/src: No such file or directory`
          : `Your requirements could not be resolved to an installable set of packages.\n  Problem 1\n    - Root composer.json requires php ^8.${r.int(2, 4)} but your php version (8.${r.int(1, 2)}.${r.int(2, 28)}) does not satisfy that requirement.`;
    case "java":
      return (r) =>
        r.chance(0.5)
          ? `Error: LinkageError occurred while loading main class ${app.replace(/-/g, "")}.Main\n\tjava.lang.UnsupportedClassVersionError: class file version 65.0, this version of the Java Runtime only recognizes class file versions up to 61.0`
          : `E: Unable to locate package temurin-${r.pick([17, 21])}-jre`;
    case "dotnet":
      return () =>
        `You must install or update .NET to run this application.\nApp: /opt/${app}/${app}\nFramework: 'Microsoft.NETCore.App', version '8.0.0' (x64)`;
    case "apk":
      return (r) =>
        r.chance(0.6)
          ? `ERROR: unable to select packages:\n  ${app} (no such package):\n    required by: world[${app}]`
          : `WARNING: fetching https://dl-cdn.alpinelinux.org/alpine/v3.${r.int(19, 22)}/community: temporary error (try again later)`;
    case "vm":
      return (r, ctx) => {
        const storage = r.pick(STORAGES);
        switch (r.int(0, 4)) {
          case 0:
            return `unable to create VM ${ctx.ctid} - storage '${storage}' does not exist`;
          case 1:
            return `qm importdisk ${ctx.ctid} /var/lib/vz/template/iso/${app}.qcow2 ${storage} failed: exit code 1`;
          case 2:
            return `qm set ${ctx.ctid} -efidisk0 ${storage}:1,efitype=4m failed: unable to parse volume ID '${storage}:1'`;
          case 3:
            return `xz: /tmp/${app}-${version(r, ctx, base)}.img.xz: Compressed data is corrupt`;
          default:
            return `Download of https://github.com/${owner}/${app}/releases/download/${version(r, ctx, base)}/${app}.qcow2.xz failed (HTTP ${r.pick([404, 503])})`;
        }
      };
    case "host":
      return (r) => {
        switch (r.int(0, 3)) {
          case 0:
            return `This version of Proxmox Virtual Environment is not supported. Requires Proxmox VE 8.0 or later (found ${r.pick(["7.4-3", "7.4-17", "7.2-7"])})`;
          case 1:
            return `E: The repository 'https://enterprise.proxmox.com/debian/pve ${r.pick(["bookworm", "trixie"])} InRelease' returned 401 Unauthorized`;
          case 2:
            return `Connection to ${lanIp(r)}:8006 refused`;
          default:
            return `pct exec ${100 + r.int(0, 200)} failed: container not running`;
        }
      };
  }
}

type Scope = "ct" | "vm" | "host";

/** Failures that hit any app: network, storage, dpkg locks, the client's own defaults. */
const GENERIC: readonly (readonly [(r: Rng, ctx: ErrorContext) => string, number, readonly Scope[]])[] = [
  [(r) => `exit code ${r.pick([1, 1, 1, 2, 100, 100, 127, 255])}`, 8, ["ct", "vm", "host"]],
  [(r) => String(r.pick([1, 1, 100, 2])), 3, ["ct", "vm", "host"]],
  [() => "No error message", 6, ["ct", "vm", "host"]],
  [() => "TERMINATED", 3, ["ct", "vm", "host"]],
  [(r) => `curl: (6) Could not resolve host: ${r.pick(HOSTS)}`, 4, ["ct", "vm", "host"]],
  [
    (r) =>
      `curl: (7) Failed to connect to ${publicIp(r)} port 443 after ${r.int(3, 135_000)} ms: Couldn't connect to server`,
    2,
    ["ct", "vm", "host"],
  ],
  [
    (r) =>
      `curl: (28) Operation timed out after ${r.int(10, 300)}00${r.int(0, 9)} milliseconds with ${r.chance(0.7) ? 0 : r.int(1, 99_999_999)} bytes received`,
    2,
    ["ct", "vm", "host"],
  ],
  [(r) => `Connection to ${lanIp(r)}:8006 refused`, 1, ["vm", "host"]],
  [(r, c) => `unable to create CT ${c.ctid} - storage '${r.pick(STORAGES)}' does not exist`, 3, ["ct"]],
  [
    (r, c) =>
      `TASK ERROR: unable to create CT ${c.ctid} - volume '${r.pick(STORAGES)}:vm-${c.ctid}-disk-0' already exists`,
    1,
    ["ct"],
  ],
  [(r, c) => `unable to create VM ${c.ctid} - no space left on device (${r.pick(STORAGES)})`, 1, ["vm"]],
  [
    (r) =>
      `E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process ${r.int(300, 48_000)} (${r.pick(["apt-get", "apt", "unattended-upgr"])})`,
    2,
    ["ct", "host"],
  ],
  [
    (r) =>
      `E: Failed to fetch http://deb.debian.org/debian/pool/main/o/openssl/libssl3_3.0.${r.int(11, 17)}-1~deb12u${r.int(1, 3)}_amd64.deb  Temporary failure resolving 'deb.debian.org'`,
    2,
    ["ct", "host"],
  ],
  [
    (r, c) =>
      `Container ${c.ctid}: no network after 10 attempts (ping ${r.pick(["1.1.1.1", "8.8.8.8", "9.9.9.9"])} failed)`,
    2,
    ["ct"],
  ],
  [(_r, c) => `Container ${c.ctid} failed to start: startup for container '${c.ctid}' failed`, 2, ["ct"]],
  [
    (r, c) =>
      `pct create ${c.ctid} ${r.pick(["local", "local", "nas"])}:vztmpl/debian-${r.pick(["12-standard_12.7-1", "12-standard_12.12-1", "13-standard_13.1-2"])}_amd64.tar.zst failed: no such template`,
    1,
    ["ct"],
  ],
  [(r) => `connect to [${ipv6(r)}]:443 failed: Network is unreachable`, 1, ["ct", "vm"]],
  [
    (r) =>
      `Failed at line ${r.int(20, 400)}: ${r.pick(["$STD apt-get update", "$STD apt-get -y upgrade", "setup_deb822_repo"])} (exit ${r.pick([100, 1])})`,
    2,
    ["ct", "host"],
  ],
];

const genericTables: Record<Scope, Weighted<(r: Rng, ctx: ErrorContext) => string>> = {
  ct: new Weighted(GENERIC.filter(([, , s]) => s.includes("ct")).map(([f, w]) => [f, w] as const)),
  vm: new Weighted(GENERIC.filter(([, , s]) => s.includes("vm")).map(([f, w]) => [f, w] as const)),
  host: new Weighted(GENERIC.filter(([, , s]) => s.includes("host")).map(([f, w]) => [f, w] as const)),
};

/** Share of an app's failures that are its own typical errors; the rest are generic. */
const APP_ERROR_SHARE = 0.6;

/** The error text of one failed install of `ctx.app`. */
export function failureText(rng: Rng, ctx: ErrorContext): string {
  if (rng.chance(APP_ERROR_SHARE)) return ctx.app.errors.pick(rng)(rng, ctx);
  const scope: Scope = ctx.app.type === "vm" ? "vm" : ctx.app.ctType === null ? "host" : "ct";
  return genericTables[scope].pick(rng)(rng, ctx);
}

/** What the client sends when the user pressed Ctrl-C (both derive to outcome "aborted"). */
export function interruptText(rng: Rng): string {
  return rng.chance(0.88) ? "INTERRUPTED" : "exit code 130: Script terminated by Ctrl+C";
}

/** Error field of a successful run: empty, or the literal some client revisions send. */
export function doneText(rng: Rng): string {
  const x = rng.next();
  return x < 0.85 ? "" : x < 0.97 ? "none" : "No error message";
}

// ---------------------------------------------------------------- the rhythm of a year

/** Relative installs by UTC hour: Europe's evening peak, the Americas' later one, a night trough. */
export const HOUR_OF_DAY: readonly number[] = Array.from({ length: 24 }, (_, h) => {
  const around = (peak: number, width: number) => {
    const d = Math.min(Math.abs(h - peak), 24 - Math.abs(h - peak));
    return Math.exp(-(d * d) / (2 * width * width));
  };
  return 0.25 + 1.0 * around(19, 3.5) + 0.55 * around(1, 3) + 0.35 * around(12, 3);
});

/** Relative installs by UTC weekday (0 Sunday): homelab work happens at weekends. */
export const DAY_OF_WEEK: readonly number[] = [1.3, 0.95, 0.93, 0.95, 0.97, 1.05, 1.35];

/** Growth of the whole user base over the window: about 2.2x from start to end. */
export const growth = (frac: number): number => Math.exp(0.8 * frac);
