// How a rollup cell is stored: three binary parts (RollupPart), each decoded on its own. Every
// text (a dimension, a value, an error signature id) is a small number from the store's label
// dictionary, counts are variable-length integers, and a value absent from a record ("") is not
// written at all: its counts are the cell's total minus the other values'. A cell of one app with
// a few installs takes tens of bytes where its JSON took ~800 (docs/decisions/2026-11-27-rollup-cells.md).
//
// A part: a format byte, then
//   data:   total, dimension count, per dimension: label, value count, values; then durations:
//           outcome count, per outcome: index, bin count, per bin: bin, count.
//   apps:   total, value count, values (the nsapp dimension; cells of every app only).
//   errors: signature count, per signature: label, count.
// A value: (label << 6 | mask of the outcomes it has counts of), then those counts. A total: the
// mask, then the counts. Counts are zigzag varints (a cell equals a recount, so never below 0; a
// negative one would still round-trip).
import {
  DIMENSIONS,
  OUTCOME_INDEX,
  valueMap,
  zeroCounts,
  type Counts,
  type Dimension,
  type RollupData,
  type RollupPart,
} from "./rollup.ts";
import { OUTCOMES, type Outcome } from "./outcome.ts";

/** The store's dictionary of texts: ids are assigned once and never change. */
export interface Labels {
  /** The id of `label`, assigned if it has none yet. */
  id(label: string): number;
  /** The text of an id; undefined when the dictionary does not know it. */
  text(id: number): string | undefined;
}

/** A cell as stored: the data part always; the others when they say something. */
export interface StoredParts {
  data: Uint8Array;
  apps: Uint8Array | null;
  errors: Uint8Array | null;
}

/** A stored part that cannot be decoded: the store turns it into StorageDamagedError. */
export class CellFormatError extends Error {}

/** A part names a label the dictionary does not know (yet: another connection may have just added it). */
export class UnknownLabelError extends CellFormatError {
  constructor(readonly labelId: number) {
    super(`label ${labelId} is not in the dictionary`);
  }
}

/** Outcomes a value counts, and the masks of them (a value's head is label * MASKS + mask). */
const N = OUTCOMES.length;
const MASKS = 2 ** N;

const FORMAT = { data: 0xd2, apps: 0xa2, errors: 0xe1 } as const;
const NSAPP = "nsapp";
/** Dimensions of the data part, whose "" counts are derived from the total. */
const DATA_DIMENSIONS = DIMENSIONS.filter((d) => d !== NSAPP);
const KNOWN: ReadonlySet<string> = new Set(DIMENSIONS);

// ------------------------------------------------------------------ writing

class Writer {
  private buf = new Uint8Array(4096);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const bigger = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    bigger.set(this.buf.subarray(0, this.length));
    this.buf = bigger;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.length++] = b;
  }

  /** An unsigned integer below 2^53, 7 bits a byte. */
  uint(n: number): void {
    this.room(8);
    while (n >= 0x80) {
      this.buf[this.length++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[this.length++] = n;
  }

  int(n: number): void {
    this.uint(n >= 0 ? n * 2 : -n * 2 - 1);
  }

  counts(c: Counts, head: number): void {
    let mask = 0;
    for (let i = 0; i < N; i++) if (c[i] !== 0) mask |= 1 << i;
    this.uint(head * MASKS + mask);
    for (let i = 0; i < N; i++) if (c[i] !== 0) this.int(c[i]!);
  }

  /** A copy of what was written, and the writer emptied. */
  take(): Uint8Array {
    const out = this.buf.slice(0, this.length);
    this.length = 0;
    return out;
  }
}

const writer = new Writer();

const sumOf = (map: Record<string, Counts>): Counts => {
  const total = zeroCounts();
  for (const value in map) {
    const c = map[value]!;
    for (let i = 0; i < N; i++) total[i] = total[i]! + c[i]!;
  }
  return total;
};

/**
 * A dimension's non-empty values ("" is derived from the total). Listed once: for-in over a large
 * prototype-less map is O(keys) each time, and asking first whether there is any, then counting,
 * then writing walked each map four times (~5 % of a PostgreSQL node's CPU, in the fold).
 */
function valuesOf(map: Record<string, Counts>): string[] {
  const values: string[] = [];
  for (const value in map) if (value !== "") values.push(value);
  return values;
}

function writeValues(w: Writer, map: Record<string, Counts>, values: readonly string[], labels: Labels): void {
  w.uint(values.length);
  for (const value of values) w.counts(map[value]!, labels.id(value));
}

/** The cell's installs per outcome: every dimension adds up to it (each record has one value in each). */
function totalOf(d: RollupData): Counts {
  const dims = d.dims as Record<string, Record<string, Counts> | undefined>;
  const any = dims.type ?? Object.values(dims).find((m) => m !== undefined);
  return any ? sumOf(any) : zeroCounts();
}

/**
 * The stored parts of a cell; `allApps` for a cell of every app (the only ones with an apps part).
 * A part with nothing to say is null.
 */
export function encodeCell(d: RollupData, allApps: boolean, labels: Labels): StoredParts {
  const w = writer;
  w.length = 0; // what an encoding that threw (a label without an id) left
  const total = totalOf(d);

  w.byte(FORMAT.data);
  w.counts(total, 0);
  const dims = d.dims as Record<string, Record<string, Counts> | undefined>;
  const present: [string, string[]][] = [];
  for (const dim in dims) {
    if (dim === NSAPP) continue;
    const values = valuesOf(dims[dim]!);
    if (values.length > 0) present.push([dim, values]);
  }
  w.uint(present.length);
  for (const [dim, values] of present) {
    w.uint(labels.id(dim));
    writeValues(w, dims[dim]!, values, labels);
  }
  const outcomes = Object.keys(d.dur) as Outcome[];
  w.uint(outcomes.length);
  for (const outcome of outcomes) {
    const bins = d.dur[outcome]!;
    w.uint(OUTCOME_INDEX[outcome]);
    w.uint(Object.keys(bins).length);
    for (const bin in bins) {
      w.uint(Number(bin));
      w.int(bins[bin]!);
    }
  }
  const data = w.take();

  let apps: Uint8Array | null = null;
  if (allApps) {
    w.byte(FORMAT.apps);
    w.counts(total, 0);
    const byApp = dims.nsapp ?? {};
    writeValues(w, byApp, valuesOf(byApp), labels);
    apps = w.take();
  }

  let errors: Uint8Array | null = null;
  const sigs = Object.keys(d.err);
  if (sigs.length > 0) {
    w.byte(FORMAT.errors);
    w.uint(sigs.length);
    for (const sig of sigs) {
      w.uint(labels.id(sig));
      w.int(d.err[sig]!);
    }
    errors = w.take();
  }
  return { data, apps, errors };
}

/** Every label a cell's parts would use: a store that assigns ids outside the batch's transaction asks for them first. */
export function labelsOf(d: RollupData, out: Set<string>): void {
  for (const dim in d.dims) {
    out.add(dim);
    for (const value in d.dims[dim as Dimension]) if (value !== "") out.add(value);
  }
  for (const sig in d.err) out.add(sig);
}

// ------------------------------------------------------------------ reading

class Reader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  byte(): number {
    if (this.pos >= this.buf.length) throw new CellFormatError("cell part ends early");
    return this.buf[this.pos++]!;
  }

  uint(): number {
    let n = 0;
    let scale = 1;
    for (;;) {
      const b = this.byte();
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      scale *= 0x80;
      if (scale > 2 ** 49) throw new CellFormatError("integer too long in a cell part");
    }
  }

  int(): number {
    const z = this.uint();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  /** Counts of one value, and the number written before them (a label, or 0 for a total). */
  counts(): [number, Counts] {
    const c = zeroCounts();
    return [this.countsInto(c), c];
  }

  /** Counts of one value into `c` (summing reads millions: no arrays made); the number written before them. */
  countsInto(c: Counts): number {
    const head = this.uint();
    const mask = head % MASKS;
    for (let i = 0; i < N; i++) c[i] = mask & (1 << i) ? this.int() : 0;
    return Math.floor(head / MASKS);
  }
}

function text(labels: Pick<Labels, "text">, id: number): string {
  const t = labels.text(id);
  if (t === undefined) throw new UnknownLabelError(id);
  return t;
}

/**
 * Values of a dimension, and the "" ones the total leaves (none when it leaves nothing). A fresh
 * map: its entries are counted only if one is ever removed (rollup.ts sizes).
 */
function readValues(r: Reader, total: Counts, labels: Labels): Record<string, Counts> | null {
  const map = valueMap<Counts>();
  const rest: Counts = [...total];
  let any = false;
  for (let n = r.uint(); n > 0; n--) {
    const [id, c] = r.counts();
    map[text(labels, id)] = c;
    any = true;
    for (let i = 0; i < N; i++) rest[i] = rest[i]! - c[i]!;
  }
  if (rest.some((n) => n !== 0)) {
    map[""] = rest;
    any = true;
  }
  return any ? map : null;
}

/** Steps over a dimension's values without making them. */
function skipValues(r: Reader): void {
  for (let n = r.uint(); n > 0; n--) {
    const mask = r.uint() % MASKS;
    for (let i = 0; i < N; i++) if (mask & (1 << i)) r.uint();
  }
}

/**
 * Decodes one stored part into `d` (a cell read part by part). Anything but a well-formed part,
 * with every label known, is a CellFormatError: a damaged value, or text where bytes belong.
 * `dims`, when given, are the only dimensions of the data part the reader needs: the others are
 * stepped over (a timeseries needs the totals of a cell of hundreds of values).
 */
export function decodePart(
  d: RollupData,
  part: RollupPart,
  stored: unknown,
  labels: Labels,
  dims?: ReadonlySet<string>,
): void {
  if (stored === null || stored === undefined) return;
  const r = reader(stored, part);
  if (part === "data") {
    const [, total] = r.counts();
    const seen = new Set<string>();
    for (let n = r.uint(); n > 0; n--) {
      const dim = text(labels, r.uint());
      if (dim === NSAPP || !KNOWN.has(dim))
        throw new CellFormatError(`cell part data names an unknown dimension ${JSON.stringify(dim)}`);
      seen.add(dim);
      if (dims !== undefined && !dims.has(dim)) {
        skipValues(r);
        continue;
      }
      const values = readValues(r, total, labels);
      if (values) d.dims[dim as Dimension] = values;
    }
    // Dimensions not written have no value but "" in the cell.
    if (total.some((x) => x !== 0)) {
      for (const dim of DATA_DIMENSIONS) {
        if (seen.has(dim) || (dims !== undefined && !dims.has(dim))) continue;
        const map = valueMap<Counts>();
        map[""] = [...total] as Counts;
        d.dims[dim] = map;
      }
    }
    for (let n = r.uint(); n > 0; n--) {
      const outcome = OUTCOMES[r.uint()];
      if (outcome === undefined) throw new CellFormatError("cell part data names an unknown outcome");
      const bins = valueMap<number>();
      for (let k = r.uint(); k > 0; k--) {
        const bin = r.uint();
        bins[bin] = r.int();
      }
      d.dur[outcome] = bins;
    }
  } else if (part === "apps") {
    const [, total] = r.counts();
    const values = readValues(r, total, labels);
    if (values) d.dims.nsapp = values;
  } else {
    for (let n = r.uint(); n > 0; n--) {
      const sig = text(labels, r.uint());
      d.err[sig] = r.int();
    }
  }
  done(r, part);
}

// ------------------------------------------------------------------ summing stored parts

/** Counts per label id, N to a value, in one flat array (a month of a dense slice sums ~70,000 values). */
class CountTable {
  private readonly slots = new Map<number, number>();
  private counts = new Float64Array(64 * N);

  add(id: number, c: Counts): void {
    let slot = this.slots.get(id);
    if (slot === undefined) {
      slot = this.slots.size;
      this.slots.set(id, slot);
      if ((slot + 1) * N > this.counts.length) {
        const bigger = new Float64Array(this.counts.length * 2);
        bigger.set(this.counts);
        this.counts = bigger;
      }
    }
    for (let i = 0; i < N; i++) this.counts[slot * N + i] = this.counts[slot * N + i]! + c[i]!;
  }

  /** How many values have counts not all zero (a sum keeps no empty entry, as mergeInto). */
  present(): number {
    let n = 0;
    for (const slot of this.slots.values()) if (this.any(slot)) n++;
    return n;
  }

  /** The values with counts, their number (`present`, when known) first, as a stored part writes them. */
  write(w: Writer, present = this.present()): void {
    w.uint(present);
    const c = zeroCounts();
    for (const [id, slot] of this.slots) {
      if (!this.any(slot)) continue;
      for (let i = 0; i < N; i++) c[i] = this.counts[slot * N + i]!;
      w.counts(c, id);
    }
  }

  private any(slot: number): boolean {
    for (let i = 0; i < N; i++) if (this.counts[slot * N + i] !== 0) return true;
    return false;
  }
}

/** Entries of a map of counts that are not zero. */
function nonZero(map: ReadonlyMap<number, number>): number {
  let n = 0;
  for (const c of map.values()) if (c !== 0) n++;
  return n;
}

/** A map of counts as stored: its entries that are not zero, their number (`n`, when known) first. */
function writeNonZero(w: Writer, map: ReadonlyMap<number, number>, n = nonZero(map)): void {
  w.uint(n);
  for (const [key, c] of map) {
    if (c === 0) continue;
    w.uint(key);
    w.int(c);
  }
}

/**
 * Stored cells summed as stored, by label id: what decoding each, merging them (mergeInto) and
 * encoding the sum would store, with no label looked up but the dimensions' and nothing decoded
 * into objects. A bulk load sums its months from their day cells so (store/sqlite/cells.ts): a
 * dense month of every app holds ~70,000 labels, more than a bounded dictionary keeps, and
 * encoding the decoded sum looked each up in the table again.
 */
export class StoredSum {
  private readonly total = zeroCounts();
  private readonly dims = new Map<number, CountTable>();
  private readonly dur = new Map<number, Map<number, number>>();
  private apps: { total: Counts; values: CountTable } | null = null;
  private readonly errors = new Map<number, number>();
  /** Each value's counts as read. */
  private readonly read = zeroCounts();

  /** `labels` names the dimensions only, to refuse a part that is not a cell's. */
  constructor(private readonly labels: Pick<Labels, "text">) {}

  /** Adds one stored cell; anything but well-formed parts is a CellFormatError. */
  add(parts: Record<keyof StoredParts, unknown>): void {
    this.addData(reader(parts.data, "data"));
    if (parts.apps !== null && parts.apps !== undefined) this.addApps(reader(parts.apps, "apps"));
    if (parts.errors !== null && parts.errors !== undefined) this.addErrors(reader(parts.errors, "errors"));
  }

  private addData(r: Reader): void {
    r.countsInto(this.read);
    addCounts(this.total, this.read);
    for (let n = r.uint(); n > 0; n--) {
      const id = r.uint();
      const dim = text(this.labels, id);
      if (dim === NSAPP || !KNOWN.has(dim))
        throw new CellFormatError(`cell part data names an unknown dimension ${JSON.stringify(dim)}`);
      let values = this.dims.get(id);
      if (values === undefined) this.dims.set(id, (values = new CountTable()));
      for (let k = r.uint(); k > 0; k--) values.add(r.countsInto(this.read), this.read);
    }
    for (let n = r.uint(); n > 0; n--) {
      const outcome = r.uint();
      if (outcome >= N) throw new CellFormatError("cell part data names an unknown outcome");
      let bins = this.dur.get(outcome);
      if (bins === undefined) this.dur.set(outcome, (bins = new Map()));
      for (let k = r.uint(); k > 0; k--) {
        const bin = r.uint();
        bins.set(bin, (bins.get(bin) ?? 0) + r.int());
      }
    }
    done(r, "data");
  }

  private addApps(r: Reader): void {
    this.apps ??= { total: zeroCounts(), values: new CountTable() };
    r.countsInto(this.read);
    addCounts(this.apps.total, this.read);
    for (let n = r.uint(); n > 0; n--) this.apps.values.add(r.countsInto(this.read), this.read);
    done(r, "apps");
  }

  private addErrors(r: Reader): void {
    for (let n = r.uint(); n > 0; n--) {
      const id = r.uint();
      this.errors.set(id, (this.errors.get(id) ?? 0) + r.int());
    }
    done(r, "errors");
  }

  /** The sum as stored parts; null when it counts nothing (the cell goes). */
  parts(): StoredParts | null {
    const errorCount = nonZero(this.errors);
    if (this.total.every((c) => c === 0) && errorCount === 0) return null;
    const w = writer;
    w.length = 0;
    w.byte(FORMAT.data);
    w.counts(this.total, 0);
    // Each table's entries counted once: the part names how many come before it writes them.
    const dims = [...this.dims].map(([id, values]) => ({ id, values, n: values.present() })).filter((d) => d.n > 0);
    w.uint(dims.length);
    for (const { id, values, n } of dims) {
      w.uint(id);
      values.write(w, n);
    }
    const outcomes = [...this.dur]
      .map(([outcome, bins]) => ({ outcome, bins, n: nonZero(bins) }))
      .filter((o) => o.n > 0);
    w.uint(outcomes.length);
    for (const { outcome, bins, n } of outcomes) {
      w.uint(outcome);
      writeNonZero(w, bins, n);
    }
    const data = w.take();
    let apps: Uint8Array | null = null;
    if (this.apps !== null) {
      w.byte(FORMAT.apps);
      w.counts(this.apps.total, 0);
      this.apps.values.write(w);
      apps = w.take();
    }
    let errors: Uint8Array | null = null;
    if (errorCount > 0) {
      w.byte(FORMAT.errors);
      writeNonZero(w, this.errors, errorCount);
      errors = w.take();
    }
    return { data, apps, errors };
  }
}

function addCounts(a: Counts, b: Counts): void {
  for (let i = 0; i < N; i++) a[i] = a[i]! + b[i]!;
}

/** A reader past a stored part's format byte. */
function reader(stored: unknown, part: RollupPart): Reader {
  if (!(stored instanceof Uint8Array)) throw new CellFormatError(`cell part ${part} is not binary`);
  const r = new Reader(stored);
  if (r.byte() !== FORMAT[part]) throw new CellFormatError(`cell part ${part} has an unknown format`);
  return r;
}

function done(r: Reader, part: RollupPart): void {
  if (!r.done) throw new CellFormatError(`cell part ${part} has bytes past its end`);
}
