import { outboxJson } from "../relay/service.ts";
import { RELAY_ACTIONS } from "../store/contract/relay.ts";
import { UsageError, openDatabaseOf, type Command } from "./command.ts";

const ACTIONS = ["status", ...RELAY_ACTIONS] as const;
const isAction = (text: string): text is (typeof ACTIONS)[number] => (ACTIONS as readonly string[]).includes(text);

/**
 * The relay's outbox in the database (every node's, on PostgreSQL), also while servers run: its
 * state, or an action a running server's sender follows within a second (it reads the pause with
 * every claim).
 */
export const relay: Command = {
  name: "relay",
  summary: "the relay's outbox: status (default), pause, resume, requeue (refused reports), discard, discard-refused",
  settings: ["db", "durability", "relayMaxBytes"],
  args: "[status|pause|resume|requeue|discard|discard-refused]",
  async run(ctx) {
    const [action = "status", ...extra] = ctx.positionals;
    if (!isAction(action) || extra.length > 0)
      throw new UsageError(`relay takes one of ${ACTIONS.join(", ")}, e.g. installstats relay pause`);
    const engine = await openDatabaseOf(ctx, { create: false });
    try {
      const { store } = engine;
      let done: { action: string; entries: number } | null = null;
      if (action !== "status") {
        const [result] = await store.write([{ kind: "relay-control", action, at: Date.now() }]);
        done = { action, entries: result?.kind === "relay-controlled" ? result.entries : 0 };
      }
      ctx.out(
        `${JSON.stringify({ ...done, ...outboxJson(await store.relayStatus(), Date.now(), ctx.config.relayMaxBytes) })}\n`,
      );
      return 0;
    } finally {
      await engine.close();
    }
  },
};
