// Loaded before every test file (bunfig.toml [test] preload): one temporary directory for the
// whole run (test/helpers/tmp.ts), removed after the last file, whatever the results.
import { afterAll } from "bun:test";
import { removeTestTmpRoot, testTmpRoot } from "./tmp.ts";

testTmpRoot();
// In a preload, afterAll runs once, after every file.
afterAll(removeTestTmpRoot);
