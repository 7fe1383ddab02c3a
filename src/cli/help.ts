// `installstats --help` (the commands) and `installstats <command> --help` (that command's own
// options and the settings it uses, nothing else).
import { settingsHelp } from "../config.ts";
import type { Command } from "./command.ts";
import { EXIT } from "./errors.ts";

const table = (rows: { flag: string; text: string }[]): string => {
  const width = Math.max(0, ...rows.map((r) => r.flag.length)) + 2;
  return rows.map((r) => `  ${r.flag.padEnd(width)} ${r.text}`).join("\n");
};

export function overview(commands: readonly Command[], version: string): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 2;
  return `installstats ${version}: self-hosted installation telemetry

Usage: installstats <command> [options]        (no command: serve)

Commands:
${commands.map((c) => `  ${c.name.padEnd(width)} ${c.summary}`).join("\n")}

Run "installstats <command> --help" for a command's options, e.g. installstats serve --help.

  -h, --help     show this help
  -v, --version  print the version

Settings are flags or INSTALLSTATS_* environment variables (flags win).
Exit codes: ${EXIT.ok} ok, ${EXIT.failed} failed (e.g. verify found damage, import imported nothing), ${EXIT.usage} wrong command line or setting,
${EXIT.database} database unusable (missing directory, permissions, in use by another server), ${EXIT.listen} serve cannot listen.`;
}

export function commandHelp(c: Command): string {
  const own = Object.entries(c.flags ?? {}).map(([name, f]) => ({
    flag: `${f.short ? `-${f.short}, ` : ""}--${name}`,
    text: f.help,
  }));
  const rows = [...own, ...settingsHelp(c.settings), { flag: "-h, --help", text: "show this help" }];
  return `installstats ${c.name}${c.args ? ` ${c.args}` : ""} [options]: ${c.summary}

Options${c.settings.length > 0 ? " (settings in [brackets] also read from that environment variable; flags win)" : ""}:
${table(rows)}`;
}
