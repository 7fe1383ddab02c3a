import { describe, expect, test } from "bun:test";
import { ConfigError, defaults, loadConfig } from "../../src/config.ts";

describe("config", () => {
  test("flags win over environment, which wins over defaults", async () => {
    const env = { INSTALLSTATS_PORT: "9000", INSTALLSTATS_DB: "/data/env.db", INSTALLSTATS_MASK_IPS: "false" };
    expect(loadConfig({}, {})).toEqual(defaults);
    expect(loadConfig({}, env)).toMatchObject({ port: 9000, db: "/data/env.db", maskIps: false, host: "0.0.0.0" });
    expect(loadConfig({ port: "7000" }, env)).toMatchObject({ port: 7000, db: "/data/env.db" });
  });

  test("sizes, booleans and enums are parsed; bad values name their source", async () => {
    expect(loadConfig({ "max-body": "1m" }, {}).maxBodyBytes).toBe(1024 * 1024);
    expect(loadConfig({ "max-body": "64KiB" }, {}).maxBodyBytes).toBe(64 * 1024);
    expect(loadConfig({ durability: "normal", "log-level": "debug" }, {})).toMatchObject({
      durability: "normal",
      logLevel: "debug",
    });
    expect(() => loadConfig({ port: "http" }, {})).toThrow(/--port/);
    expect(() => loadConfig({}, { INSTALLSTATS_PORT: "70000" })).toThrow(/INSTALLSTATS_PORT/);
    expect(() => loadConfig({ durability: "sometimes" }, {})).toThrow(ConfigError);
    expect(() => loadConfig({ "mask-ips": "maybe" }, {})).toThrow(/true or false/);
  });
});
