// The import rules of the house (docs/architecture.md), checked by `bun run lint:imports`.
// Layers from the ground up: a module may import its own layer's folder and any layer below,
// never one above, and never a sibling folder on its own layer.
const LAYERS = [
  ["src/domain/"],
  ["src/log\\.ts$"],
  ["src/config\\.ts$"],
  ["src/store/"],
  ["src/http/"],
  ["src/ingest/", "src/read/"],
  ["src/maintenance/", "src/transfer/", "src/seed/", "src/web/", "src/alerts/", "src/relay/", "src/issues/"],
  ["src/app\\.ts$"],
  ["src/runtime\\.ts$"],
  ["src/cli/"],
  ["src/main\\.ts$"],
];

const path = (list) => `^(${list.join("|")})`;

const upward = LAYERS.flatMap((layer, i) => {
  const above = LAYERS.slice(i + 1).flat();
  if (above.length === 0) return [];
  return [{
    name: `no-upward-from-layer-${i}`,
    comment: `${layer.join(", ")} must not import a layer above it`,
    severity: "error",
    from: { path: path(layer) },
    to: { path: path(above) },
  }];
});

const siblings = LAYERS.filter((layer) => layer.length > 1).flatMap((layer) =>
  layer.map((folder) => ({
    name: `no-sibling-${folder.replace(/[^a-z]/g, "")}`,
    comment: `${folder} must not import the other folders of its layer (${layer.join(", ")})`,
    severity: "error",
    from: { path: `^${folder}` },
    to: { path: path(layer.filter((other) => other !== folder)) },
  })),
);

module.exports = {
  forbidden: [
    {
      name: "domain-is-pure",
      comment: "src/domain/ imports nothing but itself (and Node's pure helpers, such as net.isIP)",
      severity: "error",
      from: { path: "^src/domain/" },
      to: { pathNot: "^(src/domain/|node:net$|net$)" },
    },
    {
      name: "sql-only-in-engines",
      comment: "Only an engine folder (src/store/<engine>/, and common/ between them) talks to a database driver or Drizzle",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/store/(?!contract/)[^/]+/" },
      to: { path: "(^bun:sqlite$)|node_modules/(drizzle-orm|drizzle-kit|postgres)/" },
    },
    {
      name: "engines-are-private",
      comment: "Outside src/store/, nothing imports an engine folder: the contract (contract/), engine.ts and open.ts are the door",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/store/" },
      to: { path: "^src/store/(?!contract/)[^/]+/" },
    },
    {
      name: "engines-are-apart",
      comment: "An engine does not import another engine; what they share (Drizzle helpers) is in src/store/common/, what they fulfil in src/store/contract/",
      severity: "error",
      from: { path: "^src/store/([^/]+)/" },
      to: { path: "^src/store/[^/]+/", pathNot: "^src/store/($1|common|contract)/" },
    },
    {
      name: "contract-is-vocabulary",
      comment: "The Store contract (src/store/contract/) names the domain's types and its own, nothing an engine or the service holds",
      severity: "error",
      from: { path: "^src/store/contract/" },
      to: { pathNot: "^src/(domain|store/contract)/" },
    },
    {
      name: "read-families-apart",
      comment: "An API family of src/read/ (native/, original/, community/) imports the shared core (src/read/*.ts) and its own folder, never another family",
      severity: "error",
      from: { path: "^src/read/([^/]+)/" },
      to: { path: "^src/read/[^/]+/", pathNot: "^src/read/$1/" },
    },
    {
      name: "read-core-below-families",
      comment: "The shared core of src/read/ (its top-level files) serves every API family and imports none",
      severity: "error",
      from: { path: "^src/read/[^/]+\\.ts$" },
      to: { path: "^src/read/[^/]+/" },
    },
    {
      name: "no-circular",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    ...upward,
    ...siblings,
  ],
  options: {
    includeOnly: "^(src/|node_modules/|bun:)",
    parser: "swc",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"], extensions: [".ts", ".js", ".json"] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
