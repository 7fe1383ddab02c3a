// The command line of one command: `--name value`, `--name=value`, boolean `--name`, the short
// forms a command declares, `--` ending the options. Every mistake is one line that says what was
// meant: "unknown option --prot; did you mean --port?".
import { UsageError } from "./errors.ts";

export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
}

export interface ParsedArgs {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** Optimal string alignment distance: edits, with a swap of two neighbours counting as one ("prot" -> "port"). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** The option or command most likely meant by `name`: a close spelling, or the only one it begins. */
export function closest(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const exact = known.find((k) => k === lower);
  if (exact) return exact;
  const limit = lower.length <= 3 ? 1 : 2;
  const ranked = known
    .map((k) => ({ k, d: editDistance(lower, k) }))
    .filter(({ d }) => d <= limit)
    .sort((x, y) => x.d - y.d);
  if (ranked.length > 0 && (ranked.length === 1 || ranked[0]!.d < ranked[1]!.d)) return ranked[0]!.k;
  const prefixed = known.filter((k) => k.startsWith(lower));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

export interface ParseContext {
  /** For messages: "serve", "seed". */
  command: string;
  /** Options of other commands, to say where an option belongs ("--port is an option of serve"). */
  elsewhere?: ReadonlyMap<string, readonly string[]>;
}

/**
 * Parses `args` against `options` (long names without dashes). Throws a UsageError naming the
 * option and what was probably meant.
 */
export function parseCommandLine(
  args: readonly string[],
  options: Readonly<Record<string, OptionSpec>>,
  ctx: ParseContext,
): ParsedArgs {
  const values: ParsedArgs["values"] = {};
  const positionals: string[] = [];
  const names = Object.keys(options);
  const byShort = new Map(Object.entries(options).flatMap(([name, o]) => (o.short ? [[o.short, name] as const] : [])));
  const help = `see installstats ${ctx.command} --help`;

  const unknown = (written: string, name: string): never => {
    const guess = closest(name, names);
    if (guess) throw new UsageError(`unknown option ${written}; did you mean --${guess}?`);
    const owners = ctx.elsewhere?.get(name);
    if (owners && owners.length > 0)
      throw new UsageError(`${ctx.command} has no option --${name} (it is an option of ${owners.join(", ")}); ${help}`);
    throw new UsageError(`unknown option ${written}; ${help}`);
  };

  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (arg === "-" || !arg.startsWith("-")) {
      positionals.push(arg);
      continue;
    }
    let name: string;
    let inline: string | undefined;
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      inline = eq === -1 ? undefined : arg.slice(eq + 1);
      if (!(name in options)) unknown(`--${name}`, name);
    } else {
      // A single dash: a declared short form, or a long option written with one dash ("-port").
      const word = arg.slice(1);
      const short = byShort.get(word);
      if (short !== undefined) {
        name = short;
      } else if (word.length > 1 && word in options) {
        throw new UsageError(`unknown option ${arg}; did you mean --${word}? (long options take two dashes)`);
      } else if (word.length === 1) {
        const starting = names.filter((n) => n.startsWith(word.toLowerCase()));
        throw new UsageError(
          `unknown option ${arg}${starting.length === 1 ? `; did you mean --${starting[0]}?` : `; ${help}`}`,
        );
      } else {
        const bare = word.replace(/=.*$/, "");
        if (bare in options)
          throw new UsageError(`unknown option ${arg}; did you mean --${word}? (long options take two dashes)`);
        unknown(arg, bare);
      }
    }
    const spec = options[name!]!;
    if (spec.type === "boolean") {
      if (inline !== undefined) throw new UsageError(`--${name!} takes no value (got --${name!}=${inline})`);
      values[name!] = true;
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = args[i + 1];
      // A value may begin with a dash (--port -1 is answered by the port check), but not be one of our options.
      if (next === undefined || (next.startsWith("--") && next.slice(2).replace(/=.*$/, "") in options)) {
        throw new UsageError(`--${name!} needs a value, e.g. --${name!} <value>; ${help}`);
      }
      value = next;
      i++;
    }
    values[name!] = value;
  }
  return { values, positionals };
}
