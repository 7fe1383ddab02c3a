// One execution (one attempt at an installation) as it is stored and read (docs/protocol.md#the-record
// and 3b), and the report that each request makes of it. An install (random_id) is the executions
// that share its id. Every storage engine's schema is checked against `Execution` at compile time.
import type { Outcome } from "./outcome.ts";

/** Install types the wire protocols know; anything else is refused. */
export const INSTALL_TYPES = ["lxc", "vm", "turnkey", "pve", "addon", "tool"] as const;

/** The longest random_id or execution_id accepted, and so the longest any id parameter can be. */
export const MAX_RANDOM_ID_LENGTH = 128;

/**
 * What an execution is: an installation, or a one-shot run of a host tool or addon. Tools and
 * addons are kept out of install success rates unless asked for (docs/protocol.md#current-clients-post-telemetry).
 */
export const KINDS = ["install", "tool", "addon"] as const;
export type Kind = (typeof KINDS)[number];

export function kindOfType(type: string): Kind {
  if (type === "pve" || type === "tool") return "tool";
  if (type === "addon") return "addon";
  return "install";
}

/** What a client tells about the machine and the script: every report of /telemetry carries them all. */
export type Descriptive = {
  type: string;
  ctType: number | null;
  /** GiB. */
  diskSize: number | null;
  coreCount: number | null;
  /** MiB. */
  ramSize: number | null;
  osType: string | null;
  osVersion: string | null;
  disableip6: string | null;
  nsapp: string | null;
  method: string | null;
  pveVersion: string | null;
  cpuVendor: string | null;
  cpuModel: string | null;
  gpuVendor: string | null;
  gpuModel: string | null;
  ramSpeed: string | null;
  /** v2: whether a GPU was passed to the guest (yes/no). */
  gpuPassthrough: string | null;
  /** v1's gpu_passthrough: what GPU the host has (igpu, dgpu, unknown); a different question. */
  hostGpu: string | null;
  arch: string | null;
  platform: string | null;
  hasArm: boolean | null;
  repoSource: string | null;
  repoSlug: string | null;
  kernelVersion: string | null;
  appVersion: string | null;
  /** Fields the server does not know (a newer client's), as a JSON object; null when none. */
  extra: string | null;
};

/** Every descriptive field, checked complete at compile time. */
const DESCRIPTIVE: Record<keyof Descriptive, true> = {
  type: true, ctType: true, diskSize: true, coreCount: true, ramSize: true, osType: true, osVersion: true, disableip6: true, nsapp: true,
  method: true, pveVersion: true, cpuVendor: true, cpuModel: true, gpuVendor: true, gpuModel: true, ramSpeed: true, gpuPassthrough: true,
  hostGpu: true, arch: true, platform: true, hasArm: true, repoSource: true, repoSlug: true, kernelVersion: true, appVersion: true, extra: true,
};

/** The descriptive fields of an execution, and nothing else of it (a report's `fields`). */
export function descriptiveOf(e: Descriptive): Descriptive {
  return Object.fromEntries(Object.keys(DESCRIPTIVE).map((k) => [k, e[k as keyof Descriptive]])) as Descriptive;
}

/** How a run ended, as far as it is known. */
export type Ending = {
  status: string;
  outcome: Outcome;
  error: string | null;
  exitCode: number | null;
  /** The client's category, else one derived from exit code and error text (error-category.ts). */
  errorCategory: string | null;
  failedCommand: string | null;
  failedLine: number | null;
  /** Seconds, as the client measured them. */
  installDuration: number | null;
};

export type Execution = Descriptive & Ending & {
  executionId: string;
  randomId: string;
  /** 1 for an install's first execution, n for its n-th (retries). */
  attempt: number;
  kind: Kind;
  /** /telemetry's payload_version (1 when absent); null for /upload reports. */
  payloadVersion: number | null;
  /** Epoch ms of the first report (or of the final status, when that came first). */
  createdAt: number;
  updatedAt: number;
  /** Start report to final status; null while in progress, and when the final status arrived first. */
  durationMs: number | null;
  /** When each status of the timeline was first seen (epoch ms); null when it was not. */
  installingAt: number | null;
  validationAt: number | null;
  configuringAt: number | null;
  finishedAt: number | null;
  /** A report of it needed repair (docs/protocol.md#what-is-repaired-what-is-rejected). */
  repaired: boolean;
};

/**
 * What one request says about one execution. A /upload status update says only how it ended
 * (`fields` null); every other report carries the descriptive fields too.
 */
export type Report = Ending & {
  executionId: string;
  randomId: string;
  payloadVersion: number | null;
  fields: Descriptive | null;
};
