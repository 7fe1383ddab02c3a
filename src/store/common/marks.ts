// Names of the marks both engines keep besides their own (copy's, the stuck-install job's).

/** Where `installstats import --url` keeps its position for a source (SQLite: copy_marks; PostgreSQL: marks). */
export const importMarkName = (source: string): string => `import:${source}`;
