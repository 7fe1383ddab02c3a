// One installation as it is stored and read (DESIGN.md section 3), and the two reports that make
// it. Every storage engine's schema is checked against `Install` at compile time.
import type { Outcome } from "./outcome.ts";

/** Install types the wire protocol knows; anything else is refused. */
export const INSTALL_TYPES = ["lxc", "vm", "turnkey", "pve", "addon", "tool"] as const;

/** The longest random_id accepted, and so the longest any id parameter can be. */
export const MAX_RANDOM_ID_LENGTH = 128;

export type Install = {
  randomId: string;
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
  status: string;
  outcome: Outcome;
  error: string | null;
  /** Epoch ms of the start report (or of the final status, when that came first). */
  createdAt: number;
  updatedAt: number;
  /** Start report to final status; null while in progress, and when the final status arrived first. */
  durationMs: number | null;
  /** The start report or the status update needed repair (DESIGN.md section 2). */
  repaired: boolean;
};

/** What a start report says: every field of an install but what the server adds. */
export type StartReport = Omit<Install, "createdAt" | "updatedAt" | "durationMs" | "repaired">;

export interface StatusUpdate {
  randomId: string;
  status: string;
  outcome: Outcome;
  error: string | null;
}
