// The Store contract suite against the SQLite engine: each database is a file in a new temporary
// directory, removed when the test ends (and again after the file, should a test have died
// before its own clean-up ran).
import { afterAll, setDefaultTimeout } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EngineFactory } from "./harness.ts";
import { storeContract } from "./suite.ts";

// The mixed-workload recount takes ~2 s alone and over 5 s on a busy machine (as the PostgreSQL file allows).
setDefaultTimeout(30_000);

const dirs: string[] = [];
const remove = (dir: string) => rmSync(dir, { recursive: true, force: true });
afterAll(() => dirs.forEach(remove));

const sqlite: EngineFactory = {
  name: "sqlite",
  async create() {
    const dir = mkdtempSync(join(tmpdir(), "installstats-contract-"));
    dirs.push(dir);
    return { location: join(dir, "installstats.db"), destroy: async () => remove(dir) };
  },
};

storeContract(sqlite);
