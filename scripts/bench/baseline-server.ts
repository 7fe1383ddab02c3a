// The no-storage baseline for scripts/bench-ingest.ts: a minimal Bun.serve that reads the body,
// JSON.parse-s it and answers 201 with a small JSON body echoing random_id and execution_id (the wrk script records
// acknowledged ids from it, exactly as it does against installstats). Nothing is stored.
//
//   bun scripts/bench/baseline-server.ts [--host 127.0.0.1] [--port 0]
// Prints one stdout line "baseline listening on http://HOST:PORT" when ready; SIGTERM stops it.
import { parseArgs } from "node:util";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { host: { type: "string", default: "127.0.0.1" }, port: { type: "string", default: "0" } },
});

const server = Bun.serve({
  hostname: values.host,
  port: Number(values.port),
  async fetch(req) {
    let body: { random_id?: unknown; execution_id?: unknown; status?: unknown };
    try {
      body = JSON.parse(await req.text()) as typeof body;
    } catch {
      return Response.json({ error: "invalid_json", message: "body is not valid JSON" }, { status: 400 });
    }
    const randomId = body.random_id ?? null;
    // /telemetry: the first report of an execution creates it, the others update it (as installstats answers).
    const result =
      req.url.endsWith("/updatestatus") || (req.url.endsWith("/telemetry") && body.status !== "installing")
        ? "updated"
        : "created";
    return Response.json(
      {
        result,
        random_id: randomId,
        execution_id: body.execution_id ?? randomId,
        outcome: "in_progress",
        repaired: false,
      },
      { status: 201 },
    );
  },
});

process.stdout.write(`baseline listening on http://${values.host}:${server.port}\n`);
const stop = () => {
  void server.stop(true).then(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
