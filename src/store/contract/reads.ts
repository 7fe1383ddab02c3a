// How a read of the contract answers, for the door that guards every read (store/common/door.ts).

/** "once": a promise; "stream": an async iterable, each item one finished query (or a row of one). */
export type ReadShape = "once" | "stream";

/** One entry per read of a reads interface, checked complete at compile time with `satisfies`. */
export type ReadTable<R> = { readonly [K in keyof R]: ReadShape };
