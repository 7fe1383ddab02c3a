// The label dictionary of rollup cells (domain/rollup-codec.ts) as an engine keeps it in memory:
// the labels it has met, by text and by id. Ids never change once given, so the copy is only ever
// added to: from the table (labels another connection or node added), or by the engine's own
// writes. Labels given inside a transaction are pending until it commits: a rolled-back label is
// forgotten with the transaction that made it.
//
// A bounded copy (a bulk writer such as seed: every distinct failure of the data is a label, and
// kept all they grew its memory with the data) keeps the labels met lately in two generations:
// when the newer one is full it becomes the older, the older is dropped, and a label met again is
// moved into the newer. A committed label held by neither is looked up in the table again.
import type { Labels } from "../../domain/rollup-codec.ts";

/** Where a bounded copy finds committed labels it no longer holds (synchronously: SQLite). */
export interface LabelSource {
  idOf(label: string): number | undefined;
  textOf(id: number): string | undefined;
}

export interface LabelBound {
  /** Labels of one generation: at most twice this many are held. */
  limit: number;
  source: LabelSource;
}

export class LabelCache implements Labels {
  private ids = new Map<string, number>();
  private texts = new Map<number, string>();
  /** The generation before (bounded copies only). */
  private olderIds = new Map<string, number>();
  private olderTexts = new Map<number, string>();
  private readonly pendingIds = new Map<string, number>();
  private readonly pendingTexts = new Map<number, string>();
  /** The highest id known: labels above it are the ones to load. */
  newest = 0;

  /**
   * `make` gives a new label its id (an INSERT in the current transaction); null: only known
   * labels. `bound`: how many to hold, and where the others are; null: every label met is held.
   */
  constructor(
    private readonly make: ((label: string) => number) | null = null,
    private readonly bound: LabelBound | null = null,
  ) {}

  id(label: string): number {
    const known = this.ids.get(label) ?? this.pendingIds.get(label) ?? this.recallId(label);
    if (known !== undefined) return known;
    if (this.make === null) throw new Error(`rollup label ${JSON.stringify(label)} was not made before it was used`);
    const id = this.make(label);
    this.pendingIds.set(label, id);
    this.pendingTexts.set(id, label);
    return id;
  }

  text(id: number): string | undefined {
    return this.texts.get(id) ?? this.pendingTexts.get(id) ?? this.recallText(id);
  }

  has(label: string): boolean {
    return this.ids.has(label) || this.pendingIds.has(label) || this.recallId(label) !== undefined;
  }

  /** Labels read from the table (committed). */
  learn(rows: Iterable<{ id: number; label: string }>): void {
    for (const { id, label } of rows) {
      this.keep(label, id);
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

  private keep(label: string, id: number): void {
    if (this.bound !== null && this.ids.size >= this.bound.limit) {
      this.olderIds = this.ids;
      this.olderTexts = this.texts;
      this.ids = new Map();
      this.texts = new Map();
    }
    this.ids.set(label, id);
    this.texts.set(id, label);
  }

  /** A committed label a bounded copy no longer holds in its newer generation: from the older one, or the table. */
  private recallId(label: string): number | undefined {
    if (this.bound === null) return undefined;
    const id = this.olderIds.get(label) ?? this.bound.source.idOf(label);
    if (id !== undefined) this.keep(label, id);
    return id;
  }

  private recallText(id: number): string | undefined {
    if (this.bound === null) return undefined;
    const label = this.olderTexts.get(id) ?? this.bound.source.textOf(id);
    if (label !== undefined) this.keep(label, id);
    return label;
  }
}
