// The Store contract suite against the PostgreSQL engine: one throwaway server on 127.0.0.1 for
// the file, a fresh database per test, dropped when the test ends.
import { afterAll, beforeAll, setDefaultTimeout } from "bun:test";
import postgres from "postgres";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";
import type { EngineFactory } from "./harness.ts";
import { storeContract } from "./suite.ts";

// A test is many round trips to a server sharing two cores with the rest of the suite (the mixed
// workload checks the rollups after every step): 5 s was too little under the full suite's load.
setDefaultTimeout(30_000);

let server: PgServer;
let admin: postgres.Sql;
let n = 0;
beforeAll(async () => {
  server = await startPostgres();
  admin = postgres(server.url, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

const pg: EngineFactory = {
  name: "postgres",
  async create() {
    const name = `contract_${++n}`;
    return {
      location: await createDatabase(server, name),
      destroy: async () => void (await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
    };
  },
};

storeContract(pg);
