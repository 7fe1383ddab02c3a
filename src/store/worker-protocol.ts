// Messages between the HTTP thread and the write thread.
import type { Durability } from "../config.ts";
import type { WriteOp, WriteResult } from "./store.ts";

export type ToWorker =
  | { type: "open"; path: string; durability: Durability }
  | { type: "batch"; id: number; ops: readonly WriteOp[] }
  | { type: "close" };

export type FromWorker =
  | { type: "ready" }
  | { type: "open-failed"; message: string }
  | { type: "done"; id: number; results: WriteResult[] }
  | { type: "failed"; id: number; storage: boolean; message: string }
  | { type: "closed" };
