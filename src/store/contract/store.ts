// The Store contract: everything the rest of the service may ask of storage, composed from its
// features (one file each in this folder: executions, rejected, maintenance, transfer, alerts,
// relay, issues; errors.ts for what a store throws). Ingestion, the read side and maintenance
// depend on these files alone; each engine (sqlite/, postgres/) fulfils them, and test/contract/
// proves that an engine does. Results are in storage terms: what happened to the data, never how
// a protocol answers it (the HTTP edge maps them to status codes).
import { ALERT_READS, type AlertReads, type AlertResults, type AlertWrite } from "./alerts.ts";
import { EXECUTION_READS, type ExecutionResults, type ReportWrite, type StoreReads } from "./executions.ts";
import { ISSUE_READS, type IssueResults, type IssueWrite } from "./issues.ts";
import {
  MAINTENANCE_READS,
  type MaintenanceControl,
  type MaintenanceReads,
  type MaintenanceResults,
  type MaintenanceWrite,
} from "./maintenance.ts";
import { REJECTED_READS, type RejectedReads, type RejectedResults, type RejectedWrite } from "./rejected.ts";
import { RELAY_READS, type RelayControl, type RelayReads, type RelayResults, type RelayWrite } from "./relay.ts";
import { TRANSFER_READS, type TransferReads, type TransferResults, type TransferWrite } from "./transfer.ts";
import type { ReadTable } from "./reads.ts";

export type WriteOp =
  | ReportWrite
  | RejectedWrite
  | MaintenanceWrite
  | TransferWrite
  | AlertWrite
  | RelayWrite
  | IssueWrite;

/** What each kind of write comes to. */
export interface ResultOf
  extends ExecutionResults,
    RejectedResults,
    MaintenanceResults,
    TransferResults,
    AlertResults,
    RelayResults,
    IssueResults {}
export type ResultFor<Op extends WriteOp> = ResultOf[Op["kind"]];
export type WriteResult = ResultOf[keyof ResultOf];

/** Every read of the contract. */
export interface AllReads extends StoreReads, RejectedReads, MaintenanceReads, TransferReads, AlertReads, RelayReads {}

/** How every read answers: what an engine's door guards (store/common/door.ts). */
export const READS = {
  ...EXECUTION_READS,
  ...REJECTED_READS,
  ...MAINTENANCE_READS,
  ...TRANSFER_READS,
  ...ALERT_READS,
  ...RELAY_READS,
  ...ISSUE_READS,
} as const satisfies ReadTable<AllReads>;

export interface Store extends AllReads, MaintenanceControl, RelayControl {
  /**
   * Applies the operations in one transaction, in order; results in the same order. Throws
   * StorageUnavailableError when the storage refuses the transaction (anything else is a bug).
   */
  write(ops: readonly WriteOp[]): Promise<WriteResult[]>;
  close(): Promise<void>;
}
