// One guard at both engines' doors. Every read of the contract answers asynchronously, and what
// it meets is said in the contract's terms (damage, a server that cannot answer now) by the
// engine's `translate`; which reads there are, and how each answers, is the contract's table
// (store/contract/store.ts READS), so an engine lists none of them again.
import type { ReadShape } from "../contract/reads.ts";

/** A read as an engine may write it: synchronous or not, a stream as a plain or an async iterable. */
type Inner<F> = F extends (...args: infer A) => infer R
  ? (
      ...args: A
    ) => R extends AsyncIterable<infer T>
      ? Iterable<T> | AsyncIterable<T>
      : R extends Promise<infer T>
        ? T | Promise<T>
        : R
  : never;

/** The reads `R` as an engine implements them. */
export type EngineReads<R> = { [K in keyof R]: Inner<R[K]> };

export interface Door {
  /** What a failure means in the contract's terms, or the error as it is (a bug). */
  translate(e: unknown): unknown;
  /** How long a read may wait (PostgreSQL: not for the whole switch while the servers are down). */
  bound?<T>(read: Promise<T>): Promise<T>;
}

/** The reads of `shapes`, each answering as the contract says, failures translated. */
export function guardReads<R>(inner: EngineReads<R>, shapes: { readonly [K in keyof R]: ReadShape }, door: Door): R {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(shapes) as (keyof R & string)[]) {
    const read = inner[name] as (...args: unknown[]) => unknown;
    const call = (args: unknown[]) => () => read.apply(inner, args);
    out[name] =
      shapes[name] === "stream"
        ? (...args: unknown[]) => stream(call(args), door)
        : (...args: unknown[]) => once(call(args), door);
  }
  return out as R;
}

async function once(read: () => unknown, door: Door): Promise<unknown> {
  try {
    const answer = read();
    return await (answer instanceof Promise && door.bound ? door.bound(answer) : answer);
  } catch (e) {
    throw door.translate(e);
  }
}

/**
 * A stream handed over item by item (each item a finished query, or a row of one): a failure
 * midway translated, and the engine's iterator closed when the consumer stops early, so an
 * abandoned read holds nothing open.
 */
async function* stream(open: () => unknown, door: Door): AsyncGenerator<unknown, void> {
  let it: Iterator<unknown> | AsyncIterator<unknown>;
  try {
    const items = open() as Iterable<unknown> | AsyncIterable<unknown>;
    it = Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
  } catch (e) {
    throw door.translate(e);
  }
  let finished = false;
  try {
    for (;;) {
      let next: IteratorResult<unknown>;
      try {
        next = await it.next();
      } catch (e) {
        finished = true;
        throw door.translate(e);
      }
      if (next.done) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } finally {
    if (!finished) await it.return?.();
  }
}
