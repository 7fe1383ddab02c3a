// Label columns of executions stored as small codes (SQLite; docs/decisions/2026-11-27-label-codes-read-in-typescript.md).
// Each row carried its labels as words, most of them one of a handful the clients send (status,
// type, method, os, vendors, repo), ~80 bytes an execution of today's traffic. A known word is
// stored as its index in the list below (0 and 1 take no byte at all in SQLite's record format,
// 2-127 one), any other value as the text itself. Reads select the codes and turn them back here,
// in TypeScript (wordDecoder); filters compare codes (the value bound is encoded). The column of
// the word's name is a virtual column for what must see the word in SQL (a sort by it).
//
// FROZEN: the lists are part of the table's definition (the virtual columns' CASE expressions, and
// migration 0019 wrote rows with these codes). Changing or reordering a list would misread every
// stored row: a word not listed is stored as text, which is always right. A new list is a new
// migration that makes the table anew.

/** The coded columns (stored as `<name>_code`), each with its words, most frequent first. */
export const CODED = {
  status: ["success", "done", "failed", "installing", "aborted", "unknown", "validation", "configuring"],
  type: ["lxc", "vm", "pve", "addon", "tool", "turnkey"],
  os_type: [
    "debian",
    "ubuntu",
    "alpine",
    "fedora",
    "rockylinux",
    "almalinux",
    "centos",
    "opensuse",
    "archlinux",
    "devuan",
  ],
  disableip6: ["yes", "no", ""],
  method: ["default", "advanced", "mydefaults-global", "mydefaults-app", "appdefaults", "generated"],
  cpu_vendor: ["intel", "amd", "arm", "", "unknown"],
  gpu_vendor: ["intel", "", "nvidia", "amd", "unknown"],
  ram_speed: [
    "3200",
    "",
    "2666",
    "4800",
    "2400",
    "5600",
    "2133",
    "3600",
    "6000",
    "2933",
    "1600",
    "1866",
    "5200",
    "6400",
  ],
  gpu_passthrough: ["no", "yes", "igpu", "dgpu", "unknown", ""],
  host_gpu: ["igpu", "dgpu", "unknown", ""],
  arch: ["amd64", "arm64"],
  platform: ["pve", "incus"],
  repo_source: ["ProxmoxVE", "ProxmoxVED", "external", ""],
  repo_slug: ["community-scripts/ProxmoxVE", "community-scripts/ProxmoxVED"],
  error_category: [
    "dependency",
    "unknown",
    "network",
    "user_aborted",
    "config",
    "timeout",
    "storage",
    "permission",
    "proxmox",
    "service",
    "database",
    "runtime",
    "resource",
    "signal",
    "shell",
  ],
} as const satisfies Record<string, readonly string[]>;

export type CodedColumn = keyof typeof CODED;

/** The stored column of a coded column. */
export const codeColumn = (name: CodedColumn): string => `${name}_code`;

const quote = (word: string) => `'${word.replaceAll("'", "''")}'`;

/** The virtual column's expression: the word of a code, else the text stored. */
export const decodeSql = (name: CodedColumn): string =>
  `CASE "${codeColumn(name)}" ${CODED[name].map((w, i) => `WHEN ${i} THEN ${quote(w)}`).join(" ")} ELSE "${codeColumn(name)}" END`;

/** The stored value's expression from the word column `name` (the migration's copy). */
export const encodeSql = (name: CodedColumn): string =>
  `CASE "${name}" ${CODED[name].map((w, i) => `WHEN ${quote(w)} THEN ${i}`).join(" ")} ELSE "${name}" END`;

/** What a row stores for a value of a coded column: its code, or the text when it has none. */
export type WordEncoder = (value: string | null) => string | number | null;

/** The encoder of column `name` (made once: it runs for every column of every row written). */
export function wordEncoder(name: CodedColumn): WordEncoder {
  const codes = new Map<string, number>(CODED[name].map((w, i) => [w, i]));
  return (value) => (value === null ? null : (codes.get(value) ?? value));
}

/** What a stored value of a coded column reads as: the word of a code, a text as it is. */
export type WordDecoder = (stored: string | number) => string;

/** The decoder of column `name`: a code is an index into the list (a number never stored otherwise). */
export function wordDecoder(name: CodedColumn): WordDecoder {
  const words: readonly string[] = CODED[name];
  return (stored) => (typeof stored === "number" ? words[stored]! : stored);
}
