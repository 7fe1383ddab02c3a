import { existsSync, statSync } from "node:fs";
import { ImportFormatError, importRecords } from "../transfer/import-records.ts";
import { UsageError, openDatabaseOf, type Command } from "./command.ts";
import { EXIT } from "./errors.ts";

/** Invalid records listed one by one on stderr; past this, only counted. */
const SHOWN_INVALID = 20;

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

export const importCommand: Command = {
  name: "import",
  summary: "import records from our NDJSON export or the original API's /data/json array (- reads stdin)",
  settings: ["db", "dbPasswordFile", "durability", "maxFieldLength", "maxErrorLength", "maskIps"],
  args: "<file|->",
  async run(ctx) {
    const [file, ...extra] = ctx.positionals;
    if (file === undefined || extra.length > 0) throw new UsageError("import takes one argument, a file or - for stdin: installstats import <file|->");
    if (file !== "-") {
      if (!existsSync(file)) throw new UsageError(`${file} does not exist`);
      if (statSync(file).isDirectory()) throw new UsageError(`${file} is a directory`);
    }
    const input = file === "-" ? Bun.stdin.stream() : Bun.file(file).stream();
    const engine = await openDatabaseOf(ctx, { create: true });
    const { store } = engine;
    let shown = 0;
    try {
      const summary = await importRecords({ reads: store, commit: (ops) => store.write(ops) }, input, {
        normalize: ctx.config,
        onProgress: (s, bytes) => ctx.progress(`importing: ${s.read.toLocaleString()} read, ${s.imported.toLocaleString()} imported (${mib(bytes)})`),
        onInvalid: (position, message) => {
          if (shown++ < SHOWN_INVALID) {
            ctx.progress("");
            ctx.err(`installstats import: ${position}: ${message}\n`);
          }
        },
      });
      ctx.progress("");
      if (shown > SHOWN_INVALID) ctx.err(`installstats import: ${shown - SHOWN_INVALID} more invalid records not shown\n`);
      const { format, read, imported, duplicates, invalid } = summary;
      ctx.out(`${JSON.stringify({ format, read, imported, duplicates, invalid })}\n`);
      if (imported > 0) return EXIT.ok;
      // Nothing new in the database: a script that imports and then relies on the data must notice.
      const why =
        read === 0
          ? "the input holds no records"
          : duplicates === read
            ? read === 1 ? "its one record is in the database already" : `all ${read} records are in the database already`
            : invalid === read
              ? read === 1 ? "its one record is invalid" : `all ${read} records are invalid`
              : `of ${read} records, ${duplicates} are in the database already and ${invalid} are invalid`;
      ctx.err(`installstats import: nothing imported: ${why}\n`);
      return EXIT.failed;
    } catch (e) {
      ctx.progress("");
      if (e instanceof ImportFormatError) throw new UsageError(`${file === "-" ? "stdin" : file}: ${e.message} (records before this point were imported)`);
      throw e;
    } finally {
      await engine.close();
    }
  },
};
