// Preloaded before every test file (bunfig.toml): suites that build and start the compiled binary
// need more than bun's default 5 s on a 2-core machine.
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(120_000);
