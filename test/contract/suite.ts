// The Store contract as a test suite: what every storage engine must do, written against
// src/store/contract/ alone. An engine proves itself by calling `storeContract` with a factory
// of fresh, empty database locations (sqlite.test.ts, postgres.test.ts).
//
// One file per feature of the contract, each run here in the engine's describe: reports and the
// read side (executions.ts), the rejected-reports log (rejected.ts), whole data sets in and out
// (transfer.ts), maintenance (maintenance.ts), alerts (alerts.ts), issue links (issues.ts), the
// relay's outbox (relay.ts), and the store as a whole (store.ts). What they share: harness.ts.
// One feature on one engine: `bun test ./test/contract/sqlite.test.ts -t "relay outbox"`.
import { describe } from "bun:test";
import { alertsContract } from "./alerts.ts";
import { executionsContract } from "./executions.ts";
import { harness, type EngineFactory } from "./harness.ts";
import { issuesContract } from "./issues.ts";
import { maintenanceContract } from "./maintenance.ts";
import { rejectedContract } from "./rejected.ts";
import { relayContract } from "./relay.ts";
import { storeWideContract } from "./store.ts";
import { transferContract } from "./transfer.ts";

export function storeContract(factory: EngineFactory): void {
  describe(`Store contract (${factory.name})`, () => {
    const h = harness(factory);
    executionsContract(h);
    rejectedContract(h);
    transferContract(h);
    maintenanceContract(h);
    storeWideContract(h);
    alertsContract(h);
    issuesContract(h);
    relayContract(h);
  });
}
