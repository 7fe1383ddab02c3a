// The label dictionary of rollup cells (domain/rollup-codec.ts) as an engine keeps it in memory:
// every label it has met, by text and by id. Ids never change once given, so the copy is only ever
// added to: from the table (labels another connection or node added), or by the engine's own
// writes. Labels given inside a transaction are pending until it commits: a rolled-back label is
// forgotten with the transaction that made it.
import type { Labels } from "../../domain/rollup-codec.ts";

export class LabelCache implements Labels {
  private readonly ids = new Map<string, number>();
  private readonly texts = new Map<number, string>();
  private readonly pendingIds = new Map<string, number>();
  private readonly pendingTexts = new Map<number, string>();
  /** The highest id known: labels above it are the ones to load. */
  newest = 0;

  /** `make` gives a new label its id (an INSERT in the current transaction); null: only known labels. */
  constructor(private readonly make: ((label: string) => number) | null = null) {}

  id(label: string): number {
    const known = this.ids.get(label) ?? this.pendingIds.get(label);
    if (known !== undefined) return known;
    if (this.make === null) throw new Error(`rollup label ${JSON.stringify(label)} was not made before it was used`);
    const id = this.make(label);
    this.pendingIds.set(label, id);
    this.pendingTexts.set(id, label);
    return id;
  }

  text(id: number): string | undefined {
    return this.texts.get(id) ?? this.pendingTexts.get(id);
  }

  has(label: string): boolean {
    return this.ids.has(label) || this.pendingIds.has(label);
  }

  /** Labels read from the table (committed). */
  learn(rows: Iterable<{ id: number; label: string }>): void {
    for (const { id, label } of rows) {
      this.ids.set(label, id);
      this.texts.set(id, label);
      if (id > this.newest) this.newest = id;
    }
  }

  /** The transaction that gave the pending labels committed. */
  commit(): void {
    this.learn([...this.pendingIds].map(([label, id]) => ({ id, label })));
    this.rollback();
  }

  /** It did not: its labels are not in the table. */
  rollback(): void {
    this.pendingIds.clear();
    this.pendingTexts.clear();
  }
}
